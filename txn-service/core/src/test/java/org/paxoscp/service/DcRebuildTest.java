package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

/**
 * Rebuilding a DC through its service's rebuild requests (docs/architecture.md section 12), on
 * three in-process DCs: a DC that lost its store, and one that fell behind past its peers' GC
 * watermark. After the rebuild the DC reads what its peers read, refuses votes at or below its
 * fence, and takes part in commits again.
 */
class DcRebuildTest {
  private static final List<String> DCS = List.of("V1", "V2", "O");
  private static final String G = "accounts";
  private static final List<String> KEYS = List.of("a", "b", "c", "d", "e");

  private final List<InMemoryKvStore> stores = new ArrayList<>();
  private InProcessDcs dcs;
  private long nextId = 1;

  DcRebuildTest() {
    for (int i = 0; i < DCS.size(); i++) {
      stores.add(new InMemoryKvStore());
    }
    dcs = new InProcessDcs(DCS, stores);
  }

  @AfterEach
  void close() {
    dcs.close();
  }

  /** Restarts every service (fresh memory, the stores kept). */
  private void restart() {
    dcs.close();
    dcs = new InProcessDcs(DCS, stores);
  }

  private Message ask(int dc, Message m) {
    return dcs.service(dc).handle(DCS.get(dc), m).join();
  }

  private long readPosition(int dc) {
    return ((Message.BeginReply) ask(dc, new Message.BeginRequest(G, 0))).position();
  }

  /** Writes key {@code k} = "v{n}" in one transaction begun at DC {@code from}. */
  private void commit(int from, String k) {
    Message.BeginReply begin = (Message.BeginReply) ask(from, new Message.BeginRequest(G, 0));
    String txn = "t" + nextId;
    LogEntry e = new LogEntry(txn, DCS.get(from), begin.position(), new TreeSet<>(),
        new TreeMap<>(java.util.Map.of(k, Mutation.put(("v" + nextId)
            .getBytes(StandardCharsets.UTF_8)))));
    OptionalInt leader = begin.leaderDc().isEmpty() ? OptionalInt.empty()
        : OptionalInt.of(DCS.indexOf(begin.leaderDc()));
    Outcome o = dcs.run(new Proposer(ProposerConfig.defaults(Protocol.CP, DCS), G,
        ProposerId.of(nextId++), e, begin.position() + 1, leader, new SplittableRandom(nextId)));
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
  }

  private Message.ReadReply read(int dc, long position) {
    return (Message.ReadReply) ask(dc, new Message.ReadRequest(G, position, KEYS));
  }

  /** Collects the group at DC {@code dc} up to {@code watermark}. */
  private void collect(int dc, long watermark) {
    LogCollector c = new LogCollector(stores.get(dc));
    c.advance(G, watermark);
    c.collect(G, Integer.MAX_VALUE, (p, v) -> { });
  }

  private void assertSameReads(int dc, long position) {
    Message.ReadReply here = read(dc, position);
    Message.ReadReply there = read(0, position);
    assertEquals(there.versions(), here.versions(), "versions at " + position);
    assertEquals(there.values().keySet(), here.values().keySet());
    there.values().forEach((k, v) -> assertArrayEquals(v, here.values().get(k), k));
  }

