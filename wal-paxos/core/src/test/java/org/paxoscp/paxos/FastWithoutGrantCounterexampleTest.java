package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.check.Violation;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Why a leader's combined list may use the fast ballot only with the position's grant (section
 * 5.3, leader combination in 5.5): two lists proposed at the fast ballot for one position, as two
 * leader services would if a refused grant did not stop the second. Replayed as a fixed schedule
 * over acceptors A, B, C: A takes list 2, B and C take list 1 (chosen, and its submitter is told
 * COMMITTED); a learner that hears A and B sees two fast votes with equal ballots, takes list 2,
 * and gets it chosen too. The checker must report the broken agreement.
 */
@Timeout(10)
class FastWithoutGrantCounterexampleTest {
  private static final String G = "g";
  private static final List<String> DCS = List.of("A", "B", "C");

  private final List<InMemoryKvStore> stores = List.of(new InMemoryKvStore(),
      new InMemoryKvStore(), new InMemoryKvStore());
  private final List<Acceptor> acceptors = stores.stream().map(Acceptor::new).toList();

  private static LogEntry entry(String id, String key) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.put(id.getBytes(StandardCharsets.UTF_8)));
    return new LogEntry(id, "A", 0, new TreeSet<>(), w);
  }

  private final LogValue list1 = LogValue.of(entry("t1", "x"), entry("t2", "y"));
  private final LogValue list2 = LogValue.of(entry("t3", "x"));

  @Test
  void theGrantLetsOnlyOneListUseTheFastBallot() {
    assertTrue(acceptors.get(0).grant(new GrantRequest(G, 1, "leader-1")).granted());
    assertFalse(acceptors.get(0).grant(new GrantRequest(G, 1, "leader-2")).granted(),
        "a second leader service is refused the grant and must not use the fast ballot");
  }

  @Test
  void twoFastListsForOnePositionBreakAgreementAndTheCheckerSaysSo() {
    // Both leaders send ACCEPT(FAST); the acceptors each take the first that arrives.
    assertTrue(acceptors.get(0).accept(new Accept(G, 1, Ballot.FAST, list2)).accepted());
    assertTrue(acceptors.get(1).accept(new Accept(G, 1, Ballot.FAST, list1)).accepted());
    assertTrue(acceptors.get(2).accept(new Accept(G, 1, Ballot.FAST, list1)).accepted());
    assertFalse(acceptors.get(0).accept(new Accept(G, 1, Ballot.FAST, list1)).accepted());
    // List 1 has a majority (B, C): chosen; its leader applies it at C and answers COMMITTED.
    acceptors.get(2).apply(new Apply(G, 1, list1));

    // A learner (the shipped proposer) that reaches only A and B.
    Proposer learner = Proposer.learner(ProposerConfig.defaults(Protocol.BASIC, DCS), G,
        ProposerId.of(7), 1, new SplittableRandom(1));
    List<Proposer.Output> queue = new ArrayList<>(learner.start(0));
    long timer = -1;
    for (int steps = 0; steps < 100 && !learner.isDone(); steps++) {
      if (queue.isEmpty()) {
        queue.addAll(learner.onTimer(timer, 0));
        continue;
      }
      Proposer.Output o = queue.remove(0);
      if (o instanceof Proposer.Output.StartTimer t) {
        timer = t.timerId();
      } else if (o instanceof Proposer.Output.Send s && s.dc() < 2) {
        Acceptor acc = acceptors.get(s.dc());
        if (s.message() instanceof Prepare p) {
          queue.addAll(learner.onReply(s.dc(), acc.prepare(p), 0));
        } else if (s.message() instanceof Accept a) {
          queue.addAll(learner.onReply(s.dc(), acc.accept(a), 0));
        }
      }
    }
    assertTrue(learner.isDone());
    assertEquals(list2, learner.outcome().chosen(), "the learner took the minority fast vote");
    acceptors.get(0).apply(new Apply(G, 1, list2));
    acceptors.get(1).apply(new Apply(G, 1, list2));

    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (int i = 0; i < 3; i++) {
      logs.put(DCS.get(i), new TreeMap<>(Map.of(1L, acceptors.get(i).chosen(G, 1).orElseThrow())));
    }
    List<TxnRecord> history = List.of(
        committed("t1", list1), committed("t2", list1), committed("t3", list2));
    CheckResult r = SerializabilityChecker.check(logs, history);
    assertTrue(r.has(Violation.Kind.AGREEMENT), r.toString());
  }

  private static TxnRecord committed(String id, LogValue in) {
    LogEntry e = in.entries().stream().filter(x -> x.txnId().equals(id)).findFirst()
        .orElseThrow();
    return new TxnRecord(id, "c-" + id, TxnRecord.Status.COMMITTED, 0, Map.of(),
        new TreeMap<>(e.writes()), 1);
  }
}
