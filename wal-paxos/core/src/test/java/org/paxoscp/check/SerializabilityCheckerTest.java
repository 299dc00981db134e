package org.paxoscp.check;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.check.Fixture.bytes;
import static org.paxoscp.check.Fixture.txn;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Fixture.Logs;
import org.paxoscp.check.Fixture.Txn;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

@Timeout(value = 10, unit = TimeUnit.SECONDS)
class SerializabilityCheckerTest {

  private static CheckResult check(Logs logs, TxnRecord... records) {
    return SerializabilityChecker.check(logs.map(), List.of(records));
  }

  private static void assertOk(CheckResult result) {
    assertTrue(result.ok(), result::summary);
    assertTrue(result.violations().isEmpty(), result::summary);
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

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class ValidHistories {

    @Test
    void emptyLogAndHistoryPass() {
      CheckResult result = check(Logs.abc());
      assertOk(result);
      assertEquals(0, result.stats().positions());
      assertEquals(3, result.stats().dcs());
    }

    @Test
    void singleCommittedTransaction() {
      Txn t1 = txn("T1").readAt(0).read("x", null).put("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1));
      assertOk(result);
      assertEquals(1, result.stats().entries());
      assertEquals(1, result.stats().committed());
      assertEquals(1, result.stats().readsChecked());
    }

    @Test
    void chainOfTransactionsEachReadingTheLatestValues() {
      Txn t1 = txn("T1").readAt(0).read("x", null).put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Txn t3 = txn("T3").readAt(2).read("x", "2").read("y", null).put("y", "a");
      Txn ro = txn("R").readAt(3).read("x", "2").read("y", "a");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3), ro.committedReadOnly()));
    }

