package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.CountingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.BeginReply;
import org.paxoscp.transport.Message.BeginRequest;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.ReadReply;
import org.paxoscp.transport.Message.ReadRequest;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Message.SubmitStatus;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The Transaction Service of three DCs wired by an in-process network over in-memory stores:
 * commits run by real proposers from test clients, begin and read requests, catch-up from peers
 * and by learner instances, validation and store outages.
 */
@Timeout(60)
class TransactionServiceTest {
  private static final String G = "users/42";
  private static final List<String> DCS = List.of("A", "B", "C");
  /** The grantor of the group's first position (one DC, by the group's bucket). */
  private static final String FIRST = DCS.get(
      org.paxoscp.paxos.Proposer.leaderOfFirst(DCS, "users/42").getAsInt());
  private static final Duration REQUEST_TIMEOUT = Duration.ofMillis(300);
  private static final Duration WAIT = Duration.ofSeconds(10);

  private InProcessTransport.Network net;
  private ScheduledExecutorService timers;
  private final Map<String, InMemoryKvStore> raw = new HashMap<>();
  private final Map<String, CountingKvStore> stores = new HashMap<>();
  private final Map<String, CatchUp> catchUps = new HashMap<>();
  private final Map<String, TransactionService> services = new HashMap<>();
  private final Map<String, ProposerDriver> clients = new HashMap<>();
  private final AtomicLong ids = new AtomicLong(1000);
  private final Map<String, Long> expectedConflicts = new HashMap<>();
  private final ProposerConfig cfg = ProposerConfig.defaults(Protocol.CP, DCS)
      .withPhaseTimeoutMicros(REQUEST_TIMEOUT.toNanos() / 1000);

  @BeforeEach
  void start() {
    net = new InProcessTransport.Network();
    timers = Executors.newScheduledThreadPool(2);
    for (String dc : DCS) {
      InMemoryKvStore store = new InMemoryKvStore();
      raw.put(dc, store);
      stores.put(dc, new CountingKvStore(store));
      CatchUp c = new CatchUp(dc, DCS, stores.get(dc), net.transport(dc),
          new CatchUp.Settings(REQUEST_TIMEOUT, REQUEST_TIMEOUT.multipliedBy(4), 64),
          Scheduler.of(timers));
      catchUps.put(dc, c);
      TransactionService s = new TransactionService(dc, DCS, stores.get(dc), c,
          new TransactionService.Limits(8, 4096, Duration.ofSeconds(5)), Scheduler.of(timers));
      services.put(dc, s);
      net.register(dc, s);
      clients.put(dc,
          new ProposerDriver(net.transport(dc), DCS, Scheduler.of(timers), REQUEST_TIMEOUT));
    }
  }

  @AfterEach
  void stop() {
    for (String dc : DCS) {
      assertEquals(expectedConflicts.getOrDefault(dc, 0L), services.get(dc).conflicts(),
          "conflicting chosen values at " + dc);
      catchUps.get(dc).close();
    }
    timers.shutdownNow();
    net.close();
  }

  // ---- begin and read ---------------------------------------------------------------------

  @Test
  void beginGivesTheReadPositionAndTheNextLeader() throws Exception {
    assertEquals(new BeginReply(G, 0, FIRST), begin("A", 0));

    commit("B", 0, OptionalInt.empty(), Map.of("x", "1"));
    awaitWatermark(DCS, 1);
    assertEquals(new BeginReply(G, 1, "B"), begin("A", 0));

    // The leader B grants the fast path; the winner's DC leads the next position.
    Outcome o = commit("A", 1, OptionalInt.of(DCS.indexOf("B")), Map.of("x", "2"));
    assertEquals(2, o.position());
    awaitWatermark(DCS, 2);
    assertEquals(new BeginReply(G, 2, "A"), begin("C", 1));
  }

  @Test
  void readsSeeTheValuesAtTheReadPosition() throws Exception {
    commit("A", 0, OptionalInt.empty(), Map.of("x", "1", "y", "a"));
    commit("A", 1, OptionalInt.empty(), Map.of("x", "2"));
    Map<String, String> deleteY = new HashMap<>();
    deleteY.put("y", null);
    commit("A", 2, OptionalInt.empty(), deleteY);
    awaitWatermark(DCS, 3);

    assertEquals(Map.of(), read("B", 0, "x", "y").values());
    assertValues(Map.of("x", "1", "y", "a"), read("B", 1, "x", "y"));
    assertValues(Map.of("x", "2", "y", "a"), read("C", 2, "x", "y", "z"));
    assertValues(Map.of("x", "2"), read("A", 3, "x", "y"));
  }

  // ---- catch-up -----------------------------------------------------------------------------

