package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;

/** Unavailable DCs, unknown outcomes and oversized transactions. */
@Timeout(60)
class TxnClientFailureTest {
  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofMillis(300), 2048);
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home) {
    return cluster.closeLater(cluster.client(home, CommitProtocol.CP)
        .random(new SplittableRandom(7)).build());
  }

  private void awaitApplied(String group, long position) {
    for (String dc : TestCluster.DCS) {
      LogApplier applier = new LogApplier(cluster.stores.get(dc));
      Poll.until(dc + " applied " + position, Duration.ofSeconds(5),
          () -> applier.appliedWatermark(group) >= position);
    }
  }

  private long write(TxnClient c, String key, String value) {
    Transaction t = c.begin("g");
    t.put(key, value);
    return t.commit().position();
  }

  @Test
  void homeServicesSilentBeginAndReadsFailOverAndCommitsSucceed() {
    TxnClient c = client("A");
    long p = write(c, "k", "v1");
    cluster.services.get("A").silent = true;
    int beginsAtB = cluster.services.get("B").beginRequests.get();
    Transaction t = c.begin("g");
    assertTrue(t.readPosition() >= p);
    assertEquals(beginsAtB + 1, cluster.services.get("B").beginRequests.get());
    assertEquals(Optional.of("v1"), t.getString("k"));
    t.put("k", "v2");
    CommitResult r = t.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    cluster.services.get("A").silent = false;
    assertEquals(Optional.of("v2"), c.begin("g").getString("k"));
  }

  @Test
  void homeStoreUnavailableFailsOverOnErrorReply() {
    TxnClient c = client("A");
    write(c, "k", "v1");
    cluster.stores.get("A").setAvailable(false);
    try {
      Transaction t = c.begin("g");
      assertEquals(Optional.of("v1"), t.getString("k"));
      t.put("k", "v2");
      assertTrue(t.commit().committed(), "B and C are a majority");
    } finally {
      cluster.stores.get("A").setAvailable(true);
    }
  }

  @Test
  void noDcAnswersIsUnavailable() {
    TxnClient c = client("A");
    cluster.services.values().forEach(s -> s.silent = true);
    UnavailableException e = assertThrows(UnavailableException.class, () -> c.begin("g"));
    assertEquals(3, e.getSuppressed().length, "one failure per DC");
    assertEquals("g", e.group());
    assertTrue(e.dc().isPresent());
  }

  @Test
  void twoOfThreeDownNeverReportsAWrongCommit() {
    TxnClient c = client("A");
    long p = write(c, "k", "v1");
    awaitApplied("g", p);
    History history = new History();
    cluster.setDown("B", true);
    cluster.setDown("C", true);
    Transaction t = c.begin("g");
    t.get("k");
    t.put("k", "v2");
    RuntimeException failure = history.commitAndRecord("c", t);
    assertTrue(failure instanceof UnavailableException || failure instanceof OutcomeUnknownException
        || failure instanceof TransactionAbortedException, "no majority, no commit: " + failure);
    cluster.setDown("B", false);
    cluster.setDown("C", false);
    // A later commit from another DC finishes whatever position the failed one left open.
    TxnClient other = client("B");
    Transaction u = other.begin("g");
    u.put("other", "x");
    history.commitAndRecord("other", u);
    long last = other.sessionPosition("g");
    // APPLY is one-way: a commit returns once a majority accepted, before every DC recorded it.
    awaitApplied("g", last);
    CheckResult check = history.check(cluster.logs("g", last + 2));
    assertTrue(check.ok(), check.summary());
    for (TxnRecord rec : history.records()) {
      if (rec.txnId().equals(t.txnId()) && rec.status() == TxnRecord.Status.ABORTED) {
        for (String dc : TestCluster.DCS) {
          assertTrue(cluster.log(dc, "g", last + 2).values().stream()
              .noneMatch(v -> v.contains(t.txnId())), "an unavailable commit is not in the log");
        }
      }
    }
  }

  @Test
  void unknownOutcomeIsNeverRetried() {
    TxnClient c = client("A");
    long p = write(c, "k", "v1");
    awaitApplied("g", p);
    // A is now the fast-path leader for p + 1: the next commit's ACCEPT goes out (and A takes
    // it) before it learns that B and C are gone, so its outcome is unknown.
    cluster.setDown("B", true);
    cluster.setDown("C", true);
    AtomicInteger runs = new AtomicInteger();
    OutcomeUnknownException e = assertThrows(OutcomeUnknownException.class,
        () -> c.runInTransaction("g", txn -> {
          runs.incrementAndGet();
          txn.put("k", "v2");
          return null;
        }));
    assertEquals(1, runs.get(), "an unknown outcome is never re-run");
    assertEquals(CommitResult.Status.UNKNOWN, e.result().status());
    assertEquals(p + 1, e.result().position());
  }

  @Test
  void oversizedTransactionIsRejectedWithNothingSent() {
    RecordingTransport rec = new RecordingTransport(cluster.network.transport("A"));
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.CP).transport(rec)
        .build());
    Transaction t = c.begin("g");
    long sentAfterBegin = rec.sent.size();
    TransactionTooLargeException e = assertThrows(TransactionTooLargeException.class,
        () -> t.put("big", new byte[2000]));
    assertTrue(e.entryBytes() > e.limitBytes());
    assertTrue(e instanceof InvalidArgumentException);
    assertTrue(t.isActive(), "the rejected write was not buffered");
    assertEquals(Optional.empty(), t.get("big").map(v -> v.length).filter(n -> n == 2000));
    t.put("small", new byte[100]);
    assertTrue(t.commit().committed());
    assertEquals(0, rec.sent.stream().skip(sentAfterBegin)
        .filter(s -> s.message() instanceof Message.Paxos p
            && p.message() instanceof org.paxoscp.paxos.PaxosMessage.Accept a
            && a.value().entries().stream().anyMatch(x -> x.writes().containsKey("big")))
        .count());

    // Reads after the writes can make the entry too large: commit refuses, nothing is sent.
    Transaction u = c.begin("g");
    u.put("w", "v");
    u.get("r".repeat(700));
    u.get("s".repeat(700));
    u.get("t".repeat(700));
    long before = rec.count(Message.Paxos.class);
    assertThrows(TransactionTooLargeException.class, u::commit);
    assertEquals(before, rec.count(Message.Paxos.class), "no protocol message sent");
    assertTrue(u.isActive());
    u.abort();
  }

  @Test
  void trackedEntrySizeMatchesTheEncoding() {
    TxnClient c = client("A");
    Transaction t = c.begin("g");
    check(t);
    t.get("ünïcødé-read");
    check(t);
    t.put("a", new byte[200]);
    check(t);
    t.put("a", new byte[3]);
    check(t);
    t.delete("a");
    check(t);
    t.put("€uro", "x".repeat(130));
    t.delete("gone");
    check(t);
    t.abort();
    assertFalse(t.isActive());
  }

  private static void check(Transaction t) {
    assertEquals(LogCodec.encode(LogValue.of(t.toEntry())).length, t.trackedEntryBytes(),
        t.toString());
  }

  /**
   * Commits "k" = v1 and waits until it is applied, takes B and C down, and returns a
   * transaction of {@code c} that writes "k" = v2, ready to commit without a majority.
   */
  private Transaction writeWithoutAMajority(TxnClient c) {
    long p = write(c, "k", "v1");
    awaitApplied("g", p);
    cluster.setDown("B", true);
    cluster.setDown("C", true);
    Transaction t = c.begin("g");
    t.put("k", "v2");
    return t;
  }

  @Test
  void unknownOutcomeCarriesContext() {
    TxnClient c = client("A");
    Transaction t = writeWithoutAMajority(c);
    try {
      t.commit();
      fail("committed without a majority");
    } catch (OutcomeUnknownException e) {
      assertEquals("g", e.group());
      assertEquals(t.txnId(), e.result().txnId());
      assertEquals(Optional.of("A"), e.dc());
      assertTrue(e.position().isPresent());
      // A proposer's entry can be chosen only at the position it reached.
      assertEquals(e.lastPosition(), e.firstPosition(), e.getMessage());
      assertEquals(e.position().getAsLong(), e.lastPosition());
    }
  }

  @Test
  void aLeaderModeUnknownNamesEveryPositionABatcherMayStillUse() {
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.LEADER)
        .random(new SplittableRandom(7)).build());
    Transaction t = writeWithoutAMajority(c);
    OutcomeUnknownException e = assertThrows(OutcomeUnknownException.class, t::commit);
    // A batcher may place the entry at read position + 1 ... + the bound, whatever the client
    // was told; none of those positions could be learned without a majority.
    assertEquals(t.readPosition() + 1, e.firstPosition(), e.getMessage());
    assertEquals(t.readPosition() + 1 + org.paxoscp.transport.LeaderSubmit.DEFAULT_BOUND,
        e.lastPosition(), e.getMessage());
    assertTrue(e.getMessage().contains("one of positions " + e.firstPosition() + ".."
        + e.lastPosition()), e.getMessage());

    // With B and C back, settling decides the range now: the value read next agrees.
    cluster.setDown("B", false);
    cluster.setDown("C", false);
    assertSettledConsistently(c, e, t, "v2", "v1");
  }

  @Test
  void aProposerModeUnknownIsSettledOnceAMajorityIsBack() {
    TxnClient c = client("A");
    Transaction t = writeWithoutAMajority(c);
    OutcomeUnknownException e = assertThrows(OutcomeUnknownException.class, t::commit);
    assertThrows(OutcomeUnknownException.class, () -> c.settle(e), "still no majority");
    cluster.setDown("B", false);
    cluster.setDown("C", false);
    assertSettledConsistently(c, e, t, "v2", "v1");
  }

  /**
   * Settles {@code e} and checks the answer against what a later transaction reads of "k":
   * {@code ifCommitted} when settled COMMITTED, {@code ifAborted} when ABORTED.
   */
  private static void assertSettledConsistently(TxnClient c, OutcomeUnknownException e,
      Transaction t, String ifCommitted, String ifAborted) {
    String expected;
    try {
      CommitResult r = c.settle(e);
      assertEquals(t.txnId(), r.txnId());
      assertTrue(r.position() >= e.firstPosition() && r.position() <= e.lastPosition(),
          r + " outside " + e.firstPosition() + ".." + e.lastPosition());
      expected = ifCommitted;
    } catch (TransactionAbortedException aborted) {
      expected = ifAborted;
    }
    // A later commit's read position is past the settled position: its read shows the truth.
    Transaction u = c.begin("g");
    assertEquals(Optional.of(expected), u.getString("k"));
    u.put("other", "x");
    u.commit();
    Transaction w = c.begin("g");
    assertEquals(Optional.of(expected), w.getString("k"), "the settled outcome holds");
  }
}