    @Test
    void laggingDcsMissingSomePositionsPass() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Txn t3 = txn("T3").readAt(2).read("x", "2").put("x", "3");
      Logs logs = Logs.abc().at(1, t1).at(2, t2).at(3, t3)
          .drop("B", 2).drop("B", 3) // B lags behind
          .drop("C", 2); // C missed position 2 but learned 3
      CheckResult result = check(logs, t1.committed(1), t2.committed(2), t3.committed(3));
      assertOk(result);
      assertEquals(3, result.stats().positions());
    }

    @Test
    void combinedListWhereLaterEntryReadsKeyEarlierEntryOnlyRead() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("y", "from-T2");
      Txn t3 = txn("T3").readAt(1).read("x", "1").put("z", "from-T3");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, t2, t3),
          t1.committed(1), t2.committed(2), t3.committed(2));
      assertOk(result);
      assertEquals(1, result.stats().combinedPositions());
      assertEquals(3, result.stats().entries());
    }

    @Test
    void combinedListWhereEarlierEntryReadsKeyLaterEntryWrites() {
      // Serial order T2 then T3: T2 read x before T3 overwrote it.
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("y", "y2");
      Txn t3 = txn("T3").readAt(1).put("x", "3");
      Txn ro = txn("R").readAt(2).read("x", "3").read("y", "y2");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2, t3),
          t1.committed(1), t2.committed(2), t3.committed(2), ro.committedReadOnly()));
    }

    @Test
    void promotedEntryWhoseReadsWereNotOverwritten() {
      // T2 read at 0 and lost position 1 to T1, which wrote only x: promoted to position 2.
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(0).read("y", null).put("y", "2");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2), t1.committed(1), t2.committed(2)));
    }

    @Test
    void noopPositionPasses() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t3 = txn("T3").readAt(2).read("x", "1").put("x", "3");
      Txn ro = txn("R").readAt(2).read("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, LogValue.NOOP).at(3, t3),
          t1.committed(1), t3.committed(3), ro.committedReadOnly());
      assertOk(result);
      assertEquals(1, result.stats().noopPositions());
    }

    @Test
    void deleteLeavesTheKeyAbsent() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").delete("x");
      Txn t3 = txn("T3").readAt(2).read("x", null).put("y", "x-was-gone");
      Txn before = txn("R1").readAt(1).read("x", "1");
      Txn after = txn("R2").readAt(3).read("x", null).read("y", "x-was-gone");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3),
          before.committedReadOnly(), after.committedReadOnly()));
    }

    @Test
    void keyWrittenAgainAfterDeleteIsPresent() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").delete("x");
      Txn t3 = txn("T3").put("x", "3");
      Txn ro = txn("R").readAt(3).read("x", "3");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3), ro.committedReadOnly()));
    }

    @Test
    void readOnlySnapshotAtAnOldPositionPasses() {
      Txn t1 = txn("T1").put("x", "1").put("y", "1");
      Txn t2 = txn("T2").put("x", "2");
      Txn t3 = txn("T3").put("y", "3");
      Txn ro = txn("R").readAt(1).read("x", "1").read("y", "1");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3), ro.committedReadOnly()));
    }

    @Test
    void readAtPositionZeroSeesTheEmptyState() {
      Txn t1 = txn("T1").put("x", "1");
      Txn ro = txn("R").readAt(0).read("x", null).read("never", null);
      assertOk(check(Logs.abc().at(1, t1), t1.committed(1), ro.committedReadOnly()));
      assertOk(check(Logs.abc(), ro.committedReadOnly()));
    }

    @Test
    void unknownAndCrashedMayBeInTheLogOnceOrNotAtAll() {
      Txn u1 = txn("U1").put("x", "1");
      Txn u2 = txn("U2").readAt(0).read("x", null).put("x", "never");
      Txn c1 = txn("C1").readAt(1).read("x", "1").put("y", "1");
      Txn c2 = txn("C2").readAt(1).read("y", null).put("y", "never");
      CheckResult result = check(Logs.abc().at(1, u1).at(2, c1),
          u1.unknown(), u2.unknown(), c1.crashed(), c2.crashed());
      assertOk(result);
      assertEquals(2, result.stats().unknown());
      assertEquals(2, result.stats().crashed());
    }

    @Test
    void abortedTransactionThatReadACorrectSnapshotPasses() {
      Txn t1 = txn("T1").put("x", "1");
      Txn a = txn("A1").readAt(0).read("x", null).put("x", "lost");
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), a.aborted());
      assertOk(result);
      assertEquals(1, result.stats().aborted());
    }

    @Test
    void entryWithoutRecordIsAllowedAndCounted() {
      Txn t1 = txn("T1").put("x", "1");
      Txn orphan = txn("T2").readAt(1).read("x", "1").put("x", "2");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, orphan), t1.committed(1));
      assertOk(result);
      assertEquals(1, result.stats().entriesWithoutRecord());
    }

    @Test
    void readModifyWriteAndBlindWritesPass() {
      Txn t1 = txn("T1").readAt(0).read("x", null).put("x", "1");
      Txn t2 = txn("T2").readAt(0).put("x", "blind"); // no read, so no conflict with T1
      Txn t3 = txn("T3").readAt(2).read("x", "blind").put("x", "3");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3)));
    }

    @Test
    void readValuesAreComparedByContentNotIdentity() {
      byte[] value = {0, 1, 2, (byte) 0xff};
      LogEntry e = new LogEntry("T1", "A", 0, new TreeSet<>(),
          new TreeMap<>(Map.of("x", Mutation.put(value))));
      TxnRecord writer = new TxnRecord("T1", "c1", TxnRecord.Status.COMMITTED, 0, Map.of(),
          new TreeMap<>(Map.of("x", Mutation.put(value.clone()))), 1);
      TxnRecord reader = new TxnRecord("R", "c2", TxnRecord.Status.COMMITTED, 1,
          Map.of("x", Optional.of(value.clone())), new TreeMap<>(), -1);
      assertOk(check(Logs.abc().at(1, LogValue.of(e)), writer, reader));
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Agreement {

    @Test
    void dcsHoldingDifferentValuesAtOnePosition() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Logs logs = Logs.abc().at(1, t1).at(2, t2).dc("C", 2, LogValue.NOOP);
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2)), Kind.AGREEMENT);
      assertEquals(2, v.position());
      assertMentions(v, "position 2", "[A, B]", "[C]", "T2", "NOOP");
    }

    @Test
    void valuesDifferingOnlyInWrittenBytes() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t1Other = txn("T1").put("x", "other");
      Logs logs = Logs.abc().at(1, t1).dc("B", 1, LogValue.of(t1Other.entry()));
      Violation v = assertOnly(check(logs, t1.committed(1)), Kind.AGREEMENT);
      assertMentions(v, "differ only in written bytes", "[B]");
    }

    @Test
    void combinedListsInDifferentOrder() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").put("y", "2");
      Logs logs = Logs.abc().at(1, t1, t2).dc("A", 1, LogValue.of(t2.entry(), t1.entry()));
      CheckResult result = check(logs, t1.committed(1), t2.committed(1));
      assertOnly(result, Kind.AGREEMENT);
    }

    @Test
    void disagreementAtEveryPositionIsReportedPerPosition() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").put("x", "2");
      Logs logs = new Logs("A", "B").dc("A", 1, LogValue.of(t1.entry()))
          .dc("B", 1, LogValue.of(t2.entry())).dc("A", 2, LogValue.NOOP)
          .dc("B", 2, LogValue.of(t1.entry()));
      CheckResult result = check(logs);
      assertEquals(2, result.count(Kind.AGREEMENT), result::summary);
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Completeness {

    @Test
    void positionMissingAtEveryDc() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t3 = txn("T3").put("y", "3");
      Logs logs = Logs.abc().at(1, t1).at(3, t3);
      Violation v = assertOnly(check(logs, t1.committed(1), t3.committed(3)), Kind.LOG_GAP);
      assertEquals(2, v.position());
      assertMentions(v, "position 2 missing at every DC", "maximum 3");
    }

    @Test
    void missingRangeIsOneViolation() {
      Logs logs = Logs.abc().at(1, LogValue.NOOP).at(5, LogValue.NOOP).at(7, LogValue.NOOP);
      CheckResult result = check(logs);
      assertEquals(2, result.count(Kind.LOG_GAP), result::summary);
      assertMentions(result.violations().get(0), "positions 2..4");
      assertMentions(result.violations().get(1), "position 6 ");
    }

    @Test
    void missingFirstPosition() {
      Violation v = assertOnly(check(Logs.abc().at(2, LogValue.NOOP)), Kind.LOG_GAP);
      assertEquals(1, v.position());
    }

    @Test
    void readsAtOrAfterTheGapAreCountedNotValueChecked() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t3 = txn("T3").put("x", "3");
      // Position 2 is lost; whatever a reader at 2 or 3 saw cannot be judged against the replay.
      Txn atGap = txn("R2").readAt(2).read("x", "whatever");
      Txn afterGap = txn("R3").readAt(3).read("x", "whatever");
      Txn beforeGap = txn("R1").readAt(1).read("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1).at(3, t3), t1.committed(1), t3.committed(3),
          atGap.committedReadOnly(), afterGap.committedReadOnly(), beforeGap.committedReadOnly());
      assertOnly(result, Kind.LOG_GAP);
      assertEquals(2, result.stats().readsUnverifiable());
      assertEquals(1, result.stats().readsChecked());
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Duplicates {

    @Test
    void sameTxnAtTwoPositions() {
      Txn u = txn("U").put("x", "1");
      Logs logs = Logs.abc().at(1, u).at(2, LogValue.NOOP).at(3, u);
      Violation v = assertOnly(check(logs, u.unknown()), Kind.DUPLICATE_ENTRY);
      assertEquals("U", v.txnId());
      assertMentions(v, "2 times", "position 1 #0", "position 3 #0");
    }

    @Test
    void sameTxnInTwoCombinedLists() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").put("y", "2");
      Txn t3 = txn("T3").put("z", "3");
      Logs logs = Logs.abc().at(1, t1, t2).at(2, t3, t2);
      Violation v = assertOnly(check(logs, t1.committed(1), t2.crashed(), t3.committed(2)),
          Kind.DUPLICATE_ENTRY);
      assertMentions(v, "T2", "position 1 #1", "position 2 #1");
    }

    @Test
    void committedTxnTwiceIsADuplicateEvenAtItsReportedPosition() {
      Txn t1 = txn("T1").put("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, t1), t1.committed(1));
      assertOnly(result, Kind.DUPLICATE_ENTRY);
    }

    @Test
    void duplicateWithoutRecordIsStillADuplicate() {
      Txn t1 = txn("T1").put("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, t1));
      assertOnly(result, Kind.DUPLICATE_ENTRY);
      assertEquals(2, result.stats().entriesWithoutRecord());
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class OneCopySerializability {

    @Test
    void readPositionEqualToOwnPosition() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(2).put("y", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2), t1.committed(1)),
          Kind.READ_POSITION_NOT_BEFORE_SLOT);
      assertEquals(2, v.position());
      assertMentions(v, "T2", "read position 2");
    }

    @Test
    void readPositionAfterOwnPosition() {
      Txn t1 = txn("T1").readAt(5).put("x", "1");
      assertOnly(check(Logs.abc().at(1, t1)), Kind.READ_POSITION_NOT_BEFORE_SLOT);
    }

    @Test
    void readOfKeyWrittenAfterReadPositionAtAnEarlierPosition() {
      // T2 observed the right value for its read position 0, but T1 overwrote x at 1: T2 must
      // not be placed at 2 (promotion past a conflicting winner).
      Txn t1 = txn("T1").readAt(0).read("x", null).put("x", "1");
      Txn t2 = txn("T2").readAt(0).read("x", null).put("y", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2),
          t1.committed(1), t2.committed(2)), Kind.CONFLICTING_WRITE);
      assertEquals(2, v.position());
      assertEquals("T2", v.txnId());
      assertMentions(v, "'x'", "read position 0", "written by txn T1 at position 1 #0");
    }

    @Test
    void writeAtExactlyTheReadPositionIsFineOneAfterIsNot() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").put("x", "2");
      Txn ok = txn("OK").readAt(2).read("x", "2").put("y", "ok");
      Txn stale = txn("STALE").readAt(1).read("x", "1").put("z", "stale");
      assertOk(check(Logs.abc().at(1, t1).at(2, t2).at(3, ok),
          t1.committed(1), t2.committed(2), ok.committed(3)));
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2).at(3, stale),
          t1.committed(1), t2.committed(2), stale.committed(3)), Kind.CONFLICTING_WRITE);
      assertMentions(v, "STALE", "position 2 #0");
    }

    @Test
    void combinedListWhereLaterEntryReadsKeyEarlierEntryWrote() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Txn t3 = txn("T3").readAt(1).read("x", "1").put("y", "3");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2, t3),
          t1.committed(1), t2.committed(2), t3.committed(2)), Kind.CONFLICTING_WRITE);
      assertEquals("T3", v.txnId());
      assertMentions(v, "T3 at position 2 #1", "'x'", "written by txn T2 at position 2 #0");
    }

    @Test
    void deleteCountsAsAWrite() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").delete("x");
      Txn t3 = txn("T3").readAt(1).read("x", "1").put("y", "3");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2).at(3, t3),
          t1.committed(1), t2.committed(2), t3.committed(3)), Kind.CONFLICTING_WRITE);
      assertMentions(v, "deleted by txn T2 at position 2");
    }

    @Test
    void everyConflictingKeyIsReported() {
      Txn t1 = txn("T1").put("x", "1").put("y", "1").put("z", "1");
      Txn t2 = txn("T2").readAt(0).read("x", null).read("y", null).read("w", null).put("w", "2");
      CheckResult result = check(Logs.abc().at(1, t1).at(2, t2), t1.committed(1),
          t2.committed(2));
      assertEquals(2, result.count(Kind.CONFLICTING_WRITE), result::summary);
    }

    @Test
    void conflictIsFoundEvenWithoutRecords() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(0).read("x", null).put("y", "2");
      assertOnly(check(Logs.abc().at(1, t1).at(2, t2)), Kind.CONFLICTING_WRITE);
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Reads {
    private final Txn t1 = txn("T1").put("x", "1").put("y", "1");
    private final Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2").put("y", "2");
    private final Logs logs = Logs.abc().at(1, t1).at(2, t2);

    @Test
    void committedTransactionObservedAStaleValue() {
      Txn t3 = txn("T3").readAt(2).read("x", "1").put("z", "3");
      Violation v = assertOnly(check(logs.at(3, t3), t1.committed(1), t2.committed(2),
          t3.committed(3)), Kind.WRONG_READ_VALUE);
      assertEquals(2, v.position());
      assertEquals("T3", v.txnId());
      assertMentions(v, "'x'", "read position 2", "observed \"1\"", "is \"2\"",
          "written by txn T2 at position 2 #0");
    }

    @Test
    void readOnlySnapshotMixingTwoPositions() {
      Txn ro = txn("R").readAt(1).read("x", "1").read("y", "2");
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2),
          ro.committedReadOnly()), Kind.WRONG_READ_VALUE);
      assertEquals("R", v.txnId());
      assertMentions(v, "'y'", "observed \"2\"", "is \"1\"");
    }

    @Test
    void abortedAndUnknownTransactionsReadingAWrongSnapshot() {
      Txn a = txn("A1").readAt(2).read("x", "1").put("x", "a");
      Txn u = txn("U1").readAt(0).read("y", "2").put("y", "u");
      CheckResult result = check(logs, t1.committed(1), t2.committed(2), a.aborted(),
          u.unknown());
      assertOnly(result, Kind.WRONG_READ_VALUE);
      assertEquals(2, result.count(Kind.WRONG_READ_VALUE));
    }

    @Test
    void observedAValueOfADeletedKey() {
      Txn t3 = txn("T3").delete("x");
      Txn ro = txn("R").readAt(3).read("x", "2");
      Violation v = assertOnly(check(logs.at(3, t3), t1.committed(1), t2.committed(2),
          t3.committed(3), ro.committedReadOnly()), Kind.WRONG_READ_VALUE);
      assertMentions(v, "observed \"2\"", "is absent", "deleted by txn T3 at position 3 #0");
    }

    @Test
    void observedAbsentForAPresentKey() {
      Txn ro = txn("R").readAt(2).read("x", null);
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2),
          ro.committedReadOnly()), Kind.WRONG_READ_VALUE);
      assertMentions(v, "observed absent", "is \"2\"");
    }

    @Test
    void observedAValueForANeverWrittenKey() {
      Txn ro = txn("R").readAt(2).read("q", "ghost");
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2),
          ro.committedReadOnly()), Kind.WRONG_READ_VALUE);
      assertMentions(v, "'q'", "never written");
    }

    @Test
    void binaryValuesAreRenderedInHex() {
      TxnRecord ro = new TxnRecord("R", "c", TxnRecord.Status.COMMITTED, 2,
          Map.of("x", Optional.of(new byte[] {0, (byte) 0xab})), new TreeMap<>(), -1);
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2), ro),
          Kind.WRONG_READ_VALUE);
      assertMentions(v, "0x00ab (2 bytes)");
    }

    @Test
    void readPositionBeyondTheLog() {
      Txn ro = txn("R").readAt(3).read("x", "2");
      Violation v = assertOnly(check(logs, t1.committed(1), t2.committed(2),
          ro.committedReadOnly()), Kind.READ_BEYOND_LOG);
      assertEquals(3, v.position());
      assertMentions(v, "R", "read position 3", "last position 2");
    }

    @Test
    void readPositionBeyondAnEmptyLog() {
      Txn ro = txn("R").readAt(1).read("x", null);
      assertOnly(check(Logs.abc(), ro.committedReadOnly()), Kind.READ_BEYOND_LOG);
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class RecordMatchesEntry {
    private final Txn t1 = txn("T1").put("x", "1").put("y", "1");

    @Test
    void recordReadKeysDifferFromEntryReadSet() {
      Txn inLog = txn("T2").readAt(1).read("x", "1").put("z", "2");
      Txn told = txn("T2").readAt(1).read("x", "1").read("y", "1").put("z", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
          told.committed(2)), Kind.ENTRY_MISMATCH);
      assertMentions(v, "T2", "position 2 #0", "read keys [x, y] vs [x]");
    }

    @Test
    void recordWritesDifferFromEntryWrites() {
      Txn inLog = txn("T2").readAt(1).put("z", "2");
      Txn told = txn("T2").readAt(1).put("z", "other");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
          told.committed(2)), Kind.ENTRY_MISMATCH);
      assertMentions(v, "writes {z=\"other\"} vs {z=\"2\"}");
    }

    @Test
    void putVersusDeleteIsAMismatch() {
      Txn inLog = txn("T2").readAt(1).delete("z");
      Txn told = txn("T2").readAt(1).put("z", "2");
      assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1), told.unknown()),
          Kind.ENTRY_MISMATCH);
    }

    @Test
    void recordReadPositionDiffersFromEntry() {
      Txn inLog = txn("T2").readAt(1).put("z", "2");
      Txn told = txn("T2").readAt(0).put("z", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, inLog), t1.committed(1),
          told.crashed()), Kind.ENTRY_MISMATCH);
      assertMentions(v, "read position 0 vs 1");
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Outcomes {
    private final Txn t1 = txn("T1").put("x", "1");

    @Test
    void committedTransactionMissingFromTheLog() {
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1), t1.committed(1), t2.committed(2)),
          Kind.COMMITTED_NOT_IN_LOG);
      assertEquals("T2", v.txnId());
      assertEquals(2, v.position());
      assertMentions(v, "COMMITTED at position 2", "not in the merged log");
    }

    @Test
    void committedTransactionAtAnotherPosition() {
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("x", "2");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, LogValue.NOOP).at(3, t2),
          t1.committed(1), t2.committed(2)), Kind.WRONG_COMMIT_POSITION);
      assertMentions(v, "T2", "COMMITTED at position 2", "position 3 #0");
    }

    @Test
    void committedTransactionWithoutACommitPosition() {
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(-1)), Kind.WRONG_COMMIT_POSITION);
    }

    @Test
    void abortedTransactionInTheLog() {
      Txn a = txn("A1").readAt(1).read("x", "1").put("y", "a");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, a), t1.committed(1),
          a.aborted()), Kind.ABORTED_IN_LOG);
      assertEquals("A1", v.txnId());
      assertEquals(2, v.position());
      assertMentions(v, "L1", "ABORTED", "position 2 #0");
    }

    @Test
    void unknownTransactionInTheLogOutsideItsRange() {
      Txn u = txn("U1").readAt(1).read("x", "1").put("y", "u");
      Logs logs = Logs.abc().at(1, t1).at(2, LogValue.NOOP).at(3, u);
      assertTrue(check(logs, t1.committed(1), u.unknownAt(2, 3)).ok());
      assertTrue(check(logs, t1.committed(1), u.unknown()).ok(), "no range told, none checked");
      Violation v = assertOnly(check(logs, t1.committed(1), u.unknownAt(2, 2)),
          Kind.UNKNOWN_OUTSIDE_RANGE);
      assertEquals("U1", v.txnId());
      assertEquals(3, v.position());
      assertMentions(v, "UNKNOWN at positions 2..2", "position 3 #0");
    }

    @Test
    void aRangeOnAnythingButAnUnknownIsMalformed() {
      Txn u = txn("U1").readAt(1).read("x", "1").put("y", "u");
      TxnRecord ranged = u.unknownAt(2, 2);
      TxnRecord aborted = new TxnRecord(ranged.txnId(), ranged.client(), TxnRecord.Status.ABORTED,
          1, ranged.reads(), ranged.writes(), -1, 2, 2);
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(1), aborted), Kind.MALFORMED_HISTORY);
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(1), u.unknownAt(3, 2)),
          Kind.MALFORMED_HISTORY);
    }

    @Test
    void abortedTransactionInsideACombinedList() {
      Txn t2 = txn("T2").readAt(1).put("y", "2");
      Txn a = txn("A1").readAt(1).put("z", "a");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, t2, a), t1.committed(1),
          t2.committed(2), a.aborted()), Kind.ABORTED_IN_LOG);
      assertMentions(v, "position 2 #1");
    }

    @Test
    void readOnlyTransactionInTheLog() {
      Txn ro = txn("R").readAt(1).read("x", "1");
      Violation v = assertOnly(check(Logs.abc().at(1, t1).at(2, ro), t1.committed(1),
          ro.committedReadOnly()), Kind.READ_ONLY_IN_LOG);
      assertMentions(v, "read-only txn R", "position 2 #0");
    }

    @Test
    void unknownTransactionTwiceInTheLog() {
      Txn u = txn("U").readAt(1).put("y", "u");
      assertOnly(check(Logs.abc().at(1, t1).at(2, u).at(3, u), t1.committed(1), u.unknown()),
          Kind.DUPLICATE_ENTRY);
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class MalformedInput {
    private final Txn t1 = txn("T1").put("x", "1");

    @Test
    void nullLogsAndNullHistory() {
      CheckResult result = assertDoesNotThrow(() -> SerializabilityChecker.check(null, null));
      assertOnly(result, Kind.MALFORMED_LOG, Kind.MALFORMED_HISTORY);
    }

    @Test
    void nullDcLogIsReportedAndTheOthersStillChecked() {
      Map<String, SortedMap<Long, LogValue>> logs = new HashMap<>(Logs.abc().at(1, t1).map());
      logs.put("D", null);
      Txn ro = txn("R").readAt(1).read("x", "wrong");
      CheckResult result = SerializabilityChecker.check(logs,
          List.of(t1.committed(1), ro.committedReadOnly()));
      Violation v = assertOnly(result, Kind.MALFORMED_LOG, Kind.WRONG_READ_VALUE);
      assertMentions(v, "DC D");
    }

    @Test
    void nullValueAtAPosition() {
      Logs logs = Logs.abc().at(1, t1).dc("B", 1, null);
      Violation v = assertOnly(check(logs, t1.committed(1)), Kind.MALFORMED_LOG);
      assertEquals(1, v.position());
      assertMentions(v, "DC B", "null value");
    }

    @Test
    void nullValueEverywhereLeavesAGap() {
      Logs logs = Logs.abc().at(1, (LogValue) null).at(2, t1);
      CheckResult result = check(logs, t1.committed(2));
      assertOnly(result, Kind.MALFORMED_LOG, Kind.LOG_GAP);
      assertEquals(3, result.count(Kind.MALFORMED_LOG));
    }

    @Test
    void positionsBelowOne() {
      Logs logs = Logs.abc().at(1, t1).dc("A", 0, LogValue.NOOP).dc("C", -4, LogValue.NOOP);
      CheckResult result = check(logs, t1.committed(1));
      assertOnly(result, Kind.MALFORMED_LOG);
      assertEquals(2, result.count(Kind.MALFORMED_LOG));
    }

    @Test
    void nullMutationInALogEntryIsReplayedAsADelete() {
      SortedMap<String, Mutation> writes = new TreeMap<>();
      writes.put("x", null);
      LogEntry bad = new LogEntry("T2", "A", 1, new TreeSet<>(), writes);
      Txn ro = txn("R").readAt(2).read("x", null);
      CheckResult result = check(Logs.abc().at(1, t1).at(2, LogValue.of(bad)), t1.committed(1),
          ro.committedReadOnly());
      Violation v = assertOnly(result, Kind.MALFORMED_LOG);
      assertMentions(v, "T2", "null mutation", "'x'");
    }

    @Test
    void nullRecordInTheHistory() {
      List<TxnRecord> history = new ArrayList<>(Arrays.asList(t1.committed(1), null));
      CheckResult result = SerializabilityChecker.check(Logs.abc().at(1, t1).map(), history);
      Violation v = assertOnly(result, Kind.MALFORMED_HISTORY);
      assertMentions(v, "#1");
    }

    @Test
    void twoRecordsForOneTransaction() {
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), t1.unknown());
      Violation v = assertOnly(result, Kind.MALFORMED_HISTORY);
      assertMentions(v, "two records for txn T1");
    }

    @Test
    void twoContradictoryRecordsAreEachChecked() {
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), t1.aborted());
      assertOnly(result, Kind.MALFORMED_HISTORY, Kind.ABORTED_IN_LOG);
    }

    @Test
    void unknownOrCrashedRecordWithACommitPosition() {
      Txn a = txn("A1").put("y", "a");
      Violation v = assertOnly(check(Logs.abc().at(1, t1), t1.committed(1),
          a.record(TxnRecord.Status.UNKNOWN, 2)), Kind.MALFORMED_HISTORY);
      assertMentions(v, "A1", "UNKNOWN", "commit position 2");
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(1),
          a.record(TxnRecord.Status.CRASHED, 2)), Kind.MALFORMED_HISTORY);
    }

    @Test
    void readOnlyAbortedRecordWithACommitPosition() {
      // Only an entry can be refused; a read-only transaction has none.
      Txn ro = txn("R").readAt(1).read("x", "1");
      Violation v = assertOnly(check(Logs.abc().at(1, t1), t1.committed(1),
          ro.refusedAt(1)), Kind.MALFORMED_HISTORY);
      assertMentions(v, "R", "ABORTED", "commit position 1");
    }

    @Test
    void negativeReadPositionWithReads() {
      Txn ro = txn("R").readAt(0).read("x", null);
      TxnRecord bad = new TxnRecord("R", "c", TxnRecord.Status.COMMITTED, -1,
          ro.committedReadOnly().reads(), new TreeMap<>(), -1);
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(1), bad), Kind.MALFORMED_HISTORY);
    }

    @Test
    void nullKeyOrNullOptionalInReads() {
      Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
      reads.put("x", null);
      reads.put(null, Optional.empty());
      reads.put("y", Optional.of(bytes("wrong")));
      TxnRecord bad = new TxnRecord("R", "c", TxnRecord.Status.COMMITTED, 1, reads,
          new TreeMap<>(), -1);
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1), bad);
      assertOnly(result, Kind.MALFORMED_HISTORY, Kind.WRONG_READ_VALUE);
      assertEquals(2, result.count(Kind.MALFORMED_HISTORY));
      assertEquals(1, result.count(Kind.WRONG_READ_VALUE));
    }

    @Test
    void nullMutationInARecord() {
      SortedMap<String, Mutation> writes = new TreeMap<>();
      writes.put("x", null);
      TxnRecord bad = new TxnRecord("T9", "c", TxnRecord.Status.ABORTED, 0, Map.of(), writes,
          -1);
      assertOnly(check(Logs.abc().at(1, t1), t1.committed(1), bad), Kind.MALFORMED_HISTORY);
    }

    @Test
    void logThatThrowsWhenReadIsReportedNotThrown() {
      SortedMap<Long, LogValue> throwing = new TreeMap<>() {
        @Override
        public Set<Map.Entry<Long, LogValue>> entrySet() {
          throw new IllegalStateException("store gone");
        }
      };
      Map<String, SortedMap<Long, LogValue>> logs = Map.of("A", throwing);
      CheckResult result = assertDoesNotThrow(() -> SerializabilityChecker.check(logs,
          List.of()));
      Violation v = assertOnly(result, Kind.MALFORMED_LOG);
      assertMentions(v, "could not complete", "store gone");
    }

    @Test
    void historyThatThrowsWhenReadIsReportedNotThrown() {
      Collection<TxnRecord> throwing = new ArrayList<>() {
        @Override
        public Iterator<TxnRecord> iterator() {
          throw new IllegalStateException("history gone");
        }
      };
      CheckResult result = assertDoesNotThrow(() -> SerializabilityChecker.check(
          Logs.abc().map(), throwing));
      Violation v = assertOnly(result, Kind.MALFORMED_HISTORY);
      assertMentions(v, "history gone");
    }
  }

  @Nested
  @Timeout(value = 10, unit = TimeUnit.SECONDS)
  class Reporting {

    @Test
    void violationListIsCappedButEveryViolationIsCounted() {
      Logs logs = Logs.abc();
      List<TxnRecord> history = new ArrayList<>();
      for (int p = 1; p <= 60; p++) {
        Txn a = txn("A" + p).readAt(p - 1).put("k" + p, "v");
        logs.at(p, a);
        history.add(a.aborted());
      }
      CheckResult result = SerializabilityChecker.check(logs.map(), history);
      assertEquals(ViolationCollector.MAX_REPORTED, result.violations().size());
      assertEquals(60, result.violationCount());
      assertEquals(60, result.count(Kind.ABORTED_IN_LOG));
      assertTrue(result.summary().contains("... and 10 more"), result::summary);
    }

    @Test
    void capDoesNotHideALaterKind() {
      Logs logs = Logs.abc();
      List<TxnRecord> history = new ArrayList<>();
      for (int p = 1; p <= 60; p++) {
        Txn a = txn("A" + p).readAt(p - 1).put("k" + p, "v");
        logs.at(p, a);
        history.add(a.aborted());
      }
      history.add(txn("MISSING").put("m", "1").committed(61));
      CheckResult result = SerializabilityChecker.check(logs.map(), history);
      assertTrue(result.has(Kind.COMMITTED_NOT_IN_LOG), result::summary);
      assertFalse(result.has(Kind.AGREEMENT));
    }

    @Test
    void summaryOfAPassingCheck() {
      Txn t1 = txn("T1").put("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1), t1.committed(1));
      assertTrue(result.summary().startsWith("OK"), result::summary);
      assertTrue(result.toString().contains("positions=1"), result::toString);
    }

    @Test
    void summaryOfAFailingCheckNamesEachViolation() {
      Txn t1 = txn("T1").put("x", "1");
      CheckResult result = check(Logs.abc().at(1, t1), t1.aborted());
      String summary = result.summary();
      assertTrue(summary.startsWith("VIOLATIONS: 1"), summary);
      assertTrue(summary.contains("ABORTED_IN_LOG: L1: txn T1"), summary);
    }

    @Test
    void statisticsOfAMixedRun() {
      Txn t1 = txn("T1").put("x", "1");
      Txn t2 = txn("T2").readAt(1).read("x", "1").put("y", "2");
      Txn t3 = txn("T3").readAt(1).put("z", "3");
      Txn u = txn("U").readAt(3).read("y", "2").put("y", "u");
      Txn orphan = txn("O").readAt(4).put("w", "o");
      Txn a = txn("A").readAt(1).read("x", "1").put("x", "a");
      Txn c = txn("C").readAt(2).put("q", "c");
      Txn ro = txn("R").readAt(4).read("y", "u");
      Logs logs = Logs.abc().at(1, t1).at(2, t2, t3).at(3, LogValue.NOOP).at(4, u)
          .at(5, orphan);
      CheckResult result = check(logs, t1.committed(1), t2.committed(2), t3.committed(2),
          u.unknown(), a.aborted(), c.crashed(), ro.committedReadOnly());
      assertOk(result);
      CheckResult.Stats s = result.stats();
      assertEquals(new CheckResult.Stats(3, 5, 5, 5, 1, 1, 7, 4, 1, 1, 1, 1, 1, 4, 0, 0, 0, 0), s,
          s::toString);
    }
  }
}
