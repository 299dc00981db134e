package org.paxoscp.bench;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;

/**
 * Closed-loop transfers over {@code k} entity groups per transaction: each client owns its own
 * {@code k} groups (so clients never contend: the latency is the protocol's), begins a
 * {@link MultiTransaction}, reads one key in every group, writes it, commits, and measures the
 * commit call alone (the begins and reads are the same for any commit protocol). With {@code k}
 * = 1 it is the ordinary one-group commit.
 */
public final class CrossGroupLoad {

  /**
   * What one load measured.
   *
   * @param name the load's label in tables
   * @param groupsPerTxn groups each transaction touched
   * @param seconds measured wall time
   * @param commitMicros commit latency of the committed transactions
   * @param groupsUsed every group the load wrote, for the checker
   * @param observations the clients' reports of their cross-group transactions
   */
  public record Result(String name, int groupsPerTxn, double seconds, int committed, int aborted,
      int unknown, Histogram commitMicros, List<String> groupsUsed,
      List<CrossGroupChecker.Observation> observations) {

    public double txnPerSecond() {
      return seconds <= 0 ? 0 : committed / seconds;
    }

    public double p50Millis() {
      return commitMicros.getTotalCount() == 0 ? Double.NaN
          : commitMicros.getValueAtPercentile(50) / 1000.0;
    }

    public double p99Millis() {
      return commitMicros.getTotalCount() == 0 ? Double.NaN
          : commitMicros.getValueAtPercentile(99) / 1000.0;
    }
  }

  private CrossGroupLoad() {}

  /** A load ready to run: its clients are made by {@link #start}. */
  public static final class Running {
    private final ExecutorService pool;
    private final List<Future<int[]>> futures;
    private final List<TxnClient> clients;
    private final Histogram commit;
    private final String name;
    private final int k;
    private final List<String> groups;
    private final ConcurrentLinkedQueue<CrossGroupChecker.Observation> observations;
    private final long startNanos;

    private Running(ExecutorService pool, List<Future<int[]>> futures, List<TxnClient> clients,
        Histogram commit, String name, int k, List<String> groups,
        ConcurrentLinkedQueue<CrossGroupChecker.Observation> observations) {
      this.pool = pool;
      this.futures = futures;
      this.clients = clients;
      this.commit = commit;
      this.name = name;
      this.k = k;
      this.groups = groups;
      this.observations = observations;
      this.startNanos = System.nanoTime();
    }

    /** Waits for every client to finish its transactions, closes them, and reports. */
    public Result await() throws Exception {
      int[] sum = new int[3];
      for (Future<int[]> f : futures) {
        int[] c = f.get();
        for (int i = 0; i < 3; i++) {
          sum[i] += c[i];
        }
      }
      double seconds = (System.nanoTime() - startNanos) / 1e9;
      pool.shutdown();
      pool.awaitTermination(10, TimeUnit.SECONDS);
      for (TxnClient c : clients) {
        c.close();
      }
      synchronized (commit) {
        return new Result(name, k, seconds, sum[0], sum[1], sum[2], commit.copy(), groups,
            List.copyOf(observations));
      }
    }
  }

  /**
   * Starts {@code clients} clients at {@code homes} (round robin), each running {@code warmup}
   * unmeasured then {@code txns} measured transactions over its own {@code k} groups named
   * {@code prefix-<client>-<i>}.
   */
  public static Running start(LocalCluster cluster, CommitProtocol protocol, String name,
      String prefix, int k, int clients, List<String> homes, int warmup, int txns) {
    Histogram commit = new Histogram(3_600_000_000L, 3);
    List<TxnClient> made = new ArrayList<>();
    List<String> groups = new ArrayList<>();
    ConcurrentLinkedQueue<CrossGroupChecker.Observation> observations =
        new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(clients);
    List<Future<int[]>> futures = new ArrayList<>();
    for (int c = 0; c < clients; c++) {
      TxnClient client = cluster.client(homes.get(c % homes.size()), protocol);
      made.add(client);
      List<String> mine = new ArrayList<>();
      for (int i = 0; i < k; i++) {
        mine.add(prefix + "-" + c + "-" + i);
      }
      groups.addAll(mine);
      futures.add(pool.submit(() -> {
        int[] counts = new int[3];
        for (int i = 0; i < warmup + txns; i++) {
          boolean measured = i >= warmup;
          MultiTransaction t = client.beginMulti();
          try {
            for (String g : mine) {
              long v = t.getString(g, "balance").map(Long::parseLong).orElse(0L);
              t.put(g, "balance", Long.toString(v + 1).getBytes(StandardCharsets.UTF_8));
            }
            long t0 = System.nanoTime();
            t.commit();
            long micros = Math.max(1, (System.nanoTime() - t0) / 1000);
            if (measured) {
              counts[0]++;
              synchronized (commit) {
                commit.recordValue(micros);
              }
            }
            observe(observations, t, TxnRecord.Status.COMMITTED);
          } catch (TransactionAbortedException e) {
            counts[1] += measured ? 1 : 0;
            observe(observations, t, TxnRecord.Status.ABORTED);
          } catch (OutcomeUnknownException e) {
            counts[2] += measured ? 1 : 0;
            observe(observations, t, TxnRecord.Status.UNKNOWN);
          } catch (TransactionException e) {
            counts[1] += measured ? 1 : 0;
            if (t.isActive()) {
              t.abort();
            }
          }
        }
        return counts;
      }));
    }
    return new Running(pool, futures, made, commit, name, k, groups, observations);
  }

  private static void observe(ConcurrentLinkedQueue<CrossGroupChecker.Observation> out,
      MultiTransaction t, TxnRecord.Status status) {
    if (t.groups().size() > 1) {
      out.add(new CrossGroupChecker.Observation(t.txnId(), status, t.groups(),
          new TreeMap<String, Map<String, Long>>(), false));
    }
  }
}
