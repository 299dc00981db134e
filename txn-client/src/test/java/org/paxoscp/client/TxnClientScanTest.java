package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/** Range reads: what a scan returns, what it adds to the read set, and what then conflicts. */
@Timeout(60)
class TxnClientScanTest {
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

  private static List<String> keys(ScanResult r) {
    List<String> out = new ArrayList<>();
    r.entries().forEach(e -> out.add(e.key()));
    return out;
  }

  /** Commits order/1..order/5 and other/x in {@code group}; returns the last position. */
  private static long seed(TxnClient c, String group) {
    Transaction t = c.begin(group);
    for (int i = 1; i <= 5; i++) {
      t.put("order/" + i, "o" + i);
    }
    t.put("other/x", "x");
    t.put("orders", "not under the prefix");
    return t.commit().position();
  }

  /** The entry of {@code txnId} at {@code position}, once every DC holds it. */
  private LogEntry entryOf(String group, long position, String txnId) {
    var logs = TestCluster.quiescentLogs(cluster, List.of(group),
        java.util.Map.of(group, position)).get(group);
    for (var log : logs.values()) {
      LogValue v = log.get(position);
      if (v != null) {
        return v.find(txnId).orElseThrow();
      }
    }
    throw new AssertionError("no DC holds position " + position + " of " + group);
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aScanListsTheRangeAtTheReadPositionWithItsOwnWritesMergedIn(CommitProtocol protocol) {
    TxnClient c = client("A", protocol);
    seed(c, "g");
    Transaction t = TestCluster.beginAtLeast(c, "g", 1);
    t.put("order/6", "o6");
    t.put("order/3", "three");
    t.delete("order/2");
    ScanResult all = t.scanPrefix("order/", 100);
    assertEquals(List.of("order/1", "order/3", "order/4", "order/5", "order/6"), keys(all));
    assertEquals("three", all.entries().get(1).valueString(), "its own put shows");
    assertFalse(all.hasMore());
    ScanResult back = t.scan("order/", "order0", 100, true);
    assertEquals(List.of("order/6", "order/5", "order/4", "order/3", "order/1"), keys(back));
    assertEquals(Optional.of("o4"), t.getString("order/4"));
    assertEquals(Optional.empty(), t.get("order/9"), "a key the scan found absent");
    t.put("summary", "5 orders");
    long p = t.commit().position();
    LogEntry e = entryOf("g", p, t.txnId());
    assertEquals(List.of(KeyRange.prefix("order/")), e.readRanges());
    assertTrue(e.readSet().isEmpty(), "keys read through a scan are covered by its range");
  }

  @Test
  void aLimitStopsTheScanAtItsLastKeyAndTheRestContinuesIt() {
    TxnClient c = client("A", CommitProtocol.CP);
    seed(c, "g");
    Transaction t = TestCluster.beginAtLeast(c, "g", 1);
    ScanResult first = t.scanPrefix("order/", 2);
    assertEquals(List.of("order/1", "order/2"), keys(first));
    assertTrue(first.hasMore());
    ScanResult second = t.scan(first.rest().orElseThrow(), 2, false);
    assertEquals(List.of("order/3", "order/4"), keys(second));
    ScanResult third = t.scan(second.rest().orElseThrow(), 2, false);
    assertEquals(List.of("order/5"), keys(third));
    assertFalse(third.hasMore());
    ScanResult lastTwo = t.scan("order/", "order0", 2, true);
    assertEquals(List.of("order/5", "order/4"), keys(lastTwo));
    assertEquals(new KeyRange("order/", "order/4"), lastTwo.rest().orElseThrow());
    t.put("w", "x");
    long p = t.commit().position();
    assertEquals(List.of(KeyRange.prefix("order/")), entryOf("g", p, t.txnId()).readRanges(),
        "the three pages together read the whole prefix");
  }

  @Test
  void aRangeStoppedByItsLimitIsReadOnlyThroughItsLastKey() {
    TxnClient c = client("A", CommitProtocol.CP);
    seed(c, "g");
    Transaction t = TestCluster.beginAtLeast(c, "g", 1);
    assertEquals(List.of("order/1", "order/2"), keys(t.scanPrefix("order/", 2)));
    t.put("w", "x");
    // An insert past order/2 is outside what was read: no conflict, Paxos-CP promotes.
    Transaction other = TestCluster.beginAtLeast(client("B", CommitProtocol.CP), "g", 1);
    other.put("order/7", "o7");
    other.commit();
    CommitResult r = t.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals(List.of(new KeyRange("order/", "order/2\0")),
        entryOf("g", r.position(), t.txnId()).readRanges());
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void anInsertIntoAScannedRangeAbortsTheScanner(CommitProtocol protocol) {
    TxnClient c = client("A", protocol);
    seed(c, "g");
    Transaction scanner = TestCluster.beginAtLeast(c, "g", 1);
    assertEquals(5, scanner.scanPrefix("order/", 100).size());
    scanner.put("summary", "5 orders");
    Transaction insert = TestCluster.beginAtLeast(client("B", protocol), "g", 1);
    insert.put("order/0", "a phantom for the scanner");
    insert.commit();
    TransactionAbortedException e =
        assertThrows(TransactionAbortedException.class, scanner::commit);
    assertEquals(CommitResult.Status.ABORTED, e.result().status());
  }

  @Test
  void aWriteOutsideTheRangeLetsTheScannerCommitByPromotion() {
    TxnClient c = client("A", CommitProtocol.CP);
    seed(c, "g");
    Transaction scanner = TestCluster.beginAtLeast(c, "g", 1);
    assertEquals(5, scanner.scanPrefix("order/", 100).size());
    scanner.put("summary", "5 orders");
    Transaction other = TestCluster.beginAtLeast(client("B", CommitProtocol.CP), "g", 1);
    other.put("orders", "a key next to the range, not in it");
    other.put("order0", "the range's end bound, not in it");
    other.commit();
    assertEquals(CommitResult.Status.COMMITTED, scanner.commit().status());
  }

  @Test
  void pagesFollowEachOtherWhenTheRangeDoesNotFitOneDatagram() throws Exception {
    cluster = new TestCluster(Duration.ofSeconds(1), 4_000);
    TxnClient c = client("A", CommitProtocol.CP);
    String value = "v".repeat(300);
    for (int batch = 0; batch < 4; batch++) {
      Transaction t = c.begin("g");
      for (int i = 0; i < 8; i++) {
        t.put(String.format("item/%02d", batch * 8 + i), value);
      }
      t.commit();
    }
    RecordingTransport rec = new RecordingTransport(cluster.network.transport("A"));
    TxnClient watched = cluster.closeLater(cluster.client("A", CommitProtocol.CP).transport(rec)
        .build());
    Transaction t = TestCluster.beginAtLeast(watched, "g", 4);
    ScanResult r = t.scanPrefix("item/", 1_000);
    assertEquals(32, r.size());
    for (int i = 0; i < 32; i++) {
      assertEquals(String.format("item/%02d", i), r.entries().get(i).key());
    }
    long pages = rec.sent.stream().filter(s -> s.message() instanceof Message.ScanRequest)
        .count();
    assertTrue(pages > 1, "32 values of 300 bytes take several 4 KB replies, got " + pages);
  }

  @Test
  void badRangesAndLimitsAreTypedErrorsAndTheTransactionStaysUsable() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    assertThrows(InvalidArgumentException.class, () -> t.scan("b", "a", 10));
    assertThrows(InvalidArgumentException.class, () -> t.scan("a", "a", 10));
    assertThrows(InvalidArgumentException.class, () -> t.scan("a", "b", 0));
    assertThrows(InvalidArgumentException.class,
        () -> t.scan("a", "b", Transaction.MAX_SCAN_LIMIT + 1));
    assertThrows(InvalidArgumentException.class, () -> t.scan("\0xg/", null, 10));
    assertThrows(InvalidArgumentException.class, () -> t.scan("k".repeat(2000), null, 10));
    assertTrue(t.isActive());
    assertEquals(0, t.scan("", null, 10).size());
  }

  @Test
  void tooManySeparateRangesIsATypedErrorThatRecordsNothing() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    for (int i = 0; i < LogEntry.MAX_READ_RANGES; i++) {
      t.scanPrefix(String.format("p%03d/", i), 1);
    }
    TransactionTooLargeException e = assertThrows(TransactionTooLargeException.class,
        () -> t.scanPrefix("q/", 1));
    assertTrue(e.getMessage().contains("key ranges"), e.getMessage());
    assertTrue(t.isActive());
    t.scanPrefix("p000/x", 1); // inside a range already read: no new range
    t.put("w", "x");
    long p = t.commit().position();
    assertEquals(LogEntry.MAX_READ_RANGES, entryOf("g", p, t.txnId()).readRanges().size());
  }

  @Test
  void aScanOfTheWholeGroupNeverShowsDecisionKeys() {
    TxnClient c = client("A", CommitProtocol.CP);
    MultiTransaction m = c.beginMulti();
    m.put("g1", "a", "1");
    m.put("g2", "b", "2");
    m.commit();
    for (String g : List.of("g1", "g2")) {
      Transaction t = TestCluster.beginAtLeast(c, g, 1);
      for (ScanResult.Entry e : t.scan("", null, 100).entries()) {
        assertFalse(e.key().startsWith("\0"), "a decision key in a scan of " + g);
      }
    }
  }
}
