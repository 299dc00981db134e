package org.paxoscp.transport;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelOption;
import io.netty.channel.FixedRecvByteBufAllocator;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.channel.nio.NioEventLoopGroup;
import io.netty.channel.socket.DatagramPacket;
import io.netty.channel.socket.nio.NioDatagramChannel;
import io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The product {@link Transport}: one authenticated UDP datagram per message ({@link WireCodec}),
 * on a Netty event loop (ARCHITECTURE section 6).
 *
 * <p>One class for both roles. A <em>client</em> transport (no handler) binds an ephemeral
 * loopback port and only issues requests. A <em>service</em> transport binds its configured
 * address and also serves incoming requests through a {@link RequestHandler}, called on a pool of
 * worker threads, never on the I/O thread, since handlers block on the store. A reply goes back to
 * the address the request came from.
 *
 * <p>Every received datagram is verified before anything else looks at it: a forged, truncated,
 * oversized, unknown-version or otherwise invalid datagram, or one naming a DC the cluster does
 * not have, is dropped, counted by {@link Reason} ({@link #droppedCount}) and logged at most once
 * per reason every 10 seconds. It never reaches the handler and never completes a request.
 *
 * <p>With {@link ClusterConfig.Wan#enabled()} the sending side emulates a WAN between DCs: each
 * datagram to DC {@code to} is delayed by the pair's one-way time with uniform jitter, lost with
 * probability {@code loss}, sent twice with probability {@code duplicate}, and dropped when the
 * two DCs differ and either is partitioned. The destination of a reply is the DC that sent the
 * request.
 *
 * <p>A handler that throws {@link IllegalArgumentException} is answered with
 * {@link Message.ErrorCode#BAD_REQUEST}, {@link StoreUnavailableException} with
 * {@link Message.ErrorCode#STORE_UNAVAILABLE}; any other exception is logged and not answered. A
 * reply too large for a datagram is replaced by {@link Message.ErrorCode#TOO_LARGE}.
 *
 * <p>Thread-safe. Nothing blocks except {@link #close()} (bounded). Reply futures complete on the
 * transport's I/O thread: dependent actions must not block there (use the {@code *Async}
 * variants with an executor for that).
 */
public final class UdpTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(UdpTransport.class);
  private static final long LOG_INTERVAL_SECONDS = 10;
  private static final int MAX_DETAIL_CHARS = 300;
  private static final int QUEUED_REQUESTS_PER_WORKER = 256;
  private static final long CLOSE_WAIT_SECONDS = 5;

  private final String localDc;
  private final Set<String> dcNames;
  private final WireCodec codec;
  private final WanEmulator wanEmulator;
  private final Endpoints endpoints;
  private final RequestHandler handler;
  private final ThreadPoolExecutor workers;
  private final NioEventLoopGroup group;
  private final Channel channel;
  private final InetSocketAddress boundAddress;
  private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
  private final AtomicLong nextRequestId = new AtomicLong(ThreadLocalRandom.current().nextLong());
  private final AtomicBoolean closed = new AtomicBoolean();
  /**
   * Datagrams the WAN emulation holds back (scheduled, not yet written). {@link #close()} lets
   * them go out: a one-way message sent just before close (a client's last APPLY) must not be
   * lost to the emulation when it would not be lost on a real network.
   */
  private final Object delayedLock = new Object();
  private int delayedSends;
  private final DropLog drops;
  private final AtomicLong rejectedRequests = new AtomicLong();
  private final AtomicLong lastRejectLogNanos = new AtomicLong();

  private record Pending(String dc, CompletableFuture<Message> future) {}

  /**
   * Starts building a transport speaking for {@code localDc} in the cluster {@code config}.
   * Defaults: bind {@code 127.0.0.1:0}, the config's static endpoints, no handler (a client).
   */
  public static Builder builder(ClusterConfig config, String localDc) {
    return new Builder(config, localDc);
  }

  /** Builds a {@link UdpTransport}. Not thread-safe; build once. */
  public static final class Builder {
    private final ClusterConfig config;
    private final String localDc;
    private InetSocketAddress bind = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
    private Endpoints endpoints;
    private RequestHandler handler;
    private int workerThreads;

    private Builder(ClusterConfig config, String localDc) {
      this.config = Objects.requireNonNull(config);
      this.localDc = Objects.requireNonNull(localDc);
      if (!config.dcNames().contains(localDc)) {
        throw new IllegalArgumentException("DC " + localDc + " is not in the cluster "
            + config.dcNames());
      }
    }

    /** The local address to listen on; port 0 picks a free one (see {@link #boundAddress}). */
    public Builder bind(InetSocketAddress address) {
      this.bind = Objects.requireNonNull(address);
      return this;
    }

    /** Where the DCs' services are; owned by the caller, who closes it after the transport. */
    public Builder endpoints(Endpoints endpoints) {
      this.endpoints = Objects.requireNonNull(endpoints);
      return this;
    }

    /** Serve requests with {@code handler} on {@code workerThreads} threads (a service). */
    public Builder handler(RequestHandler handler, int workerThreads) {
      if (workerThreads < 1) {
        throw new IllegalArgumentException("workerThreads must be >= 1, was " + workerThreads);
      }
      this.handler = Objects.requireNonNull(handler);
      this.workerThreads = workerThreads;
      return this;
    }

    /**
     * Binds the socket and starts the I/O thread (and the workers of a service).
     *
     * @throws UncheckedIOException when the address cannot be bound
     */
    public UdpTransport build() {
      return new UdpTransport(this);
    }
  }

  private UdpTransport(Builder b) {
    this.localDc = b.localDc;
    this.dcNames = Set.copyOf(b.config.dcNames());
    this.codec = WireCodec.forCluster(b.config);
    this.wanEmulator = new WanEmulator(b.config.wan(), localDc);
    this.endpoints = b.endpoints != null ? b.endpoints : Endpoints.fromConfig(b.config);
    this.handler = b.handler;
    this.drops = new DropLog(LOG, "transport of " + localDc, LOG_INTERVAL_SECONDS,
        TimeUnit.SECONDS);
    if (handler != null) {
      AtomicInteger n = new AtomicInteger();
      String prefix = "udp-" + localDc + "-worker-";
      this.workers = new ThreadPoolExecutor(b.workerThreads, b.workerThreads, 0,
          TimeUnit.MILLISECONDS,
          new ArrayBlockingQueue<>(b.workerThreads * QUEUED_REQUESTS_PER_WORKER), r -> {
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            return t;
          });
    } else {
      this.workers = null;
    }
    this.group = new NioEventLoopGroup(1, new DefaultThreadFactory("udp-" + localDc + "-io", true));
    // One byte over the limit, so that an oversized datagram arrives (cut) longer than the limit
    // and is rejected as TOO_LARGE instead of silently truncated into a shorter one.
    int receiveBuffer = codec.maxDatagramBytes() + 1;
    ChannelFuture bound = new Bootstrap()
        .group(group)
        .channel(NioDatagramChannel.class)
        .option(ChannelOption.RCVBUF_ALLOCATOR, new FixedRecvByteBufAllocator(receiveBuffer))
        .option(ChannelOption.SO_RCVBUF, 1 << 20)
        .handler(new Inbound())
        .bind(b.bind)
        .awaitUninterruptibly();
    if (!bound.isSuccess()) {
      shutdownQuietly();
      Throwable cause = bound.cause();
      String what = "transport of " + localDc + " cannot bind " + b.bind;
      if (cause instanceof IOException io) {
        throw new UncheckedIOException(what + ": " + io.getMessage(), io);
      }
      throw new IllegalStateException(what, cause);
    }
    this.channel = bound.channel();
    this.boundAddress = (InetSocketAddress) channel.localAddress();
    LOG.info("transport of {} on {}: {}, max datagram {} bytes, WAN emulation {}", localDc,
        boundAddress, handler == null ? "client" : "service with " + b.workerThreads + " workers",
        codec.maxDatagramBytes(), wanEmulator);
  }

  /** The local address this transport listens on (with the actual port when 0 was asked). */
  public InetSocketAddress boundAddress() {
    return boundAddress;
  }

  @Override
  public String localDc() {
    return localDc;
  }

  /**
   * {@inheritDoc}
   *
   * <p>Picks one of the DC's live endpoints at random. The future completes on the I/O thread;
   * with {@link TransportClosedException} if the transport is or becomes closed first.
   */
  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    Objects.requireNonNull(request);
    CompletableFuture<Message> f = new CompletableFuture<>();
    if (closed.get()) {
      f.completeExceptionally(closedException());
      return f;
    }
    InetSocketAddress to;
    long id = newRequestId();
    byte[] bytes;
    try {
      to = pick(dc);
      bytes = codec.encode(new Envelope(id, localDc, false, request));
    } catch (TransportException e) {
      f.completeExceptionally(e);
      return f;
    }
    Pending p = new Pending(dc, f);
    pending.put(id, p);
    ScheduledFuture<?> timer;
    try {
      timer = channel.eventLoop().schedule(() -> {
        pending.remove(id, p);
        f.completeExceptionally(new TransportTimeoutException("no reply from DC " + dc + " ("
            + to + ") to " + WireCodec.Type.of(request) + " for group " + request.group()
            + " position " + request.position() + " within " + timeout.toMillis() + " ms"));
      }, timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      pending.remove(id, p);
      f.completeExceptionally(closedException());
      return f;
    }
    f.whenComplete((r, t) -> {
      pending.remove(id, p);
      timer.cancel(false);
    });
    if (closed.get()) {
      // close() may have swept the pending map before we registered.
      f.completeExceptionally(closedException());
      return f;
    }
    emit(bytes, to, dc);
    return f;
  }

  /**
   * {@inheritDoc}
   *
   * <p>After {@link #close()} the message is silently not sent.
   */
  @Override
  public void send(String dc, Message message) {
    InetSocketAddress to = pick(dc);
    byte[] bytes = codec.encode(new Envelope(0, localDc, false, message));
    if (!closed.get()) {
      emit(bytes, to, dc);
    }
  }

  /**
   * Replaces the set of partitioned DCs at run time (test and experiment control): datagrams
   * between two different DCs are dropped when either is in {@code dcs}. Applies whether or not
   * WAN emulation is enabled; starts as the config's {@code paxoscp.wan.partitioned} when it is.
   *
   * @throws IllegalArgumentException for a DC the cluster does not have
   */
  public void setPartitioned(Set<String> dcs) {
    for (String d : dcs) {
      if (!dcNames.contains(d)) {
        throw new IllegalArgumentException("unknown DC " + d + "; the cluster has " + dcNames);
      }
    }
    wanEmulator.setPartitioned(dcs);
  }

  /** How many received datagrams were dropped for {@code reason} since start. */
  public long droppedCount(Reason reason) {
    return drops.count(reason);
  }

  /** Dropped datagrams by reason since start (every reason present). */
  public Map<Reason, Long> droppedCounts() {
    return drops.snapshot();
  }

  /** Authentic requests dropped because every worker was busy and the queue full. */
  public long rejectedRequestCount() {
    return rejectedRequests.get();
  }

  /**
   * Idempotent. Fails pending requests with {@link TransportClosedException}, stops the workers
   * (letting running handlers finish, at most 5 s), lets datagrams the WAN emulation still holds
   * back go out (at most 5 s more; they were sent before close), and stops the I/O thread. Does not close the
   * {@link Endpoints}.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    for (Long id : pending.keySet()) {
      Pending p = pending.remove(id);
      if (p != null) {
        p.future.completeExceptionally(closedException());
      }
    }
    if (workers != null) {
      workers.shutdown();
      try {
        if (!workers.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
          LOG.warn("transport of {}: handlers still running after {} s, interrupting", localDc,
              CLOSE_WAIT_SECONDS);
          workers.shutdownNow();
        }
      } catch (InterruptedException e) {
        workers.shutdownNow();
        Thread.currentThread().interrupt();
      }
    }
    awaitDelayedSends();
    channel.close();
    shutdownQuietly();
  }

  private void shutdownQuietly() {
    var terminated = group.shutdownGracefully(0, CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
    // Waiting on our own I/O thread (close() from a reply callback) would deadlock.
    if (!group.next().inEventLoop()
        && !terminated.awaitUninterruptibly(2 * CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
      LOG.warn("transport of {}: I/O thread did not stop within {} s", localDc,
          2 * CLOSE_WAIT_SECONDS);
    }
  }

  private TransportClosedException closedException() {
    return new TransportClosedException("transport of " + localDc + " is closed");
  }

  /** Never 0, which marks one-way messages. */
  private long newRequestId() {
    long id;
    do {
      id = nextRequestId.getAndIncrement();
    } while (id == 0);
    return id;
  }

  private InetSocketAddress pick(String dc) {
    if (!dcNames.contains(dc)) {
      throw new UnknownDcException("DC " + dc + " is not in the cluster " + dcNames);
    }
    List<InetSocketAddress> live = endpoints.of(dc);
    if (live.isEmpty()) {
      throw new UnknownDcException("no live endpoint known for DC " + dc);
    }
    return live.get(ThreadLocalRandom.current().nextInt(live.size()));
  }

  /** Sends a datagram to DC {@code toDc} at {@code to}, through the WAN emulation if enabled. */
  private void emit(byte[] bytes, InetSocketAddress to, String toDc) {
    for (long delay : wanEmulator.delaysMicros(toDc, ThreadLocalRandom.current())) {
      if (delay == 0) {
        write(bytes, to);
        continue;
      }
      synchronized (delayedLock) {
        delayedSends++;
      }
      try {
        channel.eventLoop().schedule(() -> {
          try {
            write(bytes, to);
          } finally {
            delayedSendDone();
          }
        }, delay, TimeUnit.MICROSECONDS);
      } catch (RejectedExecutionException e) {
        delayedSendDone();
        return; // closed meanwhile: as if lost
      }
    }
  }

  private void delayedSendDone() {
    synchronized (delayedLock) {
      delayedSends--;
      delayedLock.notifyAll();
    }
  }

  /**
   * Waits (at most {@code CLOSE_WAIT_SECONDS}) until the datagrams the WAN emulation holds back
   * are written; not on the I/O thread, which writes them.
   */
  private void awaitDelayedSends() {
    if (channel.eventLoop().inEventLoop()) {
      return;
    }
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(CLOSE_WAIT_SECONDS);
    synchronized (delayedLock) {
      while (delayedSends > 0) {
        long left = end - System.nanoTime();
        if (left <= 0) {
          LOG.warn("transport of {}: {} delayed datagrams still unsent after {} s, dropping them",
              localDc, delayedSends, CLOSE_WAIT_SECONDS);
          return;
        }
        try {
          TimeUnit.NANOSECONDS.timedWait(delayedLock, left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  private void write(byte[] bytes, InetSocketAddress to) {
    channel.writeAndFlush(new DatagramPacket(Unpooled.wrappedBuffer(bytes), to))
        .addListener(w -> {
          if (!w.isSuccess() && !closed.get()) {
            // Like any datagram loss; the requester's timeout handles it.
            LOG.debug("transport of {}: send to {} failed", localDc, to, w.cause());
          }
        });
  }

  /** On the I/O thread: verify, then match a reply or hand a request to the workers. */
  private void onDatagram(byte[] bytes, InetSocketAddress sender) {
    Envelope env;
    try {
      env = codec.decode(bytes);
      if (!dcNames.contains(env.fromDc())) {
        throw new MalformedDatagramException(Reason.MALFORMED,
            "sender names DC " + env.fromDc() + ", not in the cluster");
      }
    } catch (MalformedDatagramException e) {
      drops.record(e, sender);
      return;
    }
    if (env.reply()) {
      onReply(env);
    } else if (handler == null) {
      LOG.debug("transport of {} serves no requests; ignored {} from {}", localDc,
          env.message().getClass().getSimpleName(), sender);
    } else if (!closed.get()) {
      try {
        workers.execute(() -> serve(env, sender));
      } catch (RejectedExecutionException e) {
        onRejected(env, sender);
      }
    }
  }

  private void onReply(Envelope env) {
    Pending p = pending.get(env.requestId());
    // A late reply (after the timeout), a duplicate, or one from another DC than asked.
    if (p == null || !p.dc().equals(env.fromDc()) || !pending.remove(env.requestId(), p)) {
      LOG.debug("transport of {}: unmatched reply {} from {}", localDc, env.requestId(),
          env.fromDc());
      return;
    }
    p.future().complete(env.message());
  }

  private void onRejected(Envelope env, InetSocketAddress sender) {
    if (closed.get()) {
      return;
    }
    rejectedRequests.incrementAndGet();
    long now = System.nanoTime();
    long last = lastRejectLogNanos.get();
    if ((last == 0 || now - last >= TimeUnit.SECONDS.toNanos(LOG_INTERVAL_SECONDS))
        && lastRejectLogNanos.compareAndSet(last, now)) {
      LOG.warn("transport of {}: all workers busy, dropped a request from {} ({}); {} so far",
          localDc, env.fromDc(), sender, rejectedRequests.get());
    }
  }

  /**
   * On a worker: run the handler and send its reply (if any) back to the sender once it
   * completes (at once, or later on the handler's scheduler when the request waits for
   * catch-up).
   */
  private void serve(Envelope env, InetSocketAddress sender) {
    Message request = env.message();
    CompletableFuture<Message> pending;
    try {
      pending = handler.handle(env.fromDc(), request);
    } catch (IllegalArgumentException e) {
      pending = CompletableFuture.completedFuture(
          error(request, Message.ErrorCode.BAD_REQUEST, e.getMessage()));
    } catch (StoreUnavailableException e) {
      pending = CompletableFuture.completedFuture(
          error(request, Message.ErrorCode.STORE_UNAVAILABLE, e.getMessage()));
    } catch (RuntimeException e) {
      pending = CompletableFuture.failedFuture(e);
    }
    pending.whenComplete((reply, failure) -> {
      if (failure != null) {
        // No answer is the honest one: the requester times out, as for a lost datagram.
        LOG.warn("transport of {}: handler failed on {} from {}", localDc, request,
            env.fromDc(), failure);
        return;
      }
      if (reply == null || env.requestId() == 0) {
        return;
      }
      byte[] bytes;
      try {
        bytes = codec.encode(new Envelope(env.requestId(), localDc, true, reply));
      } catch (MessageTooLargeException e) {
        bytes = codec.encode(new Envelope(env.requestId(), localDc, true,
            error(reply, Message.ErrorCode.TOO_LARGE, e.getMessage())));
      }
      if (!closed.get()) {
        emit(bytes, sender, env.fromDc());
      }
    });
  }

  private static Message error(Message about, Message.ErrorCode code, String detail) {
    String d = detail == null ? "" : detail;
    if (d.length() > MAX_DETAIL_CHARS) {
      d = d.substring(0, MAX_DETAIL_CHARS) + "...";
    }
    return new Message.ErrorReply(about.group(), about.position(), code, d);
  }

  private final class Inbound extends SimpleChannelInboundHandler<DatagramPacket> {
    @Override
    protected void channelRead0(ChannelHandlerContext ctx, DatagramPacket packet) {
      onDatagram(ByteBufUtil.getBytes(packet.content()), packet.sender());
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
      // A datagram socket survives a failed read (e.g. ICMP unreachable); keep serving.
      LOG.debug("transport of {}: I/O error", localDc, cause);
    }
  }
}
