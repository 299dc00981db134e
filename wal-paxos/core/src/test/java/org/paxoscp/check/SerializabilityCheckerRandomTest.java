package org.paxoscp.check;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Generated runs: a serial reference execution (independent of the checker) builds logs and
 * histories that are valid by construction, with combined lists, promotion-style stale read
 * positions, deletes, no-ops, lagging DCs and every outcome. Each must pass; then one planted fault
 * per run must be caught, naming the expected kind.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class SerializabilityCheckerRandomTest {
  private static final int SEEDS = 300;
  private static final String[] KEYS = {"a", "b", "c", "d", "e"};
  private static final String[] DCS = {"A", "B", "C"};

  /** One generated run; fields are mutable so that a test can plant a fault. */
  private static final class Run {
    final Map<String, SortedMap<Long, LogValue>> logs = new TreeMap<>();
    final List<TxnRecord> history = new ArrayList<>();
    /** State after each position (index 0 = initial); values are absent when deleted. */
    final List<Map<String, byte[]>> states = new ArrayList<>();
    /** Per key, the position of its last write so far. */
    final Map<String, Long> lastWrite = new HashMap<>();
    long positions;
  }

  private static Run generate(long seed) {
    Random rnd = new Random(seed);
    Run run = new Run();
    for (String dc : DCS) {
      run.logs.put(dc, new TreeMap<>());
    }
    Map<String, byte[]> state = new HashMap<>();
    run.states.add(Map.copyOf(state));
    run.positions = 5 + rnd.nextInt(25);
    int txn = 0;
    for (long p = 1; p <= run.positions; p++) {
      List<LogEntry> list = new ArrayList<>();
      int size = rnd.nextInt(10) == 0 ? 0 : 1 + rnd.nextInt(3);
      for (int i = 0; i < size; i++) {
        String id = "T" + seed + "-" + (txn++);
        long r = Math.max(0, p - 1 - rnd.nextInt(3));
        // Readable: keys not written after r, including by earlier entries of this list.
        Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
        for (String k : KEYS) {
          if (run.lastWrite.getOrDefault(k, 0L) <= r && rnd.nextInt(3) == 0) {
            reads.put(k, Optional.ofNullable(run.states.get((int) r).get(k)));
          }
        }
        SortedMap<String, Mutation> writes = randomWrites(rnd, id);
        list.add(new LogEntry(id, DCS[rnd.nextInt(DCS.length)], r,
            new TreeSet<>(reads.keySet()), writes));
        for (var w : writes.entrySet()) {
          if (w.getValue().isDelete()) {
            state.remove(w.getKey());
          } else {
            state.put(w.getKey(), w.getValue().value().orElseThrow());
          }
          run.lastWrite.put(w.getKey(), p);
        }
        int outcome = rnd.nextInt(20);
        if (outcome < 16) {
          run.history.add(record(id, TxnRecord.Status.COMMITTED, r, reads, writes, p));
        } else if (outcome < 18) {
          run.history.add(record(id, TxnRecord.Status.UNKNOWN, r, reads, writes, -1));
        } else if (outcome < 19) {
          run.history.add(record(id, TxnRecord.Status.CRASHED, r, reads, writes, -1));
        } // else: no record, e.g. finished by recovery
      }
      run.states.add(Map.copyOf(state));
      LogValue value = new LogValue(list);
      // A always knows every position; B and C each miss some (never the same one as A).
      run.logs.get("A").put(p, value);
      for (String dc : new String[] {"B", "C"}) {
        if (rnd.nextInt(5) != 0) {
          run.logs.get(dc).put(p, value);
        }
      }
    }
    // Transactions outside the log: aborted read-write ones and read-only ones, at any snapshot.
    int extra = 3 + rnd.nextInt(6);
    for (int i = 0; i < extra; i++) {
      String id = "X" + seed + "-" + i;
      long r = rnd.nextInt((int) run.positions + 1);
      Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
      for (String k : KEYS) {
        if (rnd.nextBoolean()) {
          reads.put(k, Optional.ofNullable(run.states.get((int) r).get(k)));
        }
      }
      if (rnd.nextBoolean()) {
        run.history.add(record(id, TxnRecord.Status.ABORTED, r, reads, randomWrites(rnd, id),
            -1));
      } else {
        run.history.add(record(id, TxnRecord.Status.COMMITTED, r, reads, new TreeMap<>(), -1));
      }
    }
    return run;
  }

  private static SortedMap<String, Mutation> randomWrites(Random rnd, String id) {
    SortedMap<String, Mutation> writes = new TreeMap<>();
    int n = 1 + rnd.nextInt(2);
    for (int j = 0; j < n; j++) {
      String k = KEYS[rnd.nextInt(KEYS.length)];
      writes.put(k, rnd.nextInt(5) == 0 ? Mutation.delete()
          : Mutation.put((id + ":" + k).getBytes(StandardCharsets.UTF_8)));
    }
    return writes;
  }

  private static TxnRecord record(String id, TxnRecord.Status status, long r,
      Map<String, Optional<byte[]>> reads, SortedMap<String, Mutation> writes, long commitPos) {
    return new TxnRecord(id, "client-" + id, status, r, reads, writes, commitPos);
  }

  private static CheckResult check(Run run) {
    return SerializabilityChecker.check(run.logs, run.history);
  }

  @Test
  void generatedValidRunsPass() {
    int combined = 0;
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      CheckResult result = check(run);
      long s = seed;
      assertTrue(result.ok(), () -> "seed " + s + ": " + result.summary());
      combined += result.stats().combinedPositions();
    }
    assertTrue(combined > SEEDS, "the generator should produce combined positions");
  }

  @Test
  void plantedWrongReadValueIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      int i = indexOf(run, r -> !r.reads().isEmpty());
      TxnRecord r = run.history.get(i);
      Map<String, Optional<byte[]>> reads = new LinkedHashMap<>(r.reads());
      String key = reads.keySet().iterator().next();
      byte[] seen = reads.get(key).orElse(new byte[0]);
      byte[] other = new byte[seen.length + 1];
      System.arraycopy(seen, 0, other, 0, seen.length);
      reads.put(key, Optional.of(other)); // differs from the true value, present or absent
      run.history.set(i, new TxnRecord(r.txnId(), r.client(), r.status(), r.readPosition(),
          reads, r.writes(), r.commitPosition()));
      assertCaught(seed, check(run), Kind.WRONG_READ_VALUE);
    }
  }

  @Test
  void plantedAbortOfACommittedTransactionIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      int i = indexOf(run, r -> r.status() == TxnRecord.Status.COMMITTED && !r.readOnly());
      TxnRecord r = run.history.get(i);
      run.history.set(i, new TxnRecord(r.txnId(), r.client(), TxnRecord.Status.ABORTED,
          r.readPosition(), r.reads(), r.writes(), -1));
      assertCaught(seed, check(run), Kind.ABORTED_IN_LOG);
    }
  }

  @Test
  void plantedDisagreementIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      long p = 1 + new Random(seed).nextInt((int) run.positions);
      LogValue real = run.logs.get("A").get(p);
      LogValue other = real.isNoop() ? LogValue.of(new LogEntry("planted", "B", p - 1,
          new TreeSet<>(), new TreeMap<>(Map.of("a", Mutation.delete())))) : LogValue.NOOP;
      run.logs.get("B").put(p, other);
      assertCaught(seed, check(run), Kind.AGREEMENT);
    }
  }

  @Test
  void plantedLostPositionIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      long p = 1 + new Random(seed).nextInt((int) run.positions - 1); // below the maximum
      for (SortedMap<Long, LogValue> log : run.logs.values()) {
        log.remove(p);
      }
      assertCaught(seed, check(run), Kind.LOG_GAP);
    }
  }

  @Test
  void plantedPromotionPastAConflictingWriterIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      // A new entry at the next position that read a key at a position before its last write:
      // what a proposer skipping the promotion conflict check would produce.
      var written = run.lastWrite.entrySet().iterator().next();
      long r = written.getValue() - 1;
      String key = written.getKey();
      long p = run.positions + 1;
      LogEntry stale = new LogEntry("planted", "A", r, new TreeSet<>(List.of(key)),
          new TreeMap<>(Map.of("z", Mutation.put(new byte[] {1}))));
      for (SortedMap<Long, LogValue> log : run.logs.values()) {
        log.put(p, LogValue.of(stale));
      }
      run.history.add(record("planted", TxnRecord.Status.COMMITTED, r,
          Map.of(key, Optional.ofNullable(run.states.get((int) r).get(key))), stale.writes(), p));
      assertCaught(seed, check(run), Kind.CONFLICTING_WRITE);
    }
  }

  @Test
  void plantedCombinationOfConflictingEntriesIsCaught() {
    for (long seed = 0; seed < SEEDS; seed++) {
      Run run = generate(seed);
      // A combined list whose second entry read a key its first entry writes: what a proposer
      // combining without the in-list conflict check would produce.
      long p = run.positions + 1;
      String key = KEYS[new Random(seed).nextInt(KEYS.length)];
      LogEntry writer = new LogEntry("planted-w", "A", p - 1, new TreeSet<>(),
          new TreeMap<>(Map.of(key, Mutation.put(new byte[] {7}))));
      LogEntry reader = new LogEntry("planted-r", "B", p - 1, new TreeSet<>(List.of(key)),
          new TreeMap<>(Map.of("z", Mutation.delete())));
      for (SortedMap<Long, LogValue> log : run.logs.values()) {
        log.put(p, LogValue.of(writer, reader));
      }
      assertCaught(seed, check(run), Kind.CONFLICTING_WRITE);
    }
  }

  private static int indexOf(Run run, Predicate<TxnRecord> wanted) {
    for (int i = 0; i < run.history.size(); i++) {
      if (wanted.test(run.history.get(i))) {
        return i;
      }
    }
    throw new AssertionError("generator produced no suitable record");
  }

  private static void assertCaught(long seed, CheckResult result, Kind kind) {
    assertFalse(result.ok(), () -> "seed " + seed + ": planted " + kind + " not caught");
    assertTrue(result.has(kind), () -> "seed " + seed + ": expected " + kind + " in "
        + result.summary());
  }
}