  @Test
  void applyWithAGapCatchesUpFromPeers() throws Exception {
    net.setDown("C", true);
    commit("A", 0, OptionalInt.empty(), Map.of("x", "1"));
    net.setDown("C", false);
    assertEquals(0, watermark("C"));

    // C receives the APPLY for 2 with 1 missing, and learns 1 from a peer.
    commit("A", 1, OptionalInt.empty(), Map.of("x", "2"));
    awaitWatermark(List.of("C"), 2);
    assertTrue(catchUps.get("C").learnedFromPeers() >= 1);
    assertValues(Map.of("x", "1"), read("C", 1, "x"));
  }

  @Test
  void aLaggingDcCatchesUpOnBeginAndRead() throws Exception {
    net.setDown("C", true);
    commit("B", 0, OptionalInt.empty(), Map.of("x", "1"));
    commit("B", 1, OptionalInt.empty(), Map.of("x", "2"));
    commit("B", 2, OptionalInt.empty(), Map.of("x", "3"));
    net.setDown("C", false);

    // Without a proof that later positions exist, C invents nothing.
    assertEquals(new BeginReply(G, 0, FIRST), begin("C", 0));
    assertEquals(0, catchUps.get("C").learnedByInstance());

    // A client that committed at 2 proves 2 exists.
    assertEquals(new BeginReply(G, 2, "B"), begin("C", 2));
    // Someone was given read position 3 (at A or B): a read there makes C catch up again.
    assertValues(Map.of("x", "3"), read("C", 3, "x"));
    assertEquals(3, catchUps.get("C").learnedFromPeers());
    assertEquals(0, catchUps.get("C").learnedByInstance());
  }

  @Test
  void concurrentCatchUpsOfOneGroupLearnEachPositionOnce() throws Exception {
    net.setDown("C", true);
    for (int i = 0; i < 5; i++) {
      commit("A", i, OptionalInt.empty(), Map.of("k" + i, "v" + i));
    }
    net.setDown("C", false);

    List<CompletableFuture<Message>> replies = new ArrayList<>();
    var client = net.transport("C");
    for (int i = 0; i < 20; i++) {
      replies.add(client.request("C", new BeginRequest(G, 1 + i % 5), WAIT));
    }
    for (CompletableFuture<Message> r : replies) {
      BeginReply b = assertInstanceOf(BeginReply.class, r.get(20, TimeUnit.SECONDS));
      assertTrue(b.position() >= 1 && b.position() <= 5, b.toString());
    }
    assertEquals(5, begin("C", 5).position());
    assertEquals(5, catchUps.get("C").learnedFromPeers());
  }

  @Test
  void learnerDecidesANoopAtAProvenPositionNobodyVotedFor() throws Exception {
    // A client claims to have committed at 1, but no DC has a vote (its APPLYs and votes lost,
    // e.g. a crash between write and read): the learner fills position 1 with a no-op.
    assertEquals(new BeginReply(G, 1, ""), begin("A", 1));
    // The learner's own APPLY may answer the begin before the catch-up counts what it learned.
    Poll.until("A learned position 1 with a learner instance", WAIT,
        () -> catchUps.get("A").learnedByInstance() == 1);
    for (String dc : DCS) {
      Poll.until("no-op recorded at " + dc, WAIT,
          () -> LogValue.NOOP.equals(acceptor(dc).chosen(G, 1).orElse(null)));
    }
    awaitWatermark(DCS, 1);
  }

  @Test
  void learnerReproposesAnAcceptedValueInsteadOfANoop() throws Exception {
    // A and B accepted V at position 1 (so V is chosen), but no APPLY went out.
    LogValue v = LogValue.of(entry("lost-apply", "B", 0, Map.of("x", "v")));
    Ballot b = Ballot.first(ProposerId.of(7));
    for (String dc : List.of("A", "B")) {
      Message p = services.get(dc).handle("B",
          new Message.Paxos(new PaxosMessage.Prepare(G, 1, b))).join();
      assertTrue(((PaxosMessage.PrepareReply) ((Message.Paxos) p).message()).promised());
      Message a = services.get(dc).handle("B",
          new Message.Paxos(new PaxosMessage.Accept(G, 1, b, v))).join();
      assertTrue(((PaxosMessage.AcceptReply) ((Message.Paxos) a).message()).accepted());
    }
    // C is told position 1 exists. No DC has a chosen cell, so C runs a learner, which finds V
    // accepted by a majority in one ballot and must choose it, never a no-op.
    Message reply = begin("C", 1);
    // The learner's own APPLY may answer the begin before the catch-up counts what it learned.
    Poll.until("C learned position 1 with a learner instance", WAIT,
        () -> catchUps.get("C").learnedByInstance() == 1);
    assertEquals(new BeginReply(G, 1, "B"), reply);
    assertEquals(v, acceptor("C").chosen(G, 1).orElseThrow());
    assertValues(Map.of("x", "v"), read("C", 1, "x"));
  }

