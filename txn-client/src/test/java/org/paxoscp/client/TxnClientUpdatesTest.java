package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Counters and counting sets: what an add and a set update write, what they conflict with, how
 * a read sees its own updates, and what a refused entry leaves.
 */
@Timeout(60)
class TxnClientUpdatesTest {
  private TestCluster cluster;

  @AfterEach
  void tearDown() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  private TxnClient client(String home, CommitProtocol protocol) {
    if (cluster == null) {
      cluster = new TestCluster(Duration.ofSeconds(1));
    }
    return cluster.closeLater(cluster.client(home, protocol).random(new SplittableRandom(1))
        .build());
  }

  /** The entry of {@code txnId} at {@code position}, once every DC holds it. */
  private LogEntry entryOf(String group, long position, String txnId) {
    var logs = TestCluster.quiescentLogs(cluster, List.of(group),
        Map.of(group, position)).get(group);
    for (var log : logs.values()) {
      LogValue v = log.get(position);
      if (v != null) {
        return v.find(txnId).orElseThrow();
      }
    }
    throw new AssertionError("no DC holds position " + position + " of " + group);
  }

  private static long counterAt(TxnClient c, String group, long atLeast, String key) {
    Transaction t = TestCluster.beginAtLeast(c, group, atLeast);
    try {
      return t.getCounter(key);
    } finally {
      t.abort();
    }
  }

  /** Paxos-CP promotes and leader combination batches an adder: neither read anything. */
  @ParameterizedTest
  @EnumSource(value = CommitProtocol.class, names = {"CP", "LEADER"})
  void concurrentAddsToOneCounterNeverConflict(CommitProtocol protocol) {
    TxnClient a = client("A", protocol);
    TxnClient b = client("B", protocol);
    Transaction first = TestCluster.beginAtLeast(a, "g", 0);
    Transaction second = TestCluster.beginAtLeast(b, "g", 0);
    assertEquals(first.readPosition(), second.readPosition());
    first.add("likes", 3);
    second.add("likes", 4);
    second.add("likes", -1); // one transaction's adds to a key add up
    long p1 = first.commit().position();
    long p2 = second.commit().position();
    LogEntry e = entryOf("g", p2, second.txnId());
    assertTrue(e.readSet().isEmpty(), "an add reads nothing: " + e);
    assertEquals(Mutation.add(3), e.writes().get("likes"));
    assertEquals(6, counterAt(a, "g", Math.max(p1, p2), "likes"));
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aReadOfACounterConflictsWithAConcurrentAdd(CommitProtocol protocol) {
    TxnClient a = client("A", protocol);
    Transaction reader = TestCluster.beginAtLeast(a, "g", 0);
    assertEquals(0, reader.getCounter("stock"));
    reader.put("order", "placed while stock was 0");
    Transaction adder = TestCluster.beginAtLeast(client("B", protocol), "g", 0);
    adder.add("stock", 10);
    adder.commit();
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class,
        reader::commit);
    assertEquals(CommitResult.Status.ABORTED, e.result().status());
  }

