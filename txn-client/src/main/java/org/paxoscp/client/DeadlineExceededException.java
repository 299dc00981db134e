package org.paxoscp.client;

/**
 * The transaction's deadline, or the call's, passed before the call was done ({@link TxnOptions},
 * {@link TxnClient.Builder#transactionTimeout}, {@link TxnClient.Builder#callTimeout}). Thrown by
 * a begin or a read, the transaction is finished; by a commit, it means the commit ended at the
 * deadline with its entry certainly not in the log ({@link #result()} is ABORTED: the entry was
 * never sent for the position the commit had reached, and every earlier position went to other
 * values). A commit whose entry may be in the log ends with {@link OutcomeUnknownException}
 * instead, deadline or not. {@link TxnClient#runInTransaction} does not re-run it.
 */
public final class DeadlineExceededException extends TransactionException {
  private static final long serialVersionUID = 1L;

  private final transient CommitResult result;

  DeadlineExceededException(String message, String group, long position, String dc) {
    super(message, group, position, dc, null);
    this.result = null;
  }

  DeadlineExceededException(CommitResult result, String dc) {
    super("commit of " + result.txnId() + " ended at its deadline, certainly not in the log: "
        + result.reason(), result.group(), result.position(), dc, null);
    this.result = result;
  }

  /** For a commit, its ABORTED result; empty for a begin or read. */
  public java.util.Optional<CommitResult> result() {
    return java.util.Optional.ofNullable(result);
  }
}
