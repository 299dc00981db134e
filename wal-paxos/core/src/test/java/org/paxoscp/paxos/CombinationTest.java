package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

@Timeout(10)
class CombinationTest {

  private static final long POSITION = 10;
  private static final int LIMIT = 6;

  private static LogEntry entry(String id, long readPosition, Set<String> reads,
      Set<String> writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put((id + ":" + k).getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(id, "dc0", readPosition, new TreeSet<>(reads), w);
  }

  private static LogEntry entry(String id, Set<String> reads, Set<String> writes) {
    return entry(id, POSITION - 1, reads, writes);
  }

  private static List<String> ids(LogValue v) {
    return v.entries().stream().map(LogEntry::txnId).toList();
  }

  /** The test's own definition of a valid list: no entry reads a key an earlier one wrote. */
  private static void assertValid(LogEntry own, LogValue v) {
    assertSame(own, v.entries().get(0), "own entry first");
    Set<String> written = new HashSet<>();
    Set<String> seen = new HashSet<>();
    for (LogEntry e : v.entries()) {
      assertTrue(seen.add(e.txnId()), "duplicate " + e.txnId() + " in " + v);
      for (String k : e.readSet()) {
        if (written.contains(k)) {
          fail(e.txnId() + " reads " + k + " written earlier in " + v);
        }
      }
      written.addAll(e.writes().keySet());
    }
  }

  @Test
  void ownEntryAloneWhenThereAreNoCandidates() {
    LogEntry own = entry("own", Set.of("a"), Set.of("b"));
    LogValue v = Combination.combine(own, List.of(), POSITION, LIMIT);
    assertEquals(List.of("own"), ids(v));
  }

  @Test
  void ownEntryIsAlwaysFirstEvenIfItReadsWhatOthersWrite() {
    // own reads x, which c writes: c may follow own (own ran first), never precede it.
    LogEntry own = entry("own", Set.of("x"), Set.of());
    LogEntry c = entry("c", Set.of(), Set.of("x"));
    LogValue v = Combination.combine(own, List.of(c), POSITION, LIMIT);
    assertEquals(List.of("own", "c"), ids(v));
  }

  @Test
  void nonConflictingEntriesAreAllIncluded() {
    LogEntry own = entry("own", Set.of("o"), Set.of("o"));
    List<LogEntry> cands = List.of(entry("a", Set.of("a"), Set.of("a")),
        entry("b", Set.of("b"), Set.of("b", "shared")), entry("c", Set.of("c"), Set.of("shared")));
    LogValue v = Combination.combine(own, cands, POSITION, LIMIT);
    assertEquals(4, v.entries().size());
    assertEquals(Set.of("own", "a", "b", "c"), new HashSet<>(ids(v)));
    assertValid(own, v);
  }

  @Test
  void anEntryThatReadsWhatAnotherWritesIsPlacedBeforeIt() {
    // In candidate order a (writes x) comes before b (reads x); a greedy pass would drop b.
    LogEntry own = entry("own", Set.of(), Set.of("o"));
    LogEntry a = entry("a", Set.of(), Set.of("x"));
    LogEntry b = entry("b", Set.of("x"), Set.of("y"));
    LogValue v = Combination.combine(own, List.of(a, b), POSITION, LIMIT);
    assertEquals(List.of("own", "b", "a"), ids(v));
    assertValid(own, v);
  }

  @Test
  void chainsAreOrderedReadersFirst() {
    // c reads y (b writes y), b reads x (a writes x): only c, b, a is valid with all three.
    LogEntry own = entry("own", Set.of(), Set.of());
    LogEntry a = entry("a", Set.of(), Set.of("x"));
    LogEntry b = entry("b", Set.of("x"), Set.of("y"));
    LogEntry c = entry("c", Set.of("y"), Set.of("z"));
    LogValue v = Combination.combine(own, List.of(a, b, c), POSITION, LIMIT);
    assertEquals(List.of("own", "c", "b", "a"), ids(v));
  }

  @Test
  void anEntryThatReadsWhatTheOwnEntryWritesIsLeftOut() {
    LogEntry own = entry("own", Set.of(), Set.of("x"));
    LogEntry reader = entry("reader", Set.of("x"), Set.of("r"));
    LogEntry other = entry("other", Set.of("q"), Set.of("q"));
    LogValue v = Combination.combine(own, List.of(reader, other), POSITION, LIMIT);
    assertEquals(List.of("own", "other"), ids(v));
  }

  @Test
  void cyclicConflictsYieldAMaximumList() {
    // a and b read each other's writes: at most one of them; c and d are free.
    LogEntry own = entry("own", Set.of(), Set.of());
    LogEntry a = entry("a", Set.of("y"), Set.of("x"));
    LogEntry b = entry("b", Set.of("x"), Set.of("y"));
    LogEntry c = entry("c", Set.of("c"), Set.of("c"));
    LogEntry d = entry("d", Set.of(), Set.of("d"));
    LogValue v = Combination.combine(own, List.of(a, b, c, d), POSITION, LIMIT);
    assertValid(own, v);
    assertEquals(4, v.entries().size(), "own, c, d and exactly one of a, b: " + v);
    assertTrue(v.contains("c") && v.contains("d"));
    assertTrue(v.contains("a") ^ v.contains("b"));
  }

  @Test
  void threeWayCycleKeepsTwoOfThree() {
    // a reads z writes x; b reads x writes y; c reads y writes z: any two fit (reader first).
    LogEntry own = entry("own", Set.of(), Set.of());
    LogEntry a = entry("a", Set.of("z"), Set.of("x"));
    LogEntry b = entry("b", Set.of("x"), Set.of("y"));
    LogEntry c = entry("c", Set.of("y"), Set.of("z"));
    LogValue v = Combination.combine(own, List.of(a, b, c), POSITION, LIMIT);
    assertValid(own, v);
    assertEquals(3, v.entries().size());
  }

  @Test
  void duplicatesByTxnIdAndTheOwnTxnAreDropped() {
    LogEntry own = entry("own", Set.of(), Set.of("o"));
    LogEntry ownSeenInAVote = entry("own", Set.of("z"), Set.of("zz"));
    LogEntry a = entry("a", Set.of(), Set.of("a"));
    LogEntry aAgain = entry("a", Set.of(), Set.of("a"));
    LogValue v = Combination.combine(own, List.of(ownSeenInAVote, a, aAgain, a), POSITION, LIMIT);
    assertEquals(List.of("own", "a"), ids(v));
    assertSame(own, v.entries().get(0), "the proposer's own entry, not the copy from a vote");
  }

  @Test
  void candidatesThatCannotBelongToThePositionAreDropped() {
    LogEntry own = entry("own", Set.of(), Set.of());
    LogEntry atPosition = entry("atPos", POSITION, Set.of(), Set.of("p"));
    LogEntry beyond = entry("beyond", POSITION + 5, Set.of(), Set.of("q"));
    LogEntry justBelow = entry("ok", POSITION - 1, Set.of(), Set.of("r"));
    LogEntry old = entry("old", 0, Set.of(), Set.of("s"));
    LogValue v = Combination.combine(own, List.of(atPosition, beyond, justBelow, old), POSITION,
        LIMIT);
    assertEquals(Set.of("own", "ok", "old"), new HashSet<>(ids(v)));
  }

  @Test
  void greedyPassBeyondTheLimitStillYieldsAValidList() {
    // Ten candidates over four keys, limit 2: greedy. Checked against the test's own validity.
    Random rnd = new Random(5);
    for (int round = 0; round < 200; round++) {
      LogEntry own = randomEntry("own", rnd);
      List<LogEntry> cands = new ArrayList<>();
      for (int i = 0; i < 10; i++) {
        cands.add(randomEntry("t" + i, rnd));
      }
      LogValue v = Combination.combine(own, cands, POSITION, 2);
      assertValid(own, v);
      // Greedy in candidate order: every left-out candidate conflicts with the list before it.
      for (LogEntry c : cands) {
        if (!v.contains(c.txnId())) {
          assertTrue(readsAWriteOf(c, v), c + " was left out but fits at the end of " + v);
        }
      }
    }
  }

  @Test
  void exhaustiveSearchFindsTheLongestValidList() {
    Random rnd = new Random(17);
    for (int round = 0; round < 400; round++) {
      LogEntry own = randomEntry("own", rnd);
      List<LogEntry> cands = new ArrayList<>();
      int n = rnd.nextInt(6);
      for (int i = 0; i < n; i++) {
        cands.add(randomEntry("t" + i, rnd));
      }
      LogValue v = Combination.combine(own, cands, POSITION, LIMIT);
      assertValid(own, v);
      assertEquals(1 + longestExtension(List.of(own), cands, new boolean[n]), v.entries().size(),
          "not maximal for own=" + own + " candidates=" + cands + ": " + v);
    }
  }

  @Test
  void exhaustiveSearchAtTheLimitOrdersAWholeChain() {
    // t(i) reads k(i+1), which t(i+1) writes: only t0, t1, ..., t5 fits all six. The candidates
    // arrive in the opposite order, so the search has to backtrack to find it.
    LogEntry own = entry("own", Set.of(), Set.of());
    List<LogEntry> cands = new ArrayList<>();
    for (int i = LIMIT - 1; i >= 0; i--) {
      cands.add(entry("t" + i, Set.of("k" + (i + 1)), Set.of("k" + i)));
    }
    LogValue v = Combination.combine(own, cands, POSITION, LIMIT);
    assertValid(own, v);
    assertEquals(List.of("own", "t0", "t1", "t2", "t3", "t4", "t5"), ids(v));
  }

  private static boolean readsAWriteOf(LogEntry c, LogValue v) {
    for (LogEntry e : v.entries()) {
      if (e.writesWhatIsReadBy(c)) {
        return true;
      }
    }
    return false;
  }

  /** Independent brute force: the most candidates that can follow {@code prefix} validly. */
  private static int longestExtension(List<LogEntry> prefix, List<LogEntry> cands, boolean[] used) {
    int best = 0;
    for (int i = 0; i < cands.size(); i++) {
      if (used[i]) {
        continue;
      }
      LogEntry c = cands.get(i);
      boolean fits = prefix.stream()
          .allMatch(p -> Collections.disjoint(p.writes().keySet(), c.readSet()));
      if (fits) {
        used[i] = true;
        List<LogEntry> next = new ArrayList<>(prefix);
        next.add(c);
        best = Math.max(best, 1 + longestExtension(next, cands, used));
        used[i] = false;
      }
    }
    return best;
  }

  private static LogEntry randomEntry(String id, Random rnd) {
    String[] keys = {"a", "b", "c", "d"};
    Set<String> reads = new TreeSet<>();
    Set<String> writes = new TreeSet<>();
    for (String k : keys) {
      if (rnd.nextInt(3) == 0) {
        reads.add(k);
      }
      if (rnd.nextInt(4) == 0) {
        writes.add(k);
      }
    }
    return entry(id, reads, writes);
  }
}
