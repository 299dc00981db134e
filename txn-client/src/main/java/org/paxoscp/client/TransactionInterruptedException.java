package org.paxoscp.client;

/**
 * The calling thread was interrupted while it waited for a begin or a read: the call was
 * abandoned and the transaction finished; nothing of it was sent for commit, so nothing of it is
 * in the log. The thread's interrupt flag stays set. (An interrupted {@code commit} or
 * {@code settle} ends with {@link OutcomeUnknownException} instead: its entry may have been sent.)
 */
public final class TransactionInterruptedException extends TransactionException {
  private static final long serialVersionUID = 1L;

  TransactionInterruptedException(String message, String group, InterruptedException cause) {
    super(message, group, -1, null, cause);
  }
}
