package org.paxoscp.client;

/**
 * An argument of a client call is invalid: an empty, too long or NUL-containing group name or key,
 * or a transaction too large to send. Nothing was sent and nothing changed; the transaction (if
 * any) stays usable.
 */
public class InvalidArgumentException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  InvalidArgumentException(String message) {
    super(message);
  }
}
