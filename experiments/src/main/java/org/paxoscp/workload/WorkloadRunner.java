package org.paxoscp.workload;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.IntConsumer;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.wal.Mutation;

/**
 * Runs a {@link WorkloadSpec} with real {@link TxnClient}s, one thread per client, and records
 * what every transaction observed (for the serializability checker) and how it ended.
 *
 * <p>Waiting between operations and between arrivals is the workload's own think time, so this
 * class sleeps on purpose.
 */
public final class WorkloadRunner {

  /** What a run produced: the history for the checker and the outcome counts. */
  public record Result(List<TxnRecord> history, SortedMap<Integer, Integer> commitsByRound,
      int readOnly, int aborted, int unknown, int unavailable, int combined,
      Histogram commitLatencyMicros, double seconds, long maxCommitPosition) {}

  /**
   * How one transaction ended, for callers that break a run down further (by home DC, by
   * promotion round).
   *
   * @param client the client's index
   * @param homeDc the client's home DC
   * @param outcome committed, read_only, aborted, unknown or unavailable
   * @param promotions promotions of a committed read-write transaction (else 0)
   * @param combined whether a committed transaction shared its log position
   * @param commitMicros commit call to outcome (0 if commit was never called)
   * @param txnMicros begin to outcome
   */
  public record Sample(int client, String homeDc, String outcome, int promotions,
      boolean combined, long commitMicros, long txnMicros, String abortReason) {
    /** A sample with no abort reason. */
    public Sample(int client, String homeDc, String outcome, int promotions, boolean combined,
        long commitMicros, long txnMicros) {
      this(client, homeDc, outcome, promotions, combined, commitMicros, txnMicros, "");
    }
  }

  /**
   * Why a commit aborted, in one word: {@code conflict} (it read a key a winner wrote),
   * {@code lost-position} (basic Paxos: another transaction took its position), {@code no-quorum}
   * (its proposer gave up on a position it never carried its entry to), {@code cap} or
   * {@code bound} (its promotion cap or leader bound was used up), {@code too-old} (its read
   * position was collected), else {@code other}.
   */
  public static String abortKind(String reason) {
    String r = reason == null ? "" : reason;
    if (r.contains("read a key written")) {
      return "conflict";
    } else if (r.startsWith("lost position")) {
      return "lost-position";
    } else if (r.startsWith("no quorum")) {
      return "no-quorum";
    } else if (r.startsWith("promotion cap")) {
      return "cap";
    } else if (r.contains("promotion bound")) {
      return "bound";
    } else if (r.contains("below the group's GC watermark")) {
      return "too-old";
    }
    return "other";
  }

  private WorkloadRunner() {}

  /**
   * Runs the workload; {@code clientFor} builds client {@code i}'s {@link TxnClient} for its home
   * DC (the runner closes it); {@code progress} is told the number of finished transactions
   * after each one.
   */
  public static Result run(WorkloadSpec spec, Function<String, TxnClient> clientFor,
      IntConsumer progress) throws InterruptedException {
    return run(spec, clientFor, progress, s -> { });
  }

  /** As {@link #run(WorkloadSpec, Function, IntConsumer)}, telling {@code samples} each outcome. */
  public static Result run(WorkloadSpec spec, Function<String, TxnClient> clientFor,
      IntConsumer progress, java.util.function.Consumer<Sample> samples)
      throws InterruptedException {
    List<TxnRecord> history = Collections.synchronizedList(new ArrayList<>());
    Map<Integer, AtomicInteger> rounds = new java.util.concurrent.ConcurrentHashMap<>();
    AtomicInteger readOnly = new AtomicInteger();
    AtomicInteger aborted = new AtomicInteger();
    AtomicInteger unknown = new AtomicInteger();
    AtomicInteger unavailable = new AtomicInteger();
    AtomicInteger combined = new AtomicInteger();
    AtomicInteger finished = new AtomicInteger();
    java.util.concurrent.atomic.AtomicLong maxPosition = new java.util.concurrent.atomic.AtomicLong();
    Histogram latency = new ConcurrentHistogram(3);
    ExecutorService pool = Executors.newFixedThreadPool(spec.clients(), r -> {
      Thread t = new Thread(r, "workload-client");
      t.setDaemon(true);
      return t;
    });
    long started = System.nanoTime();
    List<Future<?>> futures = new ArrayList<>();
    for (int c = 0; c < spec.clients(); c++) {
      final int client = c;
      String home = spec.homeDcs().get(c % spec.homeDcs().size());
      futures.add(pool.submit(() -> {
        SplittableRandom rnd = new SplittableRandom(spec.seed() * 1_000_003L + client);
        try (TxnClient txc = clientFor.apply(home)) {
          long next = System.nanoTime();
          for (int i = 0; i < spec.txnsPerClient(); i++) {
            next += (long) (-Math.log(1 - rnd.nextDouble()) / spec.ratePerClient() * 1e9);
            long wait = next - System.nanoTime();
            if (wait > 0) {
              TimeUnit.NANOSECONDS.sleep(wait);
            }
            long begun = System.nanoTime();
            Outcome o = runOne(spec, txc, "c" + client, rnd, history, latency);
            samples.accept(new Sample(client, home,
                o.kind.name().toLowerCase(java.util.Locale.ROOT), o.promotions, o.combined,
                o.commitMicros, (System.nanoTime() - begun) / 1000, o.abortReason));
            switch (o.kind) {
              case COMMITTED -> {
                rounds.computeIfAbsent(o.promotions, k -> new AtomicInteger()).incrementAndGet();
                if (o.combined) {
                  combined.incrementAndGet();
                }
                maxPosition.accumulateAndGet(o.position, Math::max);
              }
              case READ_ONLY -> readOnly.incrementAndGet();
              case ABORTED -> aborted.incrementAndGet();
              case UNKNOWN -> unknown.incrementAndGet();
              case UNAVAILABLE -> unavailable.incrementAndGet();
              default -> throw new IllegalStateException();
            }
            progress.accept(finished.incrementAndGet());
          }
        }
        return null;
      }));
    }
    pool.shutdown();
    try {
      for (Future<?> f : futures) {
        f.get();
      }
    } catch (java.util.concurrent.ExecutionException e) {
      pool.shutdownNow();
      throw new IllegalStateException("a workload client failed: " + e.getCause(), e.getCause());
    }
    SortedMap<Integer, Integer> byRound = new TreeMap<>();
    rounds.forEach((k, v) -> byRound.put(k, v.get()));
    return new Result(List.copyOf(history), byRound, readOnly.get(), aborted.get(), unknown.get(),
        unavailable.get(), combined.get(), latency, (System.nanoTime() - started) / 1e9,
        maxPosition.get());
  }

