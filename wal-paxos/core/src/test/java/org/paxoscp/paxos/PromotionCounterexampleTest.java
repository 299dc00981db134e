package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiPredicate;
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
 * Replays the counterexample of docs/architecture.md section 5.2 as a fixed schedule over three
 * acceptors A, B, C: A accepts V in ballot 1; a ballot-2 proposer prepares B and C and C accepts W;
 * a ballot-3 proposer prepares A and B, sees only V, and B accepts V. Now V has two votes (A, B) in
 * different ballots. Client P (Paxos-CP, entry T reading x) prepares A and B. Client Q then
 * prepares A and C.
 *
 * <p>The correct proposer does not take V as chosen: it finishes the instance, so V really is
 * chosen before P promotes, and Q then learns V too. A proposer that counts votes per value across
 * ballots promotes at once; Q sees V@1 and W@2, must propose W, and W (which writes x) is chosen —
 * so T, committed at the next position, read a stale x. The checker must say so.
 */
@Timeout(10)
class PromotionCounterexampleTest {
  private static final String G = "g";

  private final List<InMemoryKvStore> stores = List.of(new InMemoryKvStore(),
      new InMemoryKvStore(), new InMemoryKvStore());
  private final List<Acceptor> acceptors = stores.stream().map(Acceptor::new).toList();
  private final ProposerConfig cfg = ProposerConfig.defaults(Protocol.CP, List.of("A", "B", "C"));

