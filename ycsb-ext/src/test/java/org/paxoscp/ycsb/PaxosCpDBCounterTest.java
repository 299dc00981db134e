package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.testing.Poll;
import site.ycsb.ByteIterator;
import site.ycsb.Status;
import site.ycsb.measurements.Measurements;

/**
 * The binding's counters ({@code add}, {@code readCounter}) against an in-process cluster: in
 * and outside a transaction, two adds that lose a position to each other both commit while a
 * read-then-add conflicts, and an add that cannot apply is REFUSED.
 */
@Timeout(60)
class PaxosCpDBCounterTest {
  private final List<PaxosCpDB> dbs = new ArrayList<>();

  @BeforeEach
  void startCluster() {
    Measurements.setProperties(new Properties());
    InProcessPaxosCpDB.cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
  }

  @AfterEach
  void stop() throws Exception {
    for (PaxosCpDB db : dbs) {
      db.cleanup();
    }
    InProcessPaxosCpDB.cluster.close();
  }

  /** A binding homed at {@code dc}, in Paxos-CP, each a client of its own. */
  private PaxosCpDB binding(String dc) throws Exception {
    Properties p = new Properties();
    p.setProperty(PaxosCpDB.DC, dc);
    p.setProperty(PaxosCpDB.PROTOCOL, "cp");
    PaxosCpDB db = new InProcessPaxosCpDB();
    db.setProperties(p);
    db.init();
    dbs.add(db);
    return db;
  }

  private static final String V = PaxosCpDB.VALUE_FIELD;

  @Test
  void addsOutsideAndInsideATransactionAndReadsTheCounterAsNumberAndText() throws Exception {
    PaxosCpDB db = binding("A");
    assertEquals(0, db.readCounter("t", "hits", V).value(), "no value counts as 0");
    assertEquals(Status.OK, db.add("t", "hits", V, 5));
    assertTrue(db.begin("t:hits"));
    assertEquals(Status.OK, db.add("t", "hits", V, 3));
    assertEquals(Status.OK, db.add("t", "hits", V, -1));
    assertEquals(7, db.readCounter("t", "hits", V).value(), "its own adds applied");
    assertEquals(PaxosCpDB.Outcome.COMMITTED, db.commit().outcome());

    PaxosCpDB.CounterRead r = db.readCounter("t", "hits", V);
    assertEquals(Status.OK, r.status());
    assertEquals(7, r.value());
    Map<String, ByteIterator> out = new HashMap<>();
    assertEquals(Status.OK, db.read("t", "hits", Set.of(V), out));
    assertEquals("7", out.get(V).toString(), "stored as decimal text");

    assertTrue(db.begin("g"));
    assertEquals(Status.OK, db.update("g", "name", TxnWorkload.value("alice")));
    assertEquals("BAD_REQUEST", db.add("g", "name", V, 1).getName(),
        "its own put is not a counter");
    db.abort();
  }

  @Test
  void twoAddsThatLoseAPositionToEachOtherBothCommitButAReadThenAddConflicts()
      throws Exception {
    PaxosCpDB first = binding("A");
    PaxosCpDB second = binding("B");
    // Both begin at one read position; the first commits, so the second's position is taken.
    assertTrue(first.begin("g"));
    assertTrue(second.begin("g"));
    assertEquals(Status.OK, first.add("g", "c", V, 2));
    assertEquals(Status.OK, second.add("g", "c", V, 3));
    PaxosCpDB.CommitInfo a = first.commit();
    PaxosCpDB.CommitInfo b = second.commit();
    assertEquals(PaxosCpDB.Outcome.COMMITTED, a.outcome());
    assertEquals(PaxosCpDB.Outcome.COMMITTED, b.outcome(), "an add reads nothing: promoted");
    assertTrue(b.position() > a.position() && b.promotions() >= 1, b.toString());

    // The same with a read of the counter first: the second read what the first wrote.
    assertTrue(first.begin("g"));
    assertTrue(second.begin("g"));
    assertEquals(5, first.readCounter("g", "c", V).value());
    assertEquals(5, second.readCounter("g", "c", V).value());
    assertEquals(Status.OK, first.add("g", "c", V, 2));
    assertEquals(Status.OK, second.add("g", "c", V, 3));
    PaxosCpDB.CommitInfo c = first.commit();
    PaxosCpDB.CommitInfo d = second.commit();
    assertEquals(PaxosCpDB.Outcome.COMMITTED, c.outcome());
    assertEquals(PaxosCpDB.Outcome.ABORTED, d.outcome());
    assertEquals(c.position(), d.lostTo(), "lost to the conflicting entry: " + d);
    assertEquals(-1, b.lostTo());

    for (String dc : List.of("A", "B", "C")) {
      try (TxnClient client = Harness.validationClient(dc)) {
        Poll.until("DC " + dc + " to apply position " + c.position(), Duration.ofSeconds(20),
            () -> client.runInTransaction("g", t -> t.readPosition() >= c.position()
                && t.getCounter(PaxosCpDB.item("c", V)) == 7));
      }
    }
  }

  @Test
  void anAddThatWouldOverflowIsRefusedAndHasNoEffect() throws Exception {
    PaxosCpDB db = binding("A");
    // Record "big" of table t is the group t:big outside a transaction (record grouping).
    String group = "t:big";
    assertTrue(db.begin(group));
    assertEquals(Status.OK, db.update("t", "big", TxnWorkload.value(Long.toString(
        Long.MAX_VALUE))));
    assertEquals(Status.OK, db.update("t", "other", TxnWorkload.value("x")));
    assertEquals(PaxosCpDB.Outcome.COMMITTED, db.commit().outcome());

    assertTrue(db.begin(group));
    assertEquals(Status.OK, db.add("t", "big", V, 1));
    assertEquals(Status.OK, db.update("t", "other", TxnWorkload.value("y")));
    PaxosCpDB.CommitInfo info = db.commit();
    assertEquals(PaxosCpDB.Outcome.REFUSED, info.outcome());
    assertTrue(info.position() > 0, "in the log: " + info);

    assertEquals("REFUSED", db.add("t", "big", V, 1).getName(), "outside a transaction");
    assertEquals(Long.MAX_VALUE, db.readCounter("t", "big", V).value());
    assertTrue(db.begin(group));
    Map<String, ByteIterator> out = new HashMap<>();
    assertEquals(Status.OK, db.read("t", "other", Set.of(V), out));
    assertEquals("x", out.get(V).toString(), "the refused transaction's put took no effect");
    assertEquals("BAD_REQUEST", db.readCounter("t", "other", V).status().getName(),
        "not a counter");
    db.abort();
  }

  @Test
  void aCommitWithoutAnUnknownOutcomeHasNothingToSettle() throws Exception {
    PaxosCpDB db = binding("A");
    assertEquals(Status.OK, db.add("t", "n", V, 1));
    IllegalStateException e = assertThrows(IllegalStateException.class, db::settle);
    assertTrue(e.getMessage().contains("no unknown outcome"), e.getMessage());
  }
}