  @Test
  void catchUpThatCannotReachAQuorumFailsAndInventsNothing() {
    net.setDown("A", true);
    net.setDown("B", true);
    Message reply = services.get("C").handle("client", new BeginRequest(G, 3)).join();
    ErrorReply e = assertInstanceOf(ErrorReply.class, reply);
    assertEquals(ErrorCode.CATCH_UP_FAILED, e.code());
    assertTrue(acceptor("C").chosen(G, 1).isEmpty());
    assertEquals(0, watermark("C"));
  }

  // ---- bad requests and outages ----------------------------------------------------------

  @Test
  void malformedRequestsAreRejectedWithoutTouchingTheStore() {
    TransactionService s = services.get("A");
    String tooLongKey = "k".repeat(2000);
    List<Message> bad = List.of(
        new BeginRequest("", 0),
        new BeginRequest("a\0b", 0),
        new BeginRequest("g".repeat(300), 0),
        new BeginRequest(G, -1),
        new ReadRequest(G, -1, List.of("x")),
        new ReadRequest(G, 0, List.of("a", "b", "c", "d", "e", "f", "g", "h", "i")),
        new ReadRequest(G, 0, List.of("")),
        new ReadRequest(G, 0, List.of(tooLongKey)),
        new ReadRequest("", 0, List.of("x")),
        new Message.Paxos(new PaxosMessage.Prepare(G, 0, Ballot.first(ProposerId.of(1)))),
        new Message.Paxos(new PaxosMessage.Prepare(G, 1, Ballot.FAST)),
        new Message.Paxos(new PaxosMessage.Learn(G, -5)),
        new Message.Paxos(new PaxosMessage.Apply("", 1, LogValue.NOOP)),
        new Message.Paxos(new PaxosMessage.GrantRequest(G, 1, "")),
        new Message.Paxos(new PaxosMessage.GrantReply(G, 1, "x", true)),
        new BeginReply(G, 1, ""),
        new ReadReply(G, 1, Map.of()));
    var before = stores.get("A").counts();
    for (Message m : bad) {
      ErrorReply e = assertInstanceOf(ErrorReply.class, s.handle("B", m).join(), m.toString());
      assertEquals(ErrorCode.BAD_REQUEST, e.code(), m.toString());
    }
    ErrorReply e = assertInstanceOf(ErrorReply.class, s.handle("B", null).join());
    assertEquals(ErrorCode.BAD_REQUEST, e.code());
    assertEquals(0, stores.get("A").counts().minus(before).operations(),
        "a rejected request touched the store");
  }

  @Test
  void aStoreOutageIsReportedNamingTheDc() {
    raw.get("B").setAvailable(false);
    TransactionService s = services.get("B");
    for (Message m : List.of(new BeginRequest(G, 0), new ReadRequest(G, 0, List.of("x")),
        new Message.Paxos(new PaxosMessage.Prepare(G, 1, Ballot.first(ProposerId.of(3)))),
        new Message.Paxos(new PaxosMessage.Learn(G, 1)))) {
      ErrorReply e = assertInstanceOf(ErrorReply.class, s.handle("A", m).join(), m.toString());
      assertEquals(ErrorCode.STORE_UNAVAILABLE, e.code());
      assertTrue(e.detail().contains("DC B"), e.detail());
    }
    assertNull(s.handle("A", new Message.Paxos(new PaxosMessage.Apply(G, 1, LogValue.NOOP))).join());
    raw.get("B").setAvailable(true);
    assertEquals(new BeginReply(G, 0, FIRST), s.handle("A", new BeginRequest(G, 0)).join());
  }

  @Test
  void aSecondDifferentChosenValueIsCountedAndRefused() {
    LogValue first = LogValue.of(entry("t-first", "A", 0, Map.of("x", "1")));
    LogValue second = LogValue.of(entry("t-second", "B", 0, Map.of("x", "2")));
    TransactionService s = services.get("A");
    assertNull(s.handle("A", new Message.Paxos(new PaxosMessage.Apply(G, 1, first))).join());
    assertNull(s.handle("A", new Message.Paxos(new PaxosMessage.Apply(G, 1, first))).join());
    assertEquals(0, s.conflicts());
    assertNull(s.handle("B", new Message.Paxos(new PaxosMessage.Apply(G, 1, second))).join());
    expectedConflicts.put("A", 1L);
    assertEquals(1, s.conflicts());
    assertEquals(first, acceptor("A").chosen(G, 1).orElseThrow());
    assertEquals(1, watermark("A"));
  }

