package org.paxoscp.bench;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.HistoryRecorder;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.local.LogCatchUp;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.WanTransport;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Closed-loop throughput on one entity group: each client (its own thread and {@link TxnClient})
 * runs transactions back to back with no think time, each a blind write of one or two keys of its
 * own (no two clients write the same key, and nobody reads, so no transaction conflicts with
 * another: every Paxos-CP loser can be promoted). Transactions finishing in the warm-up are not
 * counted but are part of the history the serializability checker judges afterwards.
 */
public final class ClosedLoopThroughput {

  /**
   * What one run measured (over the measured window only, except {@code check}).
   *
   * @param committed committed transactions
   * @param aborted aborted transactions (lost a position under basic Paxos, or the promotion cap)
   * @param unknown outcome unknown
   * @param unavailable begin or commit found no DC / no majority
   * @param promotions sum of the committed transactions' promotions
   * @param combinedCommits committed transactions whose position holds other entries too
   * @param positions distinct log positions the measured commits landed at
   * @param prepares PREPARE messages the clients sent during the window (all DCs counted)
   * @param commitMicros commit latency of committed transactions
   * @param logLength the group's log length after the run (all DCs caught up)
   * @param noops positions of the log holding a no-op
   * @param check the serializability checker's verdict on the whole run
   * @param clientsCommitting clients with at least one commit in the window (fairness: a policy
   *     that hands the log to a few clients can look like a throughput gain)
   * @param mostByOneClient the most commits one client made in the window
   * @param commitMicrosByHome commit latency of committed transactions, per client home DC
   * @param beginMicrosByHome latency of every successful {@code begin} in the window, per client
   *     home DC (a closed-loop client begins right after its last commit, so this includes
   *     waiting for that commit to reach its home DC)
   */
  public record Result(CommitProtocol protocol, int clients, double seconds, long committed,
      long aborted, long unknown, long unavailable, long promotions, long combinedCommits,
      long positions, long prepares, Histogram commitMicros, long logLength, long noops,
      CheckResult check, int clientsCommitting, long mostByOneClient,
      Map<String, Histogram> commitMicrosByHome, Map<String, Histogram> beginMicrosByHome) {
    public double txnPerSecond() {
      return committed / seconds;
    }

    public double positionsPerSecond() {
      return positions / seconds;
    }

    public double entriesPerPosition() {
      return positions == 0 ? Double.NaN : (double) committed / positions;
    }
  }

  private ClosedLoopThroughput() {}

