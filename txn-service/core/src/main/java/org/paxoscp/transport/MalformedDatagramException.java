package org.paxoscp.transport;

import java.util.Objects;

/**
 * A received datagram that is not exactly one authentic message of this cluster: the transport
 * drops it (it never reaches a {@link RequestHandler} or completes a request) and counts it by
 * {@link Reason}.
 */
public final class MalformedDatagramException extends TransportException {
  private static final long serialVersionUID = 1L;

  /** Why a datagram was rejected, roughly in the order the checks run. */
  public enum Reason {
    /** Shorter than the smallest possible message. */
    TRUNCATED,
    /** Longer than the cluster's datagram size limit. */
    TOO_LARGE,
    /** A wire format version (or flag) this process does not open. */
    BAD_VERSION,
    /** Authenticated only (not encrypted), and this process requires encryption. */
    CLEAR,
    /**
     * Sealed under a key this process does not accept: another cluster's, or one retired (or not
     * yet accepted here) in a rolling key change; the detail names the key ids.
     */
    UNKNOWN_KEY,
    /** The authentication tag does not match: forged, corrupted or cut. */
    BAD_MAC,
    /** Authentic, but an unknown message type. */
    BAD_TYPE,
    /** Authentic but not a valid encoding (or from a DC the cluster does not have). */
    MALFORMED,
    /** Authentic, but sealed further from this process's clock than the freshness window. */
    STALE,
    /** Authentic, but its sender's counter was seen already (a copy) or is below the window. */
    REPLAY,
    /** Authentic, but sealed for another DC. */
    MISDIRECTED,
    /**
     * Authentic, but a request its key's role may not send (a client's key asking to rebuild a
     * DC), or a reply under another key than the request's.
     */
    ROLE,
    /** Not opened: the queue of datagrams waiting to be verified was full. */
    OVERLOADED
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
