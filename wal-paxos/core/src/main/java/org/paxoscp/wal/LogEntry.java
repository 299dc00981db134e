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
 */
public record LogEntry(
    String txnId,
    String originDc,
    long readPosition,
    SortedSet<String> readSet,
    SortedMap<String, Mutation> writes) {

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
        + " writes=" + writes.keySet() + "]";
  }
}
