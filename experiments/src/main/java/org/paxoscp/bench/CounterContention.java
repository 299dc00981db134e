package org.paxoscp.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.client.UpdateRefusedException;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.wal.Updates;

/**
 * Closed-loop clients that all increment one counter of one entity group, in one of two ways
 * ({@link Workload}): a commutative {@link Transaction#add} that reads nothing, or a
 * read-modify-write that gets the counter and puts the value plus one. Each client (its own
 * thread and {@link TxnClient}) runs transactions back to back with no think time until the run
 * ends. Only the transactions that finish inside the measured window are counted in the rates;
 * every commit, warm-up included, counts towards the value the counter must hold at the end
 * ({@link #readEverywhere}). Used by {@code paxoscp bench-counter}.
 */
public final class CounterContention {
  private CounterContention() {}

  /** How a transaction increments the counter. */
  public enum Workload {
    /** {@code t.add(key, 1)}: a commutative update; the transaction reads nothing. */
    ADD("add"),
    /** {@code get(key)}, then {@code put(key, value + 1)}: the key joins the read set. */
    RMW("read-modify-write");

    private final String label;

    Workload(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }
  }

  /**
   * @param group the entity group (one per workload and mode)
   * @param key the counter's key
   * @param homes the DCs; {@code clientsPerDc} clients are homed at each
   * @param warmup time from the start whose transactions are not measured
   * @param duration the measured window after the warm-up; no transaction begins after it
   */
  public record Spec(String group, String key, Workload workload, List<String> homes,
      int clientsPerDc, Duration warmup, Duration duration) {
    public Spec {
      homes = List.copyOf(homes);
      if (homes.isEmpty() || clientsPerDc < 1 || warmup.isNegative() || duration.isZero()
          || duration.isNegative()) {
        throw new IllegalArgumentException("need a DC, clients per DC >= 1, warm-up >= 0 and a "
            + "positive duration");
      }
    }

    public int clients() {
      return homes.size() * clientsPerDc;
    }
  }

  /** Why a transaction aborted, from the reason its client was told. */
  public enum Cause {
    /**
     * A key it read was written at the position it competed for (Paxos-CP's promotion check,
     * leader combination's placement): a read-write conflict.
     */
    CONFLICT,
    /**
     * Anything else: basic Paxos's lost position, a used-up promotion cap or bound, a read
     * position no longer served, an update refused.
     */
    OTHER
  }

  /** The cause of an abort whose reason is {@code reason}. */
  public static Cause cause(String reason) {
    return reason != null && reason.contains("read a key written") ? Cause.CONFLICT : Cause.OTHER;
  }

  /**
   * {@code reason} with its numbers and the names after " by " left out, so that aborts of one
   * kind count together ("lost position #").
   */
  public static String reasonKind(String reason) {
    String r = reason == null || reason.isBlank() ? "(no reason given)" : reason;
    int by = r.indexOf(" by ");
    if (by >= 0) {
      r = r.substring(0, by);
    }
    return r.replaceAll("\\d+", "#");
  }

  /** Counts a run keeps while it runs, for progress lines (read from any thread). */
  public static final class Live {
    private final LongAdder committed = new LongAdder();
    private final LongAdder aborted = new LongAdder();

    public long committed() {
      return committed.sum();
    }

    public long aborted() {
      return aborted.sum();
    }
  }

  /**
   * What one run measured. The rates and latencies cover the measured window; the totals cover
   * the whole run.
   *
   * @param seconds the measured window's length
   * @param committed commits in the window
   * @param conflictAborts aborts in the window for a read-write conflict
   * @param otherAborts aborts in the window for anything else ({@code otherReasons} says what)
   * @param unknown commits in the window whose outcome stayed unknown
   * @param unavailable begins, reads or commits in the window that found no DC or no majority
   * @param commitMicros the commit call's latency of the commits in the window
   * @param clientsCommitting clients with at least one commit in the window
   * @param mostByOneClient the most commits one client made in the window
   * @param totalCommitted commits over the whole run (each added one to the counter)
   * @param totalUnknown unknown outcomes over the whole run (each added one, or nothing)
   * @param provenPosition the highest position a client was told of
   * @param otherReasons the window's other aborts, by {@link #reasonKind}
   */
  public record Result(Workload workload, int clients, double seconds, long committed,
      long conflictAborts, long otherAborts, long unknown, long unavailable,
      Histogram commitMicros, int clientsCommitting, long mostByOneClient, long totalCommitted,
      long totalUnknown, long provenPosition, Map<String, Long> otherReasons) {
    public double commitsPerSecond() {
      return committed / seconds;
    }

    public long aborted() {
      return conflictAborts + otherAborts;
    }
  }

