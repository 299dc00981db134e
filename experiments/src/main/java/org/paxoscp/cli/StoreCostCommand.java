package org.paxoscp.cli;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.service.InProcessDcs;
import org.paxoscp.store.CountingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp store-cost}: what one commit costs in store operations and time on an embedded
 * HBase with one table set per DC, with the DCs' services called in-process (no network): the fast
 * path
 * (one client, every commit granted by the leader) and a contended path (several threads on few
 * keys). A measurement, not a test: numbers depend on the machine.
 */
@Command(name = "store-cost", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/benchmarks.md.",
    description = "Measures store operations and store vs protocol time per committed "
        + "transaction on an embedded HBase (in-process services, no network).")
public final class StoreCostCommand implements Callable<Integer> {
  private static final String GROUP = "cost";

  @Option(names = "--txns", defaultValue = "300", description = "Transactions per phase. "
      + "Default: ${DEFAULT-VALUE}.")
  int txns;

  @Option(names = "--threads", defaultValue = "4",
      description = "Threads in the contended phase. Default: ${DEFAULT-VALUE}.")
  int threads;

  @Option(names = "--attributes", defaultValue = "20",
      description = "Keys in the contended phase. Default: ${DEFAULT-VALUE}.")
  int attributes;

  @Option(names = "--protocol", defaultValue = "cp", description = "basic or cp. "
      + "Default: ${DEFAULT-VALUE}.")
  String protocol;

  private final List<String> dcs = List.of("V1", "V2", "V3");

  @Override
  public Integer call() throws Exception {
    Protocol p = Protocol.valueOf(protocol.toUpperCase(Locale.ROOT));
    Path dir = Files.createTempDirectory("paxoscp-store-cost");
    System.out.println("store-cost: starting embedded HBase in " + dir + " ...");
    try (EmbeddedHBase hbase = EmbeddedHBase.start(dir)) {
      System.out.printf(Locale.ROOT, "store-cost: HBase ready in %.1f s; %d DCs, protocol %s%n",
          hbase.startupTime().toMillis() / 1000.0, dcs.size(), p);
      System.out.printf(Locale.ROOT, "%-11s %9s %7s %9s %9s %9s %9s %10s %10s %9s%n", "phase",
          "committed", "aborted", "ops/txn", "cas/txn", "rowrd/txn", "read/txn", "commit(ms)",
          "store(ms)", "store %");
      run(hbase, p, "warm-up", 1, 50, 1_000_000, "w");
      run(hbase, p, "fast-path", 1, txns, 1_000_000, "f");
      run(hbase, p, "contended", threads, txns, attributes, "c");
    }
    return 0;
  }

  /** One phase on fresh DCs; prints commit-path cost per committed transaction. */
  private void run(EmbeddedHBase hbase, Protocol p, String phase, int nThreads, int n,
      int keys, String prefix) throws Exception {
    List<CountingKvStore> stores = new ArrayList<>();
    for (String dc : dcs) {
      stores.add(new CountingKvStore(hbase.openStore(prefix + dc.toLowerCase(Locale.ROOT))));
    }
    List<Acceptor> acceptors = stores.stream().map(Acceptor::new).toList();
    List<LogApplier> appliers = stores.stream().map(s -> new LogApplier((KvStore) s)).toList();
    InProcessDcs runner = new InProcessDcs(dcs, stores);
    ProposerConfig cfg = ProposerConfig.defaults(p, dcs);
    AtomicLong ids = new AtomicLong(1);
    LongAdder committed = new LongAdder();
    LongAdder aborted = new LongAdder();
    LongAdder commitNanos = new LongAdder();
    CountingKvStore.Counts[] commitOps = {new CountingKvStore.Counts(0, 0, 0, 0, 0)};
    ExecutorService pool = Executors.newFixedThreadPool(nThreads);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < nThreads; t++) {
        int thread = t;
        int perThread = n / nThreads + (t < n % nThreads ? 1 : 0);
        futures.add(pool.submit(() -> {
          SplittableRandom rng = new SplittableRandom(thread);
          for (int i = 0; i < perThread; i++) {
            String txnId = prefix + thread + "-" + i;
            long readPos = appliers.get(0).applyKnown(GROUP);
            TreeSet<String> reads = new TreeSet<>();
            TreeMap<String, Mutation> writes = new TreeMap<>();
            for (int op = 0; op < 4; op++) {
              String key = "k" + (keys >= 1_000_000 ? txnId + "-" + op : rng.nextInt(keys));
              if (op % 2 == 0) {
                appliers.get(0).read(GROUP, key, readPos);
                reads.add(key);
              } else {
                writes.put(key, Mutation.put(txnId.getBytes(StandardCharsets.UTF_8)));
              }
            }
            OptionalInt leader = readPos == 0 ? Proposer.leaderOfFirst(dcs, GROUP)
                : acceptors.get(0).chosen(GROUP, readPos).map(v -> Proposer.leaderAfter(dcs, v)).orElse(OptionalInt.empty());
            LogEntry entry = new LogEntry(txnId, dcs.get(0), readPos, reads, writes);
            Proposer prop = new Proposer(cfg, GROUP, ProposerId.of(ids.getAndIncrement()), entry, readPos + 1,
                leader, rng.split());
            CountingKvStore.Counts before = threadSum(stores);
            long start = System.nanoTime();
            Outcome o = runner.run(prop);
            long took = System.nanoTime() - start;
            CountingKvStore.Counts delta = threadSum(stores).minus(before);
            if (o.status() == Outcome.Status.COMMITTED) {
              committed.increment();
            } else {
              aborted.increment();
            }
            synchronized (commitOps) {
              commitOps[0] = add(commitOps[0], delta);
            }
            commitNanos.add(took);
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(30, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    // Only the commit path (the proposer's run), counted per thread so threads do not mix.
    CountingKvStore.Counts ops = commitOps[0];
    double c = Math.max(1, committed.sum());
    System.out.printf(Locale.ROOT, "%-11s %9d %7d %9.1f %9.1f %9.1f %9.1f %10.2f %10.2f %8.0f%%%n",
        phase, committed.sum(), aborted.sum(), ops.operations() / c, ops.checkAndWrites() / c,
        ops.rowReads() / c, ops.reads() / c, commitNanos.sum() / 1e6 / (committed.sum()
            + aborted.sum()), ops.nanos() / 1e6 / (committed.sum() + aborted.sum()),
        100.0 * ops.nanos() / Math.max(1, commitNanos.sum()));
    runner.close();
    for (CountingKvStore s : stores) {
      s.close();
    }
  }

  private static CountingKvStore.Counts threadSum(List<CountingKvStore> stores) {
    CountingKvStore.Counts total = new CountingKvStore.Counts(0, 0, 0, 0, 0);
    for (CountingKvStore s : stores) {
      total = add(total, s.threadCounts());
    }
    return total;
  }

  private static CountingKvStore.Counts add(CountingKvStore.Counts a, CountingKvStore.Counts b) {
    return new CountingKvStore.Counts(a.reads() + b.reads(), a.rowReads() + b.rowReads(),
        a.writes() + b.writes(), a.checkAndWrites() + b.checkAndWrites(), a.nanos() + b.nanos());
  }
}
