package org.paxoscp.transport;

import java.util.concurrent.CompletableFuture;

/**
 * Serves requests that arrive over a {@link Transport}. A handler may do store work on the
 * calling thread (transports call it on a worker, never on an I/O thread) but never waits for
 * another message: work that needs one (catch-up) completes the returned future later.
 */
@FunctionalInterface
public interface RequestHandler {
  /**
   * Handles {@code request} from DC {@code fromDc}.
   *
   * @return completes with the reply, or with null when the message needs none (APPLY, a
   *     LearnReply pushed to us); never completes exceptionally for a request it understood
   */
  CompletableFuture<Message> handle(String fromDc, Message request);
}