  @Test
  void aReadReplyTooBigForADatagramIsRefused() throws Exception {
    String big = "v".repeat(3000);
    commit("A", 0, OptionalInt.empty(), Map.of("a", big, "b", big));
    awaitWatermark(List.of("A"), 1);
    assertValues(Map.of("a", big), read("A", 1, "a"));
    ErrorReply e = assertInstanceOf(ErrorReply.class,
        services.get("A").handle("A", new ReadRequest(G, 1, List.of("a", "b"))).join());
    assertEquals(ErrorCode.TOO_LARGE, e.code());
  }

  // ---- range reads ---------------------------------------------------------------------------

  private Message.ScanReply scan(String dc, long position, org.paxoscp.wal.KeyRange range,
      int limit, boolean reversed) {
    return assertInstanceOf(Message.ScanReply.class, services.get(dc).handle("client",
        new Message.ScanRequest(G, position, range, limit, reversed)).join());
  }

  private static List<String> keys(Message.ScanReply r) {
    return r.items().stream().map(Message.ScanItem::key).toList();
  }

  @Test
  void aScanAnswersTheRangeAtTheReadPositionInPages() throws Exception {
    commit("A", 0, OptionalInt.empty(), Map.of("o/1", "a", "o/2", "b", "o/3", "c", "p", "x"));
    Map<String, String> second = new HashMap<>();
    second.put("o/2", null);
    second.put("o/4", "d");
    commit("A", 1, OptionalInt.empty(), second);
    awaitWatermark(DCS, 2);
    org.paxoscp.wal.KeyRange o = org.paxoscp.wal.KeyRange.prefix("o/");
    Message.ScanReply at1 = scan("B", 1, o, 100, false);
    assertEquals(List.of("o/1", "o/2", "o/3"), keys(at1), "versions above the read position "
        + "are not seen");
    assertTrue(at1.complete());
    assertEquals(1L, at1.items().get(0).version());
    assertEquals(List.of("o/1", "o/3", "o/4"), keys(scan("C", 2, o, 100, false)),
        "a deleted key is left out");
    assertEquals(List.of("o/4", "o/3", "o/1"), keys(scan("C", 2, o, 100, true)));
    // A page of two rows: the delete of o/2 is one of them, so one entry and o/2 as last key.
    Message.ScanReply page = scan("A", 2, o, 2, false);
    assertEquals(List.of("o/1"), keys(page));
    assertFalse(page.complete());
    assertEquals("o/2", page.lastKey());
    Message.ScanReply back = scan("A", 2, o, 2, true);
    assertEquals(List.of("o/4", "o/3"), keys(back));
    assertEquals("o/3", back.lastKey());
  }

  @Test
  void aScanAtALaggingDcCatchesUpFirst() throws Exception {
    net.setDown("C", true);
    commit("B", 0, OptionalInt.empty(), Map.of("o/1", "1"));
    commit("B", 1, OptionalInt.empty(), Map.of("o/2", "2"));
    net.setDown("C", false);
    assertEquals(List.of("o/1", "o/2"),
        keys(scan("C", 2, org.paxoscp.wal.KeyRange.ALL, 10, false)));
    assertEquals(2, catchUps.get("C").learnedFromPeers());
  }

  @Test
  void aScanPageStopsBeforeTheDatagramIsFullAndNamesItsLastKey() throws Exception {
    String big = "v".repeat(3000);
    commit("A", 0, OptionalInt.empty(), Map.of("a", big, "b", big, "c", big));
    awaitWatermark(List.of("A"), 1);
    Message.ScanReply first = scan("A", 1, org.paxoscp.wal.KeyRange.ALL, 10, false);
    assertFalse(first.complete());
    assertEquals(List.of("a"), keys(first));
    assertEquals("a", first.lastKey());
    Message.ScanReply rest = scan("A", 1,
        org.paxoscp.wal.KeyRange.ALL.after("a").orElseThrow(), 10, false);
    assertEquals(List.of("b"), keys(rest));
  }

