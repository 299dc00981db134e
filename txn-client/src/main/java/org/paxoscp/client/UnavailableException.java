package org.paxoscp.client;

/**
 * No DC could serve the request in time (begin or read: every DC was tried), or a commit could not
 * reach a majority of DCs before giving up without ever sending its entry for acceptance. In both
 * cases nothing of this transaction is in the log. The per-DC failures are attached as suppressed
 * exceptions. Retrying later may succeed; {@link TxnClient#runInTransaction} does not retry it.
 */
public final class UnavailableException extends TransactionException {
  private static final long serialVersionUID = 1L;

  UnavailableException(String message, String group, long position, String dc) {
    super(message, group, position, dc, null);
  }
}
