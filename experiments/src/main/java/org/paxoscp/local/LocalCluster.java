package org.paxoscp.local;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.store.hbase.EmbeddedZooKeeper;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;

/**
 * A multi-DC cluster in this process, on loopback: an embedded ZooKeeper (service discovery), an
 * embedded HBase with one namespace per DC (or, by explicit choice, in-memory stores), and one
 * Transaction Service per DC on its own UDP port, with the WAN emulation of the cluster config.
 * Each DC's store is its own connection; no DC touches another's store except through that DC's
 * service.
 *
 * <p>A DC's service can be stopped and started again ({@link #stopService}, {@link
 * #startService}); its store survives, as a DC whose service processes all died would. Thread-safe
 * for those calls; {@link #close()} is idempotent.
 */
public final class LocalCluster implements AutoCloseable {

  /** Where the DCs keep their state. */
  public enum StoreKind {
    HBASE, MEMORY;

    /**
     * The kind named on a command line: {@code hbase} or {@code memory}.
     *
     * @throws IllegalArgumentException naming the option for anything else
     */
    public static StoreKind parse(String name) {
      return switch (name) {
        case "hbase" -> HBASE;
        case "memory" -> MEMORY;
        default -> throw new IllegalArgumentException("--store must be hbase or memory, was "
            + name);
      };
    }

    /** The name {@link #parse} reads. */
    @Override
    public String toString() {
      return name().toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * How to build the cluster.
   *
   * @param dcs DC names, in order
   * @param store HBASE (default) or MEMORY (explicit opt-in: state is lost with the process)
   * @param dataDir where HBase and ZooKeeper keep their files
   * @param wan the WAN emulation
   * @param requestTimeout the protocol's phase and request timeout
   * @param serviceThreads worker threads per service
   */
  public record Options(List<String> dcs, StoreKind store, Path dataDir, ClusterConfig.Wan wan,
      Duration requestTimeout, int serviceThreads) {
    public Options {
      dcs = List.copyOf(dcs);
    }
  }

  private final Options options;
  private final EmbeddedHBase hbase;
  private final EmbeddedZooKeeper zookeeper;
  private final ClusterConfig config;
  private final Map<String, String> serviceProps;
  private final Map<String, KvStore> stores = new LinkedHashMap<>();
  private final Map<String, ServiceRunner> services = new LinkedHashMap<>();
  private boolean closed;

  private LocalCluster(Options options, EmbeddedHBase hbase, EmbeddedZooKeeper zookeeper,
      ClusterConfig config, Map<String, String> serviceProps) {
    this.options = options;
    this.hbase = hbase;
    this.zookeeper = zookeeper;
    this.config = config;
    this.serviceProps = serviceProps;
  }

  /**
   * Starts the stores, ZooKeeper and every DC's service; blocks until all serve.
   *
   * @param progress told what is starting (one line each)
   */
  public static LocalCluster start(Options options, java.util.function.Consumer<String> progress) {
    return start(options, progress, Map.of());
  }

  /**
   * As {@link #start(Options, java.util.function.Consumer)}, with extra settings: service keys
   * ({@code paxoscp.service.*}, e.g. the GC retention) for every DC's service, and cluster keys
   * ({@link ClusterConfig#KEYS}, e.g. {@code paxoscp.wire.encrypt}) for the cluster file that
   * services and clients read.
   */
  public static LocalCluster start(Options options, java.util.function.Consumer<String> progress,
      Map<String, String> serviceSettings) {
    EmbeddedHBase hbase = null;
    EmbeddedZooKeeper zk = null;
    LocalCluster cluster = null;
    try {
      Files.createDirectories(options.dataDir());
      String zkConnect;
      if (options.store() == StoreKind.HBASE) {
        progress.accept("starting embedded HBase and ZooKeeper in " + options.dataDir() + " ...");
        hbase = EmbeddedHBase.start(options.dataDir().resolve("hbase"));
        zkConnect = hbase.zkQuorum() + ":" + hbase.zkPort();
        progress.accept(String.format(java.util.Locale.ROOT, "HBase ready in %.1f s",
            hbase.startupTime().toMillis() / 1000.0));
      } else {
        progress.accept("starting embedded ZooKeeper (stores in memory) ...");
        zk = EmbeddedZooKeeper.start(options.dataDir().resolve("zookeeper"));
        zkConnect = zk.connectString();
      }
      Map<String, String> props = new LinkedHashMap<>();
      props.put(ClusterConfig.DCS.name(), String.join(",", options.dcs()));
      byte[] key = new byte[32];
      new SecureRandom().nextBytes(key);
      props.put(ClusterConfig.KEY.name(), HexFormat.of().formatHex(key));
      props.put(ClusterConfig.DISCOVERY_ZK.name(), zkConnect);
      // One knob for the local cluster: every protocol and request timeout derives from it.
      long timeoutMs = options.requestTimeout().toMillis();
      props.put(ClusterConfig.REQUEST_TIMEOUT.name(), Long.toString(timeoutMs));
      props.put(ProposerConfig.PHASE_TIMEOUT.name(), Long.toString(timeoutMs));
      props.put(ClusterConfig.DISCOVERY_CONNECT_TIMEOUT.name(),
          Long.toString(Math.max(5_000, 5 * timeoutMs)));
      for (String dc : options.dcs()) {
        props.put(ClusterConfig.DC_PREFIX + dc + ".endpoints", "127.0.0.1:" + FreePorts.udp());
        if (hbase != null) {
          props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.quorum", hbase.zkQuorum());
          props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.port",
              Integer.toString(hbase.zkPort()));
        }
      }
      serviceSettings.forEach((k, v) -> {
        if (ClusterConfig.KEYS.knows(k)) {
          props.put(k, v);
        }
      });
      ClusterConfig base = ClusterConfig.fromProperties(props);
      ClusterConfig config = base.with(base.dcs(), options.wan());
      Map<String, String> serviceProps = new LinkedHashMap<>(config.toProperties());
      serviceProps.put(ServiceConfig.THREADS.name(), Integer.toString(options.serviceThreads()));
      serviceProps.put(ServiceConfig.STORE.name(), options.store().toString());
      serviceProps.put(ServiceConfig.LEARN_TIMEOUT.name(), Long.toString(timeoutMs));
      serviceProps.put(ServiceConfig.LEARNER_TIMEOUT.name(), Long.toString(4 * timeoutMs));
      serviceProps.put(ServiceConfig.CATCHUP_WAIT.name(), Long.toString(2 * timeoutMs));
      serviceProps.put(ServiceConfig.GC_PEER_TIMEOUT.name(), Long.toString(timeoutMs));
      serviceSettings.forEach((k, v) -> {
        if (!ClusterConfig.KEYS.knows(k)) {
          serviceProps.put(k, v);
        }
      });
      cluster = new LocalCluster(options, hbase, zk, config, serviceProps);
      for (String dc : options.dcs()) {
        KvStore store = hbase != null ? hbase.openStore(dc) : new InMemoryKvStore();
        cluster.stores.put(dc, store);
        cluster.startService(dc);
        progress.accept("DC " + dc + ": Transaction Service on "
            + config.dc(dc).endpoints().get(0).getHostString() + ":"
            + config.dc(dc).endpoints().get(0).getPort());
      }
      return cluster;
    } catch (IOException e) {
      closeQuietly(cluster, hbase, zk);
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      closeQuietly(cluster, hbase, zk);
      throw e;
    }
  }

