package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * A rebuild's completion recorded on the wire and delivered again, after the DC's store was lost
 * once more and a new rebuild began (docs/rebuilding.md, docs/architecture.md section 13): the
 * store acts on a completion only while it is being rebuilt under the id the completion names, so
 * the copy changes nothing. Planted: a store that ends any rebuild under way (the completion
 * without the instance check) lets the DC vote with wiped state, and a vote oracle over the ACCEPTs
 * finds two values chosen at one position.
 */
class RebuildCompletionReplayTest {
  private static final List<String> DCS = List.of("V1", "V2", "O");
  private static final String G = "accounts";

  private final List<InMemoryKvStore> memory = new ArrayList<>();
  private final List<KvStore> stores = new ArrayList<>();
  private InProcessDcs dcs;
  private long nextId = 1;
  /** Accepted votes per position: value by ballot by DC (the oracle's record). */
  private final Map<Long, Map<Ballot, Map<LogValue, Set<Integer>>>> votes = new HashMap<>();

  private void start(boolean planted) {
    for (int i = 0; i < DCS.size(); i++) {
      InMemoryKvStore m = new InMemoryKvStore();
      memory.add(m);
      stores.add(planted && i == 2 ? new CompletionWithoutInstanceCheck(m) : m);
    }
    dcs = new InProcessDcs(DCS, stores);
  }

  @AfterEach
  void close() {
    if (dcs != null) {
      dcs.close();
    }
  }

