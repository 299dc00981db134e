package org.paxoscp.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.DB;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;

/**
 * Hot counters incremented by commutative adds: {@value #GROUPS} entity groups of
 * {@value #KEYS} counters each, every client thread adding to them at random. A transaction adds
 * a delta in {@code [1, }{@value #MAX_DELTA}{@code ]} to one counter with
 * {@link org.paxoscp.client.Transaction#add} (through {@link PaxosCpDB#add}), which does not read
 * it: in Paxos-CP two such transactions never conflict, the one that loses a log position is
 * promoted past the winner. With probability {@value #READ_PROPORTION} a transaction is instead
 * a read-only read of one counter ({@link PaxosCpDB#readCounter}). The load phase (one
 * transaction per group, {@code recordcount} = {@value #GROUPS}) puts 0 in every counter, so each
 * run starts from 0: load before every run.
 *
 * <p><b>Tally.</b> Each client thread tallies, per counter, the deltas of its increments whose
 * commit it saw COMMITTED. An increment whose outcome is unknown is settled at once
 * ({@link PaxosCpDB#settle}); one that stays unknown is tallied apart as uncertain. An increment
 * that aborted, was unavailable (certainly not in the log) or was refused has no effect.
 *
 * <p><b>Checks.</b> A committed read must see at least what its client's own committed increments
 * and its client's previous read of the counter showed (the client's session reads at or past
 * them) and at most the deltas every client had sent by then; a failure counts as
 * {@code [COUNTER-ANOMALY]}.
 *
 * <p><b>Validation.</b> At the end of the run phase every counter is read at every DC (at or past
 * the last position an increment committed at in its group; a DC behind is given time to catch
 * up), and must lie in {@code [committed, committed + unknown]}: the sums of the tallies over
 * every client. The run prints {@code [VALIDATION]} lines — each DC's total over every counter,
 * the expected total, the increments by outcome (aborts split into those that lost their log
 * position to an entry they could not follow — any loser in basic Paxos, a conflict in Paxos-CP,
 * which adds never meet — and the rest), the reads checked
 * and their anomalies, and {@code Result} — and writes {@code OK} or {@code FAILED} with the
 * violations to the file {@value ClosedEconomyWorkload#VALIDATION_FILE} names, so that
 * {@code ./paxoscp ycsb run} exits 1 on a failure. Needs cluster version 5
 * ({@code commutative-updates}).
 */
public class CounterWorkload extends TxnWorkload {
  public static final String GROUPS = "counter.groups";
  public static final String GROUP_PREFIX = "counter.groupprefix";
  public static final String KEYS = "counter.keys";
  public static final String MAX_DELTA = "counter.maxdelta";
  public static final String READ_PROPORTION = "counter.readproportion";
  public static final String THINK_MS = "counter.thinktime.ms";

  /** Violations listed one by one; the rest are only counted. */
  private static final int MAX_LISTED = 20;
  /** How long the validation waits for a DC to reach the last increment's position. */
  private static final long CATCH_UP_MS = 20_000;

  private Properties props;
  private int groups;
  private String prefix;
  private int keys;
  private long maxDelta;
  private double readProportion;
  private long thinkMs;
  /** Every client thread's tally, for the validation. */
  private final Queue<Tally> tallies = new ConcurrentLinkedQueue<>();
  /** The deltas every client sent to be committed, per counter: an upper bound for reads. */
  private final Map<String, AtomicLong> sent = new ConcurrentHashMap<>();
  /** The highest position an increment committed at, per group. */
  private final Map<String, Long> lastPosition = new ConcurrentHashMap<>();
  private final AtomicLong operations = new AtomicLong();
  final AtomicLong readsChecked = new AtomicLong();
  final AtomicLong readAnomalies = new AtomicLong();
  private final List<String> anomalies = new ArrayList<>();

