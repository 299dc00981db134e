package org.paxoscp.client;

import java.util.concurrent.CompletionStage;

/**
 * The body of a transaction run by {@link TxnClient#runInTransactionAsync}: starts its reads and
 * writes on the transaction and returns a stage that completes when they are done (with the
 * value the run gives), or fails to abort the attempt. It may be called several times, once per
 * attempt, so it should have no effect outside the transaction.
 */
@FunctionalInterface
public interface AsyncTxnFunction<T> {
  CompletionStage<T> apply(Transaction txn);
}
