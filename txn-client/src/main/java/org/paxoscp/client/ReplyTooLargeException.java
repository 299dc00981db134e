package org.paxoscp.client;

/**
 * A DC refused a read because its reply would not fit in one datagram (TOO_LARGE): reading fewer
 * keys at once succeeds ({@link Transaction#getAll} splits its request and asks again).
 */
final class ReplyTooLargeException extends InvalidArgumentException {
  private static final long serialVersionUID = 1L;

  ReplyTooLargeException(String group, String message) {
    super(group, message);
  }
}
