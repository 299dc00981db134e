package org.paxoscp.client;

/**
 * A transaction function ({@link TxnFunction}, {@link MultiTxnFunction}) threw a checked
 * exception, which {@link TxnClient#runInTransaction} rethrows wrapped in this one (its
 * {@link #getCause()}); the transaction was aborted, nothing of it committed. Unchecked
 * exceptions pass unwrapped.
 */
public final class TxnFunctionException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  TxnFunctionException(Exception cause) {
    super("the transaction function threw " + cause, cause);
  }
}
