package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.BeginReply;
import org.paxoscp.transport.Message.BeginRequest;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.ReadReply;
import org.paxoscp.transport.Message.ReadRequest;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgStep;

/**
 * Log and version GC through three Transaction Services (docs/architecture.md section 7), against
 * every store: reads at every read position above the watermark equal the state the log defines,
 * every request at or below it is answered TOO_OLD, and a DC that was away while the others
 * committed comes back correct because the watermark waited for it.
 */
public abstract class GcScenarios {
  private static final String G = "orders/7";
  private static final List<String> DCS = List.of("A", "B", "C");
  private static final List<String> KEYS = List.of("k0", "k1", "k2", "k3", "k4");
  private static final Duration REQUEST_TIMEOUT = Duration.ofMillis(300);
  private static final Duration WAIT = Duration.ofSeconds(20);
  private static final long RETENTION = 4;

  /** Fresh, empty stores, one per DC; closed after each test. */
  protected abstract Map<String, KvStore> newStores(List<String> dcs);

  private InProcessTransport.Network net;
  private ScheduledExecutorService timers;
  private Map<String, KvStore> stores;
  private final Map<String, CatchUp> catchUps = new HashMap<>();
  private final Map<String, GroupCollector> collectors = new HashMap<>();
  private final Map<String, TransactionService> services = new HashMap<>();
  private final Map<String, ProposerDriver> clients = new HashMap<>();
  private final AtomicLong ids = new AtomicLong(1000);
  private final ProposerConfig cfg = ProposerConfig.defaults(Protocol.CP, DCS)
      .withPhaseTimeoutMicros(REQUEST_TIMEOUT.toNanos() / 1000);
  /** The committed writes in log order: the log, as this test made it. */
  private final TreeMap<Long, Map<String, String>> log = new TreeMap<>();
  private boolean cDown;

  @BeforeEach
  void start() {
    net = new InProcessTransport.Network();
    timers = Executors.newScheduledThreadPool(2);
    stores = newStores(DCS);
    for (String dc : DCS) {
      CatchUp c = new CatchUp(dc, DCS, stores.get(dc), net.transport(dc),
          new CatchUp.Settings(REQUEST_TIMEOUT, REQUEST_TIMEOUT.multipliedBy(4), 256),
          Scheduler.of(timers));
      catchUps.put(dc, c);
      // Rounds are started by the test (collectNow), not by applied positions.
      GroupCollector gc = new GroupCollector(dc, DCS, stores.get(dc), net.transport(dc),
          new GroupCollector.Settings(RETENTION, 1_000_000, 1000, REQUEST_TIMEOUT, 1_000),
          Scheduler.of(timers));
      collectors.put(dc, gc);
      TransactionService s = new TransactionService(dc, DCS, stores.get(dc), c,
          new TransactionService.Limits(8, 4096, Duration.ofSeconds(5)), Scheduler.of(timers), gc);
      services.put(dc, s);
      net.register(dc, s);
      clients.put(dc,
          new ProposerDriver(net.transport(dc), DCS, Scheduler.of(timers), REQUEST_TIMEOUT));
    }
  }

  @AfterEach
  void stop() {
    for (String dc : DCS) {
      assertEquals(0, services.get(dc).conflicts(), "conflicting chosen values at " + dc);
      collectors.get(dc).close();
      catchUps.get(dc).close();
    }
    timers.shutdownNow();
    net.close();
    stores.values().forEach(KvStore::close);
  }

