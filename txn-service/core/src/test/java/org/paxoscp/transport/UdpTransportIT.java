package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.Latency;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.wal.LogValue;

/** {@link UdpTransport} over real loopback sockets. */
class UdpTransportIT {
  private static final byte[] KEY = "fedcba9876543210fedcba9876543210".getBytes();
  private static final int LIMIT = 1024;
  private static final Duration WAIT = Duration.ofSeconds(10);
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  private final Deque<AutoCloseable> toClose = new ArrayDeque<>();

  @AfterEach
  void closeAll() throws Exception {
    while (!toClose.isEmpty()) {
      toClose.pop().close();
    }
  }

  /** Answers BeginRequest (leader = the asking DC), Prepare, ReadRequest; counts every call. */
  static final class CountingHandler implements RequestHandler {
    final AtomicInteger calls = new AtomicInteger();
    volatile int replyValueBytes = 1;

    @Override
    public CompletableFuture<Message> handle(String fromDc, Message request) {
      calls.incrementAndGet();
      return CompletableFuture.completedFuture(reply(fromDc, request));
    }

    private Message reply(String fromDc, Message request) {
      if (request instanceof Message.BeginRequest b) {
        return new Message.BeginReply(b.group(), b.position(), fromDc);
      }
      if (request instanceof Message.ReadRequest r) {
        return new Message.ReadReply(r.group(), r.position(),
            Map.of("k", new byte[replyValueBytes]));
      }
      if (request instanceof Message.Paxos p && p.message() instanceof PaxosMessage.Prepare m) {
        return new Message.Paxos(new PaxosMessage.PrepareReply(m.group(), m.position(),
            m.ballot(), true, m.ballot(), null, null));
      }
      return null;
    }
  }

  private static ClusterConfig config(ClusterConfig.Wan wan) {
    // Placeholder static endpoints; the tests pass the real (ephemeral) ones explicitly.
    InetSocketAddress unused = new InetSocketAddress(LOOPBACK, 9);
    return new ClusterConfig(
        List.of(new ClusterConfig.Dc("V1", List.of(unused), Map.of()),
            new ClusterConfig.Dc("O1", List.of(unused), Map.of())),
        KEY, Optional.empty(), "/paxoscp", LIMIT, Duration.ofSeconds(2), wan);
  }

  private static ClusterConfig.Wan wan(long rttMicros, double loss, double duplicate) {
    return new ClusterConfig.Wan(true, Latency.paperRegions().withPair("V1", "O1", rttMicros),
        0, 0, loss, duplicate, Set.of());
  }

  private <T extends AutoCloseable> T closeLater(T c) {
    toClose.push(c);
    return c;
  }

  private UdpTransport service(ClusterConfig cfg, RequestHandler h) {
    return closeLater(UdpTransport.builder(cfg, "O1").handler(h, 2).build());
  }

  private UdpTransport client(ClusterConfig cfg, InetSocketAddress o1) {
    return closeLater(UdpTransport.builder(cfg, "V1")
        .endpoints(dc -> dc.equals("O1") ? List.of(o1) : List.of()).build());
  }

  /** A client with the cluster's WAN emulation (the decorator over its UDP transport). */
  private WanTransport wanClient(ClusterConfig cfg, InetSocketAddress o1) {
    return closeLater(new WanTransport(UdpTransport.builder(cfg, "V1")
        .endpoints(dc -> dc.equals("O1") ? List.of(o1) : List.of()).build(), cfg));
  }

