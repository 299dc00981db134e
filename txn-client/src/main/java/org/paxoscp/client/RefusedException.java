package org.paxoscp.client;

/**
 * A DC refused a begin or read as invalid (BAD_REQUEST) or because its reply would not fit in
 * one datagram (TOO_LARGE). For a read of several keys, fewer keys at once may succeed: a reply
 * too large always shrinks, and a service configured to take fewer keys per read than the client
 * sends ({@code paxoscp.service.read.max.keys}) refuses the larger request only;
 * {@link Transaction#getAll} splits its request and asks again.
 */
final class RefusedException extends InvalidArgumentException {
  private static final long serialVersionUID = 1L;

  private final boolean tooLarge;

  RefusedException(String group, boolean tooLarge, String message) {
    super(group, message);
    this.tooLarge = tooLarge;
  }

  /** The reply would not fit in a datagram (TOO_LARGE), rather than an invalid request. */
  boolean tooLarge() {
    return tooLarge;
  }
}