  @Test
  void readsAboveTheWatermarkEqualTheLogAndEverythingAtOrBelowItIsTooOld() throws Exception {
    SplittableRandom rng = new SplittableRandom(7);
    commitRandom(rng, 24);
    awaitApplied(DCS, 24);
    for (String dc : DCS) {
      GroupCollector.Round r = collectors.get(dc).collectNow(G).get(20, TimeUnit.SECONDS);
      assertEquals(24, r.minApplied());
      assertEquals(24 - RETENTION, r.gcWatermark());
    }
    long w = 24 - RETENTION;
    for (String dc : DCS) {
      KvStore.TableCensus wal = stores.get(dc).census(KvStore.Table.WAL);
      assertEquals(RETENTION, wal.rows(), "WAL rows left at " + dc);
      // At most one version per key at or below the watermark, plus those written above it.
      long above = log.tailMap(w, false).values().stream().mapToLong(Map::size).sum();
      assertTrue(stores.get(dc).census(KvStore.Table.DATA).versions() <= KEYS.size() + above);
    }
    for (long r = w + 1; r <= 24; r++) {
      for (String dc : DCS) {
        assertReadEqualsLog(dc, r);
        assertScanEqualsLog(dc, r);
      }
    }
    for (long r = 0; r <= w; r++) {
      assertTooOld(net.transport("client").request("B", new ReadRequest(G, r, KEYS), WAIT)
          .get(20, TimeUnit.SECONDS));
      assertTooOld(net.transport("client").request("C", new Message.ScanRequest(G, r,
          org.paxoscp.wal.KeyRange.ALL, 100, false), WAIT).get(20, TimeUnit.SECONDS));
    }
    for (long p = 1; p <= w; p++) {
      assertTooOld(paxos("A", new PaxosMessage.Learn(G, p)));
      assertTooOld(paxos("B", new PaxosMessage.Prepare(G, p, Ballot.of(99, 99))));
      assertTooOld(paxos("C", new PaxosMessage.Accept(G, p, Ballot.FAST, LogValue.NOOP)));
      assertTooOld(paxos("A", new PaxosMessage.GrantRequest(G, p, "C")));
    }
    // Nothing of the refused requests was written: the collected rows stay gone.
    for (String dc : DCS) {
      assertEquals(RETENTION, stores.get(dc).census(KvStore.Table.WAL).rows());
    }
    // The log goes on above the watermark.
    commitRandom(rng, 3);
    awaitApplied(DCS, 27);
    assertReadEqualsLog("C", 27);
  }

  @Test
  void aDcThatWasAwayComesBackBecauseTheWatermarkWaitedForIt() throws Exception {
    SplittableRandom rng = new SplittableRandom(11);
    commitRandom(rng, 8);
    awaitApplied(DCS, 8);
    net.setDown("C", true);
    cDown = true;
    commitRandom(rng, 22);
    awaitApplied(List.of("A", "B"), 30);
    assertEquals(8, new LogApplier(stores.get("C")).appliedWatermark(G));

    // While C does not answer, a round does nothing: the watermark waits for every DC.
    for (String dc : List.of("A", "B")) {
      GroupCollector.Round r = collectors.get(dc).collectNow(G).get(20, TimeUnit.SECONDS);
      assertEquals(-1, r.minApplied(), "C cannot have answered");
      assertEquals(0, LogCollector.gcWatermark(stores.get(dc), G));
      assertEquals(30, stores.get(dc).census(KvStore.Table.WAL).rows());
    }

    // C returns and is asked for read position 30: it learns 9..30 from its peers' WALs.
    net.setDown("C", false);
    cDown = false;
    Message m = net.transport("client").request("C", new BeginRequest(G, 30), WAIT)
        .get(20, TimeUnit.SECONDS);
    assertEquals(30, assertInstanceOf(BeginReply.class, m, String.valueOf(m)).position());
    assertEquals(0, catchUps.get("C").learnedByInstance(), "nothing may be decided again");
    for (long r = 9; r <= 30; r++) {
      assertReadEqualsLog("C", r);
    }

    // Now every DC answers, and collection proceeds everywhere.
    for (String dc : DCS) {
      GroupCollector.Round r = collectors.get(dc).collectNow(G).get(20, TimeUnit.SECONDS);
      assertEquals(30 - RETENTION, r.gcWatermark(), "watermark at " + dc);
      assertEquals(RETENTION, stores.get(dc).census(KvStore.Table.WAL).rows());
    }
    for (long r = 30 - RETENTION + 1; r <= 30; r++) {
      assertReadEqualsLog("C", r);
    }
  }