  private static Message get(CompletableFuture<Message> f) throws Exception {
    return f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static Throwable failure(CompletableFuture<?> f) throws Exception {
    try {
      f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (TimeoutException e) {
      throw new AssertionError("future did not complete within " + WAIT, e);
    }
    throw new AssertionError("expected a failure, got " + f.join());
  }

  /** A raw socket standing in for a service that never answers. */
  private DatagramSocket silentPeer() throws IOException {
    DatagramSocket s = closeLater(new DatagramSocket(new InetSocketAddress(LOOPBACK, 0)));
    s.setSoTimeout(300);
    return s;
  }

  private static InetSocketAddress addressOf(DatagramSocket s) {
    return (InetSocketAddress) s.getLocalSocketAddress();
  }

  @Test
  void requestGetsItsReply() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    UdpTransport client = client(cfg, service.boundAddress());
    assertEquals(LOOPBACK, service.boundAddress().getAddress());
    assertTrue(service.boundAddress().getPort() > 0);

    assertEquals(new Message.BeginReply("g", 4, "V1"),
        get(client.request("O1", new Message.BeginRequest("g", 4), WAIT)));
    Ballot b = Ballot.of(2, 7);
    assertEquals(new Message.Paxos(new PaxosMessage.PrepareReply("g", 5, b, true, b, null, null)),
        get(client.request("O1", new Message.Paxos(new PaxosMessage.Prepare("g", 5, b)), WAIT)));

    List<CompletableFuture<Message>> many = new ArrayList<>();
    for (int i = 0; i < 200; i++) {
      many.add(client.request("O1", new Message.BeginRequest("g", i), WAIT));
    }
    for (int i = 0; i < many.size(); i++) {
      assertEquals(new Message.BeginReply("g", i, "V1"), get(many.get(i)), "request " + i);
    }
    assertEquals(202, h.calls.get());
    assertEquals(0L, service.droppedCounts().values().stream().mapToLong(Long::longValue).sum());
  }

  @Test
  void oneWaySendReachesTheHandler() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    UdpTransport client = client(cfg, service.boundAddress());
    client.send("O1", new Message.Paxos(new PaxosMessage.Apply("g", 3, LogValue.NOOP)));
    Poll.until("the APPLY to be handled", WAIT, () -> h.calls.get() == 1);
  }

