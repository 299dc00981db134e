package org.paxoscp.client;

/**
 * The body of a transaction for {@link TxnClient#runInTransaction}: reads and writes through the
 * given transaction and returns a result. It may be run several times (once per attempt), so it
 * must have no effects outside the transaction other than ones that are safe to repeat.
 *
 * @param <T> the result type
 */
@FunctionalInterface
public interface TxnFunction<T> {
  /**
   * Runs the body. Should not commit the transaction ({@code runInTransaction} does); may abort it
   * to give up without committing. A checked exception it throws aborts the transaction and
   * reaches the caller wrapped in {@link TxnFunctionException}; an unchecked one as it is.
   */
  T apply(Transaction txn) throws Exception;
}
