package org.paxoscp.store;

/**
 * The store could not be reached, or did not answer within its deadline. The outcome of a write
 * that ends in this exception is unknown to the caller.
 */
public class StoreUnavailableException extends RuntimeException {
  public StoreUnavailableException(String message) {
    super(message);
  }

  public StoreUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
