package org.paxoscp.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.local.UdpCluster.progress;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.local.UdpCluster.Writer;
import org.paxoscp.transport.MalformedDatagramException.Reason;

/**
 * Rolling changes of the wire under a running workload, as the docs tell an operator to make them:
 * three rolling restarts of the services over UDP, with clients of each step committing
 * throughout. The key change (docs/deploying.md): accept the new key; seal with it and accept the
 * old; drop the old. No commit may fail; afterwards a client of the first step is refused, and
 * the services count why. (The wire's own upgrade goes by cluster versions: RollingUpgradeIT.)
 */
@Timeout(180)
class KeyRolloverIT {
  private static final List<String> DCS = UdpCluster.DCS;
  private static final String OLD = "00112233445566778899aabbccddeeff";
  private static final String NEW = "ffeeddccbbaa99887766554433221100";
  /** The wire settings of each step of the key change: sealing key, accepted keys. */
  private static final List<Map<String, String>> KEY_STEPS = List.of(
      Map.of("paxoscp.key", OLD), Map.of("paxoscp.key", OLD, "paxoscp.key.accept", NEW),
      Map.of("paxoscp.key", NEW, "paxoscp.key.accept", OLD), Map.of("paxoscp.key", NEW));
  private List<Map<String, String>> steps;
  private UdpCluster cluster;

  @AfterEach
  void tearDown() {
    if (cluster != null) {
      cluster.close();
    }
  }

  private void startService(String dc, int step) {
    cluster.startService(dc, steps.get(step));
  }

  private TxnClient client(int step, String home, int seed) {
    return cluster.client(home, seed, steps.get(step));
  }

  @Test
  void aRollingKeyChangeUnderLoadFailsNoCommit() throws Exception {
    long[] counts = rollOut(KEY_STEPS, Reason.UNKNOWN_KEY);
    System.out.printf("key change under load: committed per step %s, UNKNOWN_KEY drops of the "
        + "stale client %d%n", java.util.Arrays.toString(java.util.Arrays.copyOf(counts, 4)),
        counts[4]);
  }

  /**
   * Runs the rolling restarts through {@code stepSettings}; returns the commits per step and,
   * last, the drops for {@code staleReason} of a client of the first step at the end.
   */
  private long[] rollOut(List<Map<String, String>> stepSettings, Reason staleReason)
      throws Exception {
    this.steps = stepSettings;
    this.cluster = new UdpCluster(Map.of());
    for (String dc : DCS) {
      startService(dc, 0);
    }
    List<Writer> writers = new ArrayList<>();
    writers.add(new Writer(client(0, "V", 1), 1).started());
    long[] committedAtStep = new long[steps.size()];
    for (int step = 1; step < steps.size(); step++) {
      // Clients of the step before keep writing while the services restart one by one.
      writers.add(new Writer(client(step, DCS.get(step % DCS.size()), step + 1), step + 1)
          .started());
      for (String dc : DCS) {
        progress(writers, "before " + dc + " restarts into step " + step);
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
    assertEquals(commits, UdpCluster.counted(reader, commits));

    // A client of the first step (the retired key, or version 3) gets no answer; the services
    // say why.
    long before = cluster.transports.values().stream()
        .mapToLong(t -> t.droppedCount(staleReason)).sum();
    TxnClient stale = client(0, "V", 100);
    UnavailableException refused = assertThrows(UnavailableException.class,
        () -> stale.begin("g0"));
    if (staleReason == Reason.UNKNOWN_KEY) {
      assertTrue(refused.getMessage().contains("paxoscp.key"), refused.getMessage());
    }
    long after = cluster.transports.values().stream()
        .mapToLong(t -> t.droppedCount(staleReason)).sum();
    assertTrue(after > before, "no " + staleReason + " drop counted");
    long[] counts = java.util.Arrays.copyOf(committedAtStep, steps.size() + 1);
    counts[steps.size()] = after - before;
    return counts;
  }
}
