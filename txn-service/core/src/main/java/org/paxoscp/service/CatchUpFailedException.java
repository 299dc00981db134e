package org.paxoscp.service;

/**
 * A DC could not learn the log positions it needed (section 5.4): no peer knew them and the
 * learner instance found no quorum in time, or the catch-up bound was reached. Nothing that was
 * learned before the failure is lost; a later request continues from there.
 */
public final class CatchUpFailedException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public CatchUpFailedException(String message) {
    super(message);
  }

  public CatchUpFailedException(String message, Throwable cause) {
    super(message, cause);
  }
}
