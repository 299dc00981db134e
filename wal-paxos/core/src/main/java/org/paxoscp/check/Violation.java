package org.paxoscp.check;

import java.util.Objects;

/**
 * One property violation found by the {@link SerializabilityChecker}.
 *
 * <p>Immutable and thread-safe.
 *
 * @param kind which property is violated
 * @param position the log position the violation is about, or -1 when it concerns no single
 *     position (a missing transaction, a malformed record)
 * @param txnId the transaction the violation is about, or the empty string when none
 * @param message a human-readable description naming the position, transaction, key and DCs
 *     involved
 */
public record Violation(Kind kind, long position, String txnId, String message) {

  /** The kinds of violation, one per checked property. */
  public enum Kind {
    /** R1: two DCs hold different values at the same position. */
    AGREEMENT,
    /** A position below the merged log's maximum is missing at every DC. */
    LOG_GAP,
    /** A transaction id appears more than once in the merged log. */
    DUPLICATE_ENTRY,
    /** L3: an entry's read position is not below its own log position. */
    READ_POSITION_NOT_BEFORE_SLOT,
    /**
     * L3: an entry read a key that was written after its read position and before it (at a later
     * position, or by an earlier entry of the same combined list).
     */
    CONFLICTING_WRITE,
    /**
     * A2: a transaction observed a value different from the state at its read position (by key,
     * or as an entry a scan returned).
     */
    WRONG_READ_VALUE,
    /**
     * A scan missed a key: L3, an entry scanned a range into which a key was written after its
     * read position and before it (its scan would now miss or misread the key); A2, a scan's
     * result lacks a key that the state at its read position holds in the range.
     */
    PHANTOM,
    /** A2: a transaction read at a position beyond the end of the merged log. */
    READ_BEYOND_LOG,
    /**
     * A transaction's record disagrees with its log entry (read set, scanned ranges, writes or
     * read position).
     */
    ENTRY_MISMATCH,
    /** L2: a committed read-write transaction is not in the log. */
    COMMITTED_NOT_IN_LOG,
    /** L2: a committed read-write transaction is in the log at a position other than reported. */
    WRONG_COMMIT_POSITION,
    /** L1: an aborted transaction is in the log (one not told a position it was refused at). */
    ABORTED_IN_LOG,
    /**
     * A transaction's outcome disagrees with the refusal of its entry ({@link
     * org.paxoscp.wal.Updates}): reported COMMITTED but refused where the log folds it (it has
     * no effect), or reported ABORTED as refused at a position where its entry took effect or is
     * not in the log at all.
     */
    REFUSAL_MISMATCH,
    /**
     * An UNKNOWN transaction is in the log outside the range of positions its client was told it
     * could still be chosen at (an application settling it there would be misled).
     */
    UNKNOWN_OUTSIDE_RANGE,
    /** A read-only transaction (no writes) is in the log. */
    READ_ONLY_IN_LOG,
    /** The logs given to the checker are malformed (null value, position below 1, ...). */
    MALFORMED_LOG,
    /** The history given to the checker is malformed (null record, duplicate record, ...). */
    MALFORMED_HISTORY,
    /**
     * Lock rule (docs/architecture.md section 10): an entry was placed while an unresolved PREPARE
     * of another cross-group transaction held a key it reads (that the PREPARE writes) or writes.
     */
    LOCK_VIOLATED,
    /** A cross-group transaction has two DECIDEs, or a RESOLVE that disagrees with its DECIDE. */
    XG_OUTCOME,
    /**
     * Atomicity across groups: a transaction decided COMMIT lacks a PREPARE in one of its
     * groups, or its writes were released as aborted in one (or an undecided or aborted one's
     * writes became visible).
     */
    XG_ATOMICITY,
    /** The conflict graph over every group's log (and read-only observations) has a cycle. */
    XG_CYCLE
  }

  public Violation {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(txnId, "txnId");
    Objects.requireNonNull(message, "message");
  }

  @Override
  public String toString() {
    return kind + ": " + message;
  }
}
