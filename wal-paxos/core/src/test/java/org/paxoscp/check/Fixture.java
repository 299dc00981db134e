package org.paxoscp.check;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/** Builders for hand-written logs and histories in the checker's tests. */
final class Fixture {
  private Fixture() {}

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static Txn txn(String id) {
    return new Txn(id);
  }

  /**
   * One transaction as both its log entry and its client's record, built consistently: the keys
   * it read (with the values it observed) are the entry's read set, the ranges it scanned the
   * entry's ranges, its writes are the entry's.
   */
  static final class Txn {
    private final String id;
    private String originDc = "A";
    private long readPosition;
    private final Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
    private final SortedMap<String, Mutation> writes = new TreeMap<>();
    private final List<TxnRecord.ScanRead> scans = new ArrayList<>();

    private Txn(String id) {
      this.id = id;
    }

    String id() {
      return id;
    }

    Txn readAt(long position) {
      this.readPosition = position;
      return this;
    }

    Txn from(String dc) {
      this.originDc = dc;
      return this;
    }

    /** A store read of {@code key} that observed {@code value} ({@code null}: absent). */
    Txn read(String key, String value) {
      reads.put(key, Optional.ofNullable(value).map(Fixture::bytes));
      return this;
    }

    /**
     * A scan of {@code range} (as far as it read) that returned {@code keysAndValues}: key,
     * value, key, value, ...
     */
    Txn scan(KeyRange range, String... keysAndValues) {
      SortedMap<String, byte[]> entries = new TreeMap<>(KeyRange.ORDER);
      for (int i = 0; i + 1 < keysAndValues.length; i += 2) {
        entries.put(keysAndValues[i], bytes(keysAndValues[i + 1]));
      }
      scans.add(new TxnRecord.ScanRead(range, entries));
      return this;
    }

    Txn put(String key, String value) {
      writes.put(key, Mutation.put(bytes(value)));
      return this;
    }

    Txn delete(String key) {
      writes.put(key, Mutation.delete());
      return this;
    }

    /** An add of {@code delta} to the counter at {@code key} (a commutative update). */
    Txn add(String key, long delta) {
      writes.put(key, Mutation.add(delta));
      return this;
    }

    /** Changes to the counts of the counting set at {@code key}: element, delta, ... */
    Txn setUpdate(String key, Object... elementsAndDeltas) {
      Map<String, Long> deltas = new TreeMap<>();
      for (int i = 0; i + 1 < elementsAndDeltas.length; i += 2) {
        deltas.put((String) elementsAndDeltas[i], ((Number) elementsAndDeltas[i + 1]).longValue());
      }
      writes.put(key, Mutation.setUpdate(deltas));
      return this;
    }

    /** A store read of {@code key} that observed the stored bytes {@code value}. */
    Txn readBytes(String key, byte[] value) {
      reads.put(key, Optional.of(value));
      return this;
    }

    LogEntry entry() {
      return new LogEntry(id, originDc, readPosition, new TreeSet<>(reads.keySet()),
          scans.stream().map(TxnRecord.ScanRead::range).toList(), writes);
    }

    TxnRecord committed(long commitPosition) {
      return record(TxnRecord.Status.COMMITTED, commitPosition);
    }

    /** A committed read-only transaction (no log position). */
    TxnRecord committedReadOnly() {
      return record(TxnRecord.Status.COMMITTED, -1);
    }

    TxnRecord aborted() {
      return record(TxnRecord.Status.ABORTED, -1);
    }

    /** ABORTED, told that its entry is in the log at {@code position} but was refused there. */
    TxnRecord refusedAt(long position) {
      return record(TxnRecord.Status.ABORTED, position);
    }

    TxnRecord unknown() {
      return record(TxnRecord.Status.UNKNOWN, -1);
    }

    /** UNKNOWN, told that the entry can be chosen only at {@code from ... through}. */
    TxnRecord unknownAt(long from, long through) {
      return TxnRecord.unknownAt(id, "client-" + id, readPosition, reads, writes, from, through)
          .withScans(scans);
    }

    TxnRecord crashed() {
      return record(TxnRecord.Status.CRASHED, -1);
    }

    TxnRecord record(TxnRecord.Status status, long commitPosition) {
      return new TxnRecord(id, "client-" + id, status, readPosition, reads, writes,
          commitPosition).withScans(scans);
    }
  }

  /** Per-DC logs; {@link #at} writes a position at every DC, {@link #dc} at one. */
  static final class Logs {
    private final Map<String, SortedMap<Long, LogValue>> byDc = new TreeMap<>();

    Logs(String... dcs) {
      for (String dc : dcs) {
        byDc.put(dc, new TreeMap<>());
      }
    }

    /** Three DCs A, B, C. */
    static Logs abc() {
      return new Logs("A", "B", "C");
    }

    Logs at(long position, LogValue value) {
      for (SortedMap<Long, LogValue> log : byDc.values()) {
        log.put(position, value);
      }
      return this;
    }

    Logs at(long position, Txn... txns) {
      LogEntry[] entries = new LogEntry[txns.length];
      for (int i = 0; i < txns.length; i++) {
        entries[i] = txns[i].entry();
      }
      return at(position, LogValue.of(entries));
    }

    Logs dc(String dc, long position, LogValue value) {
      byDc.get(dc).put(position, value);
      return this;
    }

    Logs drop(String dc, long position) {
      byDc.get(dc).remove(position);
      return this;
    }

    Map<String, SortedMap<Long, LogValue>> map() {
      return byDc;
    }
  }
}
