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
  private final long decidedPosition;
  private final boolean overloaded;

  TransactionAbortedException(CommitResult result, String dc) {
    this(result, dc, 0);
  }

  TransactionAbortedException(CommitResult result, String dc, long decidedPosition) {
    this(result, dc, decidedPosition, false);
  }

  /**
   * @param decidedPosition a position the commit learned decided (its chosen value known,
   *     without this transaction), or 0
   * @param overloaded the services refused the commit OVERLOADED before its entry went out
   */
  TransactionAbortedException(CommitResult result, String dc, long decidedPosition,
      boolean overloaded) {
    super("transaction " + result.txnId() + " aborted: " + result.reason(), result.group(),
        result.position(), dc, null);
    this.result = Objects.requireNonNull(result);
    this.decidedPosition = decidedPosition;
    this.overloaded = overloaded;
  }

  /**
   * Whether it aborted because the services were overloaded rather than for a conflict: DCs
   * refused its PREPAREs OVERLOADED (before acting on them) until its attempts at the position
   * were spent, and no ACCEPT had carried its entry there (docs/guarantees.md, "Overload").
   * Equally certain; re-run it after a pause.
   */
  public boolean overloaded() {
    return overloaded;
  }

  /**
   * A log position the commit learned decided without this transaction (typically the one it
   * lost), or 0 if none: the client's next transaction in the group reads at least there, not
   * at a position it already knows taken.
   */
  public long decidedPosition() {
    return decidedPosition;
  }

  /** The commit result, with status {@link CommitResult.Status#ABORTED}. */
  public CommitResult result() {
    return result;
  }
}
