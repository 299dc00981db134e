package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.testing.Poll;
import org.paxoscp.wal.XgStep;

/**
 * Settling through a chain of cut lock tables (docs/cross-group.md, "Why id order, not age"):
 * crashed one-round transactions, every deadline passed, laid out so that settling one needs
 * another settled first, six groups deep. T (in h and g1) is all-prepared, so committed; g1's
 * begin lists U1 first and stops before T; U1 (in g1 and g2) needs g2, whose list stops before
 * U1 and starts with U2; and so on to g6. A reader of h helps down the chain (each help goes to a
 * lesser id, each transaction helped once) until the last link settles, and the chain unwinds
 * over its retries: T is settled COMMIT, and one read attempt costs a number of begins linear in
 * the chain, not exponential.
 */
@Timeout(300)
class CutLockChainTest {
  private static final int LINKS = 6;
  private static final String LONG = "k".repeat(200);
  private TestCluster cluster = new TestCluster(Duration.ofSeconds(1), 4096);

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private static void prepare(TxnClient c, String group, String txn, List<String> groups,
      String key, long deadline) {
    Transaction p = c.begin(group);
    p.put(key, txn);
    Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare(txn, groups, deadline), true)));
  }

  /** Lays out the chain; returns every group it uses. */
  private List<String> chain(TxnClient crashed, long deadline) {
    List<String> all = new ArrayList<>(List.of("h", "gz"));
    String t = "A-" + (LINKS + 1);
    prepare(crashed, "h", t, List.of("g1", "h"), "x", deadline);
    prepare(crashed, "g1", t, List.of("g1", "h"), LONG + t, deadline);
    for (int i = 1; i <= LINKS; i++) {
      String g = "g" + i;
      all.add(g);
      String u = "A-" + (LINKS + 1 - i); // a lesser id at each link
      List<String> groups = i < LINKS ? List.of(g, "g" + (i + 1)) : List.of(g, "gz");
      prepare(crashed, g, u, groups, LONG + u, deadline);
      if (i < LINKS) {
        prepare(crashed, "g" + (i + 1), u, groups, LONG + u, deadline);
      }
      for (int j = 0; j < 10; j++) { // ids between u and the link before: push that one past
        String filler = u + "-f" + j; //   the cut of g
        prepare(crashed, g, filler, List.of(g, "gz"), LONG + filler, deadline);
      }
    }
    return all;
  }

  private TxnClient client(String home, int attempts) {
    return cluster.closeLater(cluster.client(home, CommitProtocol.CP)
        .random(new SplittableRandom(attempts)).maxAttempts(attempts)
        .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(50)).build());
  }

  private int begins() {
    return cluster.services.values().stream().mapToInt(o -> o.beginRequests.get()).sum();
  }

  @Test
  void aReaderSettlesThroughAChainOfCutTables() throws Exception {
    TxnClient crashed = client("A", 1);
    long deadline = System.currentTimeMillis() + 200;
    List<String> groups = chain(crashed, deadline);
    Poll.until("the stuck transactions' deadline", Duration.ofSeconds(10),
        () -> System.currentTimeMillis() > deadline);
    for (int i = 1; i <= LINKS; i++) {
      Transaction t = crashed.begin("g" + i);
      assertTrue(t.locksCut(), "g" + i + " is cut");
      assertFalse(t.locks().cutListsIfHeld("A-" + (LINKS + 2 - i)),
          "g" + i + "'s list stops before the link before it");
      t.abort();
    }

    TxnClient once = client("B", 1);
    int before = begins();
    try {
      once.runInTransaction("h", x -> x.getString("x"));
    } catch (TransactionAbortedException e) {
      // One attempt may not get through the whole chain; what it cost is the point here.
    }
    int cost = begins() - before;
    assertTrue(cost < 30 * LINKS, "one read attempt cost " + cost + " begins");

    TxnClient reader = client("C", 200);
    assertEquals(Optional.of("A-" + (LINKS + 1)), reader.runInTransaction("h",
        x -> x.getString("x")), "T was settled COMMIT through the chain");
    CrossGroupChecker.Result verdict = CrossGroupChecker.check(
        TestCluster.quiescentLogs(cluster, groups), Map.of(), List.of());
    assertTrue(verdict.ok(), verdict.summary());
    System.out.printf("chain of %d cut groups: one read attempt cost %d begins; %s%n", LINKS,
        cost, verdict.summary());
  }
}