  @Test
  void timesOutWhenNoServiceListens() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    InetSocketAddress nobody;
    try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
      nobody = addressOf(s);
    }
    UdpTransport client = client(cfg, nobody);
    Throwable t = failure(client.request("O1", new Message.BeginRequest("g", 1),
        Duration.ofMillis(200)));
    assertInstanceOf(TransportTimeoutException.class, t);
    assertTrue(t.getMessage().contains("O1"), t.getMessage());
  }

  @Test
  void clientBindsLoopbackOnOneHostTheWildcardOtherwiseOrWhatTheKeySays() {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    InetSocketAddress local = new InetSocketAddress(LOOPBACK, 7101);
    InetSocketAddress remote = new InetSocketAddress("10.88.0.2", 7101);
    assertEquals(new InetSocketAddress(LOOPBACK, 0),
        UdpTransport.clientBind(cfg, dc -> List.of(local)));
    assertTrue(UdpTransport.clientBind(cfg, dc -> dc.equals("O1") ? List.of(remote)
        : List.of(local)).getAddress().isAnyLocalAddress());
    // Nothing known yet (discovery): the wildcard, which reaches any host.
    assertTrue(UdpTransport.clientBind(cfg, dc -> List.of()).getAddress().isAnyLocalAddress());

    ClusterConfig bound = cfg.withClientBind(Optional.of(ClusterConfig.parseBind("127.0.0.1:0")));
    assertEquals(new InetSocketAddress(LOOPBACK, 0),
        UdpTransport.clientBind(bound, dc -> List.of(remote)));
    ClusterConfig unresolvable = cfg.withClientBind(
        Optional.of(ClusterConfig.parseBind("no-such-host.invalid")));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> UdpTransport.clientBind(unresolvable, dc -> List.of(local)));
    assertTrue(e.getMessage().startsWith("paxoscp.client.bind: cannot resolve host"),
        e.getMessage());
  }

  @Test
  void clientBindKeyParsesHostPortAndIpv6AndRejectsJunk() {
    assertEquals(InetSocketAddress.createUnresolved("10.0.0.5", 0),
        ClusterConfig.parseBind("10.0.0.5"));
    assertEquals(InetSocketAddress.createUnresolved("10.0.0.5", 7000),
        ClusterConfig.parseBind(" 10.0.0.5:7000 "));
    assertEquals(InetSocketAddress.createUnresolved("::1", 7000),
        ClusterConfig.parseBind("[::1]:7000"));
    assertEquals(InetSocketAddress.createUnresolved("fe80::1", 0),
        ClusterConfig.parseBind("fe80::1"));
    for (String bad : List.of("host:", "host:x", ":7000", "host:70000", "[::1", "[::1]7000")) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> ClusterConfig.parseBind(bad), bad);
      assertTrue(e.getMessage().startsWith("paxoscp.client.bind:"), e.getMessage());
    }
    Map<String, String> props = new java.util.HashMap<>(config(ClusterConfig.Wan.off())
        .withClientBind(Optional.of(ClusterConfig.parseBind("[::1]:7000"))).toProperties());
    assertEquals("[::1]:7000", props.get("paxoscp.client.bind"));
    assertEquals(Optional.of(InetSocketAddress.createUnresolved("::1", 7000)),
        ClusterConfig.fromProperties(props).clientBind());
  }

  /**
   * A socket bound to loopback cannot send to another host (sendto fails with EINVAL): the
   * request fails at once, naming the addresses and the cause, instead of timing out.
   */
  @Test
  void aSendTheSocketRefusesFailsAtOnceNamingItsCause() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off())
        .withClientBind(Optional.of(ClusterConfig.parseBind("127.0.0.1")));
    // TEST-NET-1 (RFC 5737): never a real host; the socket refuses before any routing matters.
    InetSocketAddress elsewhere = new InetSocketAddress("192.0.2.1", 7101);
    UdpTransport client = closeLater(UdpTransport.builder(cfg, "V1")
        .endpoints(dc -> List.of(elsewhere)).build());
    long start = System.nanoTime();
    Throwable t = failure(client.request("O1", new Message.BeginRequest("g", 1),
        Duration.ofSeconds(60)));
    assertInstanceOf(TransportSendException.class, t);
    assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(30), "failed only at timeout");
    assertTrue(t.getMessage().contains("to DC O1 at " + elsewhere), t.getMessage());
    assertTrue(t.getMessage().contains("from " + client.boundAddress()), t.getMessage());
    assertTrue(t.getMessage().contains("paxoscp.client.bind"), t.getMessage());
    assertTrue(t.getCause() != null, "the socket's error is kept as the cause");
    client.send("O1", new Message.Paxos(new PaxosMessage.Apply("g", 3, LogValue.NOOP)));
    Poll.until("both refused sends counted", WAIT, () -> client.sendFailureCount() == 2);
  }

  @Test
  void unknownDcOrNoEndpointFails() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    UdpTransport client = client(cfg, new InetSocketAddress(LOOPBACK, 9));
    assertInstanceOf(UnknownDcException.class,
        failure(client.request("Z9", new Message.BeginRequest("g", 1), WAIT)));
    assertInstanceOf(UnknownDcException.class,
        failure(client.request("V1", new Message.BeginRequest("g", 1), WAIT)));
    assertThrows(UnknownDcException.class,
        () -> client.send("Z9", new Message.BeginRequest("g", 1)));
  }

  /** A client's codec of {@code cfg}, sealing at {@code clock}. */
  private static WireCodec clientCodec(ClusterConfig cfg, java.util.function.LongSupplier clock) {
    return new WireCodec(new DatagramKeys(KEY, List.of(), null,
        java.util.EnumSet.of(Role.CLIENT), false, System::nanoTime, clock), true, LIMIT,
        WireCodec.VERSION, false, true, clock);
  }

  /** {@code e} sealed as a client for the service of O1, now. */
  private static byte[] toO1(WireCodec codec, Envelope e) {
    return codec.encode(e, Role.CLIENT, "O1", WireCodec.VERSION);
  }

  @Test
  void invalidDatagramsAreDroppedCountedAndNeverHandled() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    // At the newest cluster version: version 3 is refused.
    service.clusterVersion(org.paxoscp.version.ClusterVersion.LATEST);
    WireCodec ours = clientCodec(cfg, System::currentTimeMillis);
    byte[] otherKey = KEY.clone();
    otherKey[5] ^= 0x40;
    WireCodec theirs = new WireCodec(otherKey, LIMIT);
    Envelope begin = new Envelope(77, "V1", false, new Message.BeginRequest("g", 1));

    byte[] forged = theirs.encode(begin, Role.CLIENT, "O1", WireCodec.VERSION);
    byte[] cut = Arrays.copyOf(toO1(ours, begin), toO1(ours, begin).length - 1);
    byte[] tiny = {1, 20, 0};
    byte[] badVersion = toO1(ours, begin);
    badVersion[0] = (byte) (WireCodec.VERSION + 1);
    byte[] v3 = new WireCodec(KEY, LIMIT).encode(begin, Role.CLIENT, "O1", WireCodec.VERSION_3);
    byte[] badFlags = toO1(ours, begin);
    badFlags[1] = (byte) 0x81;
    byte[] clear = new WireCodec(KEY, List.of(), false, LIMIT).encode(begin, Role.CLIENT, "O1",
        WireCodec.VERSION);
    byte[] beginMessage = WireCodec.encodeMessage(begin);
    beginMessage[0] = (byte) 200;
    byte[] badType = ours.seal("V1", beginMessage, Role.CLIENT, "O1", WireCodec.VERSION);
    byte[] garbage = new byte[300];
    new Random(42).nextBytes(garbage);
    garbage[0] = WireCodec.VERSION;
    garbage[1] = 1;
    garbage[38] = 2;
    garbage[41] = 2;
    java.nio.ByteBuffer.wrap(garbage).putInt(2,
        DatagramKeys.keyId(Role.CLIENT.keyFrom(KEY)));
    byte[] oversized = new byte[LIMIT + 500];
    oversized[0] = WireCodec.VERSION;
    byte[] strangerDc = toO1(ours, new Envelope(78, "X9", false,
        new Message.BeginRequest("g", 1)));
    // A forged reply must not complete anything either.
    byte[] forgedReply = theirs.encode(new Envelope(79, "V1", true,
        new Message.BeginReply("g", 1, "V1")), Role.CLIENT, "O1", WireCodec.VERSION);
    // Authentic, but not fresh or not for O1, or more than a client's key may ask.
    byte[] stale = toO1(clientCodec(cfg, () -> System.currentTimeMillis() - 60_000), begin);
    byte[] ahead = toO1(clientCodec(cfg, () -> System.currentTimeMillis() + 60_000), begin);
    byte[] misdirected = ours.encode(begin, Role.CLIENT, "V1", WireCodec.VERSION);
    byte[] rebuild = toO1(ours, new Envelope(80, "V1", false,
        new Message.RebuildRequest("", "", "O1", "", false)));
    byte[] snapshot = toO1(ours, new Envelope(81, "V1", false,
        new Message.SnapshotRequest("g", 0, "")));

    List<byte[]> bad = List.of(forged, cut, tiny, badVersion, v3, badFlags, clear, badType,
        garbage, oversized, strangerDc, forgedReply, stale, ahead, misdirected, rebuild,
        snapshot);
    try (DatagramSocket raw = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
      raw.setSoTimeout((int) WAIT.toMillis());
      for (byte[] d : bad) {
        raw.send(new DatagramPacket(d, d.length, service.boundAddress()));
      }
      Poll.until(bad.size() + " drops", WAIT, () -> service.droppedCounts().values().stream()
          .mapToLong(Long::longValue).sum() == bad.size());
      assertEquals(2, service.droppedCount(Reason.UNKNOWN_KEY)); // forged, forged reply
      assertEquals(2, service.droppedCount(Reason.BAD_MAC)); // cut, garbage under a key id
      assertEquals(1, service.droppedCount(Reason.TRUNCATED));
      assertEquals(3, service.droppedCount(Reason.BAD_VERSION)); // version, version 3, flags
      assertEquals(1, service.droppedCount(Reason.CLEAR));
      assertEquals(1, service.droppedCount(Reason.BAD_TYPE));
      assertEquals(1, service.droppedCount(Reason.TOO_LARGE));
      assertEquals(1, service.droppedCount(Reason.MALFORMED));
      assertEquals(2, service.droppedCount(Reason.STALE)); // behind and ahead
      assertEquals(1, service.droppedCount(Reason.MISDIRECTED));
      assertEquals(2, service.droppedCount(Reason.ROLE)); // a client's rebuild and snapshot
      assertEquals(0, h.calls.get());

      // The service still serves an authentic request, and answers the sender's address.
      byte[] good = toO1(ours, begin);
      raw.send(new DatagramPacket(good, good.length, service.boundAddress()));
      DatagramPacket in = new DatagramPacket(new byte[LIMIT], LIMIT);
      raw.receive(in);
      WireCodec.Opened reply = ours.open(in.getData(), 0, in.getLength());
      assertEquals(new Envelope(77, "O1", true, new Message.BeginReply("g", 1, "V1")),
          reply.envelope());
      assertEquals(Role.CLIENT, reply.role(), "answered under the request's key");
      assertEquals("V1", reply.toDc(), "addressed to the requester's DC");
      assertEquals(1, h.calls.get());

      // The same datagram again, from this and from another address: never answered.
      try (DatagramSocket other = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
        raw.send(new DatagramPacket(good, good.length, service.boundAddress()));
        other.send(new DatagramPacket(good, good.length, service.boundAddress()));
        Poll.until("two replays dropped", WAIT, () -> service.droppedCount(Reason.REPLAY) == 2);
        assertEquals(1, h.calls.get());
      }
    }
  }

  @Test
  void aVersion3ClientIsServedOnlyBelowClusterVersion3() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    // A process held to cluster version 1 stands for a build before version 4.
    ClusterConfig.Wire v3 = new ClusterConfig.Wire(true, true, 1, Duration.ofSeconds(5),
        Duration.ofSeconds(30), null);
    UdpTransport strict = service(cfg, new CountingHandler());
    strict.clusterVersion(org.paxoscp.version.ClusterVersion.WIRE_3_CLOSED);
    UdpTransport rolling = service(cfg, new CountingHandler());
    rolling.clusterVersion(org.paxoscp.version.ClusterVersion.WIRE_4);
    UdpTransport oldClient = closeLater(UdpTransport.builder(cfg.withWire(v3), "V1")
        .endpoints(dc -> List.of(strict.boundAddress())).build());
    UdpTransport rollingClient = closeLater(UdpTransport.builder(cfg.withWire(v3), "V1")
        .endpoints(dc -> List.of(rolling.boundAddress())).build());
    CompletableFuture<Message> unanswered = oldClient.request("O1",
        new Message.BeginRequest("g", 1), WAIT);
    Poll.until("version 3 dropped at cluster version 3", WAIT,
        () -> strict.droppedCount(Reason.BAD_VERSION) == 1);
    assertFalse(unanswered.isDone(), "a dropped request is never answered");
    assertEquals(new Message.BeginReply("g", 1, "V1"), rollingClient.request("O1",
        new Message.BeginRequest("g", 1), WAIT).get(WAIT.toMillis(), TimeUnit.MILLISECONDS),
        "a service at cluster version 2 answers version 3 in version 3");
    assertTrue(rolling.lastWire3().orElseThrow().getValue().startsWith("V1 at "),
        rolling.lastWire3().toString());
    assertTrue(strict.lastWire3().isEmpty(), "a dropped datagram is not counted as opened");
  }

  @Test
  void aReplyUnderAnotherRolesKeyCompletesNothing() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    try (DatagramSocket peer = new DatagramSocket(new InetSocketAddress(LOOPBACK, 0))) {
      peer.setSoTimeout((int) WAIT.toMillis());
      UdpTransport client = client(cfg, (InetSocketAddress) peer.getLocalSocketAddress());
      CompletableFuture<Message> f = client.request("O1", new Message.BeginRequest("g", 1),
          WAIT);
      DatagramPacket in = new DatagramPacket(new byte[LIMIT], LIMIT);
      peer.receive(in);
      WireCodec service = new WireCodec(KEY, LIMIT);
      WireCodec.Opened req = service.open(in.getData(), 0, in.getLength());
      assertEquals(Role.CLIENT, req.role());
      // Another client (holding the client key) could forge a service's reply to it only under
      // the client key; a reply under the service key is not what this client asked for.
      Envelope answer = new Envelope(req.envelope().requestId(), "O1", true,
          new Message.BeginReply("g", 1, "V1"));
      byte[] wrongRole = service.encode(answer, Role.SERVICE, "V1", WireCodec.VERSION);
      peer.send(new DatagramPacket(wrongRole, wrongRole.length, in.getSocketAddress()));
      Poll.until("dropped", WAIT, () -> client.droppedCount(Reason.UNKNOWN_KEY)
          + client.droppedCount(Reason.ROLE) == 1);
      assertFalse(f.isDone());
      byte[] right = service.encode(answer, Role.CLIENT, "V1", WireCodec.VERSION);
      peer.send(new DatagramPacket(right, right.length, in.getSocketAddress()));
      assertEquals(answer.message(), f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
      assertTrue(client.clockOffsetsMillis().containsKey("O1"));
    }
  }

  @Test
  void oversizedRequestFailsAndNothingIsSent() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    DatagramSocket peer = silentPeer();
    UdpTransport client = client(cfg, addressOf(peer));
    Message big = new Message.ReadRequest("grp", 42, List.of("k".repeat(LIMIT)));
    Throwable t = failure(client.request("O1", big, WAIT));
    assertInstanceOf(MessageTooLargeException.class, t);
    assertTrue(t.getMessage().contains(Integer.toString(LIMIT)), t.getMessage());
    assertTrue(t.getMessage().contains("grp") && t.getMessage().contains("42"), t.getMessage());
    assertThrows(MessageTooLargeException.class, () -> client.send("O1", big));
    DatagramPacket in = new DatagramPacket(new byte[LIMIT * 2], LIMIT * 2);
    assertThrows(SocketTimeoutException.class, () -> peer.receive(in), "nothing was sent");
  }

  @Test
  void oversizedReplyBecomesTooLargeError() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    CountingHandler h = new CountingHandler();
    h.replyValueBytes = LIMIT * 2;
    UdpTransport service = service(cfg, h);
    UdpTransport client = client(cfg, service.boundAddress());
    Message reply = get(client.request("O1", new Message.ReadRequest("g", 9, List.of("k")), WAIT));
    Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class, reply);
    assertEquals(Message.ErrorCode.TOO_LARGE, e.code());
    assertEquals("g", e.group());
    assertEquals(9, e.position());
  }

  @Test
  void wanEmulationDelaysByTheRoundTrip() throws Exception {
    ClusterConfig cfg = config(wan(40_000, 0, 0));
    UdpTransport service = service(cfg, new CountingHandler());
    WanTransport client = wanClient(cfg, service.boundAddress());
    for (int i = 0; i < 3; i++) {
      long start = System.nanoTime();
      get(client.request("O1", new Message.BeginRequest("g", i), WAIT));
      long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      // Lower bound only: 20 ms each way, with no jitter configured.
      assertTrue(elapsedMs >= 40, "round trip took " + elapsedMs + " ms, expected >= 40");
    }
  }

  @Test
  void wanLossLosesEverything() throws Exception {
    ClusterConfig cfg = config(wan(0, 1.0, 0));
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    WanTransport client = wanClient(cfg, service.boundAddress());
    assertInstanceOf(TransportTimeoutException.class, failure(
        client.request("O1", new Message.BeginRequest("g", 1), Duration.ofMillis(200))));
    assertEquals(0, h.calls.get());
  }

  @Test
  void wanDuplicationDeliversTwiceAndRepliesOnce() throws Exception {
    ClusterConfig cfg = config(wan(0, 0, 1.0));
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    WanTransport client = wanClient(cfg, service.boundAddress());
    assertEquals(new Message.BeginReply("g", 1, "V1"),
        get(client.request("O1", new Message.BeginRequest("g", 1), WAIT)));
    Poll.until("the duplicate to be handled", WAIT, () -> h.calls.get() == 2);
  }

  @Test
  void partitionCutsAndHeals() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    WanTransport client = wanClient(cfg, service.boundAddress());
    client.setPartitioned(Set.of("O1"));
    assertInstanceOf(TransportTimeoutException.class, failure(
        client.request("O1", new Message.BeginRequest("g", 1), Duration.ofMillis(200))));
    assertEquals(0, h.calls.get());
    client.setPartitioned(Set.of());
    assertEquals(new Message.BeginReply("g", 2, "V1"),
        get(client.request("O1", new Message.BeginRequest("g", 2), WAIT)));
    assertThrows(IllegalArgumentException.class, () -> client.setPartitioned(Set.of("Z9")));
  }

  @Test
  void closeLetsOneWaySendsHeldByTheWanEmulationGoOut() throws Exception {
    // A client's last APPLY is sent just before it closes; under WAN emulation it is still
    // scheduled when close() runs, and losing it leaves a chosen position unknown to every DC.
    ClusterConfig cfg = config(wan(400_000, 0, 0));
    CountingHandler h = new CountingHandler();
    UdpTransport service = service(cfg, h);
    WanTransport client = wanClient(cfg, service.boundAddress());
    client.send("O1", new Message.Paxos(new PaxosMessage.Apply("g", 3, LogValue.NOOP)));
    long t0 = System.nanoTime();
    client.close();
    assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(3), "close waited too long");
    Poll.until("the APPLY sent before close to be handled", WAIT, () -> h.calls.get() == 1);
  }

  @Test
  void closeFailsPendingRequestsAndIsIdempotent() throws Exception {
    ClusterConfig cfg = config(ClusterConfig.Wan.off());
    DatagramSocket peer = silentPeer();
    UdpTransport client = UdpTransport.builder(cfg, "V1")
        .endpoints(dc -> List.of(addressOf(peer))).build();
    CompletableFuture<Message> pending =
        client.request("O1", new Message.BeginRequest("g", 1), Duration.ofMinutes(5));
    client.close();
    assertInstanceOf(TransportClosedException.class, failure(pending));
    client.close();
    assertInstanceOf(TransportClosedException.class,
        failure(client.request("O1", new Message.BeginRequest("g", 2), WAIT)));
    client.send("O1", new Message.BeginRequest("g", 3));
  }
}