  private static LogEntry entry(String id, List<String> reads, String... writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put((id + "/" + k).getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(id, "A", 0, new TreeSet<>(reads), w);
  }

  private final LogEntry v = entry("v", List.of(), "y");
  private final LogEntry w = entry("w", List.of(), "x");
  private final LogEntry t = entry("t", List.of("x"), "z");
  private final LogEntry q = entry("q", List.of(), "q");

  /** The three earlier proposers' partial work, done directly on the acceptors. */
  private void prefix() {
    Ballot b1 = Ballot.of(1, 101);
    Ballot b2 = Ballot.of(2, 102);
    Ballot b3 = Ballot.of(3, 103);
    assertTrue(acceptors.get(0).prepare(new Prepare(G, 1, b1)).promised());
    assertTrue(acceptors.get(0).accept(new Accept(G, 1, b1, LogValue.of(v))).accepted());
    assertTrue(acceptors.get(1).prepare(new Prepare(G, 1, b2)).promised());
    assertTrue(acceptors.get(2).prepare(new Prepare(G, 1, b2)).promised());
    assertTrue(acceptors.get(2).accept(new Accept(G, 1, b2, LogValue.of(w))).accepted());
    assertTrue(acceptors.get(0).prepare(new Prepare(G, 1, b3)).promised());
    assertTrue(acceptors.get(1).prepare(new Prepare(G, 1, b3)).promised());
    assertTrue(acceptors.get(1).accept(new Accept(G, 1, b3, LogValue.of(v))).accepted());
  }

  /**
   * Delivers a proposer's messages synchronously to the DCs {@code reachable} allows, feeding
   * replies back, until it is done or waits for a timer (then fires the latest timer).
   * APPLY messages are held back in {@code heldApplies} when {@code holdApplies} is set.
   */
  private final class Driver {
    final Proposer proposer;
    BiPredicate<Integer, PaxosMessage> reachable = (dc, m) -> true;
    boolean holdApplies;
    final List<Apply> heldApplies = new ArrayList<>();
    long lastTimer = -1;
    final List<PaxosMessage> sentAccepts = new ArrayList<>();

    Driver(Proposer proposer) {
      this.proposer = proposer;
    }

    void feed(List<Proposer.Output> outputs) {
      List<Proposer.Output> queue = new ArrayList<>(outputs);
      while (!queue.isEmpty()) {
        Proposer.Output o = queue.remove(0);
        if (o instanceof Proposer.Output.StartTimer st) {
          lastTimer = st.timerId();
          continue;
        }
        Proposer.Output.Send s = (Proposer.Output.Send) o;
        if (s.message() instanceof Apply a) {
          if (holdApplies) {
            heldApplies.add(a);
          } else if (reachable.test(s.dc(), a)) {
            acceptors.get(s.dc()).apply(a);
          }
          continue;
        }
        if (s.message() instanceof Accept) {
          sentAccepts.add(s.message());
        }
        if (!reachable.test(s.dc(), s.message()) || proposer.isDone()) {
          continue;
        }
        Acceptor acc = acceptors.get(s.dc());
        PaxosMessage reply;
        if (s.message() instanceof Prepare pr) {
          reply = acc.prepare(pr);
        } else if (s.message() instanceof Accept a) {
          reply = acc.accept(a);
        } else if (s.message() instanceof GrantRequest g) {
          reply = acc.grant(g);
        } else {
          throw new AssertionError(s.message());
        }
        queue.addAll(proposer.onReply(s.dc(), reply, 0));
      }
    }

    /** Runs until done or until the proposer reaches {@code position} with nothing in flight. */
    void runUntil(long position, int maxTimers) {
      for (int i = 0; i < maxTimers && !proposer.isDone() && proposer.position() < position; i++) {
        feed(proposer.onTimer(lastTimer, 0));
      }
    }
  }

  private Driver start(Proposer p, BiPredicate<Integer, PaxosMessage> reachable,
      boolean holdApplies) {
    Driver d = new Driver(p);
    d.reachable = reachable;
    d.holdApplies = holdApplies;
    d.feed(p.start(0));
    return d;
  }

  private Proposer proposer(boolean buggy, LogEntry e, long id) {
    return buggy
        ? new PlantedBugs.VotesCountedAcrossBallots(cfg, G, ProposerId.of(id), e, 1, OptionalInt.empty(),
            new SplittableRandom(id))
        : new Proposer(cfg, G, ProposerId.of(id), e, 1, OptionalInt.empty(), new SplittableRandom(id));
  }

  /** Plays the schedule; returns the checker's verdict on the final logs and P's history. */
  private CheckResult play(boolean buggy) {
    prefix();
    // P reaches only A and B (C's replies are lost) and, for now, only for position 1; its
    // APPLYs are delayed.
    Driver p = start(proposer(buggy, t, 200), (dc, m) -> dc != 2 && m.position() == 1, true);
    p.runUntil(2, 10);
    assertFalse(p.proposer.isDone());
    assertEquals(2, p.proposer.position(), "P moved on to position 2");
    if (!buggy) {
      assertTrue(p.sentAccepts.stream().anyMatch(m -> m.position() == 1),
          "the correct proposer finishes position 1 before promoting");
    }
    // Q reaches only A and C, and stops once it knows position 1.
    Driver qd = start(proposer(false, q, 300), (dc, m) -> dc != 1 && m.position() == 1, false);
    qd.runUntil(2, 10);
    assertTrue(qd.proposer.isDone() || qd.proposer.position() == 2);
    // Q's APPLY reaches every DC; then P's delayed APPLYs arrive.
    LogValue decidedByQ = acceptors.get(0).chosen(G, 1).orElseThrow();
    for (Acceptor a : acceptors) {
      a.apply(new Apply(G, 1, decidedByQ));
    }
    for (Apply a : p.heldApplies) {
      for (Acceptor acc : acceptors) {
        acc.apply(a);
      }
    }
    // P runs position 2 alone on a healed network.
    p.reachable = (dc, m) -> true;
    p.holdApplies = false;
    p.runUntil(3, 10);
    assertTrue(p.proposer.isDone());
    Outcome out = p.proposer.outcome();
    assertEquals(Outcome.Status.COMMITTED, out.status());
    assertEquals(2, out.position());

    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (int i = 0; i < 3; i++) {
      SortedMap<Long, LogValue> log = new TreeMap<>();
      for (long pos = 1; pos <= 2; pos++) {
        Optional<LogValue> c = acceptors.get(i).chosen(G, pos);
        if (c.isPresent()) {
          log.put(pos, c.get());
        }
      }
      logs.put(List.of("A", "B", "C").get(i), log);
    }
    TxnRecord tRecord = new TxnRecord("t", "P", TxnRecord.Status.COMMITTED, 0,
        Map.of("x", Optional.empty()), t.writes(), out.position());
    return SerializabilityChecker.check(logs, List.of(tRecord));
  }

  @Test
  void correctProposerStaysSafe() {
    CheckResult r = play(false);
    assertTrue(r.ok(), r.toString());
    assertEquals(LogValue.of(v), acceptors.get(0).chosen(G, 1).orElseThrow(),
        "V was really chosen at position 1 before P promoted");
  }

  @Test
  void countingVotesAcrossBallotsIsCaught() {
    CheckResult r = play(true);
    assertFalse(r.ok(), "the planted bug must be caught");
    assertTrue(r.has(Violation.Kind.CONFLICTING_WRITE), r.toString());
    LogValue chosen = acceptors.get(0).chosen(G, 1).orElseThrow();
    assertNotNull(chosen);
    assertEquals(LogValue.of(w), chosen, "W, which writes x, won position 1");
  }
}
