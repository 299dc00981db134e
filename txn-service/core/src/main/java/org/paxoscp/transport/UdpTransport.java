package org.paxoscp.transport;

import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.version.ClusterVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The product {@link Transport}: one sealed (encrypted and authenticated, or authenticated only)
 * UDP datagram per message ({@link WireCodec}),
 * on a Netty event loop (docs/architecture.md section 6). It composes three parts: socket I/O
 * ({@link DatagramIo}), request correlation ({@link PendingRequests}) and, for a service, request
 * dispatch to a {@link RequestHandler} on worker threads ({@link RequestDispatcher}). WAN
 * emulation is not here: it is the {@link WanTransport} decorator, which works over any
 * transport.
 *
 * <p>One class for both roles. A <em>client</em> transport (no handler) binds an ephemeral
 * port (see {@link Builder#bind} for which address) and only issues requests. A <em>service</em>
 * transport binds its configured address and also serves incoming requests. A reply goes back
 * to the address the request came from; a reply too large for a datagram is replaced by {@link
 * Message.ErrorCode#TOO_LARGE}.
 *
 * <p>Every received datagram is verified before anything else looks at it (docs/architecture.md
 * section 13): a forged, truncated, oversized, unknown-version, clear (when encryption is required)
 * or otherwise invalid datagram, one naming a DC the cluster does not have, a stale, repeated or
 * misdirected one ({@link Freshness}), a request its key's {@link Role} may not send, and a reply
 * under another role's key than this transport sends with, is dropped, counted by {@link Reason}
 * ({@link #droppedCount}) and logged at most once per reason every 10 seconds. It never reaches
 * the handler and never completes a request. So a reply, which may be larger than its request,
 * goes only to the address a fresh, authentic request came from: at one process, a copy of a
 * request sent from another address is dropped as a replay, and the first copy alone is answered
 * (another instance of the same DC keeps its own window: docs/wire.md).
 *
 * <p>The I/O thread only reads datagrams and makes the checks that need no cryptography
 * ({@link WireCodec#precheck}); authentication, decryption and the freshness checks run on an
 * opener thread fed by a bounded queue (a full queue drops, counted as
 * {@link Reason#OVERLOADED}), so a flood of forged datagrams cannot stall the thread that sends
 * requests and completes replies.
 *
 * <p>A datagram the socket refuses to send (e.g. EINVAL from a socket bound to an address that
 * cannot reach the destination) fails its request at once with a {@link TransportSendException}
 * naming the addresses and the cause, is counted ({@link #sendFailureCount}) and logged at WARN at
 * most once every 10 seconds; it is never silently turned into a timeout.
 *
 * <p>Thread-safe. Nothing blocks except {@link #close()} (bounded). Reply futures complete on the
 * transport's opener thread (timeouts on its I/O thread): dependent actions must not block there
 * (use the {@code *Async}
 * variants with an executor for that).
 */
public final class UdpTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(UdpTransport.class);
  private static final long LOG_INTERVAL_SECONDS = 10;
  /** Datagrams that may wait for the opener thread; more are dropped (OVERLOADED). */
  static final int OPEN_QUEUE = 8192;

  private final String localDc;
  private final Set<String> dcNames;
  private final WireCodec codec;
  private final Role role;
  private final Freshness freshness;
  private final ThreadPoolExecutor opener;
  /** Per DC, the sender's clock minus this one's at the last authentic reply (ms). */
  private final Map<String, Long> clockOffsets = new ConcurrentHashMap<>();
  private final Endpoints endpoints;
  private final DatagramIo io;
  private final PendingRequests pending;
  /** Null for a client transport. */
  private final RequestDispatcher dispatcher;
  private final InetSocketAddress boundAddress;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The last request of wire version 3 opened: its {@link System#nanoTime}, and from where. */
  private volatile Map.Entry<Long, String> lastWire3;
  private final DropLog drops;
  private final AtomicLong sendFailures = new AtomicLong();
  private final AtomicLong sendFailuresSinceLog = new AtomicLong();
  private final AtomicLong lastSendWarnNanos =
      new AtomicLong(System.nanoTime() - TimeUnit.SECONDS.toNanos(LOG_INTERVAL_SECONDS));

  /**
   * Starts building a transport speaking for {@code localDc} in the cluster {@code config}.
   * Defaults: the client bind address of {@link Builder#bind}, the config's static endpoints, no
   * handler (a client).
   */
  public static Builder builder(ClusterConfig config, String localDc) {
    return new Builder(config, localDc);
  }

  /** Builds a {@link UdpTransport}. Not thread-safe; build once. */
  public static final class Builder {
    private final ClusterConfig config;
    private final String localDc;
    /** Null: the client default (see {@link #bind}). */
    private InetSocketAddress bind;
    private Endpoints endpoints;
    private RequestHandler handler;
    private int workerThreads;
    private Admission admission = Admission.DEFAULT;
    private Role role;

    private Builder(ClusterConfig config, String localDc) {
      this.config = Objects.requireNonNull(config);
      this.localDc = Objects.requireNonNull(localDc);
      if (!config.dcNames().contains(localDc)) {
        throw new IllegalArgumentException("DC " + localDc + " is not in the cluster "
            + config.dcNames());
      }
    }

    /**
     * The local address to listen on; port 0 picks a free one (see {@link #boundAddress}).
     * Without this call (a client): the cluster's {@link ClusterConfig#CLIENT_BIND} if set, else
     * an ephemeral port on loopback when every known service endpoint is a loopback address
     * (one host), else on the wildcard address, so that the kernel picks the source address of
     * the route to each DC (a socket bound to loopback cannot send to another host).
     */
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

    /** A service's admission control ({@link Admission}); {@link Admission#DEFAULT} unless set. */
    public Builder admission(Admission admission) {
      this.admission = Objects.requireNonNull(admission);
      return this;
    }

    /**
     * The role this process seals its requests as ({@link Role}): by default
     * {@link Role#SERVICE} with a handler, else {@link Role#CLIENT}; the operator's tools say
     * {@link Role#OPERATOR}. A service transport opens every role's datagrams; any other opens
     * only its own role's (the replies to its requests).
     */
    public Builder role(Role role) {
      this.role = Objects.requireNonNull(role);
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
    this.role = b.role != null ? b.role : b.handler != null ? Role.SERVICE : Role.CLIENT;
    this.codec = WireCodec.forCluster(b.config, role);
    this.freshness = new Freshness(localDc, b.config.wireFreshness(), System::currentTimeMillis);
    this.endpoints = b.endpoints != null ? b.endpoints : Endpoints.fromConfig(b.config);
    this.drops = new DropLog(LOG, "transport of " + localDc, LOG_INTERVAL_SECONDS,
        TimeUnit.SECONDS);
    InetSocketAddress bind = b.bind != null ? b.bind : clientBind(b.config, endpoints);
    this.dispatcher = b.handler == null ? null
        : new RequestDispatcher("udp-" + localDc, localDc, b.handler, b.workerThreads,
            b.admission, Math.min(b.config.versionRange().max(), ClusterVersion.WIRE_4));
    AtomicInteger openers = new AtomicInteger();
    this.opener = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(OPEN_QUEUE), r -> {
          Thread t = new Thread(r, "udp-" + localDc + "-open-" + openers.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
    try {
      this.io = new DatagramIo("udp-" + localDc, bind, codec.maxDatagramBytes(),
          this::onDatagram);
    } catch (RuntimeException e) {
      if (dispatcher != null) {
        dispatcher.close();
      }
      opener.shutdownNow();
      throw e;
    }
    this.pending = new PendingRequests(io.eventLoop());
    this.boundAddress = io.boundAddress();
    LOG.info("transport of {} on {}: {}, max datagram {} bytes, cluster versions {} (wire "
        + "version {} until it learns the cluster's), {} under key id {} ({} key)", localDc,
        boundAddress, dispatcher == null ? "client"
            : "service with " + b.workerThreads + " workers", codec.maxDatagramBytes(),
        b.config.versionRange(), codec.sendVersion(),
        codec.encrypts() ? "encrypted" : "authenticated only", codec.keyIdText(role),
        role.name().toLowerCase(java.util.Locale.ROOT));
  }

  /**
   * The address a client transport binds when none was given: {@link ClusterConfig#CLIENT_BIND}
   * if set; else loopback when every service endpoint known now is a loopback address; else the
   * wildcard address. Port 0 unless the key names one.
   *
   * @throws IllegalArgumentException when the configured host cannot be resolved
   */
  static InetSocketAddress clientBind(ClusterConfig config, Endpoints endpoints) {
    if (config.clientBind().isPresent()) {
      InetSocketAddress a = config.clientBind().get();
      InetSocketAddress resolved = new InetSocketAddress(a.getHostString(), a.getPort());
      if (resolved.isUnresolved()) {
        throw new IllegalArgumentException(ClusterConfig.CLIENT_BIND.name()
            + ": cannot resolve host '" + a.getHostString() + "'");
      }
      return resolved;
    }
    boolean anyEndpoint = false;
    for (String dc : config.dcNames()) {
      for (InetSocketAddress ep : endpoints.of(dc)) {
        anyEndpoint = true;
        InetAddress addr = ep.isUnresolved()
            ? new InetSocketAddress(ep.getHostString(), ep.getPort()).getAddress()
            : ep.getAddress();
        if (addr == null || !addr.isLoopbackAddress()) {
          return new InetSocketAddress(0);
        }
      }
    }
    return anyEndpoint ? new InetSocketAddress(InetAddress.getLoopbackAddress(), 0)
        : new InetSocketAddress(0);
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
   * <p>Picks one of the DC's live endpoints at random. The future completes on the opener thread
   * (a timeout on the I/O thread);
   * with {@link TransportClosedException} if the transport is or becomes closed first.
   */
  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    InetSocketAddress to;
    try {
      to = pick(dc);
    } catch (TransportException e) {
      return CompletableFuture.failedFuture(e);
    }
    return request(dc, to, request, timeout);
  }

  /**
   * As {@link #request(String, Message, Duration)}, to one instance of DC {@code dc}: the one at
   * {@code to} (for {@code paxoscp status}, which asks every instance).
   */
  public CompletableFuture<Message> request(String dc, InetSocketAddress to, Message request,
      Duration timeout) {
    return request(dc, to, request, timeout, codec.sendVersion());
  }

  private CompletableFuture<Message> request(String dc, InetSocketAddress to, Message request,
      Duration timeout, int wireVersion) {
    Objects.requireNonNull(request);
    Objects.requireNonNull(to);
    if (closed.get()) {
      return CompletableFuture.failedFuture(closedException());
    }
    long id = pending.newId();
    byte[] bytes;
    try {
      bytes = codec.encode(new Envelope(id, localDc, false, request), role, dc, wireVersion);
    } catch (TransportException e) {
      return CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Message> f = pending.register(id, dc, timeout,
        () -> new TransportTimeoutException("no reply from DC " + dc + " (" + to + ") to "
            + WireCodec.Type.of(request) + " for group " + request.group() + " position "
            + request.position() + " within " + timeout.toMillis() + " ms"),
        this::closedException);
    if (closed.get()) {
      // close() may have swept the pending requests before we registered.
      f.completeExceptionally(closedException());
      return f;
    }
    io.write(bytes, to, cause -> f.completeExceptionally(sendFailed(dc, to, request, cause)));
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
    byte[] bytes = codec.encode(new Envelope(0, localDc, false, message), role, dc,
        codec.sendVersion());
    if (!closed.get()) {
      io.write(bytes, to, cause -> sendFailed(dc, to, message, cause));
    }
  }

  /**
   * Speaks as cluster version {@code version} allows from now on (docs/upgrading.md): the wire
   * version it sends, and whether it still opens version 3.
   */
  @Override
  public void clusterVersion(int version) {
    codec.clusterVersion(version);
    if (dispatcher != null) {
      dispatcher.clusterVersion(version);
    }
  }

  @Override
  public CompletableFuture<Message.VersionReply> askVersions(String dc, Duration timeout) {
    return askVersions(dc, null, timeout);
  }

  @Override
  public CompletableFuture<Message.VersionReply> askVersionsFirst(String dc, Duration timeout) {
    return askVersions(dc, null, timeout, true);
  }

  /**
   * Sends an operator's change of the cluster version to the instance at {@code to}, in wire
   * version 4 whatever the cluster's version (a service refuses one of version 3, which carries
   * no freshness: a copy of a fence or raise must not act again).
   */
  public CompletableFuture<Message> changeVersion(String dc, InetSocketAddress to,
      Message.VersionChange change, Duration timeout) {
    return request(dc, to, change, timeout, WireCodec.VERSION);
  }

  /**
   * Asks one instance of DC {@code dc} (the one at {@code to}, or any when null) for its cluster
   * versions, in version 4 (unless held to version 3) and, while it sends version 3, in version
   * 3 too: a process at cluster version 1 reaches both builds before and after a raise, and one
   * at version 2 or more sends nothing of version 3 (which the drain before version 3 waits
   * for). Completes with the first answer; fails when none comes within {@code timeout} (a build
   * from before cluster versions never answers).
   */
  public CompletableFuture<Message.VersionReply> askVersions(String dc, InetSocketAddress to,
      Duration timeout) {
    return askVersions(dc, to, timeout, false);
  }

  private CompletableFuture<Message.VersionReply> askVersions(String dc, InetSocketAddress to,
      Duration timeout, boolean unknown) {
    InetSocketAddress at;
    try {
      at = to != null ? to : pick(dc);
    } catch (TransportException e) {
      return CompletableFuture.failedFuture(e);
    }
    if (unknown && codec.opensV4() && codec.opensV3()
        && codec.sendVersion() != WireCodec.VERSION_3) {
      // Not known yet: version 4 first, and version 3 only when that finds no answer, so that
      // a process starting in a cluster that still opens version 3 sends it nothing (the drain
      // before version 3 waits for silence) and one at version 3 drops nothing of it.
      Duration half = timeout.dividedBy(2);
      return askVersionsIn(dc, at, half, List.of(WireCodec.VERSION)).exceptionallyCompose(
          e -> askVersionsIn(dc, at, half, List.of(WireCodec.VERSION_3)));
    }
    List<Integer> versions = new java.util.ArrayList<>();
    if (codec.opensV4()) {
      versions.add(WireCodec.VERSION);
    }
    if (codec.sendVersion() == WireCodec.VERSION_3) {
      // Below cluster version 2 (or held to 1): a build that opens only version 3 answers this.
      versions.add(WireCodec.VERSION_3);
    }
    return askVersionsIn(dc, at, timeout, versions);
  }

  /** A version request in each of {@code versions} at once; the first answer. */
  private CompletableFuture<Message.VersionReply> askVersionsIn(String dc, InetSocketAddress at,
      Duration timeout, List<Integer> versions) {
    if (versions.isEmpty()) {
      return CompletableFuture.failedFuture(new IllegalStateException("no wire version to ask "
          + "DC " + dc + " in"));
    }
    List<CompletableFuture<Message>> asked = new java.util.ArrayList<>();
    for (int v : versions) {
      asked.add(request(dc, at, new Message.VersionRequest(), timeout, v));
    }
    CompletableFuture<Message.VersionReply> first = new CompletableFuture<>();
    AtomicInteger failed = new AtomicInteger();
    for (CompletableFuture<Message> f : asked) {
      f.whenComplete((m, e) -> {
        if (e == null && m instanceof Message.VersionReply v) {
          first.complete(v);
        } else if (failed.incrementAndGet() == asked.size()) {
          first.completeExceptionally(e != null ? e : new IllegalStateException("DC " + dc + " ("
              + at + ") answered a version request with " + m));
        }
      });
    }
    return first;
  }

  @Override
  public CompletableFuture<Set<Integer>> wireVersionsOf(String dc, Duration timeout) {
    InetSocketAddress at;
    try {
      at = pick(dc);
    } catch (TransportException e) {
      return CompletableFuture.completedFuture(Set.of());
    }
    Set<Integer> answered = ConcurrentHashMap.newKeySet();
    List<CompletableFuture<?>> asked = new java.util.ArrayList<>();
    List<Integer> versions = codec.opensV4() ? List.of(WireCodec.VERSION, WireCodec.VERSION_3)
        : List.of(WireCodec.VERSION_3);
    for (int v : versions) {
      if (v == WireCodec.VERSION_3 && !codec.opensV3()) {
        continue;
      }
      asked.add(request(dc, at, new Message.RttProbe(List.of()), timeout, v)
          .handle((m, e) -> e == null && answered.add(v)));
    }
    return CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new))
        .thenApply(x -> Set.copyOf(answered));
  }

  /**
   * When this transport last opened a request of wire version 3 and from where ({@code DC at
   * address}); empty if never.
   */
  public Optional<Map.Entry<Long, String>> lastWire3() {
    return Optional.ofNullable(lastWire3);
  }

  /** How many datagrams the socket refused to send since start. */
  public long sendFailureCount() {
    return sendFailures.get();
  }

  /**
   * Counts and logs (rate-limited) a datagram the socket refused; the exception names the DC,
   * both addresses, the message and the cause, with a hint when loopback is the reason.
   */
  private TransportSendException sendFailed(String dc, InetSocketAddress to, Message m,
      Throwable cause) {
    String why = cause.getMessage() != null ? cause.getMessage() : cause.toString();
    String hint = boundAddress.getAddress().isLoopbackAddress() && !to.isUnresolved()
        && to.getAddress() != null && !to.getAddress().isLoopbackAddress()
        ? " (a socket bound to loopback cannot reach another host: see "
            + ClusterConfig.CLIENT_BIND.name() + ")"
        : "";
    TransportSendException e = new TransportSendException("cannot send "
        + WireCodec.Type.of(m) + " for group " + m.group() + " position " + m.position()
        + " to DC " + dc + " at " + to + " from " + boundAddress + ": " + why + hint, cause);
    sendFailures.incrementAndGet();
    sendFailuresSinceLog.incrementAndGet();
    long now = System.nanoTime();
    long last = lastSendWarnNanos.get();
    if (now - last >= TimeUnit.SECONDS.toNanos(LOG_INTERVAL_SECONDS)
        && lastSendWarnNanos.compareAndSet(last, now)) {
      LOG.warn("transport of {}: {} datagram(s) not sent in the last {} s; the latest: {}",
          localDc, sendFailuresSinceLog.getAndSet(0), LOG_INTERVAL_SECONDS, e.getMessage());
    }
    return e;
  }

  /** How many received datagrams were dropped for {@code reason} since start. */
  public long droppedCount(Reason reason) {
    return drops.count(reason);
  }

  /** Dropped datagrams by reason since start (every reason present). */
  public Map<Reason, Long> droppedCounts() {
    return drops.snapshot();
  }

  /**
   * Authentic one-way messages (APPLY, pushed learn replies) dropped because the service was
   * overloaded ({@link Admission}).
   */
  public long rejectedRequestCount() {
    return dispatcher == null ? 0 : dispatcher.rejectedCount();
  }

  /**
   * Requests of kind {@code kind} ({@link Admission#kind}) refused with OVERLOADED before any
   * handler saw them ({@link Admission}).
   */
  public long overloadedCount(String kind) {
    return dispatcher == null ? 0 : dispatcher.refusedCount(kind);
  }

  /** Requests of every kind refused with OVERLOADED ({@link Admission}). */
  public long overloadedCount() {
    return dispatcher == null ? 0 : dispatcher.refusedCount();
  }

  /** Requests waiting for a worker now (0 for a client). */
  public int queuedRequests() {
    return dispatcher == null ? 0 : dispatcher.queued();
  }

  /**
   * Idempotent. Fails pending requests with {@link TransportClosedException}, stops the workers
   * (letting running handlers finish, at most 5 s) and stops the I/O thread. Does not close the
   * {@link Endpoints}.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    pending.failAll(this::closedException);
    if (dispatcher != null) {
      dispatcher.close();
    }
    io.close();
    opener.shutdownNow();
  }

  /**
   * The sending DC a datagram's clear header names, unverified: what a router or a fault-injecting
   * proxy between DCs may read ({@code WireCodec} describes the header). Empty for bytes that are
   * no datagram of this wire version.
   */
  public static Optional<String> senderDc(byte[] datagram, int length) {
    return WireCodec.senderDc(datagram, length);
  }

  /**
   * The destination DC a datagram's clear header names, unverified (version 4; empty for
   * anything else).
   */
  public static Optional<String> destinationDc(byte[] datagram, int length) {
    return WireCodec.destinationDc(datagram, length);
  }

  /**
   * Per DC, how far its clock was ahead of this process's (negative: behind) when its last
   * authentic reply here was sealed, in milliseconds, including the reply's one-way delay.
   * Freshness needs clocks within {@link ClusterConfig#WIRE_FRESHNESS}.
   */
  public Map<String, Long> clockOffsetsMillis() {
    return Map.copyOf(clockOffsets);
  }

  /**
   * A forgery for load tests ({@code bench-fastpath --flood}): {@code size} bytes that pass every
   * check made without cryptography at a process of {@code config} in DC {@code toDc} (version,
   * flags, the service key's public id, as an observer of the wire learns it) and fail the tag.
   */
  public static byte[] forgedDatagram(ClusterConfig config, String toDc, int size,
      java.util.Random random) {
    byte[] d = new byte[size];
    random.nextBytes(d);
    java.nio.ByteBuffer h = java.nio.ByteBuffer.wrap(d);
    h.put((byte) WireCodec.VERSION).put((byte) WireCodec.FLAG_ENCRYPTED)
        .putInt(DatagramKeys.keyId(Role.SERVICE.keyFrom(config.key())));
    h.position(WireCodec.FIXED_HEADER_BYTES - 10);
    h.putLong(System.currentTimeMillis());
    byte[] to = toDc.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    h.put((byte) to.length).put(to).put((byte) to.length).put(to);
    return d;
  }

  /** How many times this transport drew a new sender id (after 2^32 datagrams, an hour...). */
  public long senderIdChanges() {
    return codec.senderChanges();
  }

  @Override
  public String toString() {
    return "UDP transport of " + localDc + " on " + boundAddress;
  }

  private TransportClosedException closedException() {
    return new TransportClosedException("transport of " + localDc + " is closed");
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

  /**
   * On the I/O thread: the checks without cryptography, then the datagram goes to the opener
   * thread (or is dropped when its queue is full).
   */
  private void onDatagram(byte[] bytes, InetSocketAddress sender) {
    try {
      codec.precheck(bytes, 0, bytes.length);
    } catch (RuntimeException e) {
      drop(e, sender);
      return;
    }
    try {
      opener.execute(() -> open(bytes, sender));
    } catch (RejectedExecutionException e) {
      if (!closed.get()) {
        drops.record(new MalformedDatagramException(Reason.OVERLOADED, OPEN_QUEUE
            + " datagrams wait to be verified"), sender);
      }
    }
  }

  /** On the opener thread: verify, then match a reply or hand a request to the dispatcher. */
  private void open(byte[] bytes, InetSocketAddress sender) {
    WireCodec.Opened opened;
    try {
      opened = codec.open(bytes, 0, bytes.length);
      Envelope env = opened.envelope();
      if (!dcNames.contains(env.fromDc())) {
        throw new MalformedDatagramException(Reason.MALFORMED,
            "sender names DC " + env.fromDc() + ", not in the cluster");
      }
      if (env.reply() && opened.sentMillis() >= 0) {
        // Authentic: its clock is known even when it is too far off to be fresh (status).
        clockOffsets.put(env.fromDc(), opened.sentMillis() - System.currentTimeMillis());
      }
      freshness.check(opened);
      checkRole(opened);
    } catch (RuntimeException e) {
      drop(e, sender);
      return;
    }
    if (opened.version() == WireCodec.VERSION_3 && !opened.envelope().reply()) {
      lastWire3 = Map.entry(System.nanoTime(), opened.envelope().fromDc() + " at " + sender);
    }
    Envelope env = opened.envelope();
    if (env.reply()) {
      if (!pending.complete(env.requestId(), env.fromDc(), env.message())) {
        // A late reply (after the timeout), a duplicate, or one from another DC than asked.
        LOG.debug("transport of {}: unmatched reply {} from {}", localDc, env.requestId(),
            env.fromDc());
      }
    } else if (dispatcher == null) {
      LOG.debug("transport of {} serves no requests; ignored {} from {}", localDc,
          env.message().getClass().getSimpleName(), sender);
    } else if (!closed.get()) {
      dispatcher.dispatch(env, sender, (reply, to) -> reply(opened, reply, to));
    }
  }

  /**
   * Counts and logs a datagram that failed a check; any other exception is a decoder bug, not
   * the sender's: still dropped and counted (as MALFORMED), never thrown at Netty.
   */
  private void drop(RuntimeException e, InetSocketAddress sender) {
    drops.record(e instanceof MalformedDatagramException m ? m
        : new MalformedDatagramException(Reason.MALFORMED, "decoder failed: " + e), sender);
  }

  /**
   * A reply must come under the key this transport seals its requests with; a request's type
   * must be one its key's role may send. Version 3 carries no role (a rollout from it), and no
   * change of the cluster version.
   */
  private void checkRole(WireCodec.Opened o) {
    WireCodec.Type type = WireCodec.Type.of(o.envelope().message());
    if (o.role() == null) {
      if (type == WireCodec.Type.VERSION_CHANGE) {
        // A change of the cluster version travels only where copies are refused (version 4).
        throw new MalformedDatagramException(Reason.ROLE, "a " + type + " of wire version 3");
      }
      return;
    }
    if (o.envelope().reply()) {
      if (o.role() != role) {
        throw new MalformedDatagramException(Reason.ROLE, "a reply (" + type + ") under the "
            + o.role() + " key; this process sends as " + role);
      }
    } else if (!o.role().maySend(type)) {
      throw new MalformedDatagramException(Reason.ROLE, "a " + type + " under the " + o.role()
          + " key, which may not send it");
    }
  }

  /** Sends a service's reply back to where the request came from. */
  private void reply(WireCodec.Opened opened, Message reply, InetSocketAddress to) {
    // Under the request's key, to its DC, in its version: what the requester opens.
    Envelope request = opened.envelope();
    Role as = opened.role() == null ? role : opened.role();
    byte[] bytes;
    try {
      bytes = codec.encode(new Envelope(request.requestId(), localDc, true, reply), as,
          request.fromDc(), opened.version());
    } catch (MessageTooLargeException e) {
      bytes = codec.encode(new Envelope(request.requestId(), localDc, true,
          RequestDispatcher.error(reply, Message.ErrorCode.TOO_LARGE, e.getMessage())), as,
          request.fromDc(), opened.version());
    }
    if (!closed.get()) {
      io.write(bytes, to, cause -> sendFailed(request.fromDc(), to, reply, cause));
    }
  }
}
