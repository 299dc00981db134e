package org.paxoscp.client;

import io.micrometer.core.instrument.Counter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.MessageTooLargeException;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.transport.UnknownDcException;

/**
 * A client's begin and read requests with fail-over: the home DC first, then the others in the
 * cluster's order, each waiting at most the cluster's request timeout. Turns error replies into
 * the client's typed exceptions. Asynchronous: a request's future completes on the thread that
 * delivered the deciding reply.
 */
final class Failover {
  private final ClusterConfig cluster;
  private final String homeDc;
  private final Transport transport;
  private final List<String> order;
  /** Requests a DC failed or did not answer (the client then asks the next DC, if any). */
  private final Counter failovers;

  Failover(ClusterConfig cluster, String homeDc, Transport transport, Counter failovers) {
    this.failovers = failovers;
    this.cluster = cluster;
    this.homeDc = homeDc;
    this.transport = transport;
    List<String> o = new ArrayList<>();
    o.add(homeDc);
    for (String dc : cluster.dcNames()) {
      if (!dc.equals(homeDc)) {
        o.add(dc);
      }
    }
    this.order = List.copyOf(o);
  }

  /**
   * Sends {@code request} to the DCs in fail-over order until one gives an acceptable reply
   * ({@code accept} returns non-null), and completes with it. A timeout, an unknown DC, an
   * unavailable store, a failed catch-up or an unacceptable reply moves on to the next DC. Never
   * blocks: each DC is asked when the one before it failed.
   *
   * <p>The future fails with {@link UnavailableException} when no DC gave an acceptable reply,
   * {@link TransactionAbortedException} when the position was collected (TOO_OLD), and
   * {@link InvalidArgumentException} when a DC refused the request as invalid or too large.
   */
  <R> CompletableFuture<R> request(String group, String txnId, long position, Message request,
      Function<Message, R> accept) {
    return request(group, txnId, position, request, accept, false);
  }

  /**
   * {@link #request}, with {@code anyDc}: TOO_OLD and BAD_REQUEST move on to the next DC too (a
   * question about a position already decided, which one DC may have collected or rebuilt past,
   * or may not yet follow the cluster's version for, while another can answer it).
   */
  <R> CompletableFuture<R> request(String group, String txnId, long position, Message request,
      Function<Message, R> accept, boolean anyDc) {
    CompletableFuture<R> out = new CompletableFuture<>();
    ask(0, new Attempt<>(group, txnId, position, request, accept, anyDc, new ArrayList<>(), out));
    return out;
  }

  /** One request's fail-over state: what to ask, what failed so far, where the answer goes. */
  private record Attempt<R>(String group, String txnId, long position, Message request,
      Function<Message, R> accept, boolean anyDc, List<Throwable> failures,
      CompletableFuture<R> out) {}

  /** Asks the {@code i}-th DC of the order, and the next one when it fails. */
  private <R> void ask(int i, Attempt<R> a) {
    if (i == order.size()) {
      a.out().completeExceptionally(unavailable(a));
      return;
    }
    String dc = order.get(i);
    CompletableFuture<Message> reply;
    try {
      reply = transport.request(dc, a.request(), cluster.requestTimeout());
    } catch (UnknownDcException | TransportClosedException | MessageTooLargeException e) {
      reply = CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      a.out().completeExceptionally(e); // A broken transport: no DC would do better.
      return;
    }
    reply.whenComplete((m, t) -> {
      try {
        if (answered(dc, m, t, a)) {
          return;
        }
      } catch (RuntimeException e) {
        a.out().completeExceptionally(e);
        return;
      }
      failovers.increment();
      ask(i + 1, a);
    });
  }

  /**
   * Takes DC {@code dc}'s reply {@code m} (or failure {@code t}): true when it completed the
   * request (with a value); false when the next DC is to be asked. Throws for an answer that
   * ends the request with an error.
   */
  private <R> boolean answered(String dc, Message m, Throwable t, Attempt<R> a) {
    if (t != null) {
      Throwable cause = Futures.unwrap(t);
      if (cause instanceof TransportClosedException) {
        throw new IllegalStateException("the client's transport is closed", cause);
      }
      if (cause instanceof MessageTooLargeException) {
        throw new InvalidArgumentException("request does not fit in a datagram: "
            + cause.getMessage());
      }
      a.failures().add(cause);
      return false;
    }
    if (m instanceof Message.ErrorReply err) {
      if (a.anyDc() && (err.code() == Message.ErrorCode.TOO_OLD
          || err.code() == Message.ErrorCode.BAD_REQUEST)) {
        a.failures().add(new IllegalStateException(dc + ": " + err.code() + " " + err.detail()));
        return false;
      }
      switch (err.code()) {
        case STORE_UNAVAILABLE, CATCH_UP_FAILED, REBUILDING -> {
          a.failures().add(new IllegalStateException(dc + ": " + err.code() + " "
              + err.detail()));
          return false;
        }
        case TOO_OLD -> throw new TransactionAbortedException(new CommitResult(
            CommitResult.Status.ABORTED, a.group(), a.txnId(), a.position(), 0, false,
            "position " + a.position() + " is below the group's GC watermark: "
                + err.detail()), dc);
        case BAD_REQUEST, TOO_LARGE -> throw new InvalidArgumentException(
            "DC " + dc + " rejected the request: " + err.code() + " " + err.detail());
        default -> throw new IllegalStateException("unhandled error code " + err.code());
      }
    }
    R r = a.accept().apply(m);
    if (r != null) {
      a.out().complete(r);
      return true;
    }
    a.failures().add(new IllegalStateException(dc + ": unexpected reply " + m));
    return false;
  }

  private UnavailableException unavailable(Attempt<?> a) {
    StringBuilder why = new StringBuilder();
    for (Throwable f : a.failures()) {
      why.append(why.length() == 0 ? ": " : "; ").append(f.getMessage());
    }
    if (!a.failures().isEmpty()
        && a.failures().stream().allMatch(f -> f instanceof TransportTimeoutException)) {
      // Silence from every DC: down, unreachable, or dropping our datagrams (another key).
      why.append(" (no DC answered at all: check that the services run, that this host reaches "
          + "them, and that they accept this client's paxoscp.key; a datagram under another key "
          + "is dropped without a reply)");
    }
    UnavailableException u = new UnavailableException("no DC of " + order
        + " served " + a.request().getClass().getSimpleName() + why, a.group(), a.position(),
        order.get(order.size() - 1));
    a.failures().forEach(u::addSuppressed);
    return u;
  }
}
