package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.SnapshotRequest;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * Rebuilding a group that holds large unresolved PREPAREs (issue 44; docs/rebuilding.md, "Lock
 * pages"), on three in-process services whose every message travels in one sealed datagram of
 * 60,000 bytes, as over UDP. A PREPARE writing one 40,000-byte value whose client crashed before
 * its DECIDE, with nothing after it in the group: the chosen value at the copied position (the
 * PREPARE) and the lock table (the same value again) do not fit one snapshot page together.
 * Below cluster version 7 the rebuild fails every time (the format before, kept); from it the
 * table comes in lock pages and the group is rebuilt with exactly the peer's table, which a
 * reader then resolves at the rebuilt DC too.
 */
@Timeout(120)
class RebuildPastLargeLocksTest {
  private static final List<String> DCS = InProcessCluster.DCS;
  private static final int DATAGRAM = 60_000;
  private static final String COORDINATOR = "ga";
  private static final String G = "gb";
  private static final List<String> GROUPS = List.of(COORDINATOR, G);
  private static final Duration WAIT = Duration.ofSeconds(30);
  /** The DC whose store is lost and rebuilt; A is the peer it copies from. */
  private static final String LOST = "C";

  private final InProcessCluster cluster = new InProcessCluster(Duration.ofSeconds(1), DATAGRAM);
  private final InProcessTransport client;
  private final SplittableRandom random = new SplittableRandom(44);
  private long nextId = 1;
  /** The snapshot requests DC A served. */
  private final Queue<SnapshotRequest> snapshots = new ConcurrentLinkedQueue<>();

  RebuildPastLargeLocksTest() {
    cluster.network.limitDatagrams(DATAGRAM);
    client = cluster.network.transport("A");
    observeSnapshots(() -> { });
  }

  @AfterEach
  void close() {
    cluster.close();
  }

  @Test
  void aLargePrepareLeftByACrashedClientIsRebuiltPastInLockPagesAndResolvedThere() {
    for (String k : List.of("a", "b", "c")) {
      put(k, bytes(100));
    }
    // The client crashed after its PREPARE: no DECIDE, no RESOLVE, no later traffic in G.
    byte[] big = bytes(40_000);
    long prepared = prepare("T-crashed", "big", big, System.currentTimeMillis() + 200);
    awaitApplied(G, prepared, DCS);
    LogApplier.AppliedState atA = appliedState("A", G);
    assertEquals(1, atA.locks().size());
    assertTrue(atA.locks().encode().length > 40_000, "the lock table holds the value");
    cluster.stores.get(LOST).wipe();

    // Below the gate the rebuild asks as before, and the first page does not fit a datagram;
    // running it again does not help.
    setVersion(LOST, ClusterVersion.XG_ONE_ROUND);
    for (int i = 0; i < 2; i++) {
      Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class, rebuild(G));
      assertEquals(Message.ErrorCode.CATCH_UP_FAILED, e.code());
      assertTrue(e.detail().contains("TOO_LARGE"), e.detail());
    }
    assertTrue(snapshots.stream().allMatch(q -> q.locksAfter() == null),
        "no request in lock pages below cluster version 7: " + snapshots);
    assertEquals(Message.ErrorCode.REBUILDING, assertInstanceOf(Message.ErrorReply.class,
        ask(LOST, new Message.BeginRequest(G, 0))).code(), "not rebuilt");

    snapshots.clear();
    setVersion(LOST, ClusterVersion.SNAPSHOT_LOCK_PAGES);
    Message.RebuildReply r = assertInstanceOf(Message.RebuildReply.class, rebuild(G));
    assertEquals("REBUILT", r.outcome());
    assertEquals(prepared, r.position());
    assertEquals(atA, appliedState(LOST, G), "exactly the peer's lock table, value included");
    assertTrue(snapshots.stream().anyMatch(SnapshotRequest::lockPage),
        "the lock on a page of its own: " + snapshots);
    assertSameReads(G, prepared, List.of("a", "b", "c", "big"));

    // A reader meets the lock past its deadline: it decides ABORT and resolves; the rebuilt DC
    // applies the RESOLVE to the table it copied.
    commit(COORDINATOR, rp -> decide("T-crashed", rp, false));
    long resolved = commit(G, rp -> resolve("T-crashed", rp, false, Map.of()));
    awaitApplied(G, resolved, DCS);
    assertTrue(appliedState(LOST, G).locks().isEmpty(), "resolved at the rebuilt DC too");
    assertSameReads(G, resolved, List.of("a", "b", "c", "big"));
    assertFalse(read(LOST, G, resolved, "big").values().containsKey("big"),
        "an aborted PREPARE's write never becomes visible");
  }

  /**
   * Two large PREPAREs, neither client crashed, both undecided when the group is copied: each
   * lock alone fits a datagram, the two do not. Their RESOLVEs after the rebuild write, at the
   * rebuilt DC, the values it copied with the locks.
   */
  @Test
  void twoConcurrentLargePreparesAreCopiedOnLockPagesOfTheirOwn() {
    put("a", bytes(10));
    byte[] one = bytes(40_000);
    byte[] two = bytes(40_000);
    long deadline = System.currentTimeMillis() + 60_000;
    prepare("T1", "x1", one, deadline);
    long last = prepare("T2", "x2", two, deadline);
    awaitApplied(G, last, DCS);
    cluster.stores.get(LOST).wipe();

    Message.RebuildReply r = assertInstanceOf(Message.RebuildReply.class, rebuild(G));
    assertEquals("REBUILT", r.outcome());
    assertEquals(appliedState("A", G), appliedState(LOST, G));
    assertEquals(2, appliedState(LOST, G).locks().size());
    assertEquals(2, snapshots.stream().filter(SnapshotRequest::lockPage).count(),
        "one lock page per lock (the first page holds the chosen value): " + snapshots);

    long end = 0;
    for (String t : List.of("T1", "T2")) {
      commit(COORDINATOR, rp -> decide(t, rp, true));
      String key = t.equals("T1") ? "x1" : "x2";
      byte[] value = t.equals("T1") ? one : two;
      end = commit(G, rp -> resolve(t, rp, true, Map.of(key, value)));
    }
    awaitApplied(G, end, DCS);
    assertTrue(appliedState(LOST, G).locks().isEmpty());
    assertArrayEquals(one, read(LOST, G, end, "x1").values().get("x1"));
    assertArrayEquals(two, read(LOST, G, end, "x2").values().get("x2"));
  }

  /**
   * The peer's lock table changes between two lock pages (a transaction resolved meanwhile): the
   * pages' digests differ, nothing of the first table is installed, and the copy starts again at
   * the newer position.
   */
  @Test
  void aLockTableThatChangesBetweenLockPagesIsCopiedAgainAtANewerPosition() {
    byte[] one = bytes(40_000);
    long deadline = System.currentTimeMillis() + 60_000;
    prepare("T1", "x1", one, deadline);
    long last = prepare("T2", "x2", bytes(40_000), deadline);
    awaitApplied(G, last, DCS);
    cluster.stores.get(LOST).wipe();
    AtomicBoolean resolvedMeanwhile = new AtomicBoolean();
    long[] resolvedAt = new long[1];
    observeSnapshots(() -> {
      if (!resolvedMeanwhile.getAndSet(true)) {
        // Before the first lock page is answered, T1 commits and is resolved.
        commit(COORDINATOR, rp -> decide("T1", rp, true));
        resolvedAt[0] = commit(G, rp -> resolve("T1", rp, true, Map.of("x1", one)));
        awaitApplied(G, resolvedAt[0], List.of("A", "B"));
      }
    });

    Message.RebuildReply r = assertInstanceOf(Message.RebuildReply.class, rebuild(G));
    assertEquals("REBUILT", r.outcome());
    assertTrue(resolvedMeanwhile.get());
    assertEquals(resolvedAt[0], r.position(), "copied again at the newer position");
    assertEquals(2, snapshots.stream().filter(q -> q.position() == 0).count(),
        "two first pages: " + snapshots);
    LogApplier.AppliedState rebuilt = appliedState(LOST, G);
    assertEquals(appliedState("A", G), rebuilt);
    assertEquals(List.of("T2"), rebuilt.locks().locks().stream().map(XgLocks.Lock::txn)
        .toList());
    assertArrayEquals(one, read(LOST, G, r.position(), "x1").values().get("x1"));
  }

  /** A peer below cluster version 7 refuses a request in lock pages; from it, it answers one. */
  @Test
  void lockPagesAreRefusedBelowTheirClusterVersion() {
    prepare("T1", "x1", bytes(100), System.currentTimeMillis() + 60_000);
    setVersion("A", ClusterVersion.XG_ONE_ROUND);
    Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class,
        ask("A", new SnapshotRequest(G, 0, "", "")));
    assertEquals(Message.ErrorCode.BAD_REQUEST, e.code());
    assertTrue(e.detail().contains("snapshot-lock-pages"), e.detail());
    Message.SnapshotReply old = assertInstanceOf(Message.SnapshotReply.class,
        ask("A", new SnapshotRequest(G, 0, "")));
    assertEquals(null, old.locksDigest(), "the format before: the whole table");
    assertEquals(1, old.locks().size());

    setVersion("A", ClusterVersion.SNAPSHOT_LOCK_PAGES);
    Message.SnapshotReply paged = assertInstanceOf(Message.SnapshotReply.class,
        ask("A", new SnapshotRequest(G, 0, "", "")));
    assertNotNull(paged.locksDigest());
    assertEquals(old.locks(), paged.locks(), "a small table fits the first page");
    assertFalse(paged.locksMore());
  }

  // ---- the cluster ------------------------------------------------------------------------

  /** Serves A's requests through the observed service, recording snapshot requests. */
  private void observeSnapshots(Runnable beforeLockPage) {
    ObservedService a = cluster.services.get("A");
    cluster.network.register("A", (from, m) -> {
      if (m instanceof SnapshotRequest q) {
        snapshots.add(q);
        if (q.lockPage()) {
          try {
            beforeLockPage.run();
          } catch (Throwable t) {
            // (An assertion failing here would otherwise only end the transport's worker.)
            return java.util.concurrent.CompletableFuture.failedFuture(
                new IllegalStateException("before the lock page: " + t, t));
          }
        }
      }
      return a.handle(from, m);
    });
  }

  private void setVersion(String dc, int version) {
    cluster.services.get(dc).service().followClusterVersion(() -> version);
  }

  /** Asks DC C to rebuild {@code group} from DC A, as {@code paxoscp dc rebuild} does. */
  private Message rebuild(String group) {
    return cluster.services.get(LOST).handle(LOST, new Message.RebuildRequest(group, "A", LOST,
        "", false)).join();
  }

  private Message ask(String dc, Message m) {
    return client.request(dc, m, WAIT).join();
  }

  /** The applied watermark and lock table in DC {@code dc}'s store. */
  private LogApplier.AppliedState appliedState(String dc, String group) {
    return new LogApplier(cluster.stores.get(dc)).appliedState(group);
  }

  private Message.ReadReply read(String dc, String group, long position, String... keys) {
    return assertInstanceOf(Message.ReadReply.class,
        ask(dc, new Message.ReadRequest(group, position, List.of(keys))));
  }

  private void assertSameReads(String group, long position, List<String> keys) {
    for (String k : keys) {
      Message.ReadReply here = read(LOST, group, position, k);
      Message.ReadReply there = read("A", group, position, k);
      assertEquals(there.versions(), here.versions(), k);
      assertArrayEquals(there.values().get(k), here.values().get(k), k);
    }
  }

  /** Waits (bounded) until every DC of {@code dcs} applied {@code group} up to {@code p}. */
  private void awaitApplied(String group, long p, List<String> dcs) {
    for (String dc : dcs) {
      Poll.until("DC " + dc + " applies " + group + " " + p, Duration.ofSeconds(30),
          () -> appliedState(dc, group).position() >= p);
    }
  }

  // ---- entries ----------------------------------------------------------------------------

  private byte[] bytes(int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) {
      b[i] = (byte) random.nextInt(256);
    }
    return b;
  }

  private String id() {
    return "e" + nextId++;
  }

  private void put(String key, byte[] value) {
    long p = commit(G, rp -> new LogEntry(id(), "A", rp, new TreeSet<>(),
        new TreeMap<>(Map.of(key, Mutation.put(value)))));
    awaitApplied(G, p, DCS);
  }

  /** A PREPARE in {@link #G} of a transaction over {@link #GROUPS}, writing one value. */
  private long prepare(String txn, String key, byte[] value, long deadlineMillis) {
    return commit(G, rp -> new LogEntry(id(), "A", rp, new TreeSet<>(),
        new TreeMap<>(Map.of(key, Mutation.put(value))),
        XgStep.prepare(txn, GROUPS, deadlineMillis)));
  }

  /** The DECIDE in the coordinator: reads and writes the decision key. */
  private LogEntry decide(String txn, long rp, boolean commit) {
    String dk = XgStep.decisionKey(txn);
    return new LogEntry(id(), "A", rp, new TreeSet<>(List.of(dk)), new TreeMap<>(Map.of(dk,
        Mutation.put(commit ? XgStep.COMMIT_VALUE : XgStep.ABORT_VALUE))),
        XgStep.decide(txn, GROUPS, commit));
  }

  /** A RESOLVE: for COMMIT, with a copy of the prepared writes. */
  private LogEntry resolve(String txn, long rp, boolean commit, Map<String, byte[]> writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    writes.forEach((k, v) -> w.put(k, Mutation.put(v)));
    return new LogEntry(id(), "A", rp, new TreeSet<>(), w, XgStep.resolve(txn, GROUPS, commit));
  }

  /**
   * Commits the entry built for the read position DC A gives (Paxos-CP, through the datagram
   * network; DC C, fenced while rebuilt, refuses its votes); returns the position chosen.
   */
  private long commit(String group, LongFunction<LogEntry> entryAt) {
    Message.BeginReply b = assertInstanceOf(Message.BeginReply.class,
        ask("A", new Message.BeginRequest(group, 0)));
    OptionalInt leader = b.leaderDc().isEmpty() ? OptionalInt.empty()
        : OptionalInt.of(DCS.indexOf(b.leaderDc()));
    long id = nextId++;
    Outcome o = run(new Proposer(ProposerConfig.defaults(Protocol.CP, DCS), group,
        ProposerId.of(id), entryAt.apply(b.position()), b.position() + 1, leader,
        new SplittableRandom(id)));
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
    return o.position();
  }

  /**
   * Drives {@code p} to its outcome on this thread, each message a request over the network;
   * a timer fires as soon as nothing is in flight. APPLYs go one way.
   */
  private Outcome run(Proposer p) {
    Deque<Proposer.Output> queue = new ArrayDeque<>(p.start(micros()));
    long timer = -1;
    while (!p.isDone()) {
      if (queue.isEmpty()) {
        assertTrue(timer >= 0, "the proposer waits with no timer set");
        queue.addAll(p.onTimer(timer, micros()));
        continue;
      }
      Proposer.Output o = queue.poll();
      if (o instanceof Proposer.Output.StartTimer t) {
        timer = t.timerId();
      } else if (o instanceof Proposer.Output.Send s) {
        String dc = DCS.get(s.dc());
        if (s.message() instanceof PaxosMessage.Apply) {
          client.send(dc, new Message.Paxos(s.message()));
          continue;
        }
        Message reply = client.request(dc, new Message.Paxos(s.message()), WAIT)
            .exceptionally(t -> null).join();
        if (reply instanceof Message.Paxos x) {
          queue.addAll(p.onReply(s.dc(), x.message(), micros()));
        }
      }
    }
    for (Proposer.Output o : queue) {
      if (o instanceof Proposer.Output.Send s && s.message() instanceof PaxosMessage.Apply) {
        client.send(DCS.get(s.dc()), new Message.Paxos(s.message()));
      }
    }
    return p.outcome();
  }

  private static long micros() {
    return System.nanoTime() / 1000;
  }
}
