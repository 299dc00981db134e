package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.LeaderGroup.Pending;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Message.SubmitStatus;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The judgement and list building of a leader round, alone: what decided positions answer, and
 * which waiting entries join the list at {@code q}, in which order.
 */
class RoundPlannerTest {
  private static final String G = "g";
  /** By origin DC's cost: O cheapest, then V, then C; this DC (V) wins ties. */
  private static final Map<String, Long> COSTS = Map.of("O", 10L, "V", 20L, "W", 20L, "C", 30L);
  private static final Comparator<LogEntry> FIRST =
      Comparator.comparingLong((LogEntry e) -> COSTS.getOrDefault(e.originDc(), 0L))
          .thenComparingInt(e -> e.originDc().equals("V") ? 0 : 1);

  private final Map<Long, LogValue> decided = new HashMap<>();
  private long applied;
  private final RoundPlanner planner =
      new RoundPlanner("V", LeaderCombiner.Rules.SHIPPED, 1 << 20, FIRST);

  private final RoundPlanner.DecidedLog log = new RoundPlanner.DecidedLog() {
    @Override
    public LogValue chosen(long position) {
      if (position <= 0) {
        throw new TooOldException(G, position, 0);
      }
      return decided.get(position);
    }

    @Override
    public long knownApplied() {
      return applied;
    }
  };