  /**
   * The bound on the wait: once the DCs that answer are more than the maximum lag ahead of what a
   * silent DC last reported, collection goes on without it. The DC left behind then stays safe —
   * its peers refuse its learn requests at collected positions with TOO_OLD, so it decides
   * nothing again and never serves a read position it could not apply — but it cannot catch up.
   */
  @Test
  void theWaitForASilentDcIsBoundedAndTheDcLeftBehindStaysSafe() throws Exception {
    SplittableRandom rng = new SplittableRandom(13);
    commitRandom(rng, 8);
    awaitApplied(DCS, 8);
    List<GroupCollector> bounded = new ArrayList<>();
    try {
      for (String dc : List.of("A", "B")) {
        bounded.add(new GroupCollector(dc, DCS, stores.get(dc), net.transport(dc),
            new GroupCollector.Settings(RETENTION, 1_000_000, 1000, REQUEST_TIMEOUT, 10),
            Scheduler.of(timers)));
      }
      // A round while every DC answers: A and B record that C applied 8.
      for (GroupCollector g : bounded) {
        assertEquals(8, g.collectNow(G).get(20, TimeUnit.SECONDS).minApplied());
      }
      net.setDown("C", true);
      cDown = true;
      commitRandom(rng, 6);
      awaitApplied(List.of("A", "B"), 14);
      // 14 - 8 = 6 positions ahead of C: within the bound, the rounds wait.
      for (GroupCollector g : bounded) {
        assertEquals(-1, g.collectNow(G).get(20, TimeUnit.SECONDS).minApplied());
      }
      commitRandom(rng, 16);
      awaitApplied(List.of("A", "B"), 30);
      // 30 - 8 = 22 > 10: collection goes on without C.
      for (int i = 0; i < bounded.size(); i++) {
        GroupCollector.Round r = bounded.get(i).collectNow(G).get(20, TimeUnit.SECONDS);
        assertEquals(30, r.minApplied());
        assertEquals(30 - RETENTION, r.gcWatermark());
        assertEquals(RETENTION, stores.get(List.of("A", "B").get(i)).census(KvStore.Table.WAL)
            .rows());
      }
      net.setDown("C", false);
      cDown = false;
      // C cannot learn 9..26 any more: asked for read position 30, it refuses rather than serve
      // a position it could not apply, and decides nothing.
      Message m = net.transport("client").request("C", new BeginRequest(G, 30), WAIT)
          .get(30, TimeUnit.SECONDS);
      assertInstanceOf(Message.ErrorReply.class, m, String.valueOf(m));
      assertEquals(8, new LogApplier(stores.get("C")).appliedWatermark(G));
      for (long p = 9; p <= 30 - RETENTION; p++) {
        assertTrue(new org.paxoscp.paxos.Acceptor(stores.get("C")).chosen(G, p).isEmpty(),
            "C decided collected position " + p);
      }
      // A and B go on serving every read position above the watermark.
      for (long r = 30 - RETENTION + 1; r <= 30; r++) {
        assertReadEqualsLog("A", r);
      }
    } finally {
      bounded.forEach(GroupCollector::close);
    }
  }

  /**
   * Cross-group transactions (docs/cross-group.md, "Garbage collection"): the lock table lives
   * beside the applied watermark, not in log positions, so the GC watermark may pass an
   * unresolved PREPARE; the lock stays in what a begin hands out, and a later RESOLVE(COMMIT)
   * still applies the prepared write.
   */
  @Test
  void aWatermarkPastAnUnresolvedPrepareKeepsItsLockAndItsWrite() throws Exception {
    List<String> groups = List.of("coordinator/1", G);
    TreeMap<String, Mutation> prepared = new TreeMap<>(Map.of("k0",
        Mutation.put("prepared".getBytes(StandardCharsets.UTF_8))));
    Outcome p = commit("A", new LogEntry("t-prepare", "A", 0, new TreeSet<>(), prepared,
        XgStep.prepare("T", groups, Long.MAX_VALUE / 2)), 0);
    assertEquals(1, p.position());
    for (int i = 1; i <= 20; i++) {
      // Keys other than k0: the lock rule would refuse k0 while T holds it.
      commit(DCS.get(i % 3), new LogEntry("t" + ids.incrementAndGet(), "A", i, new TreeSet<>(),
          new TreeMap<>(Map.of(KEYS.get(1 + i % 4), Mutation.put(new byte[] {(byte) i})))), i);
    }
    awaitApplied(DCS, 21);
    for (String dc : DCS) {
      GroupCollector.Round r = collectors.get(dc).collectNow(G).get(20, TimeUnit.SECONDS);
      assertEquals(21 - RETENTION, r.gcWatermark(), "the watermark passed the PREPARE at 1");
      assertEquals(RETENTION, stores.get(dc).census(KvStore.Table.WAL).rows());
      BeginReply b = assertInstanceOf(BeginReply.class, net.transport("client")
          .request(dc, new BeginRequest(G, 21), WAIT).get(20, TimeUnit.SECONDS));
      assertEquals(1, b.locks().lockOf("T").orElseThrow().position(),
          "the lock outlives its collected position at " + dc);
    }
    Outcome resolved = commit("B", new LogEntry("t-resolve", "B", 21, new TreeSet<>(),
        new TreeMap<>(Map.of("k0", Mutation.put(new byte[0]))),
        XgStep.resolve("T", groups, true)), 21);
    awaitApplied(DCS, resolved.position());
    for (String dc : DCS) {
      ReadReply r = assertInstanceOf(ReadReply.class, net.transport("client").request(dc,
          new ReadRequest(G, resolved.position(), List.of("k0")), WAIT)
          .get(20, TimeUnit.SECONDS));
      assertArrayEquals("prepared".getBytes(StandardCharsets.UTF_8), r.values().get("k0"),
          "the prepared value, applied by the RESOLVE at " + dc);
      BeginReply b = assertInstanceOf(BeginReply.class, net.transport("client")
          .request(dc, new BeginRequest(G, resolved.position()), WAIT)
          .get(20, TimeUnit.SECONDS));
      assertTrue(b.locks().isEmpty(), "released at " + dc + ": " + b.locks());
    }
  }

