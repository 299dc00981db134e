package org.paxoscp.client;

import io.micrometer.core.instrument.Counter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
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
 * the client's typed exceptions.
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
   * ({@code accept} returns non-null). A timeout, an unknown DC, an unavailable store, a failed
   * catch-up or an unacceptable reply moves on to the next DC.
   *
   * @throws UnavailableException when no DC gave an acceptable reply
   * @throws TransactionAbortedException when the position was collected (TOO_OLD)
   * @throws InvalidArgumentException when a DC refused the request as invalid or too large
   */
  <R> R request(String group, String txnId, long position, Message request,
      Function<Message, R> accept) {
    return request(group, txnId, position, request, accept, false);
  }

  /**
   * {@link #request}, with {@code anyDc}: TOO_OLD and BAD_REQUEST move on to the next DC too (a
   * question about a position already decided, which one DC may have collected or rebuilt past,
   * or may not yet follow the cluster's version for, while another can answer it).
   */
  <R> R request(String group, String txnId, long position, Message request,
      Function<Message, R> accept, boolean anyDc) {
    List<Throwable> failures = new ArrayList<>();
    String lastDc = homeDc;
    for (String dc : order) {
      lastDc = dc;
      Message reply;
      try {
        reply = transport.request(dc, request, cluster.requestTimeout()).join();
      } catch (CompletionException | TransportTimeoutException | UnknownDcException
               | TransportClosedException | MessageTooLargeException e) {
        Throwable cause = e instanceof CompletionException && e.getCause() != null
            ? e.getCause() : e;
        if (cause instanceof TransportClosedException) {
          throw new IllegalStateException("the client's transport is closed", cause);
        }
        if (cause instanceof MessageTooLargeException) {
          throw new InvalidArgumentException("request does not fit in a datagram: "
              + cause.getMessage());
        }
        failures.add(cause);
        failovers.increment();
        continue;
      }
      if (reply instanceof Message.ErrorReply err) {
        if (anyDc && (err.code() == Message.ErrorCode.TOO_OLD
            || err.code() == Message.ErrorCode.BAD_REQUEST)) {
          failures.add(new IllegalStateException(dc + ": " + err.code() + " " + err.detail()));
          failovers.increment();
          continue;
        }
        switch (err.code()) {
          case STORE_UNAVAILABLE, CATCH_UP_FAILED, REBUILDING -> {
            failures.add(new IllegalStateException(dc + ": " + err.code() + " " + err.detail()));
            failovers.increment();
            continue;
          }
          case TOO_OLD -> throw new TransactionAbortedException(new CommitResult(
              CommitResult.Status.ABORTED, group, txnId, position, 0, false,
              "position " + position + " is below the group's GC watermark: " + err.detail()),
              dc);
          case BAD_REQUEST, TOO_LARGE -> throw new InvalidArgumentException(
              "DC " + dc + " rejected the request: " + err.code() + " " + err.detail());
          default -> throw new IllegalStateException("unhandled error code " + err.code());
        }
      }
      R r = accept.apply(reply);
      if (r != null) {
        return r;
      }
      failures.add(new IllegalStateException(dc + ": unexpected reply " + reply));
      failovers.increment();
    }
    StringBuilder why = new StringBuilder();
    for (Throwable f : failures) {
      why.append(why.length() == 0 ? ": " : "; ").append(f.getMessage());
    }
    if (!failures.isEmpty()
        && failures.stream().allMatch(f -> f instanceof TransportTimeoutException)) {
      // Silence from every DC: down, unreachable, or dropping our datagrams (another key).
      why.append(" (no DC answered at all: check that the services run, that this host reaches "
          + "them, and that they accept this client's paxoscp.key; a datagram under another key "
          + "is dropped without a reply)");
    }
    UnavailableException u = new UnavailableException("no DC of " + order
        + " served " + request.getClass().getSimpleName() + why, group, position, lastDc);
    failures.forEach(u::addSuppressed);
    throw u;
  }
}