  /**
   * One client thread's increments by outcome, and per counter the deltas committed, the deltas
   * whose outcome stayed unknown and the last value read. Used by its thread only, and read by
   * the validation after every thread ended.
   */
  static final class Tally {
    final Map<String, Long> committed = new HashMap<>();
    final Map<String, Long> unknown = new HashMap<>();
    final Map<String, Long> lastRead = new HashMap<>();
    long committedCount;
    long settledCommitted;
    long settledNoEffect;
    long lostPositionAborts;
    long otherAborts;
    long refused;
    long unavailable;
    long unknownCount;
    long notSent;

    /** Adds a tally into this one. */
    void addAll(Tally t) {
      t.committed.forEach((k, v) -> committed.merge(k, v, Long::sum));
      t.unknown.forEach((k, v) -> unknown.merge(k, v, Long::sum));
      committedCount += t.committedCount;
      settledCommitted += t.settledCommitted;
      settledNoEffect += t.settledNoEffect;
      lostPositionAborts += t.lostPositionAborts;
      otherAborts += t.otherAborts;
      refused += t.refused;
      unavailable += t.unavailable;
      unknownCount += t.unknownCount;
      notSent += t.notSent;
    }
  }

  /** One client thread's state: the shared one and its tally. */
  record CounterThread(State base, Tally tally) {}

  /** The increments of every client so far, summed (complete once the run ended). */
  Tally total() {
    Tally all = new Tally();
    tallies.forEach(all::addAll);
    return all;
  }

  @Override
  public void init(Properties p) throws WorkloadException {
    props = p;
    groups = TxnWorkloads.intProp(p, GROUPS, 1, 1);
    prefix = p.getProperty(GROUP_PREFIX, "counters");
    keys = TxnWorkloads.intProp(p, KEYS, 4, 1);
    maxDelta = TxnWorkloads.longProp(p, MAX_DELTA, 10, 1);
    readProportion = TxnWorkloads.fraction(p, READ_PROPORTION, 0.1);
    thinkMs = TxnWorkloads.longProp(p, THINK_MS, 0, 0);
    initInserts(p);
  }

  @Override
  public Object initThread(Properties p, int threadId, int threadCount)
      throws WorkloadException {
    Tally t = new Tally();
    tallies.add(t);
    return new CounterThread((State) super.initThread(p, threadId, threadCount), t);
  }

  String group(long g) {
    return prefix + "-" + g;
  }

  /** The record of counter {@code k}; the counter is its field {@link PaxosCpDB#VALUE_FIELD}. */
  static String counter(int k) {
    return "counter" + k;
  }

  /** The name the tallies and messages give counter {@code k} of {@code group}. */
  static String id(String group, int k) {
    return group + "/" + counter(k);
  }

  // ---- load ----------------------------------------------------------------------------------

  /** Puts 0 in every counter of the next group, in one transaction. */
  @Override
  public boolean doInsert(DB db, Object threadState) {
    CounterThread s = (CounterThread) threadState;
    String group = group(nextInsert() % groups);
    if (!s.base().binding().begin(group)) {
      return false;
    }
    for (int k = 0; k < keys; k++) {
      if (!db.insert(group, counter(k), value("0")).isOk()) {
        s.base().binding().abort();
        return false;
      }
    }
    return s.base().binding().commit().outcome() == PaxosCpDB.Outcome.COMMITTED;
  }

  // ---- run -----------------------------------------------------------------------------------

  @Override
  public boolean doTransaction(DB db, Object threadState) {
    CounterThread s = (CounterThread) threadState;
    operations.incrementAndGet();
    String group = group(s.base().random().nextInt(groups));
    int k = s.base().random().nextInt(keys);
    if (s.base().random().nextDouble() < readProportion) {
      read(s, group, k);
    } else {
      increment(s, group, k);
    }
    return true;
  }

