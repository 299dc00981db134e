package org.paxoscp.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.transport.UdpTransport;

/**
 * Rolling changes of the wire under a running workload, as the docs tell an operator to make them:
 * three rolling restarts of the services over UDP, with clients of each step committing
 * throughout. The key change (docs/deploying.md): accept the new key; seal with it and accept the
 * old; drop the old. The rollout of wire version 4 from version 3 (docs/wire.md): send 3 and open
 * both; send 4 and open both; open 4 only. No commit may fail; afterwards a client of the first
 * step is refused, and the services count why.
 */
@Timeout(180)
class KeyRolloverIT {
  private static final List<String> DCS = List.of("V", "O", "C");
  private static final String OLD = "00112233445566778899aabbccddeeff";
  private static final String NEW = "ffeeddccbbaa99887766554433221100";
  /** The wire settings of each step of the key change: sealing key, accepted keys. */
  private static final List<Map<String, String>> KEY_STEPS = List.of(
      Map.of("paxoscp.key", OLD), Map.of("paxoscp.key", OLD, "paxoscp.key.accept", NEW),
      Map.of("paxoscp.key", NEW, "paxoscp.key.accept", OLD), Map.of("paxoscp.key", NEW));
  /**
   * The rollout of wire version 4: the first step stands for a build that speaks version 3 (it
   * sends 3; what it opens is not tested here, the codec's test checks that it gets only 3).
   */
  private static final List<Map<String, String>> WIRE_STEPS = List.of(
      Map.of("paxoscp.wire.version", "3", "paxoscp.wire.accept.v3", "true"),
      Map.of("paxoscp.wire.version", "3", "paxoscp.wire.accept.v3", "true"),
      Map.of("paxoscp.wire.version", "4", "paxoscp.wire.accept.v3", "true"),
      Map.of("paxoscp.wire.version", "4"));

  private List<Map<String, String>> steps;

  private final Map<String, Integer> ports = new LinkedHashMap<>();
  private final Map<String, InMemoryKvStore> stores = new LinkedHashMap<>();
  private final Map<String, ServiceRunner> services = new LinkedHashMap<>();
  /** Each service's UDP transport, as the product opens it (WAN emulation is off here). */
  private final Map<String, UdpTransport> transports = new LinkedHashMap<>();
  private final List<TxnClient> clients = new ArrayList<>();

  @AfterEach
  void tearDown() {
    clients.forEach(TxnClient::close);
    services.values().forEach(ServiceRunner::close);
  }

  private Map<String, String> cluster(int step) {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("paxoscp.dcs", String.join(",", DCS));
    p.put("paxoscp.key", OLD);
    p.putAll(steps.get(step));
    // Timeouts with room for a loaded machine: a restart must not turn into an unavailable DC.
    p.put("paxoscp.request.timeout.ms", "1000");
    p.put("paxoscp.proposer.phase.timeout.ms", "1000");
    for (String dc : DCS) {
      p.put("paxoscp.dc." + dc + ".endpoints", "127.0.0.1:" + ports.get(dc));
    }
    return p;
  }

  private void startService(String dc, int step) {
    Map<String, String> p = cluster(step);
    p.put(ServiceConfig.DC.name(), dc);
    p.put(ServiceConfig.BIND.name(), "127.0.0.1:" + ports.get(dc));
    p.put(ServiceConfig.STORE.name(), "memory");
    ServiceTransportFactory udp = (cluster, localDc, bind, endpoints, handler, threads) -> {
      UdpTransport t = UdpTransport.builder(cluster, localDc).bind(bind).endpoints(endpoints)
          .handler(handler, threads).build();
      transports.put(localDc, t);
      return new ServiceTransportFactory.Bound(t, t.boundAddress());
    };
    services.put(dc, ServiceRunner.start(ServiceConfig.fromProperties(p), udp, stores.get(dc)));
  }

