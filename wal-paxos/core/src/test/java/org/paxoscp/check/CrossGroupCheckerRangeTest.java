package org.paxoscp.check;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.check.Fixture.bytes;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgStep;

/**
 * The conflict graph across groups over range reads: a scan that missed a key a cross-group
 * transaction wrote into its range precedes that transaction, so seeing the transaction's
 * write in another group closes a cycle.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class CrossGroupCheckerRangeTest {
  private static final List<String> GROUPS = List.of("g1", "g2");
  private static final KeyRange A_TO_C = new KeyRange("a", "c");

  private static SortedMap<String, Mutation> puts(String... keys) {
    SortedMap<String, Mutation> w = new TreeMap<>();
    for (String k : keys) {
      w.put(k, Mutation.put(bytes("v")));
    }
    return w;
  }

  /** The DECIDE(COMMIT) of {@code txn} in its coordinator, also writing {@code keys}. */
  private static LogEntry decide(String txn, long readPos, List<String> groups,
      String... keys) {
    String dk = XgStep.decisionKey(txn);
    SortedMap<String, Mutation> w = puts(keys);
    w.put(dk, Mutation.put(bytes("C")));
    return new LogEntry(txn, "A", readPos, new TreeSet<>(Set.of(dk)), w,
        XgStep.decide(txn, groups, true));
  }

  /** Every group's log, the same at two DCs. */
  private static Map<String, Map<String, SortedMap<Long, LogValue>>> logs(
      SortedMap<Long, LogValue> g1, SortedMap<Long, LogValue> g2) {
    return Map.of("g1", Map.of("A", g1, "B", g1), "g2", Map.of("A", g2, "B", g2));
  }

  /** T writes g1:b (DECIDE at 1) and g2:y (PREPARE at 1, RESOLVE at 2). */
  private static Map<String, Map<String, SortedMap<Long, LogValue>>> transfer() {
    SortedMap<Long, LogValue> g1 = new TreeMap<>();
    g1.put(1L, LogValue.of(decide("T", 0, GROUPS, "b")));
    SortedMap<Long, LogValue> g2 = new TreeMap<>();
    g2.put(1L, LogValue.of(new LogEntry("T@g2", "A", 0, new TreeSet<>(), puts("y"),
        XgStep.prepare("T", GROUPS, 5))));
    g2.put(2L, LogValue.of(new LogEntry("T@g2/r", "A", 1, new TreeSet<>(), puts("y"),
        XgStep.resolve("T", GROUPS, true))));
    return logs(g1, g2);
  }

  @Test
  void aReadOnlyScanThatMissedAWriteSeenInAnotherGroupIsACycle() {
    // O saw T's y in g2 but scanned g1's [a, c) before T wrote b there.
    CrossGroupChecker.Observation o = new CrossGroupChecker.Observation("O",
        TxnRecord.Status.COMMITTED, new TreeSet<>(GROUPS), Map.of("g2", Map.of("y", 2L)), true,
        Map.of("g1", List.of(new CrossGroupChecker.RangeRead(A_TO_C, 0))));
    CrossGroupChecker.Result r = CrossGroupChecker.check(transfer(), Map.of(), List.of(o));
    assertTrue(r.crossGroup().has(Kind.XG_CYCLE), r::summary);

    // Scanned at position 1 it saw b: consistent.
    CrossGroupChecker.Observation after = new CrossGroupChecker.Observation("O",
        TxnRecord.Status.COMMITTED, new TreeSet<>(GROUPS), Map.of("g2", Map.of("y", 2L)), true,
        Map.of("g1", List.of(new CrossGroupChecker.RangeRead(A_TO_C, 1))));
    CrossGroupChecker.Result ok = CrossGroupChecker.check(transfer(), Map.of(), List.of(after));
    assertTrue(ok.ok(), ok::summary);
  }

  @Test
  void anEntrysScannedRangeEntersTheGraph() {
    // T read g1:y at 0 and wrote g2:b (RESOLVE at 2); X wrote g1:y at 2 and scanned g2's
    // [a, c) at 0 in its PREPARE, missing b: T -> X (y) and X -> T (b in the range).
    SortedMap<Long, LogValue> g1 = new TreeMap<>();
    LogEntry tDecide = decide("T", 0, GROUPS);
    g1.put(1L, LogValue.of(new LogEntry("T", "A", 0,
        new TreeSet<>(Set.of("y", XgStep.decisionKey("T"))), tDecide.writes(), tDecide.xg())));
    g1.put(2L, LogValue.of(decide("X", 1, GROUPS, "y")));
    SortedMap<Long, LogValue> g2 = new TreeMap<>();
    g2.put(1L, LogValue.of(new LogEntry("T@g2", "A", 0, new TreeSet<>(), puts("b"),
        XgStep.prepare("T", GROUPS, 5))));
    g2.put(2L, LogValue.of(new LogEntry("T@g2/r", "A", 1, new TreeSet<>(), puts("b"),
        XgStep.resolve("T", GROUPS, true))));
    g2.put(3L, LogValue.of(new LogEntry("X@g2", "A", 0, new TreeSet<>(), List.of(A_TO_C),
        new TreeMap<>(), XgStep.prepare("X", GROUPS, 5))));
    CrossGroupChecker.Result r = CrossGroupChecker.check(logs(g1, g2), Map.of(), List.of());
    assertTrue(r.crossGroup().has(Kind.XG_CYCLE), r::summary);
    // g2's own replay sees the same write into the range as an L3 phantom.
    assertTrue(r.perGroup().get("g2").has(Kind.PHANTOM), r::summary);

    // Without the range there is no edge from X to T.
    g2.put(3L, LogValue.of(new LogEntry("X@g2", "A", 0, new TreeSet<>(), new TreeMap<>(),
        XgStep.prepare("X", GROUPS, 5))));
    CrossGroupChecker.Result none = CrossGroupChecker.check(logs(g1, g2), Map.of(), List.of());
    assertFalse(none.crossGroup().has(Kind.XG_CYCLE), none::summary);
    assertTrue(none.ok(), none::summary);
  }

  /**
   * A void RESOLVE (its transaction holds no lock there any more) writes nothing, but its
   * outcome must still be the decision: a second RESOLVE(ABORT) of the committed T is caught.
   */
  @Test
  void aVoidResolveWithTheWrongOutcomeBreaksAtomicity() {
    Map<String, Map<String, SortedMap<Long, LogValue>>> ok = transfer();
    assertTrue(CrossGroupChecker.check(ok, Map.of(), List.of()).ok());
    SortedMap<Long, LogValue> g2 = new TreeMap<>(ok.get("g2").get("A"));
    g2.put(3L, LogValue.of(new LogEntry("r3", "B", 2, new TreeSet<>(), puts("y"),
        XgStep.resolve("T", GROUPS, true))));
    assertTrue(CrossGroupChecker.check(logs(ok.get("g1").get("A"), g2), Map.of(), List.of())
        .ok(), "a void RESOLVE with the decided outcome is harmless");
    g2.put(4L, LogValue.of(new LogEntry("r4", "B", 3, new TreeSet<>(), new TreeMap<>(),
        XgStep.resolve("T", GROUPS, false))));
    CrossGroupChecker.Result r = CrossGroupChecker.check(logs(ok.get("g1").get("A"), g2),
        Map.of(), List.of());
    assertTrue(r.crossGroup().has(Kind.XG_ATOMICITY), r::summary);
  }
}
