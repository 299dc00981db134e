package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/** The nemesis' end-of-run checks find what they are meant to find, and nothing else. */
class NemesisChecksTest {
  private static final List<String> DCS = List.of("A", "B", "C");

  private static LogEntry entry(String txn, long readPos, String key, String value) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.put(value.getBytes(StandardCharsets.UTF_8)));
    return new LogEntry(txn, "A", readPos, new TreeSet<>(), w);
  }

  private static TxnRecord committed(LogEntry e, long pos) {
    return new TxnRecord(e.txnId(), "client", TxnRecord.Status.COMMITTED, e.readPosition(),
        Map.<String, Optional<byte[]>>of(), new TreeMap<>(e.writes()), pos);
  }

  private static SortedMap<Long, LogValue> log(LogValue... values) {
    SortedMap<Long, LogValue> m = new TreeMap<>();
    for (int i = 0; i < values.length; i++) {
      m.put(i + 1L, values[i]);
    }
    return m;
  }

  private final LogEntry t1 = entry("t1", 0, "k", "1");
  private final LogEntry t2 = entry("t2", 1, "k", "2");
  private final List<TxnRecord> records = List.of(committed(t1, 1), committed(t2, 2));

  @Test
  void agreeingCompleteLogsPass() {
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.of(t2));
    Map<String, SortedMap<Long, LogValue>> logs = Map.of("A", l, "B", l, "C", l);
    assertEquals(List.of(), NemesisVerdict.checkGroup("g", DCS, logs, records));
  }

  @Test
  void aDcMissingAPositionIsReported() {
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.of(t2));
    SortedMap<Long, LogValue> partial = log(LogValue.of(t1));
    List<String> v = NemesisVerdict.checkGroup("g", DCS, Map.of("A", l, "B", l, "C", partial),
        records);
    assertTrue(v.stream().anyMatch(s -> s.contains("DC C holds 1 of the 2 positions")),
        v::toString);
  }

  @Test
  void disagreeingDcsAreReported() {
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.of(t2));
    SortedMap<Long, LogValue> other = log(LogValue.of(t1), LogValue.NOOP);
    List<String> v = NemesisVerdict.checkGroup("g", DCS, Map.of("A", l, "B", l, "C", other),
        records);
    assertTrue(v.stream().anyMatch(s -> s.contains("disagree at position 2")), v::toString);
  }

  @Test
  void aCommittedTransactionMissingFromTheLogIsReported() {
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.NOOP);
    List<String> v = NemesisVerdict.checkGroup("g", DCS, Map.of("A", l, "B", l, "C", l), records);
    assertTrue(v.stream().anyMatch(s -> s.contains("COMMITTED txn t2 is not at its position 2")),
        v::toString);
    assertTrue(v.stream().anyMatch(s -> s.contains("checker:")), "the checker sees it too: " + v);
  }

  @Test
  void aConflictingWriteIsReportedByTheChecker() {
    // t3 read k at position 0 but lands after t1 wrote it: not serializable.
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("j", Mutation.put(new byte[] {1}));
    LogEntry t3 = new LogEntry("t3", "A", 0, new TreeSet<>(List.of("k")), w);
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.of(t3));
    List<TxnRecord> recs = new ArrayList<>();
    recs.add(committed(t1, 1));
    recs.add(new TxnRecord("t3", "client", TxnRecord.Status.COMMITTED, 0,
        Map.of("k", Optional.empty()), new TreeMap<>(w), 2));
    List<String> v = NemesisVerdict.checkGroup("g", DCS, Map.of("A", l, "B", l, "C", l), recs);
    assertTrue(v.stream().anyMatch(s -> s.contains("CONFLICTING_WRITE")), v::toString);
  }

  /** Every DC rebuilt at position 1 after losing its store: none holds position 1 at the end. */
  private static Map<String, SortedMap<Long, LogValue>> rebuiltAbove1(LogValue at2) {
    SortedMap<Long, LogValue> l = new TreeMap<>(Map.of(2L, at2));
    return Map.of("A", l, "B", l, "C", l);
  }

  private static final Map<String, Long> COLLECTED_1 = Map.of("A", 1L, "B", 1L, "C", 1L);

  @Test
  void aPositionOnlyInASavedLogIsJudgedFromIt() {
    Map<String, SortedMap<Long, LogValue>> finals = rebuiltAbove1(LogValue.of(t2));
    List<String> without = NemesisVerdict.checkGroup("g", DCS, finals, records, COLLECTED_1);
    assertTrue(without.stream().anyMatch(s -> s.contains("COMMITTED txn t1 is not at its "
        + "position 1")), "without the saved log, position 1 is lost: " + without);

    NemesisVerdict.Merged m = NemesisVerdict.mergeSaved("g", finals,
        Map.of("B-1", log(LogValue.of(t1), LogValue.of(t2))));
    assertEquals(1, m.fromSaved());
    assertEquals(List.of(), m.conflicts());
    assertEquals(log(LogValue.of(t1)), m.logs().get(NemesisVerdict.SAVED));
    assertEquals(finals.get("A"), m.logs().get("A"), "the final logs are left as they are");
    assertEquals(List.of(), NemesisVerdict.checkGroup("g", DCS, m.logs(), records, COLLECTED_1));
  }

  @Test
  void aPositionEveryDcStillHoldsIsNotJudgedFromASavedLog() {
    SortedMap<Long, LogValue> l = log(LogValue.of(t1), LogValue.of(t2));
    NemesisVerdict.Merged m = NemesisVerdict.mergeSaved("g", Map.of("A", l, "B", l, "C", l),
        Map.of("C-1", log(LogValue.of(t1))));
    assertEquals(0, m.fromSaved());
    assertEquals(List.of(), m.conflicts());
    assertTrue(!m.logs().containsKey(NemesisVerdict.SAVED), m.logs()::toString);
  }

  @Test
  void aSavedCopyDisagreeingWithAFinalLogIsReported() {
    NemesisVerdict.Merged m = NemesisVerdict.mergeSaved("g", rebuiltAbove1(LogValue.of(t2)),
        Map.of("C-1", log(LogValue.of(t1), LogValue.NOOP)));
    assertEquals(List.of("group g: DC A's final log and the log saved before store loss 1 of DC "
        + "C disagree at position 2 (agreement broken)"), m.conflicts());
    assertEquals(1, m.fromSaved());
  }

  @Test
  void savedCopiesDisagreeingWhereNoFinalLogHoldsThePositionAreReported() {
    NemesisVerdict.Merged m = NemesisVerdict.mergeSaved("g", rebuiltAbove1(LogValue.of(t2)),
        Map.of("A-1", log(LogValue.of(t1)), "B-2", log(LogValue.NOOP)));
    assertEquals(List.of("group g: the log saved before store loss 1 of DC A and the log saved "
        + "before store loss 2 of DC B disagree at position 1 (agreement broken)"),
        m.conflicts());
    // Judged from the first copy, so that the other checks still run; the conflict is reported.
    assertEquals(log(LogValue.of(t1)), m.logs().get(NemesisVerdict.SAVED));
  }

  @Test
  void aLogSavedBeforeAStoreLossReadsBackAsItWasHeld(@TempDir Path export) throws Exception {
    try (InMemoryKvStore store = new InMemoryKvStore()) {
      Acceptor a = new Acceptor(store);
      a.apply(new PaxosMessage.Apply("g", 1, LogValue.of(t1)));
      a.apply(new PaxosMessage.Apply("g", 2, LogValue.of(t2)));
      a.apply(new PaxosMessage.Apply("h", 1, LogValue.NOOP));
      assertEquals(new TreeMap<>(Map.of("g", 2, "h", 1, "empty", 0)),
          LogExport.saveBeforeLoss(store, List.of("g", "h", "empty"), export, "B-1"));
    }
    assertTrue(Files.isRegularFile(LogExport.savedFile(export, "B-1")));
    Map<String, Map<String, SortedMap<Long, LogValue>>> saved = LogExport.readSaved(export);
    assertEquals(log(LogValue.of(t1), LogValue.of(t2)), saved.get("g").get("B-1"));
    assertEquals(log(LogValue.NOOP), saved.get("h").get("B-1"));
    // The export proper stays as it was: the saved copies are not a DC's final log.
    assertTrue(!Files.exists(export.resolve("wal")));
  }

  @Test
  void aSavedLogIsReadPageByPageAndLeavesOutPositionsNotChosen() {
    try (InMemoryKvStore store = new InMemoryKvStore()) {
      Acceptor a = new Acceptor(store);
      a.apply(new PaxosMessage.Apply("g", 1, LogValue.of(t1)));
      a.apply(new PaxosMessage.Apply("g", 3, LogValue.NOOP));
      a.apply(new PaxosMessage.Apply("g", 4, LogValue.of(t2)));
      // A vote and no chosen value at 2; another group's rows beside.
      store.write(KvStore.Table.WAL, WalLayout.walRow("g", 2), KvStore.UNVERSIONED,
          Map.of(WalLayout.VOTE_BALLOT, new byte[] {1}));
      a.apply(new PaxosMessage.Apply("gg", 2, LogValue.NOOP));
      SortedMap<Long, LogValue> want = new TreeMap<>(Map.of(1L, LogValue.of(t1), 3L,
          LogValue.NOOP, 4L, LogValue.of(t2)));
      for (int page : new int[] {1, 2, 3, 500}) {
        assertEquals(want, LogExport.chosenHeld(store, "g", page), "pages of " + page);
      }
    }
  }
}
