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

  /** Idempotent. Pending requests fail with {@link TransportClosedException}. */
  @Override
  void close();
}
