package org.paxoscp.client;

import java.util.Objects;
import java.util.Optional;
import org.paxoscp.wal.LogEntry;

/**
 * The commit was sent but its outcome was lost (for example, ACCEPT went out and then too few DCs
 * answered): the transaction may already be in the log, or may still be chosen later by whoever
 * finishes the log position — but only at one of positions {@link #firstPosition()} ...
 * {@link #lastPosition()}, never elsewhere. Re-running it blindly could apply it twice, so
 * {@link TxnClient#runInTransaction} never does; the application must find out —
 * {@link TxnClient#settle} decides those positions now, or once a begin in the group reads at
 * {@link #lastPosition()} or later every position of the range is decided and a key only this
 * transaction wrote shows whether it committed — or make its writes idempotent.
 */
public final class OutcomeUnknownException extends TransactionException {
  private static final long serialVersionUID = 1L;

  private final transient CommitResult result;
  /** The entry whose outcome is unknown, for {@link TxnClient#settle}; null across groups. */
  private final transient LogEntry entry;
  /** The entry is known to be in the log at the position; only its updates' effect is not. */
  private final boolean chosen;

  OutcomeUnknownException(CommitResult result, String dc, Throwable cause) {
    this(result, dc, cause, null);
  }

  OutcomeUnknownException(CommitResult result, String dc, Throwable cause, LogEntry entry) {
    this(result, dc, cause, entry, false);
  }

  /**
   * With {@code chosen}: the entry is in the log at {@code result.position()}, and what is
   * unknown is whether its commutative updates applied there.
   */
  OutcomeUnknownException(CommitResult result, String dc, Throwable cause, LogEntry entry,
      boolean chosen) {
    super("outcome of transaction " + result.txnId() + " unknown"
        + (result.position() < 1 ? ""
            : result.firstPosition() == result.position()
            ? " (it may be in the log at position " + result.position() + ")"
            : " (it may be in the log at one of positions " + result.firstPosition() + ".."
                + result.position() + ")")
        + ": " + result.reason(),
        result.group(), result.position(), dc, cause);
    this.result = Objects.requireNonNull(result);
    this.entry = entry;
    this.chosen = chosen;
  }

  /**
   * Whether the transaction's entry is known to be in the log at {@link #lastPosition()}, and
   * what is unknown is only whether its counter and set updates applied there (no DC answered
   * the question; {@link TxnClient#settle} asks again). False when the entry may not be in the
   * log at all.
   */
  public boolean entryChosen() {
    return chosen;
  }

  /** The entry whose outcome is unknown, when this client can settle it. */
  Optional<LogEntry> entry() {
    return Optional.ofNullable(entry);
  }

  /**
   * The first log position where the transaction can still be chosen (-1 for a transaction
   * across groups, whose outcome is its decision: {@link TxnClient#crossGroupOutcome}).
   */
  public long firstPosition() {
    return result.firstPosition();
  }

  /**
   * The last log position where the transaction can still be chosen: a read position at or above
   * it settles the outcome (-1 across groups).
   */
  public long lastPosition() {
    return result.position();
  }

  /**
   * The handle that settles this outcome from any client, after a restart too
   * ({@link TxnClient#outcome(OutcomeHandle)}); its {@code toString()} is a line to store.
   * Empty across groups (the decision is the outcome: {@link TxnClient#crossGroupOutcome}).
   */
  public Optional<OutcomeHandle> handle() {
    if (result.firstPosition() < 1) {
      return Optional.empty();
    }
    return Optional.of(new OutcomeHandle(result.group(), result.txnId(), result.firstPosition(),
        result.position()));
  }

  /** The commit result, with status {@link CommitResult.Status#UNKNOWN}. */
  public CommitResult result() {
    return result;
  }
}
