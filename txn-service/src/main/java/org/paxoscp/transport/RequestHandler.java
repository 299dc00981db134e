package org.paxoscp.transport;

/**
 * Serves requests that arrive over a {@link Transport}. Implementations may block (they call the
 * DC's store); transports call them on a worker pool, never on an I/O thread.
 */
@FunctionalInterface
public interface RequestHandler {
  /**
   * Handles {@code request} from DC {@code fromDc}.
   *
   * @return the reply, or null when the message needs none (APPLY, a LearnReply pushed to us)
   */
  Message handle(String fromDc, Message request);
}
