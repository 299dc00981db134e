package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgStep;

/**
 * Each of the client's cross-group safety rules, broken on purpose in a schedule that needs it:
 * the shipped client refuses the schedule's dangerous step, and the broken one is caught by the
 * {@link CrossGroupChecker} with the violation the rule exists to prevent.
 */
@Timeout(120)
class CrossGroupPlantedBugTest {
  private static final List<String> GROUPS = List.of("ga", "gb");

  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofSeconds(1));
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home, CommitProtocol protocol, ClientHooks rules) {
    ClusterConfig config = cluster.config.withCrossGroup(new ClusterConfig.CrossGroup(25,
        Duration.ofSeconds(30)));
    return cluster.closeLater(TxnClient.builder(config, home, protocol)
        .transport(cluster.network.transport(home)).random(new SplittableRandom(7))
        .hooks(rules).build());
  }

  private CrossGroupChecker.Result check(List<CrossGroupChecker.Observation> obs) {
    return check(obs, Map.of());
  }

  /** The checker once every group of {@code atLeast} holds that position at every DC. */
  private CrossGroupChecker.Result check(List<CrossGroupChecker.Observation> obs,
      Map<String, Long> atLeast) {
    return CrossGroupChecker.check(TestCluster.quiescentLogs(cluster, GROUPS, atLeast),
        Map.of(), obs);
  }

  private static void assertOk(CrossGroupChecker.Result r) {
    assertTrue(r.ok(), r.summary());
  }

  private void seed(TxnClient c) {
    c.runInTransaction("ga", t -> {
      t.put("x", "x0");
      return null;
    });
    c.runInTransaction("gb", t -> {
      t.put("k", "k0");
      return null;
    });
  }

  /** DECIDE(COMMIT) although a PREPARE was not chosen: a group never gets the writes. */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void decideBeforeEveryPrepareIsChosen(CommitProtocol protocol) {
    for (boolean planted : List.of(false, true)) {
      ClientHooks rules = !planted ? ClientHooks.SHIPPED
          : ClientHooks.planting(ClientHooks.Plant.DECIDE_WITHOUT_EVERY_PREPARE);
      TxnClient c = client("A", protocol, rules);
      TxnClient other = client("B", protocol, ClientHooks.SHIPPED);
      seed(c);
      MultiTransaction t = c.beginMulti();
      t.get("gb", "k");
      t.put("ga", "x", "x1");
      t.put("gb", "k", "k1");
      other.runInTransaction("gb", u -> {
        u.put("k", "other");
        return null;
      });
      if (!planted) {
        assertThrows(TransactionAbortedException.class, t::commit,
            "the PREPARE in gb read a stale k; the shipped client aborts");
        assertOk(check(List.of()));
      } else {
        CommitResult decided = t.commit();
        assertEquals(CommitResult.Status.COMMITTED, decided.status());
        // (One round: the DECIDE(COMMIT) follows the PREPAREs, in the background.)
        CrossGroupChecker.Result r = check(List.of(), Map.of("ga", decided.position() + 1));
        assertTrue(r.count(Kind.XG_ATOMICITY) > 0, r.summary());
      }
      setUpAgain();
    }
  }

  /** A one-group transaction ignores an unresolved PREPARE's lock. */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void oneGroupEntryOverAnUnresolvedPrepare(CommitProtocol protocol) {
    for (boolean planted : List.of(false, true)) {
      ClientHooks rules = !planted ? ClientHooks.SHIPPED
          : ClientHooks.planting(ClientHooks.Plant.IGNORE_LOCKS);
      TxnClient crashed = client("A", protocol, ClientHooks.SHIPPED);
      seed(crashed);
      Transaction p = crashed.begin("gb");
      p.get("k");
      p.put("k", "prepared");
      long prepared = Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare("A-crashed", GROUPS,
          System.currentTimeMillis() + 60_000)))).position();
      TxnClient c = client("B", protocol, rules);
      Transaction t = TestCluster.beginAtLeast(c, "gb", prepared);
      if (!planted) {
        assertThrows(TransactionAbortedException.class, () -> t.get("k"));
        assertOk(check(List.of()));
      } else {
        t.put("k", t.getString("k").orElseThrow() + "+1");
        CommitResult c1 = t.commit();
        assertEquals(CommitResult.Status.COMMITTED, c1.status());
        CrossGroupChecker.Result r = check(List.of(), Map.of("gb", c1.position()));
        assertTrue(r.count(Kind.LOCK_VIOLATED) > 0, r.summary());
      }
      setUpAgain();
    }
  }

  /**
   * A DECIDE(COMMIT) that does not read the decision key enters the log after a resolver's
   * DECIDE(ABORT): two outcomes. (Basic Paxos never moves an entry past a lost position, so the
   * schedule needs promotion: Paxos-CP or leader combination.)
   */
  @ParameterizedTest
  @EnumSource(value = CommitProtocol.class, names = {"CP", "LEADER"})
  void secondDecideTakenAsFinal(CommitProtocol protocol) {
    for (boolean planted : List.of(false, true)) {
      ClientHooks rules = !planted ? ClientHooks.SHIPPED
          : ClientHooks.planting(ClientHooks.Plant.DECIDE_BLIND);
      TxnClient slow = client("A", protocol, rules);
      Transaction pa = slow.begin("ga");
      pa.put("x", "from-T0");
      Transaction pb = slow.begin("gb");
      pb.put("k", "from-T0");
      long prepared = Futures.join(pb.commitUnrecorded(pb.stepEntry(XgStep.prepare("A-slow", GROUPS,
          System.currentTimeMillis() - 1)))).position();
      // A reader meets the expired lock and decides ABORT in ga, then resolves gb.
      TxnClient reader = client("B", protocol, ClientHooks.SHIPPED);
      Transaction met = TestCluster.beginAtLeast(reader, "gb", prepared);
      assertThrows(TransactionAbortedException.class, () -> met.get("k"));
      assertEquals(CommitResult.Status.ABORTED, reader.crossGroupOutcome("A-slow", GROUPS));
      // The slow client's DECIDE(COMMIT), read position from before the ABORT.
      if (!planted) {
        assertThrows(TransactionAbortedException.class,
            () -> Futures.join(pa.commitUnrecorded(pa.stepEntry(XgStep.decide("A-slow", GROUPS, true)))));
        assertOk(check(List.of()));
      } else {
        long second = Futures.join(pa.commitUnrecorded(pa.stepEntry(XgStep.decide("A-slow", GROUPS, true))))
            .position();
        CrossGroupChecker.Result r = check(List.of(), Map.of("ga", second));
        assertTrue(r.count(Kind.XG_OUTCOME) > 0, r.summary());
      }
      setUpAgain();
    }
  }

  /** A read-only transaction over two groups commits without validating: a cycle. */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void readOnlyAcrossGroupsWithoutValidation(CommitProtocol protocol) {
    for (boolean planted : List.of(false, true)) {
      ClientHooks rules = !planted ? ClientHooks.SHIPPED
          : ClientHooks.planting(ClientHooks.Plant.READ_ONLY_UNVALIDATED);
      TxnClient c = client("A", protocol, rules);
      seed(c);
      MultiTransaction reader = c.beginMulti();
      String x = reader.getString("ga", "x").orElseThrow();
      assertEquals("x0", x);
      TxnClient writer = client("B", protocol, ClientHooks.SHIPPED);
      writer.runInMultiTransaction(w -> {
        w.put("ga", "x", "x1");
        w.put("gb", "k", "k1");
        return null;
      });
      // Wait until this client's session in gb is past the writer's RESOLVE (a read that meets
      // the lock resolves it and retries), so that the reader's begin in gb shows k1.
      for (int i = 0; i < 100; i++) {
        if (c.runInTransaction("gb", u -> u.getString("k").orElseThrow()).equals("k1")) {
          break;
        }
      }
      MultiTransaction r = reader;
      assertEquals("k1", r.getString("gb", "k").orElseThrow());
      if (!planted) {
        assertThrows(TransactionAbortedException.class, r::commit);
        assertOk(check(List.of()));
      } else {
        assertEquals(CommitResult.Status.COMMITTED, r.commit().status());
        CrossGroupChecker.Result verdict = check(List.of(
            CrossGroupTest.observation(r, TxnRecord.Status.COMMITTED, true)));
        assertTrue(verdict.count(Kind.XG_CYCLE) > 0, verdict.summary());
      }
      assertFalse(r.isActive());
      setUpAgain();
    }
  }

  private void setUpAgain() {
    try {
      cluster.close();
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
    cluster = new TestCluster(Duration.ofSeconds(1));
  }
}
