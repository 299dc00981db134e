package org.paxoscp.client;

/**
 * The body of a transaction for {@link TxnClient#runInMultiTransaction}; as {@link TxnFunction},
 * it may run once per attempt.
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface MultiTxnFunction<T> {
  /** Runs the body; should not commit the transaction, may abort it. */
  /** Runs the body; a checked exception it throws is wrapped as {@link TxnFunction}'s is. */
  T apply(MultiTransaction txn) throws Exception;
}
