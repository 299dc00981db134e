package org.paxoscp.transport;

/**
 * A transport failure: the datagram could not be sent at all (the socket refused it), as when a
 * transport bound to loopback sends to another host. Names the DC, the addresses and the cause.
 */
public final class TransportSendException extends TransportException {
  private static final long serialVersionUID = 1L;

  public TransportSendException(String message, Throwable cause) {
    super(message);
    initCause(cause);
  }
}
