package org.paxoscp.transport;

/** A transport failure: no reply in time. */
public final class TransportTimeoutException extends TransportException {
  private static final long serialVersionUID = 1L;

  public TransportTimeoutException(String message) {
    super(message);
  }
}
