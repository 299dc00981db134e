package org.paxoscp.transport;

/** A transport failure: the transport is closed. */
public final class TransportClosedException extends TransportException {
  private static final long serialVersionUID = 1L;

  public TransportClosedException(String message) {
    super(message);
  }
}