  // ---- helpers ------------------------------------------------------------------------------

  /** Commits {@code n} transactions of two random writes (some deletes) from random DCs. */
  private void commitRandom(SplittableRandom rng, int n) throws Exception {
    for (int i = 0; i < n; i++) {
      long readPosition = log.isEmpty() ? 0 : log.lastKey();
      Map<String, String> writes = new HashMap<>();
      for (int j = 0; j < 2; j++) {
        String k = KEYS.get(rng.nextInt(KEYS.size()));
        writes.put(k, rng.nextInt(5) == 0 ? null : "v" + (readPosition + 1) + "-" + j);
      }
      String dc = cDown ? DCS.get(rng.nextInt(2)) : DCS.get(rng.nextInt(3));
      Outcome o = commit(dc, readPosition, writes);
      assertEquals(readPosition + 1, o.position(), "one client at a time: no promotion");
      log.put(o.position(), writes);
    }
  }

  private Outcome commit(String dc, long readPosition, Map<String, String> writes)
      throws Exception {
    TreeMap<String, Mutation> w = new TreeMap<>();
    writes.forEach((k, v) -> w.put(k, v == null ? Mutation.delete()
        : Mutation.put(v.getBytes(StandardCharsets.UTF_8))));
    LogEntry e = new LogEntry("t" + ids.incrementAndGet(), dc, readPosition, new TreeSet<>(), w);
    return commit(dc, e, readPosition);
  }

  private Outcome commit(String dc, LogEntry e, long readPosition) throws Exception {
    Proposer p = new Proposer(cfg, G, ProposerId.of(ids.incrementAndGet()), e, readPosition + 1,
        OptionalInt.empty(), new SplittableRandom(ids.get()));
    Outcome o = clients.get(dc).run(p).get(20, TimeUnit.SECONDS);
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
    return o;
  }

  /** The state the log defines at read position {@code r}, computed from the log alone. */
  private Map<String, String> stateAt(long r) {
    Map<String, String> state = new HashMap<>();
    for (Map<String, String> writes : log.headMap(r, true).values()) {
      writes.forEach((k, v) -> {
        if (v == null) {
          state.remove(k);
        } else {
          state.put(k, v);
        }
      });
    }
    return state;
  }

  private void assertReadEqualsLog(String dc, long r) throws Exception {
    Message m = net.transport("client").request(dc, new ReadRequest(G, r, KEYS), WAIT)
        .get(20, TimeUnit.SECONDS);
    ReadReply reply = assertInstanceOf(ReadReply.class, m, "read at " + r + " at " + dc + ": "
        + m);
    Map<String, String> expected = stateAt(r);
    assertEquals(expected.keySet(), reply.values().keySet(), "keys at " + r + " at " + dc);
    for (var e : expected.entrySet()) {
      assertArrayEquals(e.getValue().getBytes(StandardCharsets.UTF_8),
          reply.values().get(e.getKey()), "key " + e.getKey() + " at " + r + " at " + dc);
    }
  }

  /** A scan of the whole group at {@code r} lists exactly the state the log gives there. */
  private void assertScanEqualsLog(String dc, long r) throws Exception {
    Message m = net.transport("client").request(dc, new Message.ScanRequest(G, r,
        org.paxoscp.wal.KeyRange.ALL, 100, false), WAIT).get(20, TimeUnit.SECONDS);
    Message.ScanReply reply = assertInstanceOf(Message.ScanReply.class, m, "scan at " + r
        + " at " + dc + ": " + m);
    assertTrue(reply.complete());
    Map<String, String> scanned = new java.util.TreeMap<>();
    reply.items().forEach(i -> scanned.put(i.key(), new String(i.value(),
        StandardCharsets.UTF_8)));
    assertEquals(new java.util.TreeMap<>(stateAt(r)), scanned, "scan at " + r + " at " + dc);
  }

  private Message paxos(String dc, PaxosMessage m) throws Exception {
    return net.transport("client").request(dc, new Message.Paxos(m), WAIT)
        .get(20, TimeUnit.SECONDS);
  }

  private static void assertTooOld(Message m) {
    ErrorReply e = assertInstanceOf(ErrorReply.class, m, String.valueOf(m));
    assertEquals(ErrorCode.TOO_OLD, e.code(), e.detail());
  }

  private void awaitApplied(List<String> dcs, long position) {
    for (String dc : dcs) {
      Poll.until("DC " + dc + " applied " + position, WAIT,
          () -> new LogApplier(stores.get(dc)).applyKnown(G) >= position);
    }
  }
}
