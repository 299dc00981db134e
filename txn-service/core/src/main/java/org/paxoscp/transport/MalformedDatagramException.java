package org.paxoscp.transport;

import java.util.Objects;

/**
 * A received datagram that is not exactly one authentic message of this cluster: the transport
 * drops it (it never reaches a {@link RequestHandler} or completes a request) and counts it by
 * {@link Reason}.
 */
public final class MalformedDatagramException extends TransportException {
  private static final long serialVersionUID = 1L;

  /** Why a datagram was rejected, in the order the checks run. */
  public enum Reason {
    /** Shorter than the smallest possible message. */
    TRUNCATED,
    /** Longer than the cluster's datagram size limit. */
    TOO_LARGE,
    /** A wire format version this build does not speak. */
    BAD_VERSION,
    /** An unknown message type. */
    BAD_TYPE,
    /** The authentication tag does not match: forged, corrupted, cut, or another cluster's key. */
    BAD_MAC,
    /** Authentic but not a valid encoding (or from a DC the cluster does not have). */
    MALFORMED
  }

  private final Reason reason;

  public MalformedDatagramException(Reason reason, String message) {
    super(reason + ": " + message);
    this.reason = Objects.requireNonNull(reason);
  }

  public Reason reason() {
    return reason;
  }
}
