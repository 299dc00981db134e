package org.paxoscp.wal;

import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One transaction as it is written to the log: its id, the DC it started in, the read position its
 * reads came from, the keys and key ranges it read, and the writes it buffered.
 *
 * <p>Immutable and thread-safe. Keys are item keys within one entity group.
 *
 * @param txnId globally unique transaction id (entries are deduplicated by it)
 * @param originDc name of the DC whose client built the entry
 * @param readPosition log position all reads of the transaction were served at (A2)
 * @param readSet keys read from the store (not from the transaction's own buffer)
 * @param readRanges key ranges scanned, each as far as the scan read ({@link KeyRange}), in the
 *     canonical form of {@link KeyRange#normalize}; at most {@link #MAX_READ_RANGES}
 * @param writes buffered writes, one per key
 * @param xg the step of a cross-group transaction this entry is, or null for an ordinary entry
 */
public record LogEntry(
    String txnId,
    String originDc,
    long readPosition,
    SortedSet<String> readSet,
    List<KeyRange> readRanges,
    SortedMap<String, Mutation> writes,
    XgStep xg) {

  /** The most ranges one entry may carry (after merging); a client refuses the next scan. */
  public static final int MAX_READ_RANGES = 64;

  public LogEntry {
    Objects.requireNonNull(txnId, "txnId");
    Objects.requireNonNull(originDc, "originDc");
    if (txnId.isEmpty()) {
      throw new IllegalArgumentException("txnId must not be empty");
    }
    if (readPosition < 0) {
      throw new IllegalArgumentException("readPosition must be >= 0, was " + readPosition);
    }
    readSet = Collections.unmodifiableSortedSet(new TreeSet<>(readSet));
    readRanges = KeyRange.normalize(readRanges);
    writes = Collections.unmodifiableSortedMap(new TreeMap<>(writes));
    if (readRanges.size() > MAX_READ_RANGES) {
      throw new IllegalArgumentException("an entry may carry at most " + MAX_READ_RANGES
          + " key ranges, got " + readRanges.size());
    }
    if (xg != null && xg.kind() == XgStep.Kind.RESOLVE
        && (!readSet.isEmpty() || !readRanges.isEmpty()
            || (!xg.commit() && !writes.isEmpty()))) {
      throw new IllegalArgumentException("a RESOLVE reads nothing, and writes nothing for ABORT");
    }
    if (xg != null && xg.kind() == XgStep.Kind.VALIDATE && !writes.isEmpty()) {
      throw new IllegalArgumentException("a VALIDATE writes nothing");
    }
    if (xg != null && writes.values().stream().anyMatch(Mutation::isUpdate)) {
      // A refusal where a step applies could not be atomic across groups: a client turns a
      // transaction's updates into reads and puts before it takes steps (docs/client.md).
      throw new IllegalArgumentException("a cross-group step carries no commutative update");
    }
  }

  /** An ordinary entry (not a step of a cross-group transaction). */
  public LogEntry(String txnId, String originDc, long readPosition, SortedSet<String> readSet,
      SortedMap<String, Mutation> writes) {
    this(txnId, originDc, readPosition, readSet, List.of(), writes, null);
  }

  /** An entry that scanned no range. */
  public LogEntry(String txnId, String originDc, long readPosition, SortedSet<String> readSet,
      SortedMap<String, Mutation> writes, XgStep xg) {
    this(txnId, originDc, readPosition, readSet, List.of(), writes, xg);
  }

  /** An ordinary entry that scanned {@code readRanges}. */
  public LogEntry(String txnId, String originDc, long readPosition, SortedSet<String> readSet,
      List<KeyRange> readRanges, SortedMap<String, Mutation> writes) {
    this(txnId, originDc, readPosition, readSet, readRanges, writes, null);
  }

  /** This entry with {@code xg} as its step (the reads and writes unchanged). */
  public LogEntry withStep(XgStep step) {
    return new LogEntry(txnId, originDc, readPosition, readSet, readRanges, writes, step);
  }

  /** True if this entry is a PREPARE: applying it takes locks instead of writing. */
  public boolean isPrepare() {
    return xg != null && xg.kind() == XgStep.Kind.PREPARE;
  }

  /** True if one of this entry's writes is a commutative update ({@link Mutation#isUpdate}). */
  public boolean hasUpdates() {
    for (Mutation m : writes.values()) {
      if (m.isUpdate()) {
        return true;
      }
    }
    return false;
  }

  /** True if this entry writes any key in {@code keys}. */
  public boolean writesAnyOf(Set<String> keys) {
    for (String k : keys) {
      if (writes.containsKey(k)) {
        return true;
      }
    }
    return false;
  }

  /** Did this entry read {@code key}: is it in the read set or in a scanned range? */
  public boolean reads(String key) {
    if (readSet.contains(key)) {
      return true;
    }
    for (KeyRange r : readRanges) {
      if (r.contains(key)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Does this entry write a key that {@code later} read (by key or inside a scanned range)? The
   * paper's conflict, extended to ranges: {@code later}'s read would be stale, or miss a key
   * (a phantom), if this entry were ordered between its read position and it.
   */
  public boolean writesWhatIsReadBy(LogEntry later) {
    if (later.readRanges.isEmpty()) {
      return writesAnyOf(later.readSet);
    }
    for (String k : writes.keySet()) {
      if (later.reads(k)) {
        return true;
      }
    }
    return false;
  }

  /** The first of this entry's scanned ranges that holds {@code key}, if any. */
  public java.util.Optional<KeyRange> rangeHolding(String key) {
    for (KeyRange r : readRanges) {
      if (r.contains(key)) {
        return java.util.Optional.of(r);
      }
    }
    return java.util.Optional.empty();
  }

  @Override
  public String toString() {
    return "LogEntry[" + txnId + "@" + originDc + " r=" + readPosition + " reads=" + readSet
        + (readRanges.isEmpty() ? "" : " ranges=" + readRanges)
        + " writes=" + writes.keySet() + (xg == null ? "" : " " + xg) + "]";
  }
}
