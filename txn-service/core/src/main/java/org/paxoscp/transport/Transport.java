package org.paxoscp.transport;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Sends messages to the Transaction Services of a DC, one datagram per message. Implementations:
 * {@link UdpTransport} (Netty, authenticated, with optional WAN emulation); the simulator's
 * transport over its virtual network; the tests' in-process transport.
 *
 * <p>Thread-safe. Nothing blocks: replies complete futures.
 */
public interface Transport extends AutoCloseable {

  /** The DC this transport speaks for (a client's home DC, or a service's own DC). */
  String localDc();

  /**
   * Sends {@code request} to one service of DC {@code dc} and completes with its reply.
   *
   * <p>The future fails with {@link TransportTimeoutException} when no reply arrives within
   * {@code timeout} (the request or the reply was lost, or the DC is down: the request may or
   * may not have been handled), with {@link MessageTooLargeException} when the request does not
   * fit in a datagram (nothing was sent), and with {@link UnknownDcException} for a DC the
   * cluster does not have, or one with no known endpoint.
   */
  CompletableFuture<Message> request(String dc, Message request, Duration timeout);

  /**
   * Sends a one-way message (no reply expected). Loss is silent, as for any datagram.
   *
   * @throws MessageTooLargeException when it does not fit in a datagram (nothing was sent)
   * @throws UnknownDcException for a DC the cluster does not have
   */
  void send(String dc, Message message);

  /**
   * Speaks as cluster version {@code version} allows from now on (docs/upgrading.md); a
   * transport without wire versions (in-process, simulated) has nothing to change.
   */
  default void clusterVersion(int version) {
  }

  /**
   * Asks one service of DC {@code dc} which cluster versions it speaks and runs at ({@link
   * UdpTransport} asks in every wire version it can open the answer in).
   */
  default CompletableFuture<Message.VersionReply> askVersions(String dc, Duration timeout) {
    return request(dc, new Message.VersionRequest(), timeout).thenApply(m -> {
      if (m instanceof Message.VersionReply v) {
        return v;
      }
      throw new IllegalStateException("DC " + dc + " answered a version request with " + m);
    });
  }

  /**
   * As {@link #askVersions}, for a process that does not know the cluster's version yet: {@link
   * UdpTransport} asks again in wire version 3 when version 4 finds no answer (half the timeout
   * each), so that a cluster of a build that opens only version 3 answers.
   */
  default CompletableFuture<Message.VersionReply> askVersionsFirst(String dc, Duration timeout) {
    return askVersions(dc, timeout);
  }

  /**
   * The wire versions a service of DC {@code dc} answers in, for a peer of a build from before
   * cluster versions (which answers no version request): {@link UdpTransport} sends it a
   * round-trip probe in each version. Empty when none answered (or for a transport without wire
   * versions).
   */
  default CompletableFuture<java.util.Set<Integer>> wireVersionsOf(String dc, Duration timeout) {
    return CompletableFuture.completedFuture(java.util.Set.of());
  }

  /** Idempotent. Pending requests fail with {@link TransportClosedException}. */
  @Override
  void close();
}