  private TxnClient client(int step, String home, int seed) {
    TxnClient c = TxnClient.builder(ClusterConfig.fromProperties(cluster(step)), home,
        CommitProtocol.CP).random(new SplittableRandom(seed)).maxAttempts(30)
        .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(200)).build();
    clients.add(c);
    return c;
  }

  /** A client committing increments until stopped; failures are collected, never thrown. */
  private static final class Writer implements Runnable {
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
        String group = "g" + random.nextInt(4);
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
  }

  /** {@code w} once it has committed a few (a loaded machine may be slow to start it). */
  private static Writer started(Writer w) {
    Poll.until("a first few commits of " + w.thread.getName(), Duration.ofSeconds(60),
        () -> w.committed.get() >= 3 || !w.failures.isEmpty());
    return w;
  }

  /**
   * Returns once every running client has committed twice more (or failed): the cluster serves
   * them all {@code when}, before the next restart.
   */
  private static void progress(List<Writer> writers, String when) {
    Map<Writer, Long> before = new java.util.IdentityHashMap<>();
    writers.stream().filter(w -> !w.stop.get()).forEach(w -> before.put(w, w.committed.get()));
    Poll.until("every client committing " + when, Duration.ofSeconds(60),
        () -> before.entrySet().stream().allMatch(e -> e.getKey().committed.get()
            >= e.getValue() + 2 || !e.getKey().failures.isEmpty()));
  }

  @Test
  void aRollingKeyChangeUnderLoadFailsNoCommit() throws Exception {
    long[] counts = rollOut(KEY_STEPS, Reason.UNKNOWN_KEY);
    System.out.printf("key change under load: committed per step %s, UNKNOWN_KEY drops of the "
        + "stale client %d%n", java.util.Arrays.toString(java.util.Arrays.copyOf(counts, 4)),
        counts[4]);
  }

  @Test
  void aRollingWireUpgradeUnderLoadFailsNoCommit() throws Exception {
    long[] counts = rollOut(WIRE_STEPS, Reason.BAD_VERSION);
    System.out.printf("wire version 3 to 4 under load: committed per step %s, BAD_VERSION drops "
        + "of the version 3 client %d%n",
        java.util.Arrays.toString(java.util.Arrays.copyOf(counts, 4)), counts[4]);
  }

  /**
   * Runs the rolling restarts through {@code stepSettings}; returns the commits per step and,
   * last, the drops for {@code staleReason} of a client of the first step at the end.
   */
  private long[] rollOut(List<Map<String, String>> stepSettings, Reason staleReason)
      throws Exception {
    this.steps = stepSettings;
    for (String dc : DCS) {
      ports.put(dc, FreePorts.udp());
      stores.put(dc, new InMemoryKvStore());
    }
    for (String dc : DCS) {
      startService(dc, 0);
    }
    List<Writer> writers = new ArrayList<>();
    writers.add(started(new Writer(client(0, "V", 1), 1)));
    long[] committedAtStep = new long[steps.size()];
    for (int step = 1; step < steps.size(); step++) {
      // Clients of the step before keep writing while the services restart one by one.
      writers.add(started(new Writer(client(step, DCS.get(step % DCS.size()), step + 1),
          step + 1)));
      for (String dc : DCS) {
        progress(writers, "before " + dc + " restarts into step " + step);
        services.remove(dc).close();
        startService(dc, step);
      }
      progress(writers, "with every service at step " + step);
      // The clients two steps behind would be refused by the next step's services: they are
      // restarted (replaced) before it, as an operator restarts clients with the services.
      Writer behind = writers.get(step - 1);
      behind.stop();
      committedAtStep[step - 1] = behind.committed.get();
      assertEquals(List.of(), List.copyOf(behind.failures),
          "commits failed for the client of step " + (step - 1));
    }
    progress(writers, "at the last step");
    Writer last = writers.get(steps.size() - 1);
    last.stop();
    committedAtStep[steps.size() - 1] = last.committed.get();
    assertEquals(List.of(), List.copyOf(last.failures));
    for (int step = 0; step < steps.size(); step++) {
      assertTrue(committedAtStep[step] > 0, "the client of step " + step + " committed nothing");
    }

    // Every increment is in the log once: the counters add up to the commits (once the reader's
    // DC has applied them all; a begin reads what its DC applied).
    TxnClient reader = client(3, "O", 99);
    long commits = java.util.Arrays.stream(committedAtStep).sum();
    long[] total = new long[1];
    Poll.until("counters adding up to " + commits, Duration.ofSeconds(20), () -> {
      total[0] = 0;
      for (int g = 0; g < 4; g++) {
        total[0] += reader.runInTransaction("g" + g,
            t -> t.getString("n").map(Long::parseLong).orElse(0L));
      }
      return total[0] >= commits;
    });
    assertEquals(commits, total[0]);

    // A client of the first step (the retired key, or version 3) gets no answer; the services
    // say why.
    long before = transports.values().stream()
        .mapToLong(t -> t.droppedCount(staleReason)).sum();
    TxnClient stale = client(0, "V", 100);
    UnavailableException refused = assertThrows(UnavailableException.class,
        () -> stale.begin("g0"));
    if (staleReason == Reason.UNKNOWN_KEY) {
      assertTrue(refused.getMessage().contains("paxoscp.key"), refused.getMessage());
    }
    long after = transports.values().stream()
        .mapToLong(t -> t.droppedCount(staleReason)).sum();
    assertTrue(after > before, "no " + staleReason + " drop counted");
    long[] counts = java.util.Arrays.copyOf(committedAtStep, steps.size() + 1);
    counts[steps.size()] = after - before;
    return counts;
  }
}
