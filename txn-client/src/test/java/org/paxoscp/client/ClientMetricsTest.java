package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;

/** A client's meters move for each outcome: committed, aborted by reason, unknown, unavailable. */
@Timeout(60)
class ClientMetricsTest {
  private TestCluster cluster;
  private SimpleMeterRegistry registry;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofMillis(300));
    registry = new SimpleMeterRegistry();
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
    registry.close();
  }

  private TxnClient client(String home) {
    return cluster.closeLater(cluster.client(home, CommitProtocol.CP).meterRegistry(registry)
        .random(new SplittableRandom(3)).build());
  }

  private long commits(String outcome, String reason) {
    Timer t = registry.find("paxoscp.client.commit").tag("outcome", outcome)
        .tag("reason", reason).tag("mode", "cp").timer();
    return t == null ? 0 : t.count();
  }

  private void awaitApplied(long position) {
    for (String dc : TestCluster.DCS) {
      LogApplier applier = new LogApplier(cluster.stores.get(dc));
      Poll.until(dc + " applied " + position, Duration.ofSeconds(5),
          () -> applier.appliedWatermark("g") >= position);
    }
  }

  @Test
  void aCommitAndAConflictAreCountedByOutcomeAndReason() {
    TxnClient a = client("A");
    TxnClient b = client("B");
    Transaction ta = a.begin("g");
    Transaction tb = b.begin("g");
    ta.get("k");
    tb.get("k");
    ta.put("k", "a");
    tb.put("k", "b");
    ta.commit();
    assertThrows(TransactionAbortedException.class, tb::commit);
    assertEquals(1, commits("committed", "none"));
    assertEquals(1, commits("aborted", "conflict"));
    Timer committed = registry.find("paxoscp.client.commit").tag("outcome", "committed")
        .tag("dc", "A").timer();
    assertTrue(committed.totalTime(java.util.concurrent.TimeUnit.NANOSECONDS) > 0);
    assertEquals(2, registry.find("paxoscp.client.begin").tag("result", "ok").timers().stream()
        .mapToLong(Timer::count).sum());
  }

  @Test
  void anUnknownOutcomeAndAnUnavailableBeginAreCounted() {
    TxnClient a = client("A");
    Transaction t = a.begin("g");
    t.put("k", "v1");
    awaitApplied(t.commit().position());
    cluster.setDown("B", true);
    cluster.setDown("C", true);
    // A is the fast-path leader for the next position: its ACCEPT goes out before it learns
    // that B and C are gone, so the outcome is unknown.
    Transaction u = a.begin("g");
    u.put("k", "v2");
    assertThrows(OutcomeUnknownException.class, u::commit);
    assertEquals(1, commits("unknown", "none"));

    cluster.setDown("A", true);
    assertThrows(UnavailableException.class, () -> a.begin("g"));
    Timer unavailable = registry.find("paxoscp.client.begin").tag("result", "unavailable")
        .timer();
    assertEquals(1, unavailable.count());
    Counter failovers = registry.find("paxoscp.client.failovers").counter();
    assertTrue(failovers.count() >= 3, "one per DC that failed the begin: "
        + failovers.count());
  }
}