  /**
   * Runs {@code clients} clients, client {@code i} at home {@code homes[i % homes.size()]}, for
   * {@code warmup} then {@code duration}, then judges the run.
   *
   * @param export where to write every client's history and every DC's log as JSON lines (see
   *     {@link HistoryFiles}), or null
   */
  public static Result run(LocalCluster cluster, CommitProtocol protocol, List<String> homes,
      int clients, boolean direct, String group, Duration warmup, Duration duration, Path export)
      throws Exception {
    HistoryRecorder recorder = export == null ? null : HistoryRecorder.append(
        HistoryFiles.historyDir(export).resolve(group + ".jsonl"));
    List<TxnRecord> history = Collections.synchronizedList(new ArrayList<>());
    LongAdder committed = new LongAdder();
    LongAdder aborted = new LongAdder();
    LongAdder unknown = new LongAdder();
    LongAdder unavailable = new LongAdder();
    LongAdder promotions = new LongAdder();
    LongAdder combined = new LongAdder();
    LongAdder prepares = new LongAdder();
    Set<Long> positions = ConcurrentHashMap.newKeySet();
    AtomicLongArray perClient = new AtomicLongArray(clients);
    Histogram latency = new ConcurrentHistogram(3);
    Map<String, Histogram> latencyByHome = new LinkedHashMap<>();
    Map<String, Histogram> beginByHome = new LinkedHashMap<>();
    for (String h : homes) {
      latencyByHome.put(h, new ConcurrentHistogram(3));
      beginByHome.put(h, new ConcurrentHistogram(3));
    }
    long start = System.nanoTime();
    long measureFrom = start + warmup.toNanos();
    long end = measureFrom + duration.toNanos();
    ExecutorService pool = Executors.newFixedThreadPool(clients, r -> {
      Thread t = new Thread(r, "tput-client");
      t.setDaemon(true);
      return t;
    });
    List<Future<?>> futures = new ArrayList<>();
    try {
      for (int c = 0; c < clients; c++) {
        String home = homes.get(c % homes.size());
        String name = "c" + c;
        int clientIndex = c;
        futures.add(pool.submit(() -> {
          CountingTransport transport = new CountingTransport(new WanTransport(
              UdpTransport.builder(cluster.config(), home).build(), cluster.config()));
          TxnClient.Builder b = TxnClient.builder(cluster.config(), home, protocol)
              .transport(transport);
          if (direct) {
            b.directStore(cluster.store(home));
          }
          if (recorder != null) {
            b.recordHistory(recorder);
          }
          long preparesAtStart = -1;
          try (transport; TxnClient client = b.build()) {
            for (long i = 0; System.nanoTime() < end; i++) {
              if (preparesAtStart < 0 && System.nanoTime() >= measureFrom) {
                preparesAtStart = transport.counts().prepares();
              }
              Transaction tx;
              long began = System.nanoTime();
              try {
                tx = client.begin(group);
                if (began >= measureFrom) {
                  beginByHome.get(home)
                      .recordValue(Math.max(1, (System.nanoTime() - began) / 1000));
                }
              } catch (UnavailableException e) {
                if (System.nanoTime() >= measureFrom) {
                  unavailable.increment();
                }
                continue;
              }
              SortedMap<String, Mutation> writes = new TreeMap<>();
              byte[] v = tx.txnId().getBytes(StandardCharsets.UTF_8);
              for (int k = 0; k < 1 + (i % 2); k++) {
                String key = name + "-k" + k;
                tx.put(key, v);
                writes.put(key, Mutation.put(v));
              }
              long t0 = System.nanoTime();
              TxnRecord.Status status;
              long position = -1;
              CommitResult r = null;
              boolean noMajority = false;
              try {
                r = tx.commit();
                status = TxnRecord.Status.COMMITTED;
                position = r.position();
              } catch (TransactionAbortedException e) {
                status = TxnRecord.Status.ABORTED;
              } catch (OutcomeUnknownException e) {
                status = TxnRecord.Status.UNKNOWN;
              } catch (UnavailableException e) {
                // Certainly not in the log (never sent for acceptance).
                status = TxnRecord.Status.ABORTED;
                noMajority = true;
              }
              long t1 = System.nanoTime();
              history.add(new TxnRecord(tx.txnId(), name, status, tx.readPosition(), Map.of(),
                  writes, position));
              if (t1 < measureFrom || t1 > end) {
                continue;
              }
              switch (status) {
                case COMMITTED -> {
                  committed.increment();
                  perClient.incrementAndGet(clientIndex);
                  promotions.add(r.promotions());
                  if (r.combined()) {
                    combined.increment();
                  }
                  positions.add(r.position());
                  latency.recordValue(Math.max(1, (t1 - t0) / 1000));
                  latencyByHome.get(home).recordValue(Math.max(1, (t1 - t0) / 1000));
                }
                case ABORTED -> (noMajority ? unavailable : aborted).increment();
                default -> unknown.increment();
              }
            }
            if (preparesAtStart >= 0) {
              prepares.add(transport.counts().prepares() - preparesAtStart);
            }
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
      if (recorder != null) {
        recorder.close();
      }
    }
    long upTo = cluster.catchUpAll(group, LogCatchUp.provenPosition(history),
        Duration.ofSeconds(30));
    if (export != null) {
      cluster.exportWal(export, group, upTo);
    }
    Map<String, SortedMap<Long, LogValue>> logs = cluster.logs(group, upTo);
    CheckResult check = SerializabilityChecker.check(logs, history);
    long noops = 0;
    SortedMap<Long, LogValue> first = logs.values().iterator().next();
    for (LogValue v : first.values()) {
      noops += v.isNoop() ? 1 : 0;
    }
    int committing = 0;
    long most = 0;
    for (int c = 0; c < clients; c++) {
      committing += perClient.get(c) > 0 ? 1 : 0;
      most = Math.max(most, perClient.get(c));
    }
    return new Result(protocol, clients, duration.toNanos() / 1e9, committed.sum(),
        aborted.sum(), unknown.sum(), unavailable.sum(), promotions.sum(), combined.sum(),
        positions.size(), prepares.sum(), latency, upTo, noops, check, committing, most,
        latencyByHome, beginByHome);
  }
}
