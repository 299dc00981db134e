package org.paxoscp.client;

/**
 * An argument of a client call is invalid: an empty, too long or NUL-containing group name or key,
 * a value or update that cannot apply, or a transaction too large to send. Nothing was sent and
 * nothing changed; the transaction (if any) stays usable. Like every {@link TransactionException}
 * it names the group (empty when the group name itself was missing).
 */
public class InvalidArgumentException extends TransactionException {
  private static final long serialVersionUID = 1L;

  InvalidArgumentException(String group, String message) {
    super(message, group == null ? "" : group, -1, null, null);
  }
}
