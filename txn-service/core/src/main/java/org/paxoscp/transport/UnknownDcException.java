package org.paxoscp.transport;

/** A transport failure: no such DC or no endpoint for it. */
public final class UnknownDcException extends TransportException {
  private static final long serialVersionUID = 1L;

  public UnknownDcException(String message) {
    super(message);
  }
}