  private static void closeQuietly(LocalCluster cluster, EmbeddedHBase hbase,
      EmbeddedZooKeeper zk) {
    if (cluster != null) {
      cluster.close();
      return;
    }
    if (hbase != null) {
      hbase.close();
    }
    if (zk != null) {
      zk.close();
    }
  }

  /** The cluster's configuration (what clients need to connect). */
  public ClusterConfig config() {
    return config;
  }

  public List<String> dcs() {
    return options.dcs();
  }

  /** Starts (or restarts) DC {@code dc}'s service over its surviving store, on its port. */
  public synchronized void startService(String dc) {
    if (services.containsKey(dc)) {
      throw new IllegalStateException("the service of DC " + dc + " is already running");
    }
    Map<String, String> props = new LinkedHashMap<>(serviceProps);
    props.put(ServiceConfig.DC.name(), dc);
    ServiceConfig sc = ServiceConfig.fromProperties(props);
    services.put(dc, ServiceRunner.start(sc, ServiceTransportFactory.UDP, stores.get(dc)));
  }

  /** Stops DC {@code dc}'s service (its store survives); a no-op if it is not running. */
  public synchronized void stopService(String dc) {
    ServiceRunner r = services.remove(dc);
    if (r != null) {
      r.close();
    }
  }

  public synchronized boolean isRunning(String dc) {
    return services.containsKey(dc);
  }

  /** DC {@code dc}'s store (for reading its log after a run, and for direct-store clients). */
  public KvStore store(String dc) {
    return stores.get(dc);
  }

  /** The running service of DC {@code dc}, if any (for its counters). */
  public synchronized Optional<ServiceRunner> service(String dc) {
    return Optional.ofNullable(services.get(dc));
  }

  /** A client of the cluster with its own UDP transport; the caller closes it. */
  public TxnClient client(String homeDc, CommitProtocol protocol) {
    return TxnClient.builder(config, homeDc, protocol).build();
  }

  /** As {@link #client(String, CommitProtocol)}, recording its history with {@code history}. */
  public TxnClient client(String homeDc, CommitProtocol protocol,
      org.paxoscp.client.HistoryRecorder history) {
    return TxnClient.builder(config, homeDc, protocol).recordHistory(history).build();
  }