  /**
   * Runs the workload's clients (client {@code i} homed at {@code homes[i % homes.size()]}) until
   * the window ends and every client has finished its last transaction.
   *
   * @param clientFor builds a client homed at a DC (the run closes it)
   * @param live counted into as transactions finish
   * @throws IllegalStateException if a client failed other than by a transaction's outcome
   */
  public static Result run(Spec spec, Function<String, TxnClient> clientFor, Live live)
      throws InterruptedException {
    int clients = spec.clients();
    LongAdder committed = new LongAdder();
    LongAdder conflict = new LongAdder();
    LongAdder other = new LongAdder();
    LongAdder unknown = new LongAdder();
    LongAdder unavailable = new LongAdder();
    LongAdder totalCommitted = new LongAdder();
    LongAdder totalUnknown = new LongAdder();
    AtomicLong proven = new AtomicLong();
    AtomicLongArray perClient = new AtomicLongArray(clients);
    Map<String, LongAdder> reasons = new ConcurrentHashMap<>();
    Histogram latency = new ConcurrentHistogram(3);
    long start = System.nanoTime();
    long measureFrom = start + spec.warmup().toNanos();
    long end = measureFrom + spec.duration().toNanos();
    ExecutorService pool = Executors.newFixedThreadPool(clients, r -> {
      Thread t = new Thread(r, "counter-bench-client");
      t.setDaemon(true);
      return t;
    });
    List<Future<?>> futures = new ArrayList<>();
    try {
      for (int c = 0; c < clients; c++) {
        String home = spec.homes().get(c % spec.homes().size());
        int client = c;
        futures.add(pool.submit(() -> {
          try (TxnClient txc = clientFor.apply(home)) {
            while (System.nanoTime() < end) {
              Transaction tx;
              try {
                tx = txc.begin(spec.group());
              } catch (UnavailableException e) {
                if (inWindow(System.nanoTime(), measureFrom, end)) {
                  unavailable.increment();
                }
                continue;
              }
              proven.accumulateAndGet(tx.readPosition(), Math::max);
              String abortReason = null;
              long t0 = 0;
              try {
                increment(spec, tx);
                t0 = System.nanoTime();
                CommitResult r = tx.commit();
                long t1 = System.nanoTime();
                proven.accumulateAndGet(r.position(), Math::max);
                totalCommitted.increment();
                live.committed.increment();
                if (inWindow(t1, measureFrom, end)) {
                  committed.increment();
                  perClient.incrementAndGet(client);
                  latency.recordValue(Math.max(1, (t1 - t0) / 1000));
                }
                continue;
              } catch (TransactionAbortedException e) {
                abortReason = e.result().reason();
              } catch (UpdateRefusedException e) {
                // The entry is in the log but has no effect: the counter did not move.
                abortReason = "update refused: " + e.detail();
              } catch (OutcomeUnknownException e) {
                totalUnknown.increment();
                if (inWindow(System.nanoTime(), measureFrom, end)) {
                  unknown.increment();
                }
                continue;
              } catch (UnavailableException e) {
                if (tx.isActive()) {
                  tx.abort();
                }
                if (inWindow(System.nanoTime(), measureFrom, end)) {
                  unavailable.increment();
                }
                continue;
              }
              live.aborted.increment();
              if (inWindow(System.nanoTime(), measureFrom, end)) {
                if (cause(abortReason) == Cause.CONFLICT) {
                  conflict.increment();
                } else {
                  other.increment();
                  reasons.computeIfAbsent(reasonKind(abortReason), k -> new LongAdder())
                      .increment();
                }
              }
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("a counter client failed: " + e.getCause(), e.getCause());
    } finally {
      pool.shutdownNow();
    }
    int committing = 0;
    long most = 0;
    for (int c = 0; c < clients; c++) {
      committing += perClient.get(c) > 0 ? 1 : 0;
      most = Math.max(most, perClient.get(c));
    }
    Map<String, Long> otherReasons = new LinkedHashMap<>();
    reasons.entrySet().stream()
        .sorted((a, b) -> Long.compare(b.getValue().sum(), a.getValue().sum()))
        .forEach(e -> otherReasons.put(e.getKey(), e.getValue().sum()));
    return new Result(spec.workload(), clients, spec.duration().toNanos() / 1e9, committed.sum(),
        conflict.sum(), other.sum(), unknown.sum(), unavailable.sum(), latency, committing, most,
        totalCommitted.sum(), totalUnknown.sum(), proven.get(), otherReasons);
  }

  private static boolean inWindow(long t, long from, long end) {
    return t >= from && t <= end;
  }

  /** Buffers one increment of the counter, as the workload says. */
  private static void increment(Spec spec, Transaction tx) {
    if (spec.workload() == Workload.ADD) {
      tx.add(spec.key(), 1);
      return;
    }
    Optional<byte[]> v = tx.get(spec.key());
    long n = Updates.decodeCounter(v).orElseThrow(() -> new IllegalStateException(
        "the counter " + spec.key() + " of group " + spec.group() + " holds no counter"));
    tx.put(spec.key(), Updates.encodeCounter(n + 1));
  }

  /**
   * One DC's reading of the counter.
   *
   * @param readPosition the position the DC served the read at
   */
  public record Reading(String dc, long value, long readPosition) {}

  /**
   * Reads the counter at every DC, each through a client homed there, once the DC serves reads
   * at {@code upTo} or later (the caller has caught every DC up to it); gives up waiting after
   * {@code timeout} and returns the last reading, whose {@code readPosition} then shows it.
   */
  public static List<Reading> readEverywhere(LocalCluster cluster, List<String> dcs,
      String group, String key, long upTo, Duration timeout) {
    List<Reading> readings = new ArrayList<>();
    for (String dc : dcs) {
      long deadline = System.nanoTime() + timeout.toNanos();
      try (TxnClient c = cluster.client(dc, org.paxoscp.client.CommitProtocol.CP)) {
        Reading r;
        do {
          Transaction t = c.begin(group);
          try {
            r = new Reading(dc, t.getCounter(key), t.readPosition());
          } finally {
            t.abort();
          }
        } while (r.readPosition() < upTo && System.nanoTime() < deadline);
        readings.add(r);
      }
    }
    return readings;
  }

  /**
   * Whether {@code value} is what the run made: every commit added one, every unknown outcome
   * one or nothing.
   */
  public static boolean matches(long value, long committed, long unknown) {
    return value >= committed && value <= committed + unknown;
  }
}
