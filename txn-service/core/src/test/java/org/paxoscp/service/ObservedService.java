package org.paxoscp.service;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;

/**
 * One DC's real {@link TransactionService}, observed: counts the requests it serves, for tests
 * that check what the client sent, and can fall silent as if its process hung.
 */
public final class ObservedService implements RequestHandler {
  private final TransactionService service;
  public final AtomicInteger beginRequests = new AtomicInteger();
  public final AtomicInteger readRequests = new AtomicInteger();
  public final AtomicInteger paxosRequests = new AtomicInteger();
  /** While set, the service answers nothing (its requests time out), as if its process hung. */
  public volatile boolean silent;

  public ObservedService(TransactionService service) {
    this.service = service;
  }

  /** The service observed. */
  public TransactionService service() {
    return service;
  }

  @Override
  public CompletableFuture<Message> handle(String fromDc, Message request) {
    if (silent) {
      return new CompletableFuture<>();
    }
    if (request instanceof Message.Paxos) {
      paxosRequests.incrementAndGet();
    } else if (request instanceof Message.BeginRequest) {
      beginRequests.incrementAndGet();
    } else if (request instanceof Message.ReadRequest) {
      readRequests.incrementAndGet();
    }
    return service.handle(fromDc, request);
  }

  @Override
  public String toString() {
    return "ObservedService[" + service.dc() + "]";
  }
}
