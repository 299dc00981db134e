package org.paxoscp.client;

import java.util.Objects;

/**
 * The transaction is certainly not in the log and never will be: it lost its log position to a
 * conflicting transaction, or its read position is too old to serve. Safe to re-run from
 * {@link TxnClient#begin}; {@link TxnClient#runInTransaction} does so automatically.
 */
public final class TransactionAbortedException extends TransactionException {
  private static final long serialVersionUID = 1L;

  private final transient CommitResult result;

  TransactionAbortedException(CommitResult result, String dc) {
    super("transaction " + result.txnId() + " aborted: " + result.reason(), result.group(),
        result.position(), dc, null);
    this.result = Objects.requireNonNull(result);
  }

  /** The commit result, with status {@link CommitResult.Status#ABORTED}. */
  public CommitResult result() {
    return result;
  }
}
