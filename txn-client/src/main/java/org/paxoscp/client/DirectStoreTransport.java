package org.paxoscp.client;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.TransportTimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A transport that serves the proposer's messages to the home DC with an in-process
 * {@link Acceptor} on the home DC's store, as the paper's prototype clients did with their direct
 * HBase access; everything else (other DCs, begin and read requests) goes to the wrapped
 * transport. The acceptor keeps all its state in the store and is safe to run next to the
 * services' acceptors on the same store (every change is a checkAndWrite on the WAL row).
 *
 * <p>An APPLY to the home DC is recorded and then applied to the data table at once, so direct
 * reads see the client's own commits without waiting for a service.
 *
 * <p>Thread-safe. Store calls block, so they run on {@code storeExecutor}, never on the caller's
 * thread. Closing this transport does not close the wrapped one or the executor.
 */
final class DirectStoreTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(DirectStoreTransport.class);

  private final Transport delegate;
  private final String homeDc;
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final ExecutorService storeExecutor;

  DirectStoreTransport(Transport delegate, String homeDc, Acceptor acceptor, LogApplier applier,
      ExecutorService storeExecutor) {
    this.delegate = Objects.requireNonNull(delegate);
    this.homeDc = Objects.requireNonNull(homeDc);
    this.acceptor = Objects.requireNonNull(acceptor);
    this.applier = Objects.requireNonNull(applier);
    this.storeExecutor = Objects.requireNonNull(storeExecutor);
  }

  @Override
  public String localDc() {
    return delegate.localDc();
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    if (!dc.equals(homeDc) || !(request instanceof Message.Paxos p)) {
      return delegate.request(dc, request, timeout);
    }
    CompletableFuture<Message> local;
    try {
      local = CompletableFuture.supplyAsync(() -> handle(p.message()), storeExecutor);
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

  /** One request to the home acceptor; a store failure is answered as the service would. */
  private Message handle(PaxosMessage m) {
    try {
      PaxosMessage reply;
      if (m instanceof PaxosMessage.Prepare prepare) {
        reply = acceptor.prepare(prepare);
      } else if (m instanceof PaxosMessage.Accept accept) {
        reply = acceptor.accept(accept);
      } else if (m instanceof PaxosMessage.GrantRequest grant) {
        reply = acceptor.grant(grant);
      } else if (m instanceof PaxosMessage.Learn learn) {
        reply = new PaxosMessage.LearnReply(learn.group(), learn.position(),
            acceptor.chosen(learn.group(), learn.position()).orElse(null));
      } else {
        return new Message.ErrorReply(m.group(), m.position(), Message.ErrorCode.BAD_REQUEST,
            "not a request: " + m.getClass().getSimpleName());
      }
      return new Message.Paxos(reply);
    } catch (StoreUnavailableException e) {
      return new Message.ErrorReply(m.group(), m.position(),
          Message.ErrorCode.STORE_UNAVAILABLE, String.valueOf(e.getMessage()));
    } catch (org.paxoscp.paxos.TooOldException e) {
      // A collected position (ARCHITECTURE section 7), as the service would answer it.
      return new Message.ErrorReply(m.group(), m.position(), Message.ErrorCode.TOO_OLD,
          e.getMessage());
    }
  }

  @Override
  public void send(String dc, Message message) {
    if (!dc.equals(homeDc) || !(message instanceof Message.Paxos p)
        || !(p.message() instanceof PaxosMessage.Apply apply)) {
      delegate.send(dc, message);
      return;
    }
    try {
      storeExecutor.execute(() -> applyLocally(apply));
    } catch (RejectedExecutionException e) {
      // The client is closing: as a lost APPLY datagram.
    }
  }

  private void applyLocally(PaxosMessage.Apply apply) {
    try {
      if (acceptor.apply(apply) == Acceptor.ApplyResult.CONFLICT) {
        LOG.error("APPLY of group {} position {} conflicts with the value already chosen",
            apply.group(), apply.position());
      }
      applier.applyKnown(apply.group());
    } catch (StoreUnavailableException e) {
      // As a lost APPLY datagram: the home service learns the value when it next needs it.
      LOG.debug("direct APPLY of {} position {} failed: {}", apply.group(), apply.position(),
          e.getMessage());
    } catch (org.paxoscp.paxos.TooOldException e) {
      // The position was collected here: it was applied long ago, nothing to do.
      LOG.debug("direct APPLY of {} position {}: {}", apply.group(), apply.position(),
          e.getMessage());
    }
  }

  /** Does nothing: the wrapped transport and the executor belong to the client. */
  @Override
  public void close() {}
}
