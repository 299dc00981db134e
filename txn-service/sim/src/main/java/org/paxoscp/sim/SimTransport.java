package org.paxoscp.sim;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.transport.UnknownDcException;

/**
 * A {@link Transport} over the simulated WAN: what the shipped proposer driver and catch-up send
 * crosses {@link SimNetwork} (delay, loss, duplication, reordering, partitions, outages, late
 * and redirected copies) to one live service instance of the target DC, which answers through
 * the shipped {@code TransactionService}; the reply crosses the network back. Request deadlines
 * are virtual.
 *
 * <p>A transport speaks for a location (a DC index): a service instance's transport is closed
 * when the instance dies, so replies to it vanish, as they would for a killed process.
 */
final class SimTransport implements Transport {
  private final SimCluster cluster;
  private final int location;
  /** True for a service instance (its inbound replies are lost while its DC is down). */
  private final boolean service;
  private boolean closed;
  /** A simulated client process's: once closed (the process died), no request times out. */
  private final boolean process;

  SimTransport(SimCluster cluster, int location, boolean service) {
    this(cluster, location, service, false);
  }

  SimTransport(SimCluster cluster, int location, boolean service, boolean process) {
    this.cluster = cluster;
    this.location = location;
    this.service = service;
    this.process = process;
  }

  @Override
  public String localDc() {
    return cluster.dcName(location);
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    CompletableFuture<Message> reply = new CompletableFuture<>();
    if (closed) {
      reply.completeExceptionally(new TransportClosedException("instance stopped"));
      return reply;
    }
    int to = index(dc);
    cluster.sent(location, to, request);
    SimNetwork network = cluster.network();
    // A replayed copy to the same DC is answered into this request if it is still pending (the
    // real transport matches a reply by request id and the DC asked); the answer to a copy
    // redirected to another DC matches nothing, nor does a redirected copy of a reply.
    network.send(location, to, true, SimCluster.typeOf(request),
        () -> cluster.deliver(location, to, request).whenComplete((answer, failure) -> {
          if (answer != null) {
            network.send(to, location, service, SimCluster.typeOf(answer), () -> {
              if (!closed) {
                cluster.replied(location, to, answer);
                reply.complete(answer);
              }
            }, null);
          }
        }),
        other -> () -> cluster.deliver(location, other, request).whenComplete((answer, f) -> {
          if (answer != null) {
            network.send(other, location, service, SimCluster.typeOf(answer),
                network::matchedNothing, null);
          }
        }));
    cluster.scheduler().schedule(Math.max(1, timeout.toNanos() / 1000), () -> {
      if (!(closed && process)) {
        // (A closed client process is dead: nothing of it runs, its timers neither.)
        reply.completeExceptionally(new TransportTimeoutException("no reply from DC " + dc
            + " in " + timeout));
      }
    });
    return reply;
  }

  @Override
  public void send(String dc, Message message) {
    if (closed) {
      return;
    }
    int to = index(dc);
    cluster.sent(location, to, message);
    cluster.network().send(location, to, true, SimCluster.typeOf(message),
        () -> cluster.deliver(location, to, message),
        other -> () -> cluster.deliver(location, other, message));
  }

  private int index(String dc) {
    int i = cluster.dcIndex(dc);
    if (i < 0) {
      throw new UnknownDcException("no DC " + dc);
    }
    return i;
  }

  @Override
  public void close() {
    closed = true;
  }
}
