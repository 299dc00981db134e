package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.paxoscp.check.TxnRecord;
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
}
