package org.paxoscp.check;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
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
    long unknownThrough) {

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

  public boolean readOnly() {
    return writes.isEmpty();
  }
}
