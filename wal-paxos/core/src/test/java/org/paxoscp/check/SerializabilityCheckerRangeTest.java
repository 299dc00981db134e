package org.paxoscp.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.check.Fixture.bytes;
import static org.paxoscp.check.Fixture.txn;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Fixture.Logs;
import org.paxoscp.check.Fixture.Txn;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgStep;

/**
 * The checker over range reads: a scan must have returned exactly the state of its range at its
 * read position (A2), and nothing may write into an entry's scanned range between its read
 * position and its position (L3); either failure is a phantom.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class SerializabilityCheckerRangeTest {
  private static final KeyRange A_TO_C = new KeyRange("a", "c");
  private static final KeyRange A_TO_E = new KeyRange("a", "e");
  /** U+1F600: above U+FFFF in code point order, below it in {@link String#compareTo}. */
  private static final String EMOJI = "\uD83D\uDE00";

  private static CheckResult check(Logs logs, TxnRecord... records) {
    return SerializabilityChecker.check(logs.map(), List.of(records));
  }

  private static void assertOk(CheckResult result) {
    assertTrue(result.ok(), result::summary);
  }

  /** Asserts that exactly the given kinds were found, and returns the first of the first kind. */
  private static Violation assertOnly(CheckResult result, Kind... kinds) {
    assertFalse(result.ok(), result::summary);
    assertEquals(Set.of(kinds), result.violationCounts().keySet(), result::summary);
    return result.violations().stream().filter(v -> v.kind() == kinds[0]).findFirst()
        .orElseThrow();
  }

  private static void assertMentions(Violation v, String... parts) {
    for (String part : parts) {
      assertTrue(v.message().contains(part), () -> "'" + part + "' not in: " + v.message());
    }
  }

  /** T1 at position 1 writes a, b, c and d. */
  private static Txn fourKeys() {
    return txn("T1").put("a", "1").put("b", "2").put("c", "3").put("d", "4");
  }

  @Test
  void aScanThatMissedAKeyWrittenAtOrBeforeItsReadPositionIsAPhantom() {
    Txn t1 = txn("T1").put("b", "1");
    Txn t2 = txn("T2").readAt(1).put("x", "2");
    // Only a scan, no key read: the record is still checked.
    Txn ro = txn("R").readAt(2).scan(A_TO_C);
    Txn rw = txn("W").readAt(1).scan(A_TO_C).put("y", "3");
    CheckResult result = check(Logs.abc().at(1, t1).at(2, t2).at(3, rw),
        t1.committed(1), t2.committed(2), ro.committedReadOnly(), rw.committed(3));
    assertOnly(result, Kind.PHANTOM);
    assertEquals(2, result.count(Kind.PHANTOM), result::summary);
    Violation v = result.violations().stream().filter(x -> x.txnId().equals("R")).findFirst()
        .orElseThrow();
    assertMentions(v, "A2", "txn R", "scanned " + A_TO_C, "'b'", "\"1\"", "txn T1");
    assertEquals(2, v.position());
    assertEquals(2, result.stats().readsChecked());
    assertEquals(2, result.stats().scansChecked());
  }

  @Test
  void aWriteIntoAnEntrysRangeAfterItsReadPositionIsAPhantom() {
    Txn t1 = txn("T1").put("a", "1");
    Txn t3 = txn("T3").readAt(1).put("b", "new");
    // T2 scanned [a, c) at 1, saw only a, and was promoted over T3, which wrote b into it.
    Txn t2 = txn("T2").readAt(1).scan(A_TO_C, "a", "1").put("x", "2");
    CheckResult result = check(Logs.abc().at(1, t1).at(2, t3).at(3, t2),
        t1.committed(1), t3.committed(2), t2.committed(3));
    Violation v = assertOnly(result, Kind.PHANTOM);
    assertEquals(3, v.position());
    assertEquals("T2", v.txnId());
    assertMentions(v, "L3", "scanned " + A_TO_C, "read position 1", "'b'", "txn T3",
        "position 2");
  }

  @Test
  void aWriteIntoTheRangeByAnEarlierEntryOfTheSameListIsAPhantom() {
    Txn t1 = txn("T1").put("a", "1");
    Txn t3 = txn("T3").readAt(1).delete("a");
    Txn t2 = txn("T2").readAt(1).scan(A_TO_C, "a", "1").put("x", "2");
    CheckResult result = check(Logs.abc().at(1, t1).at(2, t3, t2),
        t1.committed(1), t3.committed(2), t2.committed(2));
    assertMentions(assertOnly(result, Kind.PHANTOM), "'a'", "deleted by txn T3",
        "position 2 #0");

    // The other order is serializable: T2 scanned before T3 deleted a.
    Txn ro = txn("R").readAt(2).scan(A_TO_C);
    assertOk(check(Logs.abc().at(1, t1).at(2, t2, t3),
        t1.committed(1), t2.committed(2), t3.committed(2), ro.committedReadOnly()));
  }

  @Test
  void aKeyReadAndScannedIsReportedOnceAsAConflictingWrite() {
    Txn t1 = txn("T1").put("a", "1");
    Txn t3 = txn("T3").readAt(1).put("a", "3");
    Txn t2 = txn("T2").readAt(1).read("a", "1").scan(A_TO_C, "a", "1").put("x", "2");
    CheckResult result = check(Logs.abc().at(1, t1).at(2, t3).at(3, t2),
        t1.committed(1), t3.committed(2), t2.committed(3));
    assertOnly(result, Kind.CONFLICTING_WRITE);
    assertEquals(1, result.violationCount(), result::summary);
  }

  @Test
  void aDecisionKeyInsideARangesBoundsIsNoPhantom() {
    // A DECIDE writes its decision key (NUL first), which sorts inside the bounds of ALL.
    List<String> groups = List.of("g1", "g2");
    String dk = XgStep.decisionKey("X");
    TreeMap<String, Mutation> decideWrites = new TreeMap<>();
    decideWrites.put(dk, Mutation.put(bytes("C")));
    LogEntry decide = new LogEntry("X", "A", 1, new TreeSet<>(Set.of(dk)), decideWrites,
        XgStep.decide("X", groups, true));
    Txn t1 = txn("T1").put("a", "1");
    Txn t2 = txn("T2").readAt(1).scan(KeyRange.ALL, "a", "1").put("b", "2");
    Txn ro = txn("R").readAt(2).scan(KeyRange.ALL, "a", "1").scan(new KeyRange("", "b"),
        "a", "1");
    Logs logs = Logs.abc().at(1, t1).at(2, LogValue.of(decide)).at(3, t2);
    CheckResult result = check(logs, t1.committed(1), t2.committed(3), ro.committedReadOnly());
    assertOk(result);
    assertEquals(3, result.stats().scansChecked());
  }

  @Test
  void aCorrectHistoryWithScansReversedScansAndLimitsPasses() {
    Txn t1 = fourKeys();
    // Written outside what T2 read: "bb" sorts after the bound "b\0" of [a, b].
    Txn t3 = txn("T3").readAt(1).put("bb", "5").put("c", "33");
    // A forward scan of [a, e) stopped by a limit of 2 after b, and a reversed one stopped by
    // a limit of 1 at d: together they read [a, b] and [d, e), not c.
    Txn t2 = txn("T2").readAt(1).scan(A_TO_E.through("b"), "a", "1", "b", "2")
        .scan(A_TO_E.startingAt("d"), "d", "4").put("x", "9");
    Txn t4 = txn("T4").readAt(3).put("z" + EMOJI, "e").put("z\uFFFF", "f");
    Txn ro = txn("R").readAt(4)
        .scan(KeyRange.prefix("b"), "b", "2", "bb", "5")
        .scan(new KeyRange("c", null), "c", "33", "d", "4", "x", "9", "z" + EMOJI, "e",
            "z\uFFFF", "f")
        .scan(new KeyRange("z", "z\uFFFF"))
        .scan(new KeyRange("z\uFFFF", null), "z" + EMOJI, "e", "z\uFFFF", "f")
        .read("a", "1");
    Txn early = txn("E").readAt(0).scan(KeyRange.ALL);
    CheckResult result = check(Logs.abc().at(1, t1).at(2, t3).at(3, t2).at(4, t4),
        t1.committed(1), t3.committed(2), t2.committed(3), t4.committed(4),
        ro.committedReadOnly(), early.committedReadOnly());
    assertOk(result);
    assertEquals(7, result.stats().scansChecked());
  }

  @Test
  void keyOrderIsCodePointOrderNotStringOrder() {
    // In String order z😀 sorts below z\uFFFF; in key order above it, so in [z\uFFFF, end).
    Txn t1 = txn("T1").put("z" + EMOJI, "e");
    Txn ro = txn("R").readAt(1).scan(new KeyRange("z\uFFFF", null));
    Txn ok = txn("S").readAt(1).scan(new KeyRange("z", "z\uFFFF"));
    CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), ro.committedReadOnly(),
        ok.committedReadOnly());
    assertEquals("R", assertOnly(result, Kind.PHANTOM).txnId());
    assertEquals(1, result.violationCount(), result::summary);
  }

  @Test
  void aWrongValueInAScanIsAWrongReadValue() {
    Txn t1 = fourKeys();
    Txn wrong = txn("R").readAt(1).scan(A_TO_C, "a", "1", "b", "stale");
    Txn extra = txn("S").readAt(1).scan(A_TO_C, "a", "1", "aa", "ghost", "b", "2");
    CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1),
        wrong.committedReadOnly(), extra.committedReadOnly());
    Violation v = assertOnly(result, Kind.WRONG_READ_VALUE);
    assertEquals(2, result.count(Kind.WRONG_READ_VALUE), result::summary);
    assertMentions(v, "A2", "txn R", "'b' = \"stale\"", "is \"2\"");
    assertTrue(result.violations().stream().anyMatch(x -> x.message().contains("'aa'")
        && x.message().contains("is absent")), result::summary);
  }

  @Test
  void recordRangesDifferentFromTheEntrysAreAnEntryMismatch() {
    Txn t1 = fourKeys();
    Txn inLog = txn("T2").readAt(1).scan(A_TO_C, "a", "1", "b", "2").put("x", "9");
    Txn claimed = txn("T2").readAt(1).scan(new KeyRange("a", "b"), "a", "1").put("x", "9");
    CheckResult result = check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
        claimed.committed(2));
    assertMentions(assertOnly(result, Kind.ENTRY_MISMATCH), "scanned ranges",
        new KeyRange("a", "b").toString(), A_TO_C.toString());

    // A record whose scans merge to the entry's ranges matches it.
    Txn split = txn("T2").readAt(1).scan(new KeyRange("a", "b"), "a", "1")
        .scan(new KeyRange("b", "c"), "b", "2").put("x", "9");
    assertOk(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1), split.committed(2)));

    // An entry without the ranges its record scanned.
    Txn noRanges = txn("T2").readAt(1).put("x", "9");
    assertOnly(check(Logs.abc().at(1, t1).at(2, noRanges), t1.committed(1),
        inLog.committed(2)), Kind.ENTRY_MISMATCH);
  }

  @Test
  void anEntryScanningARangeAPrepareWritesIntoBreaksItsLock() {
    TreeMap<String, Mutation> w = new TreeMap<>(Map.of("b", Mutation.put(bytes("1"))));
    LogEntry prepare = new LogEntry("X@g2", "A", 0, new TreeSet<>(), w,
        XgStep.prepare("X", List.of("g1", "g2"), 5));
    Txn t2 = txn("T2").readAt(1).scan(A_TO_C).put("x", "2");
    CheckResult result = check(Logs.abc().at(1, LogValue.of(prepare)).at(2, t2),
        t2.committed(2));
    assertMentions(assertOnly(result, Kind.LOCK_VIOLATED), "txn T2", "scans a range",
        "writes [b]");
  }

  /**
   * X prepared and resolved b; Y prepared b after it; a second RESOLVE(COMMIT) of X, carrying b,
   * is void (X holds no lock any more) and breaks no lock, while an ordinary write of b would.
   */
  @Test
  void aVoidResolveBreaksNoLockButAWriteUnderTheLockDoes() {
    TreeMap<String, Mutation> w = new TreeMap<>(Map.of("b", Mutation.put(bytes("1"))));
    List<String> groups = List.of("g1", "g2");
    LogEntry prepareX = new LogEntry("X@g2", "A", 0, new TreeSet<>(), w,
        XgStep.prepare("X", groups, 5));
    LogEntry resolveX = new LogEntry("r1", "A", 1, new TreeSet<>(), new TreeMap<>(w),
        XgStep.resolve("X", groups, true));
    LogEntry prepareY = new LogEntry("Y@g2", "A", 2, new TreeSet<>(), w,
        XgStep.prepare("Y", groups, 5));
    LogEntry resolveXAgain = new LogEntry("r2", "A", 3, new TreeSet<>(), new TreeMap<>(w),
        XgStep.resolve("X", groups, true));
    Logs logs = Logs.abc().at(1, LogValue.of(prepareX)).at(2, LogValue.of(resolveX))
        .at(3, LogValue.of(prepareY)).at(4, LogValue.of(resolveXAgain));
    assertOk(check(logs));
    // The void RESOLVE changed nothing: b is still X's value.
    Txn reader = txn("R").readAt(4).read("b", "1");
    assertOk(check(logs, reader.committedReadOnly()));
    Txn t = txn("T").readAt(4).put("b", "2");
    assertMentions(assertOnly(check(logs.at(5, t), t.committed(5)), Kind.LOCK_VIOLATED),
        "txn T", "Y holds");
  }

  /** A RESOLVE of a transaction that does hold its locks is checked as before. */
  @Test
  void aResolveOfAHeldLockIsStillCheckedAgainstOtherLocks() {
    List<String> groups = List.of("g1", "g2");
    LogEntry prepareY = new LogEntry("Y@g2", "A", 0, new TreeSet<>(),
        new TreeMap<>(Map.of("c", Mutation.put(bytes("1")))), XgStep.prepare("Y", groups, 5));
    LogEntry prepareX = new LogEntry("X@g2", "A", 1, new TreeSet<>(),
        new TreeMap<>(Map.of("b", Mutation.put(bytes("1")))), XgStep.prepare("X", groups, 5));
    // A malformed copy: X's RESOLVE carries c, which Y holds.
    LogEntry resolveX = new LogEntry("r1", "A", 2, new TreeSet<>(),
        new TreeMap<>(Map.of("b", Mutation.put(bytes("1")), "c", Mutation.put(bytes("1")))),
        XgStep.resolve("X", groups, true));
    Logs logs = Logs.abc().at(1, LogValue.of(prepareY)).at(2, LogValue.of(prepareX))
        .at(3, LogValue.of(resolveX));
    assertOnly(check(logs), Kind.LOCK_VIOLATED);
  }

  @Test
  void aScanEntryOutsideItsRangeIsMalformed() {
    Txn t1 = fourKeys();
    Txn r = txn("R").readAt(1).scan(A_TO_C, "a", "1", "b", "2", "d", "4");
    CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), r.committedReadOnly());
    assertMentions(assertOnly(result, Kind.MALFORMED_HISTORY), "'d'", "outside the range");
  }
}
