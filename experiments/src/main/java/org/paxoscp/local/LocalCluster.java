package org.paxoscp.local;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.store.hbase.EmbeddedZooKeeper;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;

/**
 * A multi-DC cluster in this process, on loopback: an embedded ZooKeeper (service discovery), an
 * embedded HBase with one namespace per DC (or, by explicit choice, in-memory stores; or, with
 * {@link Options#regionServers} above 1, an HBase of a master and that many region server
 * processes, {@link StandaloneHBase}, under {@code <dataDir>/hbase-servers}), and one
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
   * @param regionServers 1: HBase embedded in this process; more: a master and this many region
   *     servers, each a process of its own, left running if this process dies (stop them with
   *     {@code paxoscp hbase stop --dir <dataDir>/hbase-servers}); needs {@link StoreKind#HBASE}
   */
  public record Options(List<String> dcs, StoreKind store, Path dataDir, ClusterConfig.Wan wan,
      Duration requestTimeout, int serviceThreads, int regionServers) {
    public Options {
      dcs = List.copyOf(dcs);
      if (regionServers < 1 || regionServers > StandaloneHBase.MAX_REGION_SERVERS) {
        throw new IllegalArgumentException("--regionservers must be in 1.."
            + StandaloneHBase.MAX_REGION_SERVERS + ", was " + regionServers);
      }
      if (regionServers > 1 && store != StoreKind.HBASE) {
        throw new IllegalArgumentException("--regionservers " + regionServers
            + " needs the HBase store, not " + store);
      }
    }

    /** HBase embedded in this process (one region server), or in-memory stores. */
    public Options(List<String> dcs, StoreKind store, Path dataDir, ClusterConfig.Wan wan,
        Duration requestTimeout, int serviceThreads) {
      this(dcs, store, dataDir, wan, requestTimeout, serviceThreads, 1);
    }
  }

  /** The directory of the HBase processes when {@link Options#regionServers} is above 1. */
  public static Path hbaseServersDir(Path dataDir) {
    return dataDir.resolve("hbase-servers");
  }

  /** The HBase the DCs' stores live on: embedded in this process, or processes of its own. */
  private interface LocalHBase extends AutoCloseable {
    String zkQuorum();

    int zkPort();

    KvStore openStore(String dc);

    @Override
    void close();
  }

  private record Embedded(EmbeddedHBase hbase) implements LocalHBase {
    @Override
    public String zkQuorum() {
      return hbase.zkQuorum();
    }

    @Override
    public int zkPort() {
      return hbase.zkPort();
    }

    @Override
    public KvStore openStore(String dc) {
      return hbase.openStore(dc);
    }

    @Override
    public void close() {
      hbase.close();
    }
  }

  /** A master and region servers as processes ({@link StandaloneHBase}), stopped on close. */
  private record Processes(Path dir, int zkPort) implements LocalHBase {
    @Override
    public String zkQuorum() {
      return "127.0.0.1";
    }

    @Override
    public KvStore openStore(String dc) {
      return HBaseKvStore.open(HBaseStoreConfig.builder(dc).zkQuorum(zkQuorum()).zkPort(zkPort)
          .build());
    }

    @Override
    public void close() {
      StandaloneHBase.stop(dir);
    }
  }

  private final Options options;
  private final LocalHBase hbase;
  private final EmbeddedZooKeeper zookeeper;
  private final ClusterLayout layout;
  private final ClusterConfig config;
  /** Every DC's service keys, on top of the cluster's. */
  private final Map<String, String> serviceSettings;
  /** One DC's service keys, on top of {@link #serviceSettings}. */
  private final Map<String, Map<String, String>> perDcSettings;
  private final Map<String, KvStore> stores = new LinkedHashMap<>();
  private final Map<String, ServiceRunner> services = new LinkedHashMap<>();
  /** The DCs whose service answers nothing ({@link #setHung}). */
  private final java.util.Set<String> hung = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private boolean closed;

  private LocalCluster(Options options, LocalHBase hbase, EmbeddedZooKeeper zookeeper,
      ClusterLayout layout, Map<String, String> serviceSettings,
      Map<String, Map<String, String>> perDcSettings) {
    this.perDcSettings = Map.copyOf(perDcSettings);
    this.options = options;
    this.hbase = hbase;
    this.zookeeper = zookeeper;
    this.layout = layout;
    this.config = layout.config();
    this.serviceSettings = Map.copyOf(serviceSettings);
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
    return start(options, progress, serviceSettings, Map.of());
  }

  /**
   * As {@link #start(Options, java.util.function.Consumer, Map)}, with service keys for one DC's
   * service only ({@code perDc}: DC name to keys), on top of the others; for example each DC's
   * {@code paxoscp.service.metrics.port}.
   */
  public static LocalCluster start(Options options, java.util.function.Consumer<String> progress,
      Map<String, String> serviceSettings, Map<String, Map<String, String>> perDc) {
    LocalHBase hbase = null;
    EmbeddedZooKeeper zk = null;
    LocalCluster cluster = null;
    // The services' ports stay bound here until each service binds its own.
    try (FreePorts.HeldUdp heldPorts = new FreePorts.HeldUdp()) {
      Files.createDirectories(options.dataDir());
      String zkConnect;
      if (options.store() == StoreKind.HBASE && options.regionServers() > 1) {
        hbase = startProcesses(options, progress);
        zkConnect = hbase.zkQuorum() + ":" + hbase.zkPort();
      } else if (options.store() == StoreKind.HBASE) {
        Path servers = hbaseServersDir(options.dataDir());
        if (StandaloneHBase.status(servers).state() != StandaloneHBase.State.NOT_RUNNING) {
          progress.accept("note: the HBase processes of a run with --regionservers still run in "
              + servers + "; stop them with `paxoscp hbase stop --dir " + servers + "`");
        } else if (Files.isDirectory(servers)) {
          progress.accept("note: " + servers + " holds the data of a run with --regionservers; "
              + "this run uses the embedded HBase's own");
        }
        progress.accept("starting embedded HBase and ZooKeeper in " + options.dataDir() + " ...");
        EmbeddedHBase embedded = EmbeddedHBase.start(options.dataDir().resolve("hbase"));
        hbase = new Embedded(embedded);
        zkConnect = hbase.zkQuorum() + ":" + hbase.zkPort();
        progress.accept(String.format(java.util.Locale.ROOT, "HBase ready in %.1f s",
            embedded.startupTime().toMillis() / 1000.0));
      } else {
        progress.accept("starting embedded ZooKeeper (stores in memory) ...");
        zk = EmbeddedZooKeeper.start(options.dataDir().resolve("zookeeper"));
        zkConnect = zk.connectString();
      }
      Duration timeout = options.requestTimeout();
      // One knob for the local cluster: every protocol and request timeout derives from it.
      ClusterLayout.Builder b = ClusterLayout.builder(options.dcs())
          .requestTimeout(timeout)
          .phaseTimeout(timeout)
          .discovery(zkConnect, Duration.ofMillis(Math.max(5_000, 5 * timeout.toMillis())))
          .wan(options.wan());
      if (hbase instanceof Processes) {
        // HBase's ZooKeeper outlives this process if it is killed, and with it the dead
        // services' registrations until their sessions end: each run registers under its own
        // path, so that clients of this run never pick a dead run's endpoint.
        b.set(ClusterConfig.DISCOVERY_PATH.name(), ClusterConfig.DISCOVERY_PATH.defaultValue()
            + "-run-" + Long.toHexString(System.currentTimeMillis()));
      }
      for (String dc : options.dcs()) {
        b.endpoints(dc, List.of("127.0.0.1:" + heldPorts.hold()));
        if (hbase != null) {
          b.hbase(dc, hbase.zkQuorum(), hbase.zkPort());
        }
      }
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put(ServiceConfig.THREADS.name(), Integer.toString(options.serviceThreads()));
      settings.put(ServiceConfig.STORE.name(), options.store().toString());
      settings.putAll(ClusterLayout.derivedServiceTimeouts(timeout));
      serviceSettings.forEach((k, v) -> {
        if (ClusterConfig.KEYS.knows(k)) {
          b.set(k, v);
        } else {
          settings.put(k, v);
        }
      });
      ClusterLayout layout = b.build();
      ClusterConfig config = layout.config();
      cluster = new LocalCluster(options, hbase, zk, layout, settings, perDc);
      for (String dc : options.dcs()) {
        KvStore store = hbase != null ? hbase.openStore(dc) : new InMemoryKvStore();
        cluster.stores.put(dc, store);
        heldPorts.release(config.dc(dc).endpoints().get(0).getPort());
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

  /**
   * Starts (or finds running) the HBase processes of {@link #hbaseServersDir}, ZooKeeper on the
   * port it had if that is free (so that services of one's own keep reaching it), else on a free
   * one; a start waits until every region server is live, a running HBase is taken as it is
   * (region servers not running are started, not waited for).
   */
  private static LocalHBase startProcesses(Options options,
      java.util.function.Consumer<String> progress) {
    Path dir = hbaseServersDir(options.dataDir());
    if (Files.isDirectory(options.dataDir().resolve("hbase"))) {
      progress.accept("note: " + options.dataDir().resolve("hbase") + " holds the data of a run "
          + "without --regionservers; this run uses the region servers' own");
    }
    StandaloneHBase.Status now = StandaloneHBase.status(dir);
    int zkPort = now.running() || FreePorts.tcpFree(now.zkPort()) ? now.zkPort()
        : FreePorts.tcp();
    progress.accept("starting HBase (a master and " + options.regionServers()
        + " region server processes) in " + dir + " ...");
    long t0 = System.nanoTime();
    StandaloneHBase.Status s;
    try {
      s = StandaloneHBase.start(dir, zkPort, Duration.ofSeconds(240), options.regionServers());
    } catch (IllegalStateException e) {
      if (StandaloneHBase.status(dir).state() == StandaloneHBase.State.NOT_RUNNING) {
        throw e;
      }
      // This directory's HBase runs with another count of region servers, or does not answer.
      throw new IllegalStateException(e.getMessage() + " (`paxoscp hbase stop --dir " + dir
          + "` stops it)", e);
    }
    progress.accept(String.format(java.util.Locale.ROOT, "HBase %s in %.1f s: ZooKeeper "
        + "127.0.0.1:%d, logs in %s", s.detail().equals("already running") ? "already running"
        : "ready", (System.nanoTime() - t0) / 1e9, s.zkPort(), dir.resolve("logs")));
    return new Processes(dir, s.zkPort());
  }

  private static void closeQuietly(LocalCluster cluster, LocalHBase hbase,
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
    Map<String, String> settings = new LinkedHashMap<>(serviceSettings);
    settings.putAll(perDcSettings.getOrDefault(dc, Map.of()));
    ServiceConfig sc = ServiceConfig.fromProperties(layout.serviceProperties(dc, null, settings));
    ServiceTransportFactory hangable = (cluster, localDc, bind, endpoints, handler, threads) ->
        ServiceTransportFactory.UDP.open(cluster, localDc, bind, endpoints,
            (from, request) -> hung.contains(dc) ? new java.util.concurrent.CompletableFuture<>()
                : handler.handle(from, request), threads);
    services.put(dc, ServiceRunner.start(sc, hangable, stores.get(dc)));
  }

  /**
   * Makes DC {@code dc}'s service hang ({@code true}) or answer again: while hung it stays
   * registered and listening, and drops every request unanswered, as a process frozen with
   * SIGSTOP does (clients and peers see timeouts, not a service gone).
   */
  public void setHung(String dc, boolean isHung) {
    if (isHung) {
      hung.add(dc);
    } else {
      hung.remove(dc);
    }
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
      long collected = LogCollector.gcWatermark(stores.get(dc), group);
      logs.put(dc, LogCatchUp.chosenLog(stores.get(dc), group, collected + 1, upTo));
    }
    return logs;
  }

  /**
   * Brings every running DC up to the highest position of {@code group} that is proved to exist
   * (section 5.4: each service learns what it misses from its peers, or by running an instance),
   * so that the logs can be compared position by position. Proved means: chosen at some DC, or
   * at most {@code provenPosition} — a position the caller was told of, such as the highest
   * commit or read position its clients saw (see {@link LogCatchUp#provenPosition}). A position that only
   * holds votes is not proved: catching up to it would run instances that decide it, changing
   * the log under test instead of observing it.
   *
   * @return the position every DC now holds the log up to
   * @throws IllegalStateException if a DC does not confirm in time
   */
  public long catchUpAll(String group, long provenPosition, Duration timeout) {
    long highest = LogCatchUp.highestProved(group, stores.values(), provenPosition);
    for (String dc : options.dcs()) {
      if (!isRunning(dc)) {
        continue;
      }
      try (UdpTransport t = UdpTransport.builder(config, dc).build()) {
        LogCatchUp.bringUp(t, dc, group, highest, timeout, Duration.ZERO);
      }
    }
    return highest;
  }

  /**
   * Writes the client-side cluster config (no service keys) as a properties file, readable by
   * its owner only: it holds the cluster key.
   */
  public void writeConfig(Path file) {
    layout.writeClientConfig(file, "paxoscp local cluster " + options.dcs()
        + "; the key seals every datagram: keep this file private");
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
