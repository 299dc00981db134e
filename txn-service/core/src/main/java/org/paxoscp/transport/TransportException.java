package org.paxoscp.transport;

/** Base of the transport's failures; each says which DC and message it concerns. */
public abstract class TransportException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  protected TransportException(String message) {
    super(message);
  }
}