  private void increment(CounterThread s, String group, int k) {
    PaxosCpDB b = s.base().binding();
    Tally t = s.tally();
    String id = id(group, k);
    long delta = 1 + s.base().random().nextLong(maxDelta);
    if (!b.begin(group)) {
      t.notSent++;
      return;
    }
    TxnWorkloads.think(thinkMs);
    if (!b.add(group, counter(k), PaxosCpDB.VALUE_FIELD, delta).isOk()) {
      b.abort();
      t.notSent++;
      return;
    }
    sent.computeIfAbsent(id, x -> new AtomicLong()).addAndGet(delta);
    PaxosCpDB.CommitInfo info = b.commit();
    switch (info.outcome()) {
      case COMMITTED -> committed(t, group, id, delta, info.position());
      case ABORTED -> {
        if (info.lostTo() >= 0) {
          t.lostPositionAborts++;
        } else {
          t.otherAborts++;
        }
      }
      case REFUSED -> t.refused++;
      case UNAVAILABLE -> t.unavailable++;
      case UNKNOWN -> settle(b, t, group, id, delta);
      default -> throw new AssertionError(info.outcome());
    }
  }

  /** Settles an unknown outcome once; one that stays unknown is tallied as uncertain. */
  private void settle(PaxosCpDB b, Tally t, String group, String id, long delta) {
    PaxosCpDB.CommitInfo settled = b.settle();
    switch (settled.outcome()) {
      case COMMITTED -> {
        t.settledCommitted++;
        committed(t, group, id, delta, settled.position());
      }
      case ABORTED, REFUSED -> t.settledNoEffect++;
      case UNKNOWN, UNAVAILABLE -> {
        t.unknownCount++;
        t.unknown.merge(id, delta, Long::sum);
      }
      default -> throw new AssertionError(settled.outcome());
    }
  }

  private void committed(Tally t, String group, String id, long delta, long position) {
    t.committedCount++;
    t.committed.merge(id, delta, Long::sum);
    lastPosition.merge(group, position, Math::max);
  }

  private void read(CounterThread s, String group, int k) {
    PaxosCpDB b = s.base().binding();
    String id = id(group, k);
    if (!b.begin(group)) {
      return;
    }
    PaxosCpDB.CounterRead r = b.readCounter(group, counter(k), PaxosCpDB.VALUE_FIELD);
    if (!r.status().isOk()) {
      b.abort();
      return;
    }
    if (b.commit().outcome() != PaxosCpDB.Outcome.COMMITTED) {
      return;
    }
    readsChecked.incrementAndGet();
    Tally t = s.tally();
    long own = t.committed.getOrDefault(id, 0L);
    long before = t.lastRead.getOrDefault(id, 0L);
    AtomicLong all = sent.get(id);
    long ceiling = all == null ? 0 : all.get();
    if (r.value() < own || r.value() < before || r.value() > ceiling) {
      anomaly("a read of " + id + " at DC " + b.homeDc() + " saw " + r.value() + "; its client "
          + "committed " + own + " to it and read " + before + " before, and every client had "
          + "sent " + ceiling);
    }
    t.lastRead.put(id, Math.max(before, r.value()));
  }

  private void anomaly(String what) {
    readAnomalies.incrementAndGet();
    synchronized (anomalies) {
      if (anomalies.size() < MAX_LISTED) {
        anomalies.add(what);
      }
    }
    Measurements.getMeasurements().measure("COUNTER-ANOMALY", 0);
    System.err.println(what);
  }

  // ---- validation ----------------------------------------------------------------------------

