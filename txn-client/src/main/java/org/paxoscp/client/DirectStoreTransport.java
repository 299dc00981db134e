package org.paxoscp.client;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.paxoscp.service.TransactionService;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.TransportTimeoutException;

/**
 * A transport that serves the proposer's messages to the home DC in this process, with the
 * Transaction Service's own handler ({@link TransactionService}) on the home DC's store, as the
 * paper's prototype clients did with their direct HBase access; everything else (other DCs,
 * begin and read requests) goes to the wrapped transport. The service keeps all its state in the
 * store and is safe to run next to the DC's service processes on the same store (every change is
 * a check-and-write on the WAL row).
 *
 * <p>An APPLY to the home DC is recorded and then applied to the data table at once, so direct
 * reads see the client's own commits without waiting for a service.
 *
 * <p>Thread-safe. Store calls block, so they run on {@code storeExecutor}, never on the caller's
 * thread. Closing this transport does not close the wrapped one, the handler or the executor.
 */
final class DirectStoreTransport implements Transport {
  private final Transport delegate;
  private final String homeDc;
  private final RequestHandler home;
  private final Executor storeExecutor;

  DirectStoreTransport(Transport delegate, String homeDc, RequestHandler home,
      Executor storeExecutor) {
    this.delegate = Objects.requireNonNull(delegate);
    this.homeDc = Objects.requireNonNull(homeDc);
    this.home = Objects.requireNonNull(home);
    this.storeExecutor = Objects.requireNonNull(storeExecutor);
  }

  @Override
  public String localDc() {
    return delegate.localDc();
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    if (!dc.equals(homeDc) || !(request instanceof Message.Paxos)) {
      return delegate.request(dc, request, timeout);
    }
    CompletableFuture<Message> local;
    try {
      local = CompletableFuture.supplyAsync(() -> home.handle(localDc(), request), storeExecutor)
          .thenCompose(f -> f);
    } catch (RejectedExecutionException e) {
      return CompletableFuture.failedFuture(
          new TransportClosedException("client closed; no direct store access"));
    }
    return local.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS)
        .handle((reply, failure) -> {
          Throwable t = failure instanceof CompletionException ? failure.getCause() : failure;
          if (t instanceof TimeoutException) {
            throw new TransportTimeoutException("home DC store " + dc + " did not answer in "
                + timeout);
          }
          if (t != null) {
            throw t instanceof RuntimeException re ? re : new CompletionException(t);
          }
          return reply;
        });
  }

  @Override
  public void send(String dc, Message message) {
    if (!dc.equals(homeDc) || !(message instanceof Message.Paxos)) {
      delegate.send(dc, message);
      return;
    }
    try {
      // As for a datagram, a failure to apply is silent: the home service learns the value
      // when it next needs it. The handler logs it.
      storeExecutor.execute(() -> home.handle(localDc(), message));
    } catch (RejectedExecutionException e) {
      // The client is closing: as a lost APPLY datagram.
    }
  }

  /** Does nothing: the wrapped transport, the handler and the executor belong to the client. */
  @Override
  public void close() {}
}
