package org.paxoscp.check;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.Mutation;

/**
 * What one client observed of one transaction: the input of the {@link SerializabilityChecker}.
 *
 * @param txnId the transaction id, as written in its log entry
 * @param client the client that ran it
 * @param status the outcome the client reported (or {@link Status#CRASHED} if it never reported)
 * @param readPosition the read position all its store reads were served at
 * @param reads every read served by the store (not by the transaction's own buffer): key to the
 *     value returned, empty when the key was absent or deleted
 * @param writes the transaction's buffered writes (empty for a read-only transaction)
 * @param commitPosition the log position the client was told it committed at, or -1
 * @param unknownFrom for UNKNOWN, the first position the client was told the entry can still be
 *     chosen at, or -1 when it was told none
 * @param unknownThrough for UNKNOWN, the last such position, or -1
 * @param scans every range read served by the store, in the order the transaction made them
 */
public record TxnRecord(
    String txnId,
    String client,
    Status status,
    long readPosition,
    Map<String, Optional<byte[]>> reads,
    SortedMap<String, Mutation> writes,
    long commitPosition,
    long unknownFrom,
    long unknownThrough,
    List<ScanRead> scans) {

  /**
   * One range read as the store served it: the range as far as it was read (to the last key
   * returned when a limit stopped it; {@link KeyRange#through}) and every entry with a value in
   * it at the read position, key to value. The transaction's own writes are not in it.
   */
  public record ScanRead(KeyRange range, SortedMap<String, byte[]> entries) {
    public ScanRead {
      Objects.requireNonNull(range, "range");
      TreeMap<String, byte[]> copy = new TreeMap<>(KeyRange.ORDER);
      copy.putAll(entries);
      entries = Collections.unmodifiableSortedMap(copy);
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof ScanRead s) || !range.equals(s.range)
          || !entries.keySet().equals(s.entries.keySet())) {
        return false;
      }
      for (var e : entries.entrySet()) {
        if (!Arrays.equals(e.getValue(), s.entries.get(e.getKey()))) {
          return false;
        }
      }
      return true;
    }

    @Override
    public int hashCode() {
      return range.hashCode() * 31 + entries.keySet().hashCode();
    }
  }

  /** The client-visible outcome. */
  public enum Status {
    /** Reported committed (read-only transactions commit at once, outside the log). */
    COMMITTED,
    /** Reported aborted: the entry must not be in the log. */
    ABORTED,
    /** Reported unknown: the entry may or may not be in the log, at most once. */
    UNKNOWN,
    /** The client crashed before reporting: like UNKNOWN. */
    CRASHED
  }

  public TxnRecord {
    Objects.requireNonNull(txnId);
    Objects.requireNonNull(status);
    reads = Collections.unmodifiableMap(new LinkedHashMap<>(reads));
    writes = Collections.unmodifiableSortedMap(new TreeMap<>(writes));
    scans = List.copyOf(scans);
  }

  /** A record without range reads. */
  public TxnRecord(String txnId, String client, Status status, long readPosition,
      Map<String, Optional<byte[]>> reads, SortedMap<String, Mutation> writes,
      long commitPosition, long unknownFrom, long unknownThrough) {
    this(txnId, client, status, readPosition, reads, writes, commitPosition, unknownFrom,
        unknownThrough, List.of());
  }

  /** This record with {@code scans} as its range reads. */
  public TxnRecord withScans(List<ScanRead> scans) {
    return new TxnRecord(txnId, client, status, readPosition, reads, writes, commitPosition,
        unknownFrom, unknownThrough, scans);
  }

  /** The ranges of {@link #scans}, as the transaction's log entry carries them. */
  public List<KeyRange> scannedRanges() {
    return KeyRange.normalize(scans.stream().map(ScanRead::range).toList());
  }

  /** A record with no reported range of positions (every outcome but a ranged UNKNOWN). */
  public TxnRecord(String txnId, String client, Status status, long readPosition,
      Map<String, Optional<byte[]>> reads, SortedMap<String, Mutation> writes,
      long commitPosition) {
    this(txnId, client, status, readPosition, reads, writes, commitPosition, -1, -1);
  }

  /** An UNKNOWN record whose entry can be chosen only at {@code from ... through}. */
  public static TxnRecord unknownAt(String txnId, String client, long readPosition,
      Map<String, Optional<byte[]>> reads, SortedMap<String, Mutation> writes, long from,
      long through) {
    return new TxnRecord(txnId, client, Status.UNKNOWN, readPosition, reads, writes, -1, from,
        through);
  }

  /** Did the transaction read anything from the store (a key or a range)? */
  public boolean readsAnything() {
    return !reads.isEmpty() || !scans.isEmpty();
  }

  public boolean readOnly() {
    return writes.isEmpty();
  }
}
