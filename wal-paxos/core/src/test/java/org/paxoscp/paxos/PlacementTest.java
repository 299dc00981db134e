package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

class PlacementTest {
  private static LogEntry entry(String id, List<String> reads, String... writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put(id.getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(id, "V", 3, new TreeSet<>(reads), w);
  }

  @Test
  void aStaleReadConflictsAndDisjointKeysDoNot() {
    assertTrue(Placement.conflicts(entry("a", List.of(), "x"), entry("b", List.of("x"))));
    assertFalse(Placement.conflicts(entry("a", List.of(), "x"), entry("b", List.of("y"), "x")));
  }

  private static LogEntry scanner(String id, List<org.paxoscp.wal.KeyRange> ranges,
      String... writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put(new byte[] {1}));
    }
    return new LogEntry(id, "V", 3, new TreeSet<>(), ranges, w);
  }

  @Test
  void aWriteIntoAScannedRangeConflictsAsAWriteToAReadKeyDoes() {
    LogEntry scan = scanner("s", List.of(org.paxoscp.wal.KeyRange.prefix("order/")), "total");
    assertTrue(Placement.conflicts(entry("a", List.of(), "order/9"), scan), "a phantom");
    assertFalse(Placement.conflicts(entry("a", List.of(), "order0", "orders"), scan));
    assertFalse(Placement.conflicts(scan, entry("a", List.of(), "order/9")),
        "the scanner writes nothing the other read");
    assertTrue(Placement.conflicts(scan, entry("b", List.of("total"))));
    // Stopped by its limit at order/3: a key past it was not read.
    LogEntry limited = scanner("l", List.of(new org.paxoscp.wal.KeyRange("order/", "order/3\0")));
    assertTrue(Placement.conflicts(entry("a", List.of(), "order/3"), limited));
    assertFalse(Placement.conflicts(entry("a", List.of(), "order/4"), limited));
  }

  @Test
  void aPreparesLocksCoverTheRangesOnEitherSide() {
    org.paxoscp.wal.XgStep step = org.paxoscp.wal.XgStep.prepare("T", List.of("g", "h"), 9);
    LogEntry prepareWrites = new LogEntry("p", "V", 3, new TreeSet<>(), List.of(),
        new TreeMap<>(java.util.Map.of("order/5", Mutation.put(new byte[] {1}))), step);
    assertTrue(Placement.conflicts(prepareWrites,
        scanner("s", List.of(org.paxoscp.wal.KeyRange.prefix("order/")))),
        "a scan over a prepared key meets the lock");
    LogEntry prepareScans = new LogEntry("q", "V", 3, new TreeSet<>(),
        List.of(org.paxoscp.wal.KeyRange.prefix("order/")), new TreeMap<>(), step);
    assertTrue(Placement.conflicts(prepareScans, entry("w", List.of(), "order/1")),
        "a write into a prepared scan's range breaks its lock");
    assertFalse(Placement.conflicts(prepareScans, entry("w", List.of(), "other")));
    org.paxoscp.wal.XgLocks locks = org.paxoscp.wal.XgLocks.EMPTY.apply(4,
        LogValue.of(prepareWrites)).locks();
    assertTrue(locks.blockingScan(org.paxoscp.wal.KeyRange.prefix("order/")).isPresent());
    assertFalse(locks.blockingScan(org.paxoscp.wal.KeyRange.prefix("other/")).isPresent());
  }

  @Test
  void anEntrysWithdrawalConflictsWithItAndWithNothingElse() {
    LogEntry e = entry("V-1", List.of(), "x");
    LogEntry w = Placement.withdrawal(e);
    assertEquals("withdraw:V-1", w.txnId());
    assertEquals(e.readPosition(), w.readPosition());
    assertTrue(w.readSet().isEmpty() && w.writes().isEmpty() && w.xg() == null);
    assertTrue(Placement.isWithdrawal(w));
    assertFalse(Placement.isWithdrawal(e));
    assertTrue(Placement.conflicts(w, e), "a withdrawn entry may not follow its withdrawal");
    assertTrue(Placement.conflicts(LogValue.of(entry("other", List.of(), "z"), w), e));
    assertFalse(Placement.conflicts(w, entry("V-2", List.of("x"), "x")));
    assertFalse(Placement.conflicts(w, entry("V-10", List.of())), "ids match exactly");
    assertFalse(Placement.conflicts(e, w), "the withdrawal reads nothing, so nothing blocks it");
  }

  @Test
  void aWithdrawalIsAnOrdinaryEntryOnTheWire() {
    LogValue v = LogValue.of(Placement.withdrawal(entry("V-1", List.of("y"), "x")));
    assertEquals(v, LogCodec.decode(LogCodec.encode(v)));
  }
}