  @Test
  void belowClusterVersion4AServiceRefusesScansAndVotesForNoValueWithARange() throws Exception {
    services.get("A").followClusterVersion(() -> org.paxoscp.version.ClusterVersion.WIRE_3_CLOSED);
    ErrorReply scan = assertInstanceOf(ErrorReply.class, services.get("A").handle("client",
        new Message.ScanRequest(G, 0, org.paxoscp.wal.KeyRange.ALL, 10, false)).join());
    assertEquals(ErrorCode.BAD_REQUEST, scan.code());
    assertTrue(scan.detail().contains("cluster version 4"), scan.detail());
    LogEntry ranged = new LogEntry("ranged", "A", 0, new TreeSet<>(),
        List.of(org.paxoscp.wal.KeyRange.prefix("o/")),
        new TreeMap<>(Map.of("w", Mutation.put(new byte[] {1}))));
    Ballot b = Ballot.first(ProposerId.of(3));
    ErrorReply vote = assertInstanceOf(ErrorReply.class, services.get("A").handle("client",
        new Message.Paxos(new PaxosMessage.Accept(G, 1, b, LogValue.of(ranged)))).join());
    assertEquals(ErrorCode.BAD_REQUEST, vote.code());
    assertTrue(acceptor("A").chosen(G, 1).isEmpty());
    ErrorReply submitted = assertInstanceOf(ErrorReply.class, submit("A", ranged, 4).get(20,
        TimeUnit.SECONDS));
    assertEquals(ErrorCode.BAD_REQUEST, submitted.code());
    // A value without ranges is voted for as before; at version 4 the ranged one is too.
    for (String dc : List.of("A", "B")) {
      for (long p : new long[] {1, 2}) {
        services.get(dc).handle("client", new Message.Paxos(new PaxosMessage.Prepare(G, p, b)))
            .join();
      }
    }
    Message plain = services.get("A").handle("client", new Message.Paxos(new PaxosMessage.Accept(
        G, 1, b, LogValue.of(entry("plain", "A", 0, Map.of("w", "1")))))).join();
    assertTrue(((PaxosMessage.AcceptReply) ((Message.Paxos) plain).message()).accepted());
    services.get("B").followClusterVersion(() -> org.paxoscp.version.ClusterVersion.RANGE_READS);
    Message later = services.get("B").handle("client", new Message.Paxos(new PaxosMessage.Accept(
        G, 2, b, LogValue.of(ranged)))).join();
    assertTrue(((PaxosMessage.AcceptReply) ((Message.Paxos) later).message()).accepted());
  }

  @Test
  void belowClusterVersion5AServiceRefusesUpdatesAndVotesForNoValueWithOne() throws Exception {
    services.get("A").followClusterVersion(() -> org.paxoscp.version.ClusterVersion.RANGE_READS);
    LogEntry adder = new LogEntry("adder", "A", 0, new TreeSet<>(),
        new TreeMap<>(Map.of("c", Mutation.add(1))));
    Ballot b = Ballot.first(ProposerId.of(3));
    ErrorReply vote = assertInstanceOf(ErrorReply.class, services.get("A").handle("client",
        new Message.Paxos(new PaxosMessage.Accept(G, 1, b, LogValue.of(adder)))).join());
    assertEquals(ErrorCode.BAD_REQUEST, vote.code());
    assertTrue(vote.detail().contains("cluster version 5"), vote.detail());
    assertTrue(acceptor("A").chosen(G, 1).isEmpty());
    ErrorReply submitted = assertInstanceOf(ErrorReply.class, submit("A", adder, 4).get(20,
        TimeUnit.SECONDS));
    assertEquals(ErrorCode.BAD_REQUEST, submitted.code());
    ErrorReply asked = assertInstanceOf(ErrorReply.class, services.get("A").handle("client",
        new Message.UpdatesRequest(G, 1, "adder")).join());
    assertEquals(ErrorCode.BAD_REQUEST, asked.code());
  }

  @Test
  void aServiceSaysWhichCommittedEntriesItsUpdatesRefused() throws Exception {
    commit("A", 0, OptionalInt.empty(), Map.of("c", Long.toString(Long.MAX_VALUE - 1)));
    LogEntry fits = new LogEntry("fits", "A", 1, new TreeSet<>(),
        new TreeMap<>(Map.of("c", Mutation.add(1), "x", Mutation.put(new byte[] {1}))));
    LogEntry overflows = new LogEntry("overflows", "A", 1, new TreeSet<>(),
        new TreeMap<>(Map.of("c", Mutation.add(1), "y", Mutation.put(new byte[] {2}))));
    // Both in one position, in this order (combined: neither reads anything).
    Ballot b = Ballot.first(ProposerId.of(3));
    LogValue v = LogValue.of(fits, overflows);
    for (String dc : DCS) {
      services.get(dc).handle("client", new Message.Paxos(new PaxosMessage.Prepare(G, 2, b)))
          .join();
      services.get(dc).handle("client", new Message.Paxos(new PaxosMessage.Accept(G, 2, b, v)))
          .join();
      services.get(dc).handle("client", new Message.Paxos(new PaxosMessage.Apply(G, 2, v)))
          .join();
    }
    awaitWatermark(DCS, 2);
    for (String dc : DCS) {
      Message.UpdatesReply ok = assertInstanceOf(Message.UpdatesReply.class, services.get(dc)
          .handle("client", new Message.UpdatesRequest(G, 2, "fits")).join());
      assertEquals(new Message.UpdatesReply(G, 2, "fits", true, ""), ok);
      Message.UpdatesReply no = assertInstanceOf(Message.UpdatesReply.class, services.get(dc)
          .handle("client", new Message.UpdatesRequest(G, 2, "overflows")).join());
      assertTrue(no.found());
      assertTrue(no.refused().startsWith("c: "), no.refused());
      Message.UpdatesReply none = assertInstanceOf(Message.UpdatesReply.class, services.get(dc)
          .handle("client", new Message.UpdatesRequest(G, 2, "elsewhere")).join());
      assertFalse(none.found());
      // The refused entry wrote nothing; the one before it did.
      ReadReply r = assertInstanceOf(ReadReply.class, services.get(dc).handle("client",
          new ReadRequest(G, 2, List.of("c", "x", "y"))).join());
      assertEquals(Long.toString(Long.MAX_VALUE), new String(r.values().get("c")));
      assertTrue(r.values().containsKey("x"));
      assertFalse(r.values().containsKey("y"));
    }
  }