  @Test
  void aDcThatLostItsStoreIsRebuiltAndVotesOnlyAboveItsFence() {
    for (int i = 0; i < 30; i++) {
      commit(i % 2, KEYS.get(i % KEYS.size()));
    }
    collect(0, 20);
    collect(1, 20);
    stores.get(2).wipe();
    restart();

    Message refused = ask(2, new Message.BeginRequest(G, 0));
    assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) refused).code(),
        "a group not rebuilt is not served");
    // Meanwhile the others commit without it.
    commit(0, "a");

    Message.RebuildReply r = (Message.RebuildReply) ask(2,
        new Message.RebuildRequest(G, "", "O", "", false));
    assertEquals("REBUILT", r.outcome());
    assertEquals(31, r.position(), "copied at what the richest peer applied");
    assertEquals(31 + DcRebuild.FENCE_MARGIN, r.fence(), "the peers' highest position + margin");
    assertEquals(KEYS.size(), r.items(), "one version per key");
    assertEquals("ALREADY_REBUILT", ((Message.RebuildReply) ask(2,
        new Message.RebuildRequest(G, "", "O", "", false))).outcome(), "resumable: done once");

    assertEquals(31, readPosition(2));
    assertSameReads(2, 31);
    Message tooOld = ask(2, new Message.ReadRequest(G, 30, KEYS));
    assertEquals(Message.ErrorCode.TOO_OLD, ((Message.ErrorReply) tooOld).code(),
        "below the copied position is collected here");

    // Fenced: no promise at or below 35, one above.
    Message p35 = ask(2, new Message.Paxos(new PaxosMessage.Prepare(G, 35, Ballot.of(9, 9))));
    assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) p35).code());
    Message p36 = ask(2, new Message.Paxos(new PaxosMessage.Prepare(G, 36, Ballot.of(9, 9))));
    assertTrue(((PaxosMessage.PrepareReply) ((Message.Paxos) p36).message()).promised());

    // Other groups stay refused until the store is declared rebuilt; then they are new here.
    assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) ask(2,
        new Message.BeginRequest("other", 0))).code());
    assertEquals("COMPLETE", ((Message.RebuildReply) ask(2,
        new Message.RebuildRequest("", "", "O", r.rebuildId(), true))).outcome());
    assertEquals(StoreMarker.State.SERVING, StoreMarker.read(stores.get(2)).orElseThrow().state());

    // The rebuilt DC takes part again: commits from it, and it learns what it missed.
    for (int i = 0; i < 6; i++) {
      commit(2, KEYS.get(i % KEYS.size()));
    }
    assertSameReads(2, readPosition(0));
  }

  @Test
  void aLostStoreIsNotRebuiltWithoutAnswersFromEveryPeerAMajorityMayNeed() {
    for (int i = 0; i < 8; i++) {
      commit(i % 2, KEYS.get(i % KEYS.size()));
    }
    stores.get(2).wipe();
    restart();
    stores.get(1).setAvailable(false);
    Message.ErrorReply e = (Message.ErrorReply) ask(2, new Message.RebuildRequest(G, "", "O", "", false));
    assertEquals(Message.ErrorCode.CATCH_UP_FAILED, e.code());
    assertTrue(e.detail().contains("1 of 2 peers answered") && e.detail().contains("needs 2"),
        e.detail());
    assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) ask(2,
        new Message.BeginRequest(G, 0))).code(), "still not served");
    stores.get(1).setAvailable(true);
    assertEquals("REBUILT", ((Message.RebuildReply) ask(2,
        new Message.RebuildRequest(G, "", "O", "", false))).outcome());
    assertSameReads(2, readPosition(0));
  }

  @Test
  void aDcBehindItsPeersGcWatermarkIsRebuiltWithoutAFence() {
    commit(0, "a");
    stores.get(2).setAvailable(false);
    for (int i = 0; i < 20; i++) {
      commit(i % 2, KEYS.get(i % KEYS.size()));
    }
    collect(0, 15);
    collect(1, 15);
    stores.get(2).setAvailable(true);
    restart();
    Message behind = ask(2, new Message.BeginRequest(G, 21));
    assertEquals(Message.ErrorCode.CATCH_UP_FAILED, ((Message.ErrorReply) behind).code(),
        "its peers collected what it lacks: " + behind);

    Message.RebuildReply r = (Message.RebuildReply) ask(2,
        new Message.RebuildRequest(G, "V1", "O", "", false));
    assertEquals("REBUILT", r.outcome());
    assertEquals(0, r.fence(), "it kept its acceptor state: no fence");
    assertEquals("V1", r.source());
    assertEquals(21, readPosition(2));
    assertSameReads(2, 21);
    commit(2, "b");
    assertSameReads(2, readPosition(0));
  }
}
