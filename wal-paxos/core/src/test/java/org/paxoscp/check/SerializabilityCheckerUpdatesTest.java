package org.paxoscp.check;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.check.Fixture.txn;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Fixture.Logs;
import org.paxoscp.check.Fixture.Txn;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Updates;

/**
 * The checker over commutative updates: it folds adds and counting-set updates into the values
 * of their keys in log order (positions, then list order), with the applier's refusal rule, and
 * holds reads, records and outcomes against what it folded.
 */
@Timeout(value = 10, unit = TimeUnit.SECONDS)
class SerializabilityCheckerUpdatesTest {

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

  // Counter c: +5 at 1; +3 and -1 combined at 2 (7); T4 reads 7 at 2 and, with T5's +10, at 3
  // (17). Set s: {a, b} at 4; a removed and c added twice, combined, at 5 ({b: 1, c: 2}).
  private final Txn t1 = txn("T1").add("c", 5);
  private final Txn t2 = txn("T2").readAt(1).add("c", 3);
  private final Txn t3 = txn("T3").readAt(1).add("c", -1).add("d", 2);
  private final Txn t4 = txn("T4").readAt(2).read("c", "7").put("y", "seen 7");
  private final Txn t5 = txn("T5").readAt(2).add("c", 10);
  private final Txn s1 = txn("S1").readAt(3).setUpdate("s", "a", 1, "b", 1);
  private final Txn s2 = txn("S2").readAt(4).setUpdate("s", "a", -1);
  private final Txn s3 = txn("S3").readAt(4).setUpdate("s", "c", 2);

  private Logs counterAndSetLog() {
    return Logs.abc().at(1, t1).at(2, t2, t3).at(3, t4, t5).at(4, s1).at(5, s2, s3);
  }

  private TxnRecord[] counterAndSetRecords(TxnRecord... more) {
    TxnRecord[] base = {t1.committed(1), t2.committed(2), t3.committed(2), t4.committed(3),
        t5.committed(3), s1.committed(4), s2.committed(5), s3.committed(5)};
    TxnRecord[] all = java.util.Arrays.copyOf(base, base.length + more.length);
    System.arraycopy(more, 0, all, base.length, more.length);
    return all;
  }

  @Test
  void countersAndSetsReplayedThroughUpdatesOfSeveralTxnsAtSeveralPositionsPass() {
    Txn ro2 = txn("R2").readAt(2).read("c", "7").read("d", "2");
    Txn ro3 = txn("R3").readAt(3).read("c", "17").read("y", "seen 7");
    Txn ro5 = txn("R5").readAt(5).read("c", "17")
        .readBytes("s", Updates.encodeSet(Map.of("b", 1L, "c", 2L)));
    CheckResult result = check(counterAndSetLog(), counterAndSetRecords(
        ro2.committedReadOnly(), ro3.committedReadOnly(), ro5.committedReadOnly()));
    assertOk(result);
    // c +5, +3, -1, +10; d +2; s three updates.
    assertEquals(8, result.stats().updatesChecked());
    assertEquals(0, result.stats().entriesRefused());
    assertEquals(4, result.stats().readsChecked());
  }

  @Test
  void aStaleCounterReadIsCaught() {
    // At the end of position 2 c is 7; 5 is its value at position 1.
    Txn stale = txn("R").readAt(2).read("c", "5");
    Violation v = assertOnly(check(counterAndSetLog(),
        counterAndSetRecords(stale.committedReadOnly())), Kind.WRONG_READ_VALUE);
    assertEquals("R", v.txnId());
    assertMentions(v, "observed \"5\"", "position 2 is \"7\"", "updated by txn T3");
  }

  @Test
  void aCounterReadAsIfAnAddAppliedTwiceIsCaught() {
    // T5's +10 folded twice (position 3 applied again onto its own versions) gives 27, not 17.
    Txn doubled = txn("R").readAt(3).read("c", "27");
    Violation v = assertOnly(check(counterAndSetLog(),
        counterAndSetRecords(doubled.committedReadOnly())), Kind.WRONG_READ_VALUE);
    assertMentions(v, "observed \"27\"", "is \"17\"", "updated by txn T5 at position 3 #1");
    // The same for a set: c counted 4 instead of 2.
    Txn doubledSet = txn("R").readAt(5)
        .readBytes("s", Updates.encodeSet(Map.of("b", 1L, "c", 4L)));
    assertOnly(check(counterAndSetLog(), counterAndSetRecords(doubledSet.committedReadOnly())),
        Kind.WRONG_READ_VALUE);
  }

