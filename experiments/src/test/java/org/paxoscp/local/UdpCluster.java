package org.paxoscp.local;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.version.ClusterVersionRow;

/**
 * Three DCs' services over UDP on loopback, each on a fixed port with a store in memory that
 * outlives its restarts, and clients committing increments while services are restarted with
 * other settings: the harness of the rolling-change tests.
 */
final class UdpCluster implements AutoCloseable {
  static final List<String> DCS = List.of("V", "O", "C");
  /** The groups the writers increment a counter in. */
  static final int GROUPS = 4;

  final Map<String, Integer> ports = new LinkedHashMap<>();
  final Map<String, InMemoryKvStore> stores = new LinkedHashMap<>();
  final Map<String, ServiceRunner> services = new LinkedHashMap<>();
  /** Each service's UDP transport, as the product opens it (WAN emulation is off here). */
  final Map<String, UdpTransport> transports = new LinkedHashMap<>();
  private final List<TxnClient> clients = new ArrayList<>();
  private final Map<String, String> common;

  /** {@code common}: settings of every process (a key, timeouts...), before each one's own. */
  UdpCluster(Map<String, String> common) {
    this.common = Map.copyOf(common);
    for (String dc : DCS) {
      ports.put(dc, FreePorts.udp());
      stores.put(dc, new InMemoryKvStore());
    }
  }

  /** The cluster's settings with {@code own} over them. */
  Map<String, String> settings(Map<String, String> own) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("paxoscp.dcs", String.join(",", DCS));
    p.put("paxoscp.key", "00112233445566778899aabbccddeeff");
    // Timeouts with room for a loaded machine: a restart must not turn into an unavailable DC.
    p.put("paxoscp.request.timeout.ms", "1000");
    p.put("paxoscp.proposer.phase.timeout.ms", "1000");
    for (String dc : DCS) {
      p.put("paxoscp.dc." + dc + ".endpoints", "127.0.0.1:" + ports.get(dc));
    }
    p.putAll(common);
    p.putAll(own);
    return p;
  }

  /** Starts DC {@code dc}'s service (stopping the running one first) with {@code own}. */
  void startService(String dc, Map<String, String> own) {
    startService(dc, own, false);
  }

  /**
   * Starts DC {@code dc}'s service as a build from before cluster versions runs: it answers no
   * version request (an unknown type is dropped), writes no version row, and sends and opens
   * wire version 4 only (a new, empty store starts at the newest version).
   */
  void startServiceBeforeVersions(String dc) {
    startService(dc, Map.of(), true);
  }

  private void startService(String dc, Map<String, String> own, boolean beforeVersions) {
    ServiceRunner running = services.remove(dc);
    if (running != null) {
      running.close();
    }
    Map<String, String> p = settings(own);
    p.put(ServiceConfig.DC.name(), dc);
    p.put(ServiceConfig.BIND.name(), "127.0.0.1:" + ports.get(dc));
    p.put(ServiceConfig.STORE.name(), "memory");
    ServiceTransportFactory udp = (cluster, localDc, bind, endpoints, handler, threads) -> {
      RequestHandler h = !beforeVersions ? handler : (from, m) ->
          m instanceof Message.VersionRequest || m instanceof Message.VersionChange
              ? CompletableFuture.completedFuture(null) : handler.handle(from, m);
      UdpTransport t = UdpTransport.builder(cluster, localDc).bind(bind).endpoints(endpoints)
          .handler(h, threads).build();
      transports.put(localDc, t);
      return new ServiceTransportFactory.Bound(t, t.boundAddress());
    };
    KvStore store = stores.get(dc);
    if (beforeVersions) {
      store = new ForwardingKvStore(store) {
        @Override
        public Map<String, Cell> readRow(Table table, byte[] row) {
          return versionRow(table, row) ? Map.of() : super.readRow(table, row);
        }

        @Override
        public boolean checkAndWrite(Table table, byte[] row, String checkColumn,
            byte[] expected, long timestamp, Map<String, byte[]> cells) {
          return !versionRow(table, row)
              && super.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
        }
      };
    }
    services.put(dc, ServiceRunner.start(ServiceConfig.fromProperties(p), udp, store));
  }

  private static boolean versionRow(KvStore.Table table, byte[] row) {
    return table == KvStore.Table.META && Arrays.equals(row, ClusterVersionRow.ROW);
  }

  /** A Paxos-CP client of home DC {@code home} with {@code own} settings. */
  TxnClient client(String home, int seed, Map<String, String> own) {
    TxnClient c = TxnClient.builder(ClusterConfig.fromProperties(settings(own)), home,
        CommitProtocol.CP).random(new SplittableRandom(seed)).maxAttempts(30)
        .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(200)).build();
    clients.add(c);
    return c;
  }

  /**
   * The sum of the counters, read by {@code reader} once its DC applied at least {@code commits}
   * increments (a begin reads what its DC applied).
   */
  static long counted(TxnClient reader, long commits) {
    long[] total = new long[1];
    Poll.until("counters adding up to " + commits, Duration.ofSeconds(20), () -> {
      total[0] = 0;
      for (int g = 0; g < GROUPS; g++) {
        total[0] += reader.runInTransaction("g" + g,
            t -> t.getString("n").map(Long::parseLong).orElse(0L));
      }
      return total[0] >= commits;
    });
    return total[0];
  }

  @Override
  public void close() {
    clients.forEach(TxnClient::close);
    services.values().forEach(ServiceRunner::close);
  }

  /** A client committing increments until stopped; failures are collected, never thrown. */
  static final class Writer implements Runnable {
    final TxnClient client;
    final AtomicBoolean stop = new AtomicBoolean();
    final AtomicLong committed = new AtomicLong();
    final ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
    final Thread thread;
    final SplittableRandom random;

    Writer(TxnClient client, int seed) {
      this.client = client;
      this.random = new SplittableRandom(seed);
      this.thread = new Thread(this, "writer-" + seed);
      thread.start();
    }

    @Override
    public void run() {
      while (!stop.get()) {
        String group = "g" + random.nextInt(GROUPS);
        try {
          client.runInTransaction(group, t -> {
            long n = t.getString("n").map(Long::parseLong).orElse(0L);
            t.put("n", Long.toString(n + 1));
            return null;
          });
          committed.incrementAndGet();
        } catch (RuntimeException e) {
          failures.add(group + ": " + e);
        }
      }
    }

    void stop() throws InterruptedException {
      stop.set(true);
      thread.join(30_000);
    }

    /** This writer once it has committed a few (a loaded machine may be slow to start it). */
    Writer started() {
      Poll.until("a first few commits of " + thread.getName(), Duration.ofSeconds(60),
          () -> committed.get() >= 3 || !failures.isEmpty());
      return this;
    }
  }

  /**
   * Returns once every running writer has committed twice more (or failed): the cluster serves
   * them all {@code when}.
   */
  static void progress(List<Writer> writers, String when) {
    Map<Writer, Long> before = new IdentityHashMap<>();
    writers.stream().filter(w -> !w.stop.get()).forEach(w -> before.put(w, w.committed.get()));
    Poll.until("every client committing " + when, Duration.ofSeconds(60),
        () -> before.entrySet().stream().allMatch(e -> e.getKey().committed.get()
            >= e.getValue() + 2 || !e.getKey().failures.isEmpty()));
  }
}