  @Test
  void aReadOfAKeyItAddsToSeesTheSnapshotPlusItsOwnDeltasAndJoinsTheReadSet() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction seed = c.begin("g");
    seed.put("balance", "10");
    long p = seed.commit().position();
    Transaction t = TestCluster.beginAtLeast(c, "g", p);
    t.add("balance", 5);
    assertEquals(15, t.getCounter("balance"));
    assertEquals(Optional.of("15"), t.getString("balance"));
    t.add("balance", 1);
    assertEquals(16, t.getCounter("balance"));
    long q = t.commit().position();
    LogEntry e = entryOf("g", q, t.txnId());
    assertEquals(new TreeSet<>(List.of("balance")), e.readSet());
    assertEquals(Mutation.add(6), e.writes().get("balance"));
    assertEquals(16, counterAt(c, "g", q, "balance"));
  }

  @Test
  void anAddPastTheRangeIsRefusedWholeAndTheCommitSaysSo() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction seed = c.begin("g");
    seed.put("c", Long.toString(Long.MAX_VALUE - 1));
    long p = seed.commit().position();
    Transaction fits = TestCluster.beginAtLeast(c, "g", p);
    fits.add("c", 1);
    long q = fits.commit().position();
    Transaction over = TestCluster.beginAtLeast(c, "g", q);
    over.add("c", 1);
    over.put("note", "written only if the add applies");
    UpdateRefusedException e = assertThrows(UpdateRefusedException.class, over::commit);
    assertTrue(e.detail().startsWith("c: "), e.detail());
    long at = e.position().orElseThrow();
    assertTrue(at > q);
    // The entry is in the log, and had no effect at any DC.
    assertEquals(over.txnId(), entryOf("g", at, over.txnId()).txnId());
    Transaction after = TestCluster.beginAtLeast(c, "g", at);
    assertEquals(Long.MAX_VALUE, after.getCounter("c"));
    assertEquals(Optional.empty(), after.get("note"));
    after.abort();
  }

  @Test
  void anAddToAValueThatIsNotACounterIsRefused() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction seed = c.begin("g");
    seed.put("name", "not a number");
    long p = seed.commit().position();
    Transaction t = TestCluster.beginAtLeast(c, "g", p);
    t.add("name", 1);
    UpdateRefusedException e = assertThrows(UpdateRefusedException.class, t::commit);
    assertTrue(e.detail().contains("not a counter"), e.detail());
    Transaction r = TestCluster.beginAtLeast(c, "g", p);
    assertThrows(InvalidArgumentException.class, () -> r.getCounter("name"));
    r.abort();
  }

  @Test
  void countingSetsFollowWalter() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    t.setAdd("tags", "red");
    t.setAdd("tags", "blue");
    long p = t.commit().position();
    Transaction u = TestCluster.beginAtLeast(c, "g", p);
    u.setRemove("tags", "red");
    u.setRemove("tags", "green"); // removed more often than added: counted -1, not present
    assertEquals(new TreeSet<>(List.of("blue")), u.getSet("tags"));
    long q = u.commit().position();
    Transaction r = TestCluster.beginAtLeast(c, "g", q);
    assertEquals(new TreeSet<>(List.of("blue")), r.getSet("tags"));
    assertEquals(Map.of("blue", 1L, "green", -1L), r.getSetCounts("tags"));
    r.abort();
  }

  @Test
  void oneTransactionCannotMixKindsOnAKeyAndNothingIsBufferedThen() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    t.put("x", "text");
    assertThrows(InvalidArgumentException.class, () -> t.add("x", 1));
    assertEquals(Optional.of("text"), t.getString("x"), "the put is kept");
    t.add("n", 1);
    assertThrows(InvalidArgumentException.class, () -> t.setAdd("n", "e"));
    t.add("m", Long.MAX_VALUE);
    assertThrows(InvalidArgumentException.class, () -> t.add("m", 1));
    assertThrows(InvalidArgumentException.class, () -> t.setAdd("s", ""));
    t.put("p", "5");
    t.add("p", 2);
    assertEquals(Optional.of("7"), t.getString("p"), "an add to its own put folds into it");
    assertTrue(t.isActive());
    t.abort();
  }

  @Test
  void acrossGroupsAnAddBecomesAReadAndAPut() {
    TxnClient c = client("A", CommitProtocol.CP);
    MultiTransaction m = c.beginMulti();
    m.add("g1", "visits", 2);
    m.add("g2", "visits", 5);
    m.setAdd("g2", "who", "ann");
    m.put("g2", "other", "x");
    CommitResult r = m.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    MultiTransaction check = c.beginMulti();
    assertEquals(2, check.getCounter("g1", "visits"));
    assertEquals(new TreeSet<>(List.of("ann")), check.getSet("g2", "who"));
    check.abort();
    // A later transaction across the same groups adds on top.
    MultiTransaction again = c.beginMulti();
    again.add("g1", "visits", 1);
    again.add("g2", "visits", 1);
    again.commit();
    MultiTransaction last = c.beginMulti();
    assertEquals(3, last.getCounter("g1", "visits"));
    assertEquals(6, last.getCounter("g2", "visits"));
    last.abort();
  }

  @Test
  void acrossGroupsAnOverflowIsRefusedBeforeAnythingIsSent() {
    TxnClient c = client("A", CommitProtocol.CP);
    MultiTransaction seed = c.beginMulti();
    seed.put("g1", "c", Long.toString(Long.MAX_VALUE));
    seed.put("g2", "d", "1");
    seed.commit();
    MultiTransaction m = c.beginMulti();
    m.add("g1", "c", 1);
    m.put("g2", "d", "2");
    UpdateRefusedException e = assertThrows(UpdateRefusedException.class, m::commit);
    assertFalse(e.position().isPresent(), "refused at the client: nothing was sent");
    assertFalse(m.isActive());
    MultiTransaction check = c.beginMulti();
    assertEquals(Optional.of("1"), check.getString("g2", "d"));
    check.abort();
  }
}
