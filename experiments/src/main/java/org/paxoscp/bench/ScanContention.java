package org.paxoscp.bench;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.ScanResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * The paper's contention workload (section 6, Figure 6: clients with Poisson arrivals, each
 * transaction {@code ops} reads or writes of attributes of one entity group, with application
 * time per operation) where a share of the operations are short range reads: a read slot becomes,
 * with probability {@code scanShare / readFraction}, a <em>scan slot</em>, read as {@link ReadSlot}
 * says: a get of a random attribute (the baseline), a scan of {@code scanKeys} keys from it, or
 * gets of those same {@code scanKeys} keys one by one. Every random draw is the same whatever the
 * slot, so runs differ only in how their scan slots read. Used by {@code paxoscp bench-scan}.
 *
 * <p>Waiting between operations and between arrivals is the workload's own think time, so this
 * class sleeps on purpose.
 */
public final class ScanContention {
  private ScanContention() {}

  /** How a scan slot reads, from the slot's attribute {@code s}. */
  public enum ReadSlot {
    /** A get of {@code key(s)}: one key, as any other read (the baseline, "gets only"). */
    ONE_GET,
    /** A scan of {@code scanKeys} keys from {@code key(s)}: one range read. */
    SCAN,
    /**
     * Gets of {@code key(s) .. key(s + scanKeys - 1)}, one by one: the keys the scan returns
     * (every attribute is preloaded), without a range.
     */
    KEY_GETS
  }

  /**
   * @param group the entity group
   * @param homes the clients' home DCs, round-robin
   * @param clients concurrent clients
   * @param attributes keys {@code a000...}, all written by {@link #preload} first
   * @param ops operations per transaction
   * @param readFraction probability an operation reads
   * @param scanShare probability an operation is a scan (at most {@code readFraction})
   * @param scanKeys keys per scan
   * @param slot how a scan slot reads
   * @param txnsPerClient transactions per client
   * @param rate Poisson arrivals per client per second
   * @param opTime application time per operation
   * @param seed seeds every choice; the same seed gives the same choices whatever the slot
   */
  public record Spec(String group, List<String> homes, int clients, int attributes, int ops,
      double readFraction, double scanShare, int scanKeys, ReadSlot slot, int txnsPerClient,
      double rate, Duration opTime, long seed) {
    public Spec {
      homes = List.copyOf(homes);
      java.util.Objects.requireNonNull(slot, "slot");
      if (clients < 1 || attributes < scanKeys || scanKeys < 1 || ops < 1 || txnsPerClient < 1
          || !(rate > 0) || scanShare < 0 || scanShare > readFraction || readFraction > 1) {
        throw new IllegalArgumentException("clients, ops, transactions, scan keys >= 1, "
            + "attributes >= scan keys, 0 <= scan share <= read fraction <= 1, rate > 0");
      }
    }
  }

  /**
   * One transaction as its client saw it.
   *
   * @param outcome committed, read_only, aborted, unknown or unavailable
   * @param scanned whether it read a scan slot as its {@link ReadSlot} says: made a range read
   *     ({@code SCAN}) or got the slot's keys ({@code KEY_GETS}); never for {@code ONE_GET}
   * @param position the commit position (or -1)
   * @param reason why it aborted, as the client was told ("" otherwise)
   * @param readKeys the keys it got from the store
   * @param ranges the ranges its scans read, as far as each read
   */
  public record Txn(String txnId, String outcome, boolean scanned, long readPosition,
      long position, String reason, Set<String> readKeys, List<KeyRange> ranges) {}

  /** A run: every transaction, its length and the commit latency of the read-write ones. */
  public record Result(List<Txn> txns, double seconds, Histogram commitMicros) {
    public long count(String outcome) {
      return txns.stream().filter(t -> t.outcome().equals(outcome)).count();
    }

    /** Committed transactions, read-only ones included. */
    public long committed() {
      return count("committed") + count("read_only");
    }

    public double commitsPerSecond() {
      return committed() / seconds;
    }