  @Test
  void anAddFoldedBeforeAPutOfItsPositionIsCaughtByALaterRead() {
    // Position 2 is [put c = 100, add 1 to c]: in list order c is 101. Folding the add first
    // (onto the 10 of position 1) and then the put leaves 100.
    Txn base = txn("T1").put("c", "10");
    Txn put = txn("P").readAt(1).put("c", "100");
    Txn add = txn("A").readAt(1).add("c", 1);
    Logs putThenAdd = Logs.abc().at(1, base).at(2, put, add);
    Txn right = txn("R").readAt(2).read("c", "101");
    assertOk(check(putThenAdd, base.committed(1), put.committed(2), add.committed(2),
        right.committedReadOnly()));
    Txn wrongOrder = txn("R").readAt(2).read("c", "100");
    Violation v = assertOnly(check(putThenAdd, base.committed(1), put.committed(2),
        add.committed(2), wrongOrder.committedReadOnly()), Kind.WRONG_READ_VALUE);
    assertMentions(v, "observed \"100\"", "is \"101\"", "updated by txn A at position 2 #1");
    // With the list the other way round, 100 is right and 101 is wrong.
    Logs addThenPut = Logs.abc().at(1, base).at(2, add, put);
    assertOk(check(addThenPut, base.committed(1), put.committed(2), add.committed(2),
        wrongOrder.committedReadOnly()));
    assertOnly(check(addThenPut, base.committed(1), put.committed(2), add.committed(2),
        right.committedReadOnly()), Kind.WRONG_READ_VALUE);
  }