  // ---- helpers -------------------------------------------------------------------------------

  // ---- leader combination (docs/architecture.md section 5.5) ------------------------------------

  @Test
  void submitsWaitingForARoundAreCombinedIntoOneList() throws Exception {
    List<CompletableFuture<Message>> replies = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      replies.add(submit("A", entry("s" + i, "A", 0, Map.of("k" + i, "v")), 8));
    }
    Map<String, Long> positions = new HashMap<>();
    for (int i = 0; i < 10; i++) {
      SubmitReply r = assertInstanceOf(SubmitReply.class, replies.get(i).get(20, TimeUnit.SECONDS));
      assertEquals(SubmitStatus.COMMITTED, r.status(), r.toString());
      positions.put(r.txnId(), r.position());
    }
    long last = positions.values().stream().mapToLong(Long::longValue).max().orElseThrow();
    awaitWatermark(DCS, last);
    // Every reply names the position whose chosen value holds the entry.
    Acceptor a = new Acceptor(raw.get("B"));
    positions.forEach((txn, pos) -> assertTrue(a.chosen(G, pos).orElseThrow().contains(txn)));
    // Submits that arrived while the first list was in flight shared later positions.
    assertTrue(last < 10, "10 entries took " + last + " positions");
    assertTrue(services.get("A").combiner().rounds() < 10);
  }

  @Test
  void aSubmitThatReadAKeyAChosenValueWroteIsAbortedThere() throws Exception {
    commit("A", 0, OptionalInt.empty(), Map.of("x", "1"));
    LogEntry reader = new LogEntry("r1", "A", 0, new TreeSet<>(List.of("x")),
        new TreeMap<>(Map.of("y", Mutation.put(new byte[] {1}))));
    SubmitReply r = assertInstanceOf(SubmitReply.class,
        submit("A", reader, 8).get(20, TimeUnit.SECONDS));
    assertEquals(SubmitReply.aborted(G, 1, "r1", "read a key written at position 1"), r);
  }

  @Test
  void aSubmitWhoseBoundIsUsedUpIsAbortedNamingTheLastPosition() throws Exception {
    commit("A", 0, OptionalInt.empty(), Map.of("x", "1"));
    commit("A", 1, OptionalInt.of(0), Map.of("x", "2"));
    SubmitReply r = assertInstanceOf(SubmitReply.class,
        submit("A", entry("late", "A", 0, Map.of("z", "1")), 1).get(20, TimeUnit.SECONDS));
    assertEquals(SubmitStatus.ABORTED, r.status());
    assertEquals(2, r.position());
  }

  @Test
  void aDuplicateSubmitIsAnsweredFromTheLogNotPlacedAgain() throws Exception {
    LogEntry e = entry("dup", "A", 0, Map.of("x", "1"));
    SubmitReply first = assertInstanceOf(SubmitReply.class,
        submit("A", e, 8).get(20, TimeUnit.SECONDS));
    commit("A", 1, OptionalInt.of(0), Map.of("y", "2"));
    SubmitReply again = assertInstanceOf(SubmitReply.class,
        submit("A", e, 8).get(20, TimeUnit.SECONDS));
    assertEquals(first, again);
    assertEquals(SubmitReply.committed(G, 1, "dup", 1), first);
  }

  @Test
  void aSubmitToADcThatDoesNotLeadIsPassedOnToTheLeader() throws Exception {
    commit("B", 0, OptionalInt.empty(), Map.of("x", "1"));
    awaitWatermark(List.of("A"), 1);
    SubmitReply r = assertInstanceOf(SubmitReply.class,
        submit("A", entry("via-a", "A", 1, Map.of("y", "1")), 8).get(20, TimeUnit.SECONDS));
    assertEquals(SubmitReply.committed(G, 2, "via-a", 1), r);
    assertEquals(1, services.get("A").combiner().forwarded());
    assertEquals(0, services.get("A").combiner().rounds());
    assertEquals(1, services.get("B").combiner().rounds());
  }

  /**
   * An entry moved off a silent leader into rounds here is queued as a passed-on one
   * (docs/leader-combination.md, safety item 8): this DC's round does not pass it on to the
   * silent leader a second time.
   */
  @Test
  void anEntryMovedOffASilentLeaderIsNotPassedOnAgain() throws Exception {
    commit("B", 0, OptionalInt.empty(), Map.of("x", "1"));
    awaitWatermark(List.of("A", "C"), 1);
    net.setDown("B", true);
    SubmitReply r = assertInstanceOf(SubmitReply.class,
        submit("A", entry("moved", "A", 1, Map.of("y", "1")), 8).get(20, TimeUnit.SECONDS));
    assertEquals(SubmitReply.committed(G, 2, "moved", 1), r);
    assertEquals(1, services.get("A").combiner().entriesMoved());
    assertEquals(1, services.get("A").combiner().forwarded(),
        "the moved entry was passed on to silent B again");
  }

  @Test
  void invalidSubmitsAreRejectedBeforeAnythingIsPlaced() throws Exception {
    for (LogEntry bad : List.of(entry("t", "Z", 0, Map.of("x", "1")),
        entry("t", "A", 0, Map.of()))) {
      ErrorReply r = assertInstanceOf(ErrorReply.class,
          submit("A", bad, 8).get(20, TimeUnit.SECONDS));
      assertEquals(ErrorCode.BAD_REQUEST, r.code(), r.detail());
    }
    assertEquals(0, services.get("A").combiner().rounds());
    assertEquals(0, new LogApplier(raw.get("A")).applyKnown(G));
  }

  @Test
  void theRoundAfterADecisionWaitsForTheBatchingDcsOwnClientToSubmitAgain() throws Exception {
    // A hold as long as a million rounds: only the awaited client's next entry can end it.
    TransactionService a = holdingService("A", 1e6);
    assertEquals(SubmitReply.committed(G, 1, "first", 1), submit("A",
        entry("first", "A", 0, Map.of("a", "1")), 8).get(20, TimeUnit.SECONDS));
    // A client of B that submits to A directly is not the awaited one: it waits.
    CompletableFuture<Message> other = submit("A", entry("other", "B", 1, Map.of("b", "1")), 8);
    assertThrows(TimeoutException.class, () -> other.get(300, TimeUnit.MILLISECONDS),
        "a round started before A's client came back");
    assertEquals(1, a.combiner().rounds());
    // A's client submits again: the round starts at once, with both entries.
    CompletableFuture<Message> second = submit("A", entry("second", "A", 1, Map.of("a", "2")), 8);
    assertEquals(SubmitReply.committed(G, 2, "second", 2), second.get(20, TimeUnit.SECONDS));
    assertEquals(SubmitReply.committed(G, 2, "other", 2), other.get(20, TimeUnit.SECONDS));
    assertEquals(2, a.combiner().rounds());
    // A lone client is its own returner: it never waits for a hold.
    for (int i = 3; i <= 5; i++) {
      assertEquals(SubmitReply.committed(G, i, "lone" + i, 1), submit("A",
          entry("lone" + i, "A", i - 1, Map.of("a", "" + i)), 8).get(20, TimeUnit.SECONDS));
    }
    assertEquals(5, a.combiner().rounds());
    assertEquals(5, a.combiner().holds(), "every decision held: each was useful");
  }

  @Test
  void holdsNobodyComesBackToAreTriedAtEverySecondFourthThenEighthDecision() throws Exception {
    // A hold too short for any client to come back in: each one ends by its timer, empty.
    TransactionService a = holdingService("A", 1e-9);
    for (int i = 1; i <= 23; i++) {
      assertEquals(SubmitReply.committed(G, i, "t" + i, 1), submit("A",
          entry("t" + i, "A", i - 1, Map.of("a", "" + i)), 8).get(20, TimeUnit.SECONDS));
      // Comes back after the hold's zero-length timer has run.
      Poll.until("the hold after position " + i + " ended", WAIT,
          () -> !a.combiner().holding(G));
    }
    // Holds after decisions 1, 3 (2nd), 7 (4th), then every 8th: 15, 23.
    assertEquals(5, a.combiner().holds());
  }

  @Test
  void idleGroupsLeaveTheLiveMapAndTheCachesStayWithinTheirBound() throws Exception {
    CatchUp c = new CatchUp("A", DCS, stores.get("A"), net.transport("A"),
        new CatchUp.Settings(REQUEST_TIMEOUT, REQUEST_TIMEOUT.multipliedBy(4), 64),
        Scheduler.of(timers), 8);
    TransactionService a = new TransactionService("A", DCS, stores.get("A"), c,
        new TransactionService.Limits(8, 4096, Duration.ofSeconds(5)), Scheduler.of(timers), null,
        new LeaderCombiner.Options(Map.of(), LeaderCombiner.Rules.SHIPPED, 0));
    services.put("A", a);
    net.register("A", a);
    for (int i = 0; i < 40; i++) {
      String group = "many/" + i;
      LogEntry e = entry("m" + i, "A", 0, Map.of("k", "" + i));
      assertEquals(SubmitReply.committed(group, 1, "m" + i, 1), net.transport("client")
          .request("A", new SubmitRequest(group, 1, e, 8), WAIT).get(20, TimeUnit.SECONDS));
    }
    // Nothing is live once every round ended; idle groups are memos, at most the bound of them.
    Poll.until("no live group left", WAIT, () -> a.combiner().liveGroups() == 0);
    Poll.until("the caches at their bound", WAIT,
        () -> a.cachedGroups().values().stream().allMatch(n -> n <= 8));
    // (A catch-up run that an APPLY started may end just after the rounds did.)
    Poll.until("every catch-up run removed when it ended", WAIT, () -> c.activeRuns() == 0);
    // An evicted group's next entry goes to position 2 from the store.
    a.forgetCaches();
    assertEquals(SubmitReply.committed("many/0", 2, "m0-again", 1), net.transport("client")
        .request("A", new SubmitRequest("many/0", 2, entry("m0-again", "A", 1,
            Map.of("k", "again")), 8), WAIT).get(20, TimeUnit.SECONDS));
  }

  /** Replaces {@code dc}'s service by one whose leader rounds hold as {@code holdShare} says. */
  private TransactionService holdingService(String dc, double holdShare) {
    TransactionService s = new TransactionService(dc, DCS, stores.get(dc), catchUps.get(dc),
        new TransactionService.Limits(8, 4096, Duration.ofSeconds(5)), Scheduler.of(timers), null,
        new LeaderCombiner.Options(Map.of(), LeaderCombiner.Rules.SHIPPED, holdShare));
    services.put(dc, s);
    net.register(dc, s);
    return s;
  }

  private CompletableFuture<Message> submit(String dc, LogEntry e, int bound) {
    return net.transport("client").request(dc,
        new SubmitRequest(G, e.readPosition() + 1, e, bound), WAIT);
  }

  private Outcome commit(String dc, long readPosition, OptionalInt leader,
      Map<String, String> writes) throws Exception {
    LogEntry e = entry("t" + ids.incrementAndGet(), dc, readPosition, writes);
    Proposer p = new Proposer(cfg, G, ProposerId.of(ids.incrementAndGet()), e, readPosition + 1, leader,
        new SplittableRandom(ids.get()));
    Outcome o = clients.get(dc).run(p).get(20, TimeUnit.SECONDS);
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
    return o;
  }

  private static LogEntry entry(String txnId, String dc, long readPosition,
      Map<String, String> writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    writes.forEach((k, v) -> w.put(k, v == null ? Mutation.delete()
        : Mutation.put(v.getBytes(StandardCharsets.UTF_8))));
    return new LogEntry(txnId, dc, readPosition, new TreeSet<>(), w);
  }

  private Message begin(String dc, long min) throws Exception {
    return net.transport("client").request(dc, new BeginRequest(G, min), WAIT)
        .get(20, TimeUnit.SECONDS);
  }

  private ReadReply read(String dc, long position, String... keys) throws Exception {
    Message m = net.transport("client").request(dc, new ReadRequest(G, position, List.of(keys)),
        WAIT).get(20, TimeUnit.SECONDS);
    return assertInstanceOf(ReadReply.class, m, String.valueOf(m));
  }

  private static void assertValues(Map<String, String> expected, ReadReply r) {
    Map<String, String> got = new LinkedHashMap<>();
    r.values().forEach((k, v) -> got.put(k, new String(v, StandardCharsets.UTF_8)));
    assertEquals(new TreeMap<>(expected), new TreeMap<>(got));
    for (var e : expected.entrySet()) {
      assertArrayEquals(e.getValue().getBytes(StandardCharsets.UTF_8), r.values().get(e.getKey()));
    }
  }

  private Acceptor acceptor(String dc) {
    return new Acceptor(raw.get(dc));
  }

  private long watermark(String dc) {
    return new LogApplier(raw.get(dc)).appliedWatermark(G);
  }

  private void awaitWatermark(List<String> dcs, long position) {
    for (String dc : dcs) {
      Poll.until("DC " + dc + " applied " + position, WAIT,
          () -> new LogApplier(raw.get(dc)).applyKnown(G) >= position);
    }
  }
}
