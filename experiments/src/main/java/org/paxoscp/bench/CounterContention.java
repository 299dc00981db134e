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
 * ({@link #readEverywhere}). A commit whose outcome is unknown is settled
 * ({@link TxnClient#settle}) by its client once every client has stopped, so that the end value
 * can be compared exactly. Used by {@code paxoscp bench-counter}.
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
    private final LongAdder unknown = new LongAdder();

    public long committed() {
      return committed.sum();
    }

    public long aborted() {
      return aborted.sum();
    }

    public long unknown() {
      return unknown.sum();
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
   * @param promotions the window's commits' promotions, summed (Paxos-CP and leader
   *     combination move a transaction to a later position instead of aborting it)
   * @param combinedCommits the window's commits whose position holds other transactions too
   * @param clientsCommitting clients with at least one commit in the window
   * @param mostByOneClient the most commits one client made in the window
   * @param totalCommitted commits over the whole run (each added one to the counter)
   * @param settledCommitted unknown outcomes of the whole run that {@link TxnClient#settle}
   *     found committed after the run (each added one)
   * @param settledAborted unknown outcomes it found aborted (each added nothing)
   * @param stillUnknown unknown outcomes it could not settle (each added one, or nothing)
   * @param provenPosition the highest position a client was told of
   * @param otherReasons the window's other aborts, by {@link #reasonKind}
   */
  public record Result(Workload workload, int clients, double seconds, long committed,
      long conflictAborts, long otherAborts, long unknown, long unavailable,
      Histogram commitMicros, long promotions, long combinedCommits, int clientsCommitting,
      long mostByOneClient, long totalCommitted, long settledCommitted, long settledAborted,
      long stillUnknown, long provenPosition, Map<String, Long> otherReasons) {
    public double commitsPerSecond() {
      return committed / seconds;
    }

    public long aborted() {
      return conflictAborts + otherAborts;
    }

    /** Unknown outcomes over the whole run, before settling. */
    public long totalUnknown() {
      return settledCommitted + settledAborted + stillUnknown;
    }

    /** The increments certainly in the counter: commits, and unknowns settled committed. */
    public long increments() {
      return totalCommitted + settledCommitted;
    }
  }

  /**
   * Opens the workload's clients one at a time, client {@code i} homed at {@code homes[i %
   * homes.size()]}, before any load: a client learns the cluster's version when it opens
   * (docs/upgrading.md), and one that opens while the services are busy may get no answer in
   * time and start at an older version until its next poll. Each client buffers an add of 0 in
   * a transaction it then aborts (nothing is sent for it), which fails while the client speaks a
   * version without counters; such a client (or one whose begin found no DC) is closed and
   * opened again, up to five times.
   *
   * @param clientFor builds a client homed at a DC
   * @throws IllegalStateException if a client still speaks an older version after five tries
   */
  public static List<TxnClient> openClients(Spec spec, Function<String, TxnClient> clientFor) {
    List<TxnClient> opened = new ArrayList<>();
    try {
      for (int c = 0; c < spec.clients(); c++) {
        String home = spec.homes().get(c % spec.homes().size());
        TxnClient client = null;
        for (int attempt = 1; client == null; attempt++) {
          TxnClient candidate = clientFor.apply(home);
          try {
            Transaction t = candidate.begin(spec.group());
            try {
              t.add(spec.key(), 0);
            } finally {
              t.abort();
            }
            client = candidate;
          } catch (org.paxoscp.version.VersionNotActiveException | UnavailableException e) {
            candidate.close();
            if (attempt == 5) {
              throw new IllegalStateException("a client homed at " + home + " could not begin "
                  + "an add after " + attempt + " tries: " + e.getMessage(), e);
            }
          } catch (RuntimeException e) {
            candidate.close();
            throw e;
          }
        }
        opened.add(client);
      }
      return opened;
    } catch (RuntimeException e) {
      for (TxnClient c : opened) {
        c.close();
      }
      throw e;
    }
  }

  /**
   * Runs the workload on {@code opened} (from {@link #openClients}; the run closes them) until
   * the window ends and every client has finished its last transaction, then settles the run's
   * unknown outcomes, a few at a time, for at most {@link #SETTLE_TIME}.
   *
   * @param live counted into as transactions finish
   * @throws IllegalStateException if a client failed other than by a transaction's outcome
   */
  public static Result run(Spec spec, List<TxnClient> opened, Live live)
      throws InterruptedException {
    int clients = opened.size();
    LongAdder committed = new LongAdder();
    LongAdder conflict = new LongAdder();
    LongAdder other = new LongAdder();
    LongAdder unknown = new LongAdder();
    LongAdder unavailable = new LongAdder();
    LongAdder totalCommitted = new LongAdder();
    LongAdder promotions = new LongAdder();
    LongAdder combined = new LongAdder();
    LongAdder settledCommitted = new LongAdder();
    LongAdder settledAborted = new LongAdder();
    LongAdder stillUnknown = new LongAdder();
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
    List<Future<List<OutcomeUnknownException>>> futures = new ArrayList<>();
    try {
      for (int c = 0; c < clients; c++) {
        int client = c;
        TxnClient txc = opened.get(c);
        futures.add(pool.submit(() -> {
          List<OutcomeUnknownException> unknowns = new ArrayList<>();
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
                promotions.add(r.promotions());
                if (r.combined()) {
                  combined.increment();
                }
              }
              continue;
            } catch (TransactionAbortedException e) {
              abortReason = e.result().reason();
            } catch (UpdateRefusedException e) {
              // The entry is in the log but has no effect: the counter did not move.
              abortReason = "update refused: " + e.detail();
            } catch (OutcomeUnknownException e) {
              unknowns.add(e);
              live.unknown.increment();
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
          return unknowns;
        }));
      }
      List<List<OutcomeUnknownException>> unknowns = new ArrayList<>();
      for (Future<List<OutcomeUnknownException>> f : futures) {
        unknowns.add(f.get());
      }
      List<Future<CommitResult.Status>> settled = new ArrayList<>();
      long settleBy = System.nanoTime() + SETTLE_TIME.toNanos();
      ExecutorService settlers = Executors.newFixedThreadPool(SETTLERS, r -> {
        Thread t = new Thread(r, "counter-bench-settle");
        t.setDaemon(true);
        return t;
      });
      try {
        // Settled once every client has stopped, by a few threads at a time: as many settlers
        // as clients would compete for the same positions as the clients did.
        for (int c = 0; c < clients; c++) {
          TxnClient txc = opened.get(c);
          for (OutcomeUnknownException u : unknowns.get(c)) {
            settled.add(settlers.submit(() -> settle(txc, u, settleBy, proven)));
          }
        }
        for (Future<CommitResult.Status> f : settled) {
          switch (f.get()) {
            case COMMITTED -> settledCommitted.increment();
            case ABORTED -> settledAborted.increment();
            default -> stillUnknown.increment();
          }
        }
      } finally {
        settlers.shutdownNow();
      }
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("a counter client failed: " + e.getCause(), e.getCause());
    } finally {
      pool.shutdownNow();
      for (TxnClient c : opened) {
        c.close();
      }
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
        conflict.sum(), other.sum(), unknown.sum(), unavailable.sum(), latency, promotions.sum(),
        combined.sum(), committing, most, totalCommitted.sum(), settledCommitted.sum(),
        settledAborted.sum(), stillUnknown.sum(), proven.get(), otherReasons);
  }

  /** How long the run goes on settling unknown outcomes once every client has stopped. */
  static final Duration SETTLE_TIME = Duration.ofSeconds(30);

  /** Unknown outcomes settled at once. */
  private static final int SETTLERS = 3;

  /**
   * Settles one unknown outcome with the client whose commit threw it, again while it stays
   * unknown (or finds no majority) and {@code settleBy} has not passed.
   */
  private static CommitResult.Status settle(TxnClient c, OutcomeUnknownException u,
      long settleBy, AtomicLong proven) {
    OutcomeUnknownException last = u;
    while (System.nanoTime() < settleBy) {
      try {
        CommitResult r = c.settle(last);
        proven.accumulateAndGet(r.position(), Math::max);
        return CommitResult.Status.COMMITTED;
      } catch (TransactionAbortedException e) {
        proven.accumulateAndGet(e.decidedPosition(), Math::max);
        return CommitResult.Status.ABORTED;
      } catch (OutcomeUnknownException e) {
        last = e;
      } catch (UnavailableException e) {
        // No majority this time: the outcome is as unknown as before; try again.
      }
    }
    return CommitResult.Status.UNKNOWN;
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
   * Whether {@code value} is what the run made: every increment known committed added one,
   * every outcome still unknown one or nothing.
   */
  public static boolean matches(long value, long committed, long unknown) {
    return value >= committed && value <= committed + unknown;
  }
}