    /** The highest position a client was told of (for catching the DCs up). */
    public long provenPosition() {
      return txns.stream().mapToLong(t -> Math.max(t.readPosition(), t.position())).max()
          .orElse(0);
    }
  }

  /** Attribute {@code a}'s key: zero-padded, so key order is attribute order. */
  public static String key(int a) {
    return String.format(Locale.ROOT, "a%06d", a);
  }

  /** Writes every attribute once (in one transaction per 200), so that scans find keys. */
  public static void preload(TxnClient c, String group, int attributes) {
    for (int from = 0; from < attributes; from += 200) {
      int to = Math.min(attributes, from + 200);
      int f = from;
      c.runInTransaction(group, t -> {
        for (int a = f; a < to; a++) {
          t.put(key(a), "init");
        }
        return null;
      });
    }
  }

  /** Runs the workload; {@code clientFor} builds a client homed at a DC (the run closes it). */
  public static Result run(Spec spec, Function<String, TxnClient> clientFor)
      throws InterruptedException {
    List<Txn> txns = Collections.synchronizedList(new ArrayList<>());
    Histogram latency = new ConcurrentHistogram(3);
    ExecutorService pool = Executors.newFixedThreadPool(spec.clients(), r -> {
      Thread t = new Thread(r, "scan-bench-client");
      t.setDaemon(true);
      return t;
    });
    long started = System.nanoTime();
    List<Future<?>> futures = new ArrayList<>();
    for (int c = 0; c < spec.clients(); c++) {
      int client = c;
      String home = spec.homes().get(c % spec.homes().size());
      futures.add(pool.submit(() -> {
        SplittableRandom rnd = new SplittableRandom(spec.seed() * 1_000_003L + client);
        try (TxnClient txc = clientFor.apply(home)) {
          long next = System.nanoTime();
          for (int i = 0; i < spec.txnsPerClient(); i++) {
            next += (long) (-Math.log(1 - rnd.nextDouble()) / spec.rate() * 1e9);
            long wait = next - System.nanoTime();
            if (wait > 0) {
              TimeUnit.NANOSECONDS.sleep(wait);
            }
            txns.add(runOne(spec, txc, rnd, latency));
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
    return new Result(List.copyOf(txns), (System.nanoTime() - started) / 1e9, latency);
  }

  private static Txn runOne(Spec spec, TxnClient txc, SplittableRandom rnd, Histogram latency)
      throws InterruptedException {
    // Draw every operation first: every form of the workload makes the same draws.
    int n = spec.ops();
    double[] u = new double[n];
    int[] a = new int[n];
    double[] v = new double[n];
    int[] s = new int[n];
    for (int op = 0; op < n; op++) {
      u[op] = rnd.nextDouble();
      a[op] = rnd.nextInt(spec.attributes());
      v[op] = rnd.nextDouble();
      s[op] = rnd.nextInt(spec.attributes() - spec.scanKeys() + 1);
    }
    Transaction tx;
    try {
      tx = txc.begin(spec.group());
    } catch (UnavailableException e) {
      return new Txn("", "unavailable", false, -1, -1, "", Set.of(), List.of());
    }
    Set<String> readKeys = new TreeSet<>();
    Set<String> written = new TreeSet<>();
    List<KeyRange> ranges = new ArrayList<>();
    boolean slotRead = false;
    double scanSlot = spec.readFraction() == 0 ? 0 : spec.scanShare() / spec.readFraction();
    try {
      for (int op = 0; op < n; op++) {
        if (u[op] < spec.readFraction()) {
          if (v[op] < scanSlot && spec.slot() == ReadSlot.SCAN) {
            String from = key(s[op]);
            ScanResult r = tx.scan(from, null, spec.scanKeys());
            KeyRange whole = new KeyRange(from, null);
            ranges.add(r.hasMore() ? whole.through(r.lastKey().orElseThrow()) : whole);
            slotRead = true;
          } else if (v[op] < scanSlot && spec.slot() == ReadSlot.KEY_GETS) {
            for (int k = s[op]; k < s[op] + spec.scanKeys(); k++) {
              get(tx, key(k), written, readKeys);
            }
            slotRead = true;
          } else {
            get(tx, key(v[op] < scanSlot ? s[op] : a[op]), written, readKeys);
          }
        } else {
          String k = key(a[op]);
          tx.put(k, (tx.txnId() + "/" + op).getBytes(StandardCharsets.UTF_8));
          written.add(k);
        }
        if (!spec.opTime().isZero()) {
          Thread.sleep(spec.opTime().toMillis(), spec.opTime().toNanosPart() % 1_000_000);
        }
      }
    } catch (UnavailableException e) {
      tx.abort();
      return new Txn(tx.txnId(), "unavailable", slotRead, tx.readPosition(), -1, "",
          readKeys, ranges);
    } catch (TransactionAbortedException e) {
      return new Txn(tx.txnId(), "aborted", slotRead, tx.readPosition(), -1,
          e.result().reason(), readKeys, ranges);
    }
    long t0 = System.nanoTime();
    try {
      CommitResult r = tx.commit();
      if (written.isEmpty()) {
        return new Txn(tx.txnId(), "read_only", slotRead, tx.readPosition(),
            r.position(), "", readKeys, ranges);
      }
      latency.recordValue(Math.max(1, (System.nanoTime() - t0) / 1000));
      return new Txn(tx.txnId(), "committed", slotRead, tx.readPosition(),
          r.position(), "", readKeys, ranges);
    } catch (TransactionAbortedException e) {
      return new Txn(tx.txnId(), "aborted", slotRead, tx.readPosition(), -1,
          e.result().reason(), readKeys, ranges);
    } catch (OutcomeUnknownException e) {
      return new Txn(tx.txnId(), "unknown", slotRead, tx.readPosition(), -1, "",
          readKeys, ranges);
    } catch (UnavailableException e) {
      return new Txn(tx.txnId(), "unavailable", slotRead, tx.readPosition(), -1, "",
          readKeys, ranges);
    }
  }

  /** Gets {@code k}, recording it as read unless the transaction wrote it first. */
  private static void get(Transaction tx, String k, Set<String> written, Set<String> readKeys) {
    tx.get(k);
    if (!written.contains(k)) {
      readKeys.add(k);
    }
  }

  /** Why an aborted transaction aborted, inferred from the log (see {@link #cause}). */
  public enum Cause {
    /** A winner wrote a key it got; its ranges may also have been written. */
    KEY,
    /** A winner wrote into a range it scanned and into no key it got: the scan aborted it. */
    RANGE,
    /** Its position went to another transaction without a conflict (basic Paxos), or other. */
    OTHER
  }

  private static final Pattern AT_POSITION = Pattern.compile("at position (\\d+)");

  /**
   * The cause of {@code t}'s abort, inferred: the client names the position whose chosen value
   * it lost to ("read a key written at position P"), not whether a key or a range conflicted, so
   * this looks at what the entries chosen at P wrote. {@link Cause#OTHER} for anything else
   * (basic Paxos's "lost position", a used-up bound, a position no DC holds).
   *
   * @param logs every DC's log of the group
   */
  public static Cause cause(Txn t, Map<String, SortedMap<Long, LogValue>> logs) {
    if (!t.outcome().equals("aborted") || !t.reason().contains("read a key written")) {
      return Cause.OTHER;
    }
    Matcher m = AT_POSITION.matcher(t.reason());
    if (!m.find()) {
      return Cause.OTHER;
    }
    long p = Long.parseLong(m.group(1));
    LogValue chosen = null;
    for (SortedMap<Long, LogValue> log : logs.values()) {
      chosen = log.get(p);
      if (chosen != null) {
        break;
      }
    }
    if (chosen == null) {
      return Cause.OTHER;
    }
    boolean range = false;
    for (LogEntry e : chosen.entries()) {
      for (String k : e.writes().keySet()) {
        if (t.readKeys().contains(k)) {
          return Cause.KEY;
        }
        for (KeyRange r : t.ranges()) {
          range |= r.contains(k);
        }
      }
    }
    return range ? Cause.RANGE : Cause.OTHER;
  }
}