  @Override
  public void cleanup() throws WorkloadException {
    super.cleanup();
    if (!Boolean.parseBoolean(props.getProperty("dotransactions", "true"))) {
      return;
    }
    ClusterConfig cluster = clusterConfig(props);
    Tally all = total();
    long committed = all.committed.values().stream().mapToLong(Long::longValue).sum();
    long unknown = all.unknown.values().stream().mapToLong(Long::longValue).sum();
    List<String> problems = new ArrayList<>();
    for (String dc : cluster.dcNames()) {
      long counted = 0;
      try (TxnClient c = validationClient(cluster, dc)) {
        for (int g = 0; g < groups; g++) {
          counted += validateGroup(c, dc, group(g), all, problems);
        }
      }
      System.out.println("[VALIDATION], DC " + dc + " counted total, " + counted);
    }
    if (readAnomalies.get() > 0) {
      synchronized (anomalies) {
        problems.add(readAnomalies.get() + " committed read(s) of a counter failed their checks; "
            + "the first: " + anomalies.get(0));
      }
    }
    System.out.println("[VALIDATION], Expected total, " + committed
        + (unknown == 0 ? "" : " (+ up to " + unknown + " from " + all.unknownCount
            + " increments whose outcome stayed unknown)"));
    System.out.println("[VALIDATION], Operations, " + operations.get());
    System.out.println("[VALIDATION], Increments committed, " + all.committedCount);
    System.out.println("[VALIDATION], Increments settled committed, " + all.settledCommitted);
    System.out.println("[VALIDATION], Increments settled without effect, "
        + all.settledNoEffect);
    System.out.println("[VALIDATION], Increments aborted losing their position, "
        + all.lostPositionAborts);
    System.out.println("[VALIDATION], Increments aborted otherwise, " + all.otherAborts);
    System.out.println("[VALIDATION], Increments refused, " + all.refused);
    System.out.println("[VALIDATION], Increments unavailable, " + all.unavailable);
    System.out.println("[VALIDATION], Increments not sent, " + all.notSent);
    System.out.println("[VALIDATION], Increments unknown, " + all.unknownCount);
    System.out.println("[VALIDATION], Reads checked, " + readsChecked.get());
    System.out.println("[VALIDATION], Read anomalies, " + readAnomalies.get());
    TxnWorkloads.reportValidation(props, "counter workload", problems, List.of());
  }

  /**
   * Reads every counter of {@code group} at {@code c}'s DC in one read-only transaction, at or
   * past the last position an increment committed at there, and adds each counter outside
   * {@code [committed, committed + unknown]} to {@code problems}.
   *
   * @return the sum of the counters read
   */
  private long validateGroup(TxnClient c, String dc, String group, Tally all,
      List<String> problems) {
    long need = lastPosition.getOrDefault(group, 0L);
    long deadline = System.nanoTime() + CATCH_UP_MS * 1_000_000;
    long[] values = new long[keys];
    try {
      while (true) {
        Transaction t = c.begin(group);
        if (t.readPosition() < need) {
          t.abort();
          if (System.nanoTime() > deadline) {
            problems.add("DC " + dc + " stayed behind position " + need + " of " + group
                + " (the last increment committed there)");
            return 0;
          }
          TxnWorkloads.think(50);
          continue;
        }
        for (int k = 0; k < keys; k++) {
          values[k] = t.getCounter(PaxosCpDB.item(counter(k), PaxosCpDB.VALUE_FIELD));
        }
        t.commit();
        break;
      }
    } catch (TransactionException | IllegalArgumentException | IllegalStateException e) {
      problems.add("group " + group + " could not be read at DC " + dc + ": " + e.getMessage());
      return 0;
    }
    long sum = 0;
    for (int k = 0; k < keys; k++) {
      String id = id(group, k);
      long low = all.committed.getOrDefault(id, 0L);
      long high = low + all.unknown.getOrDefault(id, 0L);
      if (values[k] < low || values[k] > high) {
        problems.add("counter " + id + " at DC " + dc + " is " + values[k] + ", expected "
            + (low == high ? Long.toString(low) : low + ".." + high)
            + " (the increments committed" + (low == high ? "" : ", plus those whose outcome "
                + "stayed unknown") + ")");
      }
      sum += values[k];
    }
    return sum;
  }
}