  @Test
  void anOldCompletionDeliveredAgainAfterTheStoreWasLostAgainChangesNothing() {
    start(false);
    Set<LogValue> chosen = replayOldCompletion(msg -> {
      Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class, msg, "refused");
      assertEquals(Message.ErrorCode.BAD_REQUEST, e.code());
      assertTrue(e.detail().contains("not being rebuilt under rebuild"), e.detail());
      assertEquals(StoreMarker.State.REBUILDING,
          StoreMarker.read(memory.get(2)).orElseThrow().state(), "still being rebuilt");
    });
    assertEquals(1, chosen.size(), "one value chosen at the position: " + chosen);
  }

  @Test
  void plantedCompletionWithoutTheInstanceCheckIsCaughtByTheVoteOracle() {
    start(true);
    Set<LogValue> chosen = replayOldCompletion(msg -> assertInstanceOf(
        Message.RebuildReply.class, msg, "the planted store takes the old completion"));
    assertEquals(2, chosen.size(), "the oracle finds two values chosen at one position");
  }

  /**
   * The interleaving: a rebuild of O completes (its completion recorded); value v is chosen at
   * position p by V1 and O; O's store is lost again and a new rebuild begins; the recorded
   * completion arrives; a proposer at a higher ballot asks V2 and O. Returns the values the
   * votes made chosen at p.
   */
  private Set<LogValue> replayOldCompletion(java.util.function.Consumer<Message> onReplay) {
    commit(0, "a");
    commit(1, "b");
    memory.get(2).wipe();
    restart();
    String first = begin();
    assertEquals("REBUILT", ((Message.RebuildReply) ask(2,
        new Message.RebuildRequest(G, "", "O", first, false))).outcome());
    Message completion = new Message.RebuildRequest("", "", "O", first, true);
    assertEquals("COMPLETE", ((Message.RebuildReply) ask(2, completion)).outcome());
    for (int i = 0; i < 2 * DcRebuild.FENCE_MARGIN; i++) {
      commit(i % 3, "c"); // past the fence the rebuild gave the group
    }

    long p = ((Message.BeginReply) ask(0, new Message.BeginRequest(G, 0))).position() + 1;
    LogValue v = value("v");
    Ballot b1 = Ballot.of(50, 7);
    for (int dc : new int[] {0, 2}) {
      assertTrue(prepare(dc, p, b1).promised());
      accept(dc, p, b1, v);
    }

    memory.get(2).wipe();
    restart();
    String second = begin();
    assertNotEquals(first, second, "a new rebuild of the store lost again");
    onReplay.accept(ask(2, completion));

    // A proposer that did not see v asks V2 and O (a majority) at a higher ballot.
    Ballot b2 = Ballot.of(60, 8);
    LogValue proposal = value("u");
    int promises = 0;
    for (int dc : new int[] {1, 2}) {
      Message m = ask(dc, paxos(new PaxosMessage.Prepare(G, p, b2)));
      if (m instanceof Message.Paxos x
          && x.message() instanceof PaxosMessage.PrepareReply r && r.promised()) {
        promises++;
        if (r.lastVote() != null) {
          proposal = r.lastVote().value();
        }
      }
    }
    if (promises == 2) {
      for (int dc : new int[] {1, 2}) {
        accept(dc, p, b2, proposal);
      }
    }
    return chosenAt(p);
  }

  private Set<LogValue> chosenAt(long p) {
    Set<LogValue> chosen = new HashSet<>();
    votes.getOrDefault(p, Map.of()).forEach((ballot, byValue) -> byValue.forEach((val, by) -> {
      if (by.size() > DCS.size() / 2) {
        chosen.add(val);
      }
    }));
    return chosen;
  }

  private String begin() {
    Message.RebuildReply r = (Message.RebuildReply) ask(2,
        new Message.RebuildRequest("", "", "O", "", false));
    assertEquals("BEGUN", r.outcome());
    return r.rebuildId();
  }

  private PaxosMessage.PrepareReply prepare(int dc, long p, Ballot b) {
    return (PaxosMessage.PrepareReply) ((Message.Paxos) ask(dc,
        paxos(new PaxosMessage.Prepare(G, p, b)))).message();
  }

  private void accept(int dc, long p, Ballot b, LogValue value) {
    Message m = ask(dc, paxos(new PaxosMessage.Accept(G, p, b, value)));
    if (m instanceof Message.Paxos x
        && x.message() instanceof PaxosMessage.AcceptReply r && r.accepted()) {
      votes.computeIfAbsent(p, k -> new HashMap<>()).computeIfAbsent(b, k -> new HashMap<>())
          .computeIfAbsent(value, k -> new HashSet<>()).add(dc);
    }
  }

  private static Message paxos(PaxosMessage m) {
    return new Message.Paxos(m);
  }

  private void restart() {
    dcs.close();
    dcs = new InProcessDcs(DCS, stores);
  }

  private Message ask(int dc, Message m) {
    return dcs.service(dc).handle(DCS.get(dc), m).join();
  }

  private static LogValue value(String txn) {
    TreeMap<String, Mutation> writes = new TreeMap<>();
    writes.put("k", Mutation.put(txn.getBytes(StandardCharsets.UTF_8)));
    return LogValue.of(new LogEntry(txn, "V1", 0, new TreeSet<>(), writes));
  }

  private void commit(int from, String k) {
    Message.BeginReply begin = (Message.BeginReply) ask(from, new Message.BeginRequest(G, 0));
    LogEntry e = new LogEntry("t" + nextId, DCS.get(from), begin.position(), new TreeSet<>(),
        new TreeMap<>(Map.of(k, Mutation.put(k.getBytes(StandardCharsets.UTF_8)))));
    OptionalInt leader = begin.leaderDc().isEmpty() ? OptionalInt.empty()
        : OptionalInt.of(DCS.indexOf(begin.leaderDc()));
    Outcome o = dcs.run(new Proposer(ProposerConfig.defaults(Protocol.CP, DCS), G,
        ProposerId.of(nextId++), e, begin.position() + 1, leader, new SplittableRandom(nextId)));
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
  }

  /**
   * The planted bug: the store's marker ends whatever rebuild is under way when a completion
   * arrives (a conditional write on the state, as before completions named their rebuild),
   * instead of only the rebuild whose id the completion names.
   */
  private static final class CompletionWithoutInstanceCheck extends ForwardingKvStore {
    CompletionWithoutInstanceCheck(KvStore delegate) {
      super(delegate);
    }

    @Override
    public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
        long timestamp, Map<String, byte[]> cells) {
      if (table == Table.META && java.util.Arrays.equals(row, StoreMarker.ROW)
          && "i".equals(checkColumn) && cells.containsKey("r")) {
        return delegate.checkAndWrite(table, row, "s",
            "rebuilding".getBytes(StandardCharsets.UTF_8), timestamp, cells);
      }
      return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
    }
  }
}
