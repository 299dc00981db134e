package org.paxoscp.nemesis;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.DatagramChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.random.RandomGenerator;
import org.paxoscp.transport.UdpTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The network between the nemesis' processes: a UDP forwarder in front of one Transaction Service
 * process. The cluster file names the proxy's address as the service's endpoint, the service
 * listens on another port ({@code paxoscp.service.bind}), so every datagram to that service, from
 * clients and from the other DCs' services, crosses the proxy, and so does every reply.
 *
 * <p>Like a NAT, the proxy forwards each sender's datagrams from an upstream socket of that
 * sender's own, so that the service's reply (sent to the datagram's source address) comes back
 * to the proxy and is returned to the right sender.
 *
 * <p>On the way it applies the shared {@link NetRules}: a datagram between two different DCs is
 * dropped while either is partitioned; any datagram may be lost, duplicated or delayed during a
 * burst. The sending DC is read from the datagram's clear header
 * ({@link UdpTransport#senderDc}); the proxy verifies nothing and cannot read the (encrypted)
 * message, as a router could not. Datagrams it cannot parse are forwarded untouched (the
 * service rejects them itself).
 *
 * <p>It also acts as the on-path attacker of docs/architecture.md section 13: it keeps a sample of
 * the datagrams it forwarded (at most one per {@value #RECORD_GAP_MS} ms, for up to
 * {@value #MAX_AGE_MS} ms, {@value #RECORDED} at most), and while the rules say replay, each
 * datagram it forwards comes with, at that probability, a copy of one it forwarded
 * {@value #MIN_AGE_MS} ms or more earlier: to the copy's own destination, or half of the time to
 * a service of another DC ({@link #replayTargets}). Copies go out from a socket of their own,
 * opened afresh each time the rules change, so a service answers them to that socket, which
 * reads nothing. The services must drop such copies, as stale, repeated or misdirected, and in
 * any case stay correct.
 *
 * <p>One selector thread; delayed datagrams go out on a scheduler. {@link #close()} is
 * idempotent.
 */
public final class FaultProxy implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FaultProxy.class);
  private static final int MAX_DATAGRAM = 65_535;
  /** The recorded sample: at most one datagram per gap, kept this long, this many at most. */
  static final long RECORD_GAP_MS = 40;
  static final long MAX_AGE_MS = 180_000;
  static final int RECORDED = 4096;
  /** A replayed copy is at least this old (within the wire's freshness window of 30 s, or not). */
  static final long MIN_AGE_MS = 2_000;

  private final String dc;
  private final InetSocketAddress backend;
  private final NetRules rules;
  private final DatagramChannel front;
  private final Selector selector;
  private final Map<SocketAddress, Upstream> upstreams = new ConcurrentHashMap<>();
  private final ScheduledExecutorService delayed;
  private final Thread loop;
  private final RandomGenerator random;
  private final AtomicLong forwarded = new AtomicLong();
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong replayed = new AtomicLong();
  private final AtomicLong redirected = new AtomicLong();
  private volatile boolean closed;
  /** Services by DC that redirected copies may go to. */
  private volatile Map<String, List<InetSocketAddress>> replayTargets = Map.of();
  /** Ages a replayed copy is drawn between, in nanoseconds (tests shorten them). */
  private volatile long minAgeNanos = TimeUnit.MILLISECONDS.toNanos(MIN_AGE_MS);
  private volatile long recordGapNanos = TimeUnit.MILLISECONDS.toNanos(RECORD_GAP_MS);
  /** The sample of forwarded datagrams; only the selector thread touches it. */
  private final Recorded recorded = new Recorded(RECORDED);
  /** Where copies go out from, and the rules it was opened for (selector thread only). */
  private DatagramChannel replaySocket;
  private NetRules.Rules replaySocketRules;

  /** A datagram the proxy forwarded: when, where to, for which DC (null: not known). */
  private record Sample(long atNanos, byte[] data, SocketAddress to, String toDc) {}

  /** A ring of records in the order they were made, the oldest overwritten when full. */
  private static final class Recorded {
    private final Sample[] ring;
    private int first;
    private int size;

    Recorded(int capacity) {
      ring = new Sample[capacity];
    }

    void add(Sample r) {
      if (size == ring.length) {
        first = (first + 1) % ring.length;
        size--;
      }
      ring[(first + size) % ring.length] = r;
      size++;
    }

    /** Forgets records made before {@code nanos}. */
    void dropBefore(long nanos) {
      while (size > 0 && ring[first].atNanos() - nanos < 0) {
        ring[first] = null;
        first = (first + 1) % ring.length;
        size--;
      }
    }

    Sample last() {
      return size == 0 ? null : ring[(first + size - 1) % ring.length];
    }

    /** How many of the oldest records were made before {@code nanos}. */
    int countBefore(long nanos) {
      int n = 0;
      while (n < size && ring[(first + n) % ring.length].atNanos() - nanos < 0) {
        n++;
      }
      return n;
    }

    Sample get(int i) {
      return ring[(first + i) % ring.length];
    }
  }

  /** One sender's upstream socket, and the DC that sender last spoke for. */
  private static final class Upstream {
    final SocketAddress client;
    final DatagramChannel channel;
    volatile String clientDc;

    Upstream(SocketAddress client, DatagramChannel channel) {
      this.client = client;
      this.channel = channel;
    }
  }

  /**
   * Starts a proxy for DC {@code dc}'s service at {@code backend}, listening on {@code listen}.
   *
   * @param seed seeds the loss, duplication and delay draws
   */
  public static FaultProxy start(String dc, InetSocketAddress listen, InetSocketAddress backend,
      NetRules rules, long seed) throws IOException {
    return new FaultProxy(dc, listen, backend, rules, seed);
  }

  private FaultProxy(String dc, InetSocketAddress listen, InetSocketAddress backend,
      NetRules rules, long seed) throws IOException {
    this.dc = dc;
    this.backend = backend;
    this.rules = rules;
    this.random = new java.util.SplittableRandom(seed);
    this.selector = Selector.open();
    this.front = DatagramChannel.open(StandardProtocolFamily.INET);
    front.bind(listen);
    front.configureBlocking(false);
    front.register(selector, SelectionKey.OP_READ, null);
    ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "fault-proxy-delay-" + dc);
      t.setDaemon(true);
      return t;
    });
    ex.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    this.delayed = ex;
    this.loop = new Thread(this::run, "fault-proxy-" + dc + "-" + listen.getPort());
    loop.setDaemon(true);
    loop.start();
  }

  /** The address the proxy listens on (the service's endpoint in the cluster file). */
  public InetSocketAddress address() {
    try {
      return (InetSocketAddress) front.getLocalAddress();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** Datagrams passed on (each copy counted) and datagrams dropped, since start. */
  public long forwarded() {
    return forwarded.get();
  }

  public long dropped() {
    return dropped.get();
  }

  /** Old datagrams replayed since start, and of those, the ones sent to another DC. */
  public long replayed() {
    return replayed.get();
  }

  public long redirected() {
    return redirected.get();
  }

  /**
   * The services, by DC, that replayed copies may be redirected to (a copy goes to a DC other
   * than its own destination's). Without targets every copy goes to its own destination.
   */
  public void replayTargets(Map<String, List<InetSocketAddress>> servicesByDc) {
    // Sorted, so that the seeded draws pick the same service for the same draw.
    Map<String, List<InetSocketAddress>> m = new java.util.TreeMap<>();
    servicesByDc.forEach((d, l) -> m.put(d, List.copyOf(l)));
    replayTargets = java.util.Collections.unmodifiableMap(m);
  }

  /** Shortens the replay's ages and sampling, for tests. */
  void replayAges(long minAgeMs, long recordGapMs) {
    minAgeNanos = TimeUnit.MILLISECONDS.toNanos(minAgeMs);
    recordGapNanos = TimeUnit.MILLISECONDS.toNanos(recordGapMs);
  }

  private void run() {
    ByteBuffer buf = ByteBuffer.allocateDirect(MAX_DATAGRAM);
    try {
      while (!closed) {
        selector.select(200);
        for (SelectionKey k : selector.selectedKeys()) {
          if (!k.isValid() || !k.isReadable()) {
            continue;
          }
          DatagramChannel ch = (DatagramChannel) k.channel();
          SocketAddress from;
          while ((from = receive(ch, buf)) != null) {
            byte[] data = new byte[buf.remaining()];
            buf.get(data);
            if (k.attachment() == null) {
              fromSender(from, data);
            } else {
              fromService((Upstream) k.attachment(), data);
            }
          }
        }
        selector.selectedKeys().clear();
      }
    } catch (ClosedSelectorException e) {
      // closed
    } catch (IOException | RuntimeException e) {
      if (!closed) {
        LOG.error("fault proxy of DC {} stopped: {}", dc, e.toString(), e);
      }
    }
  }

  private static SocketAddress receive(DatagramChannel ch, ByteBuffer buf) {
    buf.clear();
    try {
      SocketAddress from = ch.receive(buf);
      buf.flip();
      return from;
    } catch (IOException e) {
      // An ICMP port-unreachable from an earlier send (the service is down): nothing to read.
      return null;
    }
  }

  /** A datagram from a client or a peer service, for this proxy's service. */
  private void fromSender(SocketAddress from, byte[] data) throws IOException {
    Upstream u = upstreams.get(from);
    if (u == null) {
      DatagramChannel ch = DatagramChannel.open(StandardProtocolFamily.INET);
      ch.bind(new InetSocketAddress(address().getAddress(), 0));
      ch.configureBlocking(false);
      u = new Upstream(from, ch);
      upstreams.put(from, u);
      ch.register(selector, SelectionKey.OP_READ, u);
    }
    Optional<String> sender = UdpTransport.senderDc(data, data.length);
    sender.ifPresent(s -> upstreamDc(from, s));
    pass(sender.orElse(null), dc, data, u.channel, backend, dc);
  }

  private void upstreamDc(SocketAddress from, String senderDc) {
    Upstream u = upstreams.get(from);
    if (u != null) {
      u.clientDc = senderDc;
    }
  }

  /** A datagram from the service, back to the sender it answers. */
  private void fromService(Upstream u, byte[] data) {
    pass(dc, u.clientDc, data, front, u.client, u.clientDc);
  }

  /**
   * Forwards {@code data} from {@code out} to {@code to} as the rules say; {@code destDc} is
   * the DC of the node it is for (null when not known), for a replayed copy to avoid.
   */
  private void pass(String fromDc, String toDc, byte[] data, DatagramChannel out,
      SocketAddress to, String destDc) {
    NetRules.Rules r = rules.current();
    if (fromDc != null && toDc != null && r.cut(fromDc, toDc)) {
      dropped.incrementAndGet();
      return;
    }
    int copies = 1;
    long delayMs = 0;
    long extraDelayMs = 0;
    synchronized (random) {
      if (r.loss() > 0 && random.nextDouble() < r.loss()) {
        copies = 0;
      } else if (r.duplicate() > 0 && random.nextDouble() < r.duplicate()) {
        copies = 2;
      }
      if (r.maxDelayMs() > 0) {
        delayMs = random.nextLong(r.maxDelayMs() + 1);
        extraDelayMs = random.nextLong(r.maxDelayMs() + 1);
      }
    }
    if (copies == 0) {
      dropped.incrementAndGet();
      return;
    }
    record(data, to, destDc);
    if (r.replay() > 0) {
      boolean now;
      synchronized (random) {
        now = random.nextDouble() < r.replay();
      }
      if (now) {
        replayOne(r);
      }
    } else if (replaySocket != null) {
      // The replay is over: what the services answer to its socket goes nowhere from now on.
      closeQuietly(replaySocket);
      replaySocket = null;
    }
    for (int i = 0; i < copies; i++) {
      long d = i == 0 ? delayMs : extraDelayMs;
      if (d == 0) {
        send(out, data, to);
      } else {
        try {
          delayed.schedule(() -> send(out, data, to), d, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
          return; // closing
        }
      }
    }
  }

  /** Keeps {@code data} in the sample if the last record is at least the gap old. */
  private void record(byte[] data, SocketAddress to, String destDc) {
    long now = System.nanoTime();
    recorded.dropBefore(now - TimeUnit.MILLISECONDS.toNanos(MAX_AGE_MS));
    Sample last = recorded.last();
    if (last == null || now - last.atNanos() >= recordGapNanos) {
      recorded.add(new Sample(now, data, to, destDc));
    }
  }

  /**
   * Sends a copy of a recorded datagram at least the minimum age old, if there is one: to its
   * destination, or half of the time to a service of another DC, from the replay socket of
   * these rules.
   */
  private void replayOne(NetRules.Rules r) {
    int old = recorded.countBefore(System.nanoTime() - minAgeNanos);
    if (old == 0) {
      return;
    }
    Sample copy;
    SocketAddress to;
    boolean elsewhere;
    synchronized (random) {
      copy = recorded.get(random.nextInt(old));
      List<InetSocketAddress> others = new ArrayList<>();
      for (var e : replayTargets.entrySet()) {
        if (!e.getKey().equals(copy.toDc())) {
          others.addAll(e.getValue());
        }
      }
      elsewhere = !others.isEmpty() && random.nextBoolean();
      to = elsewhere ? others.get(random.nextInt(others.size())) : copy.to();
    }
    DatagramChannel out;
    try {
      out = replaySocket(r);
    } catch (IOException e) {
      dropped.incrementAndGet();
      return;
    }
    try {
      out.send(ByteBuffer.wrap(copy.data()), to);
      replayed.incrementAndGet();
      if (elsewhere) {
        redirected.incrementAndGet();
      }
    } catch (IOException e) {
      dropped.incrementAndGet();
    }
  }

  /** The socket copies go out from under {@code r}: a fresh one whenever the rules changed. */
  private DatagramChannel replaySocket(NetRules.Rules r) throws IOException {
    if (replaySocket == null || replaySocketRules != r) {
      if (replaySocket != null) {
        closeQuietly(replaySocket);
      }
      replaySocket = null;
      DatagramChannel ch = DatagramChannel.open(StandardProtocolFamily.INET);
      try {
        ch.bind(new InetSocketAddress(address().getAddress(), 0));
        ch.configureBlocking(false);
      } catch (IOException e) {
        closeQuietly(ch);
        throw e;
      }
      replaySocket = ch;
      replaySocketRules = r;
    }
    return replaySocket;
  }

  private void send(DatagramChannel out, byte[] data, SocketAddress to) {
    try {
      out.send(ByteBuffer.wrap(data), to);
      forwarded.incrementAndGet();
    } catch (IOException e) {
      dropped.incrementAndGet(); // like a full queue or an unreachable port: lost
    }
  }

  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    delayed.shutdownNow();
    try {
      selector.close();
    } catch (IOException e) {
      // ignore
    }
    try {
      loop.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    closeQuietly(front);
    for (Upstream u : upstreams.values()) {
      closeQuietly(u.channel);
    }
    if (replaySocket != null) {
      closeQuietly(replaySocket); // the selector thread has ended (or given up within 2 s)
    }
  }

  private static void closeQuietly(DatagramChannel c) {
    try {
      c.close();
    } catch (IOException e) {
      // ignore
    }
  }

  @Override
  public String toString() {
    return "FaultProxy[" + dc + " " + address() + " -> " + backend + "]";
  }
}
