package org.paxoscp.client;

import java.util.Objects;

/**
 * The commit was sent but its outcome was lost (for example, ACCEPT went out and then too few DCs
 * answered): the transaction may already be in the log, or may still be chosen later by whoever
 * finishes the log position. Re-running it blindly could apply it twice, so
 * {@link TxnClient#runInTransaction} never does; the application must find out (for example by
 * reading something the transaction wrote) or make its writes idempotent.
 */
public final class OutcomeUnknownException extends TransactionException {
  private static final long serialVersionUID = 1L;

  private final transient CommitResult result;

  OutcomeUnknownException(CommitResult result, String dc, Throwable cause) {
    super("outcome of transaction " + result.txnId() + " unknown: " + result.reason(),
        result.group(), result.position(), dc, cause);
    this.result = Objects.requireNonNull(result);
  }

  /** The commit result, with status {@link CommitResult.Status#UNKNOWN}. */
  public CommitResult result() {
    return result;
  }
}
