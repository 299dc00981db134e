package org.paxoscp.client;

import java.util.Objects;

/**
 * How a commit ended. {@link Transaction#commit()} returns it for {@link Status#COMMITTED}; the
 * exceptions for the other outcomes carry it ({@link TransactionAbortedException#result()},
 * {@link OutcomeUnknownException#result()}).
 *
 * @param status the outcome
 * @param group the entity group
 * @param txnId the transaction's id, as written in its log entry
 * @param position for COMMITTED, the log position holding the transaction (the read position for
 *     a read-only transaction); for UNKNOWN, the last position the transaction can still be
 *     chosen at; for ABORTED, the last position the commit worked on
 * @param promotions how many times Paxos-CP moved the transaction to a next position
 * @param combined whether the committed position holds other transactions too (Paxos-CP)
 * @param reason why it did not commit; empty for COMMITTED
 * @param firstPosition for UNKNOWN, the first position the transaction can still be chosen at:
 *     it is in the log at most once, at one of {@code firstPosition ... position}, and nowhere
 *     else ever; otherwise equal to {@code position}
 */
public record CommitResult(Status status, String group, String txnId, long position,
    int promotions, boolean combined, String reason, long firstPosition) {

  /** A result whose {@code firstPosition} is {@code position}. */
  public CommitResult(Status status, String group, String txnId, long position, int promotions,
      boolean combined, String reason) {
    this(status, group, txnId, position, promotions, combined, reason, position);
  }

  /** The three outcomes of a commit (docs/architecture.md section 4). */
  public enum Status {
    /** The transaction is in the log at {@code position} (or was read-only). */
    COMMITTED,
    /** The transaction is certainly not in the log and never will be; it is safe to re-run. */
    ABORTED,
    /**
     * The transaction may or may not be in the log, at one of {@code firstPosition ... position};
     * re-running it may apply it twice.
     */
    UNKNOWN
  }

  public CommitResult {
    Objects.requireNonNull(status);
    Objects.requireNonNull(group);
    Objects.requireNonNull(txnId);
    Objects.requireNonNull(reason);
    if (firstPosition > position) {
      throw new IllegalArgumentException("first position " + firstPosition + " after position "
          + position);
    }
  }

  /**
   * Whether {@link #status} is COMMITTED. Always true for the result {@code commit()} returns
   * (the other outcomes are exceptions); it tells the results those exceptions carry apart
   * ({@link TransactionAbortedException#result()}, {@link OutcomeUnknownException#result()},
   * {@link DeadlineExceededException#result()}), and a result from
   * {@link TxnClient#outcome(OutcomeHandle)} is likewise always COMMITTED.
   */
  public boolean committed() {
    return status == Status.COMMITTED;
  }
}
