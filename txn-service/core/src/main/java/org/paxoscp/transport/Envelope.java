package org.paxoscp.transport;

import java.util.Objects;

/**
 * One datagram's content before authentication: a request id that pairs a reply with its request
 * (0 for one-way messages such as APPLY), the name of the sending DC, and the message.
 *
 * @param requestId chosen by the requester; a reply carries the request's id
 * @param fromDc the DC of the sender (a client names its home DC)
 * @param reply whether this answers a request (replies are never handled as requests)
 * @param message the content
 */
public record Envelope(long requestId, String fromDc, boolean reply, Message message) {
  public Envelope {
    Objects.requireNonNull(fromDc);
    Objects.requireNonNull(message);
  }
}
