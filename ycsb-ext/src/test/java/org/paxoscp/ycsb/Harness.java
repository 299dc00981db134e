package org.paxoscp.ycsb;

import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.paxoscp.client.TxnClient;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.measurements.Measurements;

/**
 * What YCSB's client does with a workload, in the test's process: per client thread a binding
 * ({@code init} on that thread), the workload's thread state, then {@code doInsert} (load) or
 * {@code doTransaction} (run) calls, then the binding's {@code cleanup}.
 */
final class Harness {
  private Harness() {}

  static {
    // YCSB's measurements read their properties once, when first used.
    Measurements.setProperties(new Properties());
  }

  /** The in-process cluster's configuration, for a workload's validation. */
  static ClusterConfig config() {
    return InProcessPaxosCpDB.cluster.config;
  }

  /** A client of the in-process cluster homed at {@code dc}, for a workload's validation. */
  static TxnClient validationClient(String dc) {
    return InProcessPaxosCpDB.client(dc, org.paxoscp.client.CommitProtocol.CP);
  }

  /** The load phase: {@code inserts} calls of {@code doInsert} over {@code threads} threads. */
  static long load(TxnWorkload w, Properties p, int threads, long inserts,
      Supplier<? extends PaxosCpDB> dbs) throws Exception {
    AtomicLong left = new AtomicLong(inserts);
    AtomicLong ok = new AtomicLong();
    onThreads(w, p, threads, dbs, (db, state) -> {
      while (left.getAndDecrement() > 0) {
        if (w.doInsert(db, state)) {
          ok.incrementAndGet();
        }
      }
    });
    return ok.get();
  }

  /** The run phase: {@code perThread} calls of {@code doTransaction} on each thread. */
  static void run(TxnWorkload w, Properties p, int threads, int perThread,
      Supplier<? extends PaxosCpDB> dbs) throws Exception {
    onThreads(w, p, threads, dbs, (db, state) -> {
      for (int i = 0; i < perThread; i++) {
        w.doTransaction(db, state);
      }
    });
  }

  interface Body {
    void run(PaxosCpDB db, Object state) throws Exception;
  }

  private static void onThreads(TxnWorkload w, Properties p, int threads,
      Supplier<? extends PaxosCpDB> dbs, Body body) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> fs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        int id = t;
        fs.add(pool.submit(() -> {
          PaxosCpDB db = dbs.get();
          db.setProperties(p);
          db.init();
          try {
            body.run(db, w.initThread(p, id, threads));
          } finally {
            db.cleanup();
          }
          return null;
        }));
      }
      for (Future<?> f : fs) {
        f.get();
      }
    } finally {
      pool.shutdownNow();
    }
  }
}