  /** Appends every DC's log of {@code group} up to {@code upTo} to {@code dir/wal/<dc>.jsonl}. */
  public void exportWal(Path dir, String group, long upTo) {
    logs(group, upTo).forEach((dc, log) ->
        org.paxoscp.history.HistoryFiles.appendWal(dir, dc, group, log));
  }

  /**
   * Every DC's log of {@code group}: positions 1..{@code upTo} whose chosen value the DC knows.
   * Positions the DC has collected (section 7; at or below its GC watermark) are left out.
   */
  public Map<String, SortedMap<Long, LogValue>> logs(String group, long upTo) {
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (String dc : options.dcs()) {
      Acceptor a = new Acceptor(stores.get(dc));
      SortedMap<Long, LogValue> log = new TreeMap<>();
      long collected = LogCollector.gcWatermark(stores.get(dc), group);
      for (long p = collected + 1; p <= upTo; p++) {
        Optional<LogValue> v = a.chosen(group, p);
        if (v.isPresent()) {
          log.put(p, v.get());
        }
      }
      logs.put(dc, log);
    }
    return logs;
  }

  /**
   * Brings every running DC up to the highest position of {@code group} that is proved to exist
   * (section 5.4: each service learns what it misses from its peers, or by running an instance),
   * so that the logs can be compared position by position. Proved means: chosen at some DC, or
   * at most {@code provenPosition} — a position the caller was told of, such as the highest
   * commit or read position its clients saw (see {@link #provenPosition}). A position that only
   * holds votes is not proved: catching up to it would run instances that decide it, changing
   * the log under test instead of observing it.
   *
   * @return the position every DC now holds the log up to
   * @throws IllegalStateException if a DC does not confirm in time
   */
  public long catchUpAll(String group, long provenPosition, Duration timeout) {
    long highest = provenPosition;
    for (String dc : options.dcs()) {
      highest = Math.max(highest, highestChosen(group, stores.get(dc)));
    }
    for (String dc : options.dcs()) {
      if (!isRunning(dc)) {
        continue;
      }
      try (UdpTransport t = UdpTransport.builder(config, dc).build()) {
        Message reply = t.request(dc, new Message.BeginRequest(group, highest), timeout).join();
        if (!(reply instanceof Message.BeginReply b) || b.position() < highest) {
          throw new IllegalStateException("DC " + dc + " did not catch up to position "
              + highest + " of group " + group + ": " + reply);
        }
      } catch (java.util.concurrent.CompletionException e) {
        throw new IllegalStateException("DC " + dc + " did not catch up to position " + highest
            + " of group " + group + ": " + e.getCause(), e.getCause());
      }
    }
    return highest;
  }

  /** The highest commit or read position in {@code history}: positions its clients were told of. */
  public static long provenPosition(java.util.Collection<TxnRecord> history) {
    long p = 0;
    for (TxnRecord r : history) {
      p = Math.max(p, r.readPosition());
      if (r.status() == TxnRecord.Status.COMMITTED) {
        p = Math.max(p, r.commitPosition());
      }
    }
    return p;
  }

  /**
   * The highest position a store holds a chosen value for; searched past the applied watermark
   * until 64 positions in a row are not chosen there.
   */
  private static long highestChosen(String group, KvStore store) {
    Acceptor a = new Acceptor(store);
    long p = new LogApplier(store).appliedWatermark(group);
    long highest = p;
    for (long q = p + 1, misses = 0; misses < 64; q++) {
      if (a.chosen(group, q).isPresent()) {
        highest = q;
        misses = 0;
      } else {
        misses++;
      }
    }
    return highest;
  }

  /** Writes the client-side cluster config (no service keys) as a properties file. */
  public void writeConfig(Path file) {
    Properties p = new Properties();
    config.toProperties().forEach(p::setProperty);
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, "paxoscp local cluster " + options.dcs()
          + "; the key seals every datagram: keep this file private");
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + file, e);
    }
  }

  /** Reads a properties file into a sorted map (keys in file order do not matter). */
  public static Map<String, String> readProperties(Path file) {
    Properties p = new Properties();
    try (var r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + file, e);
    }
    Map<String, String> m = new TreeMap<>();
    for (String k : new TreeSet<>(p.stringPropertyNames())) {
      m.put(k, p.getProperty(k));
    }
    return m;
  }

  /** Stops every service, then the stores, HBase and ZooKeeper. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (String dc : new ArrayList<>(services.keySet())) {
      stopService(dc);
    }
    for (KvStore s : stores.values()) {
      s.close();
    }
    if (hbase != null) {
      hbase.close();
    }
    if (zookeeper != null) {
      zookeeper.close();
    }
  }
}