  @Test
  void aGetOfAnAddedKeyMissingFromTheEntrysReadSetIsAnEntryMismatch() {
    // T2 added to c and got it: the store's value at its read position is a read, so c is in
    // its read set. An entry without it could miss a conflict (here T3's add between).
    Txn t1 = txn("T1").add("c", 5);
    Txn inLog = txn("T2").readAt(1).add("c", 1);
    Txn told = txn("T2").readAt(1).read("c", "5").add("c", 1);
    Txn t3 = txn("T3").readAt(1).add("c", 2);
    Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t3).at(3, inLog), t1.committed(1),
        t3.committed(2), told.committed(3)), Kind.ENTRY_MISMATCH);
    assertEquals("T2", v.txnId());
    assertMentions(v, "position 3 #0", "read keys [c] vs []");
    // With c in the entry's read set, T3's add after T2's read position is a conflict.
    v = assertOnly(check(Logs.abc().at(1, t1).at(2, t3).at(3, told), t1.committed(1),
        t3.committed(2), told.committed(3)), Kind.CONFLICTING_WRITE);
    assertMentions(v, "read key 'c' at read position 1", "updated by txn T3 at position 2 #0");
  }

  @Test
  void recordWritesAreComparedWithTheEntrysIncludingUpdateKindsAndDeltas() {
    Txn t1 = txn("T1").add("c", 5);
    Txn inLog = txn("T2").readAt(1).add("c", 1).setUpdate("s", "e", 1);
    Txn otherDelta = txn("T2").readAt(1).add("c", 2).setUpdate("s", "e", 1);
    Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
        otherDelta.committed(2)), Kind.ENTRY_MISMATCH);
    assertMentions(v, "writes {c=ADD(+2), s=SET{e=1}} vs {c=ADD(+1), s=SET{e=1}}");
    Txn asPut = txn("T2").readAt(1).put("c", "6").setUpdate("s", "e", 1);
    v = assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
        asPut.committed(2)), Kind.ENTRY_MISMATCH);
    assertMentions(v, "writes {c=\"6\", s=SET{e=1}} vs {c=ADD(+1), s=SET{e=1}}");
  }

  // A refused entry: T2 adds to c, which holds text, and puts y; T3 adds 1 to a counter at the
  // 64-bit maximum, combined after T4's add that put it there.
  private final Txn text = txn("T1").put("c", "abc");
  private final Txn refused = txn("T2").readAt(1).add("c", 1).put("y", "from T2");
  private final Txn toMax = txn("T4").readAt(2).add("m", Long.MAX_VALUE);
  private final Txn overflow = txn("T3").readAt(2).add("m", 1).put("z", "from T3");

  private Logs refusingLog() {
    return Logs.abc().at(1, text).at(2, refused).at(3, toMax, overflow);
  }

  @Test
  void aRefusedEntryRecordedAbortedAtItsPositionPasses() {
    // Neither refused entry had an effect: y and z are absent, c is still text, m at the max.
    Txn ro = txn("R").readAt(3).read("c", "abc").read("y", null).read("z", null)
        .read("m", Long.toString(Long.MAX_VALUE));
    // A refused entry writes nothing, so T5 reading y at 1 and placed after it is no conflict.
    Txn t5 = txn("T5").readAt(1).read("y", null).put("w", "5");
    CheckResult result = check(refusingLog().at(4, t5), text.committed(1), refused.refusedAt(2),
        toMax.committed(3), overflow.refusedAt(3), t5.committed(4), ro.committedReadOnly());
    assertOk(result);
    assertEquals(2, result.stats().entriesRefused());
    assertEquals(3, result.stats().updatesChecked());
    assertEquals(2, result.stats().aborted());
  }

  @Test
  void aRefusedEntryRecordedCommittedIsCaught() {
    CheckResult result = check(refusingLog(), text.committed(1), refused.committed(2),
        toMax.committed(3), overflow.committed(3));
    Violation v = assertOnly(result, Kind.REFUSAL_MISMATCH);
    assertEquals(2, result.count(Kind.REFUSAL_MISMATCH));
    assertEquals("T2", v.txnId());
    assertEquals(2, v.position());
    assertMentions(v, "reported COMMITTED at position 2 #0", "refuses",
        Updates.describe(Updates.Refusal.NOT_A_COUNTER));
    Violation o = result.violations().get(1);
    assertEquals("T3", o.txnId());
    assertMentions(o, "position 3 #1", Updates.describe(Updates.Refusal.OVERFLOW));
  }

  @Test
  void anEntryReportedRefusedThatAppliedOrIsElsewhereIsCaught() {
    // T4's add applied at position 3: reporting it refused there is a lie about its effect.
    Violation v = assertOnly(check(refusingLog(), text.committed(1), refused.refusedAt(2),
        toMax.refusedAt(3), overflow.refusedAt(3)), Kind.REFUSAL_MISMATCH);
    assertEquals("T4", v.txnId());
    assertMentions(v, "ABORTED as refused at position 3 #0", "applies", "m=ADD(+");
    // Told position 4, in the log at 3.
    v = assertOnly(check(refusingLog(), text.committed(1), refused.refusedAt(2),
        toMax.committed(3), overflow.refusedAt(4)), Kind.WRONG_COMMIT_POSITION);
    assertMentions(v, "T3", "refused at position 4", "position 3 #1");
    // Told a position, in the log nowhere.
    Txn absent = txn("T9").readAt(1).add("c", 1);
    v = assertOnly(check(refusingLog(), text.committed(1), refused.refusedAt(2),
        toMax.committed(3), overflow.refusedAt(3), absent.refusedAt(2)),
        Kind.REFUSAL_MISMATCH);
    assertMentions(v, "T9", "not in the merged log");
    // An ABORTED record told no position whose refused entry is in the log is in the log.
    assertOnly(check(refusingLog(), text.committed(1), refused.aborted(), toMax.committed(3),
        overflow.refusedAt(3)), Kind.ABORTED_IN_LOG);
  }

  @Test
  void aSetUpdateOfACounterIsRefusedAndTheCounterKeepsItsValue() {
    Txn counter = txn("T1").add("k", 1);
    Txn setOnCounter = txn("T2").readAt(1).setUpdate("k", "e", 1);
    Txn ro = txn("R").readAt(2).read("k", "1");
    CheckResult result = check(Logs.abc().at(1, counter).at(2, setOnCounter),
        counter.committed(1), setOnCounter.refusedAt(2), ro.committedReadOnly());
    assertOk(result);
    assertEquals(1, result.stats().entriesRefused());
    assertOnly(check(Logs.abc().at(1, counter).at(2, setOnCounter), counter.committed(1),
        setOnCounter.committed(2)), Kind.REFUSAL_MISMATCH);
  }

  @Test
  void aRefusalAtOrAfterAGapIsNotHeldAgainstTheRecord() {
    // Position 2 is missing everywhere: what c holds at 3 is unknown, so is T2's refusal.
    Logs logs = Logs.abc().at(1, text).at(3, refused);
    assertOnly(check(logs, text.committed(1), refused.committed(3)), Kind.LOG_GAP);
    assertOnly(check(logs, text.committed(1), refused.refusedAt(3)), Kind.LOG_GAP);
    assertOnly(check(Logs.abc().at(1, text).at(2, LogValue.NOOP).at(3, refused),
        text.committed(1), refused.committed(3)), Kind.REFUSAL_MISMATCH);
  }
}
