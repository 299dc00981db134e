package org.paxoscp.wal;

import java.util.Collections;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * One transaction as it is written to the log: its id, the DC it started in, the read position its
 * reads came from, the keys it read, and the writes it buffered.
 *
 * <p>Immutable and thread-safe. Keys are item keys within one entity group.
 *
 * @param txnId globally unique transaction id (entries are deduplicated by it)
 * @param originDc name of the DC whose client built the entry
 * @param readPosition log position all reads of the transaction were served at (A2)
 * @param readSet keys read from the store (not from the transaction's own buffer)
 * @param writes buffered writes, one per key
 * @param xg the step of a cross-group transaction this entry is, or null for an ordinary entry
 */
public record LogEntry(
    String txnId,
    String originDc,
    long readPosition,
    SortedSet<String> readSet,
    SortedMap<String, Mutation> writes,
    XgStep xg) {

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
    writes = Collections.unmodifiableSortedMap(new TreeMap<>(writes));
    if (xg != null && xg.kind() == XgStep.Kind.RESOLVE
        && (!readSet.isEmpty() || (!xg.commit() && !writes.isEmpty()))) {
      throw new IllegalArgumentException("a RESOLVE reads nothing, and writes nothing for ABORT");
    }
    if (xg != null && xg.kind() == XgStep.Kind.VALIDATE && !writes.isEmpty()) {
      throw new IllegalArgumentException("a VALIDATE writes nothing");
    }
  }

  /** An ordinary entry (not a step of a cross-group transaction). */
  public LogEntry(String txnId, String originDc, long readPosition, SortedSet<String> readSet,
      SortedMap<String, Mutation> writes) {
    this(txnId, originDc, readPosition, readSet, writes, null);
  }

  /** True if this entry is a PREPARE: applying it takes locks instead of writing. */
  public boolean isPrepare() {
    return xg != null && xg.kind() == XgStep.Kind.PREPARE;
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

  @Override
  public String toString() {
    return "LogEntry[" + txnId + "@" + originDc + " r=" + readPosition + " reads=" + readSet
        + " writes=" + writes.keySet() + (xg == null ? "" : " " + xg) + "]";
  }
}