  private static LogEntry entry(String txn, String dc, long readPosition, Set<String> reads,
      String... writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put(txn.getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(txn, dc, readPosition, new TreeSet<>(reads), w);
  }

  private static Pending pending(LogEntry e, int bound) {
    return new Pending(new SubmitRequest(G, e.readPosition() + 1, e, bound, false));
  }

  private void decide(long position, LogEntry... entries) {
    decided.put(position, new LogValue(List.of(entries)));
    applied = Math.max(applied, position);
  }

  private static SubmitReply reply(Message m) {
    return assertInstanceOf(SubmitReply.class, m);
  }

  @Test
  void anEntryAlreadyChosenIsAnsweredCommittedWhereItIs() {
    LogEntry a = entry("a", "V", 0, Set.of(), "x");
    decide(1, entry("other", "O", 0, Set.of(), "y"), a);
    Pending p = pending(a, 4);
    RoundPlanner.Plan plan = planner.plan(G, List.of(p), 2, log);
    assertEquals(List.of(), plan.list());
    assertEquals(1, plan.answered().size());
    SubmitReply r = reply(plan.answered().get(0).reply());
    assertEquals(SubmitStatus.COMMITTED, r.status());
    assertEquals(1, r.position());
  }

  @Test
  void anEntryThatReadAKeyWrittenSinceIsAbortedAtThatPosition() {
    decide(1, entry("w", "O", 0, Set.of(), "x"));
    Pending p = pending(entry("r", "V", 0, Set.of("x"), "z"), 4);
    SubmitReply r = reply(planner.judge(G, p.request, 2, log));
    assertEquals(SubmitStatus.ABORTED, r.status());
    assertEquals(1, r.position());
    assertTrue(r.detail().contains("read a key written at position 1"), r.detail());
  }

  @Test
  void anEntryWithdrawnByItsClientIsAbortedAndSaysSo() {
    LogEntry e = entry("t", "V", 0, Set.of(), "x");
    decide(1, Placement.withdrawal(e));
    SubmitReply r = reply(planner.judge(G, pending(e, 4).request, 2, log));
    assertEquals(SubmitStatus.ABORTED, r.status());
    assertTrue(r.detail().contains("withdrawn at position 1"), r.detail());
  }

  @Test
  void aUsedUpBoundAbortsAndAnEntryWithinItIsPromoted() {
    decide(1, entry("w1", "O", 0, Set.of(), "a"));
    decide(2, entry("w2", "O", 1, Set.of(), "b"));
    LogEntry e = entry("t", "V", 0, Set.of("x"), "x");
    // Bound 1: positions 1..2 went to others; round 3 is past it.
    SubmitReply r = reply(planner.judge(G, pending(e, 1).request, 3, log));
    assertEquals(SubmitStatus.ABORTED, r.status());
    assertEquals(2, r.position());
    // Bound 2: it read nothing written at 1 or 2, so it joins round 3.
    assertNull(planner.judge(G, pending(e, 2).request, 3, log));
  }

  @Test
  void aCollectedPositionAnswersTooOldAndAMissingValueFailsTheRound() {
    Pending old = new Pending(new SubmitRequest(G, 0 + 1, entry("o", "V", 0, Set.of(), "x"),
        0, false));
    // Position 1 is asked of a log that collected it.
    RoundPlanner.DecidedLog collected = new RoundPlanner.DecidedLog() {
      @Override
      public LogValue chosen(long position) {
        throw new TooOldException(G, position, 5);
      }

      @Override
      public long knownApplied() {
        return 5;
      }
    };
    ErrorReply tooOld = assertInstanceOf(ErrorReply.class,
        planner.judge(G, old.request, 2, collected));
    assertEquals(ErrorCode.TOO_OLD, tooOld.code());
    // Above the applied watermark a missing value means its recording failed here.
    applied = 0;
    assertThrows(CatchUpFailedException.class, () -> planner.judge(G, old.request, 2, log));
    // Below it, a gap is a broken store.
    applied = 3;
    assertThrows(IllegalStateException.class, () -> planner.judge(G, old.request, 2, log));
  }

  @Test
  void theCheapestDcGoesFirstThenArrivalOrderAndConflictsWait() {
    Pending v1 = pending(entry("v1", "V", 0, Set.of(), "a"), 4);
    Pending c1 = pending(entry("c1", "C", 0, Set.of(), "b"), 4);
    Pending o1 = pending(entry("o1", "O", 0, Set.of(), "c"), 4);
    // Reads c, which o1 writes: cannot share o1's list.
    Pending v2 = pending(entry("v2", "V", 0, Set.of("c"), "d"), 4);
    Pending o2 = pending(entry("o2", "O", 0, Set.of(), "e"), 4);
    // Submitted for position 2: waits for a later round.
    Pending later = pending(entry("later", "V", 1, Set.of(), "f"), 4);
    RoundPlanner.Plan plan = planner.plan(G, List.of(v1, c1, o1, v2, later, o2), 1, log);
    assertEquals(List.of(o1, v1, c1, o2), plan.list());
    assertEquals(List.of(), plan.answered());
  }

  @Test
  void thisDcWinsATieOfCostsAndOtherwiseArrivalOrderDoes() {
    Pending w = pending(entry("w", "W", 0, Set.of(), "a"), 4);
    Pending v = pending(entry("v", "V", 0, Set.of(), "b"), 4);
    assertEquals(List.of(v, w), planner.plan(G, List.of(w, v), 1, log).list());
    Pending c1 = pending(entry("c1", "C", 0, Set.of(), "a"), 4);
    Pending c2 = pending(entry("c2", "C", 0, Set.of(), "b"), 4);
    assertEquals(List.of(c1, c2), planner.plan(G, List.of(c1, c2), 1, log).list());
  }

  @Test
  void aListStaysWithinItsSizeButItsFirstEntryAlwaysGoes() {
    List<Pending> waiting = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      waiting.add(pending(entry("t" + i, "V", 0, Set.of(), "k" + i), 4));
    }
    int one = LogCodec.encode(LogValue.of(waiting.get(0).entry())).length;
    RoundPlanner small = new RoundPlanner("V", LeaderCombiner.Rules.SHIPPED, 3 * one + 2, FIRST);
    assertEquals(waiting.subList(0, 3), small.plan(G, waiting, 1, log).list());
    RoundPlanner tiny = new RoundPlanner("V", LeaderCombiner.Rules.SHIPPED, 1, FIRST);
    assertEquals(waiting.subList(0, 1), tiny.plan(G, waiting, 1, log).list());
  }

  @Test
  void answeredEntriesAreListedInQueueOrderAndDoNotJoin() {
    LogEntry chosen = entry("c", "V", 0, Set.of(), "x");
    decide(1, chosen);
    Pending done = pending(chosen, 4);
    Pending stale = pending(entry("s", "O", 0, Set.of("x"), "y"), 4);
    Pending fresh = pending(entry("f", "O", 1, Set.of("x"), "y"), 4);
    RoundPlanner.Plan plan = planner.plan(G, List.of(done, fresh, stale), 2, log);
    assertEquals(List.of(done, stale), plan.answered().stream().map(RoundPlanner.Answer::pending)
        .toList());
    assertEquals(List.of(fresh), plan.list());
  }
}
