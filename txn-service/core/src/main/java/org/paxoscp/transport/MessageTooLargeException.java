package org.paxoscp.transport;

/** A transport failure: does not fit in a datagram. */
public final class MessageTooLargeException extends TransportException {
  private static final long serialVersionUID = 1L;

  public MessageTooLargeException(String message) {
    super(message);
  }
}
