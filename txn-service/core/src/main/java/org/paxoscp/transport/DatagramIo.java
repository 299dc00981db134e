package org.paxoscp.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoop;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Socket I/O of a {@link UdpTransport}: one bound datagram channel on one Netty I/O thread.
 * Writes byte arrays to addresses and hands every received datagram's bytes to a callback on the
 * I/O thread; knows nothing of messages.
 */
final class DatagramIo {
  private static final Logger LOG = LoggerFactory.getLogger(DatagramIo.class);
  private static final long CLOSE_WAIT_SECONDS = 5;

  private final String name;
  private final NioEventLoopGroup group;
  private final Channel channel;

  /**
   * Binds {@code bind} and starts the I/O thread.
   *
   * @param maxDatagramBytes the largest datagram accepted; one byte more is read so that an
   *     oversized datagram arrives longer than the limit (and is refused) instead of silently
   *     truncated into a shorter one
   * @param onDatagram receives each datagram's bytes and sender, on the I/O thread
   * @throws UncheckedIOException when the address cannot be bound
   */
  DatagramIo(String name, InetSocketAddress bind, int maxDatagramBytes,
      BiConsumer<byte[], InetSocketAddress> onDatagram) {
    this.name = name;
    this.group = new NioEventLoopGroup(1, new DefaultThreadFactory(name + "-io", true));
    ChannelFuture bound = new Bootstrap()
        .group(group)
        .channel(NioDatagramChannel.class)
        .option(ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(maxDatagramBytes + 1))
        .option(ChannelOption.SO_RCVBUF, 1 << 20)
        .handler(new SimpleChannelInboundHandler<DatagramPacket>() {
          @Override
          protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket packet) {
            onDatagram.accept(ByteBufUtil.getBytes(packet.content()), packet.sender());
          }

          @Override
          public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            // A datagram socket survives a failed read (e.g. ICMP unreachable); keep serving.
            LOG.debug("{}: I/O error", name, cause);
          }
        })
        .bind(bind)
        .awaitUninterruptibly();
    if (!bound.isSuccess()) {
      shutdown();
      Throwable cause = bound.cause();
      String what = name + " cannot bind " + bind;
      if (cause instanceof IOException io) {
        throw new UncheckedIOException(what + ": " + io.getMessage(), io);
      }
      throw new IllegalStateException(what, cause);
    }
    this.channel = bound.channel();
  }

  InetSocketAddress boundAddress() {
    return (InetSocketAddress) channel.localAddress();
  }

  /** The I/O thread, for timers that must not need a thread of their own. */
  EventLoop eventLoop() {
    return channel.eventLoop();
  }

  /**
   * Sends one datagram. When the socket refuses it (not a loss on the way, which nobody sees:
   * e.g. {@code sendto} failing with EINVAL from a loopback-bound socket to another host),
   * {@code onFailure} gets the cause, on the I/O thread; not after {@link #close()}.
   */
  void write(byte[] bytes, InetSocketAddress to, Consumer<Throwable> onFailure) {
    channel.writeAndFlush(new DatagramPacket(Unpooled.wrappedBuffer(bytes), to))
        .addListener(w -> {
          if (!w.isSuccess() && channel.isOpen()) {
            onFailure.accept(w.cause());
          }
        });
  }

  /** Closes the channel and stops the I/O thread (bounded wait). */
  void close() {
    channel.close();
    shutdown();
  }

  private void shutdown() {
    var terminated = group.shutdownGracefully(0, CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
    // Waiting on our own I/O thread (close() from a reply callback) would deadlock.
    if (!group.next().inEventLoop()
        && !terminated.awaitUninterruptibly(2 * CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
      LOG.warn("{}: I/O thread did not stop within {} s", name, 2 * CLOSE_WAIT_SECONDS);
    }
  }
}