  private enum Kind { COMMITTED, READ_ONLY, ABORTED, UNKNOWN, UNAVAILABLE }

  private record Outcome(Kind kind, int promotions, boolean combined, long position,
      long commitMicros, String abortReason) {
    Outcome(Kind kind, int promotions, boolean combined, long position) {
      this(kind, promotions, combined, position, 0, "");
    }

    Outcome(Kind kind, int promotions, boolean combined, long position, long commitMicros) {
      this(kind, promotions, combined, position, commitMicros, "");
    }
  }

  private static Outcome runOne(WorkloadSpec spec, TxnClient txc, String client,
      SplittableRandom rnd, List<TxnRecord> history, Histogram latency)
      throws InterruptedException {
    Transaction tx;
    try {
      tx = txc.begin(spec.group());
    } catch (UnavailableException e) {
      return new Outcome(Kind.UNAVAILABLE, 0, false, 0);
    }
    Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
    SortedMap<String, Mutation> writes = new TreeMap<>();
    try {
      for (int op = 0; op < spec.ops(); op++) {
        String key = "a" + rnd.nextInt(spec.attributes());
        if (rnd.nextDouble() < spec.readFraction()) {
          Optional<byte[]> v = tx.get(key);
          if (!writes.containsKey(key) && !reads.containsKey(key)) {
            reads.put(key, v);
          }
        } else {
          byte[] value = (tx.txnId() + "/" + op).getBytes(StandardCharsets.UTF_8);
          tx.put(key, value);
          writes.put(key, Mutation.put(value));
        }
        if (!spec.opTime().isZero()) {
          Thread.sleep(spec.opTime().toMillis(), spec.opTime().toNanosPart() % 1_000_000);
        }
      }
    } catch (UnavailableException e) {
      tx.abort();
      return new Outcome(Kind.UNAVAILABLE, 0, false, 0);
    }
    long t0 = System.nanoTime();
    try {
      CommitResult r = tx.commit();
      if (writes.isEmpty()) {
        history.add(record(tx, client, TxnRecord.Status.COMMITTED, reads, writes, -1));
        return new Outcome(Kind.READ_ONLY, 0, false, r.position());
      }
      long micros = Math.max(1, (System.nanoTime() - t0) / 1000);
      latency.recordValue(micros);
      history.add(record(tx, client, TxnRecord.Status.COMMITTED, reads, writes, r.position()));
      return new Outcome(Kind.COMMITTED, r.promotions(), r.combined(), r.position(), micros);
    } catch (TransactionAbortedException e) {
      history.add(record(tx, client, TxnRecord.Status.ABORTED, reads, writes, -1));
      // Promotions before the abort: how far the transaction got.
      return new Outcome(Kind.ABORTED, e.result().promotions(), false, 0,
          Math.max(1, (System.nanoTime() - t0) / 1000), abortKind(e.result().reason()));
    } catch (OutcomeUnknownException e) {
      history.add(record(tx, client, TxnRecord.Status.UNKNOWN, reads, writes, -1));
      return new Outcome(Kind.UNKNOWN, 0, false, 0, Math.max(1, (System.nanoTime() - t0) / 1000));
    } catch (UnavailableException e) {
      // Certainly not in the log (the entry was never sent for acceptance).
      history.add(record(tx, client, TxnRecord.Status.ABORTED, reads, writes, -1));
      return new Outcome(Kind.UNAVAILABLE, 0, false, 0);
    } catch (TransactionException e) {
      throw new IllegalStateException("unexpected commit failure of " + tx.txnId(), e);
    }
  }

  private static TxnRecord record(Transaction tx, String client, TxnRecord.Status status,
      Map<String, Optional<byte[]>> reads, SortedMap<String, Mutation> writes, long position) {
    return new TxnRecord(tx.txnId(), client, status, tx.readPosition(), reads, writes, position);
  }
}
