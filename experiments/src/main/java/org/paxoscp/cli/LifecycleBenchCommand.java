package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-lifecycle}: storage and latency as one group's log grows, with log and
 * version GC on (docs/architecture.md section 7). A local cluster of three DCs on one embedded
 * HBase (a namespace per DC) and UDP, no WAN emulation; one client commits read-two-write-two
 * transactions on one group until the log reaches {@code --positions}. At 10^3, 10^4 and 10^5
 * positions it counts WAL rows and data versions in HBase (all DCs together) and the median commit
 * and read latency of the last {@code --window} transactions, and writes {@code lifecycle.csv}.
 * A measurement, not a test: numbers depend on the machine.
 */
@Command(name = "bench-lifecycle", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/benchmarks.md.",
    description = "Commits on one group until the log reaches --positions and writes "
        + "lifecycle.csv (log_positions, wal_rows, data_versions, commit_p50_ms, read_p50_ms) at "
        + "10^3, 10^4 and 10^5 positions, with GC retention well below 10^3 positions.")
public final class LifecycleBenchCommand implements Callable<Integer> {
  private static final String GROUP = "lifecycle";
  private static final List<String> DCS = List.of("V1", "V2", "V3");

  @Option(names = "--positions", defaultValue = "100000",
      description = "Log length to reach (default: ${DEFAULT-VALUE}).")
  long positions;

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/lifecycle");

  @Option(names = "--retention", defaultValue = "200",
      description = "GC retention in positions (default: ${DEFAULT-VALUE}).")
  int retention;

  @Option(names = "--gc-every", defaultValue = "50",
      description = "A GC round every this many applied positions (default: ${DEFAULT-VALUE}).")
  int every;

  @Option(names = "--keys", defaultValue = "100",
      description = "Keys of the group (default: ${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--window", defaultValue = "500",
      description = "Transactions before each checkpoint whose latencies are reported "
          + "(default: ${DEFAULT-VALUE}).")
  int window;

  private record Row(long logPositions, long walRows, long dataVersions, double commitP50,
      double readP50) {}

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    if (positions < 1 || retention < 1 || every < 1 || keys < 2 || window < 1) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "--positions, --retention, --gc-every, --window must be >= 1 and --keys >= 2");
    }
    List<Long> checkpoints = new ArrayList<>();
    for (long c = 1_000; c <= positions; c *= 10) {
      checkpoints.add(c);
    }
    if (checkpoints.isEmpty() || checkpoints.get(checkpoints.size() - 1) != positions) {
      checkpoints.add(positions);
    }
    Files.createDirectories(outOption.dir());
    Path dataDir = Files.createTempDirectory("paxoscp-lifecycle-");
    List<Row> rows = new ArrayList<>();
    Map<String, String> gc = Map.of(
        ServiceConfig.GC_RETENTION_POSITIONS.name(), Integer.toString(retention),
        ServiceConfig.GC_EVERY_POSITIONS.name(), Integer.toString(every),
        ServiceConfig.GC_BATCH_POSITIONS.name(), Integer.toString(Math.max(every * 4, 100)));
    o.printf(Locale.ROOT, "bench-lifecycle: %d DCs, one group of %d keys, GC retention %d "
        + "positions (round every %d), up to %d positions%n", DCS.size(), keys, retention, every,
        positions);
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(DCS,
        LocalCluster.StoreKind.HBASE, dataDir, ClusterConfig.Wan.off(), Duration.ofSeconds(2), 8),
        line -> o.println("  " + line), gc);
        TxnClient client = cluster.client(DCS.get(0), CommitProtocol.CP)) {
      SplittableRandom rng = new SplittableRandom(1);
      // The latencies of the last --window transactions (ring buffers).
      long[] commit = new long[window];
      long[] read = new long[2 * window];
      long logLength = 0;
      long txns = 0;
      long failed = 0;
      long started = System.nanoTime();
      for (long checkpoint : checkpoints) {
        while (logLength < checkpoint) {
          try {
            logLength = Math.max(logLength, oneTransaction(client, rng, commit, read, txns));
          } catch (RuntimeException e) {
            failed++;
            if (failed <= 10 || failed % 100 == 0) {
              o.println("  transaction failed (" + failed + " so far): " + e);
            }
          }
          txns++;
          if (txns % 1000 == 0) {
            o.printf(Locale.ROOT, "  %d positions, %.0f s%n", logLength,
                (System.nanoTime() - started) / 1e9);
          }
        }
        long wal = 0;
        long versions = 0;
        long minGc = Long.MAX_VALUE;
        for (String dc : DCS) {
          KvStore store = cluster.store(dc);
          wal += store.census(KvStore.Table.WAL).rows();
          versions += store.census(KvStore.Table.DATA).versions();
          minGc = Math.min(minGc, LogCollector.gcWatermark(store, GROUP));
        }
        Row r = new Row(logLength, wal, versions, median(commit), median(read));
        rows.add(r);
        o.printf(Locale.ROOT, "  checkpoint %d: wal_rows=%d data_versions=%d commit_p50=%.2f ms "
            + "read_p50=%.2f ms (lowest GC watermark %d, %d failed transactions)%n",
            r.logPositions(), r.walRows(), r.dataVersions(), r.commitP50(), r.readP50(), minGc,
            failed);
      }
    } finally {
      try (Stream<Path> s = Files.walk(dataDir)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      } catch (IOException e) {
        o.println("could not delete " + dataDir + ": " + e);
      }
    }
    StringBuilder csv = new StringBuilder(
        "log_positions,wal_rows,data_versions,commit_p50_ms,read_p50_ms\n");
    for (Row r : rows) {
      csv.append(String.format(Locale.ROOT, "%d,%d,%d,%.3f,%.3f%n", r.logPositions(), r.walRows(),
          r.dataVersions(), r.commitP50(), r.readP50()));
    }
    Path file = outOption.dir().resolve("lifecycle.csv");
    Files.writeString(file, csv.toString(), StandardCharsets.UTF_8);
    o.print(csv);
    o.println("wrote " + file);
    return 0;
  }

  /** Reads two keys, writes two, commits; returns the commit position. */
  private long oneTransaction(TxnClient client, SplittableRandom rng, long[] commit, long[] read,
      long n) {
    Transaction t = client.begin(GROUP);
    for (int i = 0; i < 2; i++) {
      long s = System.nanoTime();
      t.get("k" + rng.nextInt(keys));
      read[(int) ((2 * n + i) % read.length)] = System.nanoTime() - s;
    }
    for (int i = 0; i < 2; i++) {
      t.put("k" + rng.nextInt(keys), "v" + n);
    }
    long s = System.nanoTime();
    CommitResult r = t.commit();
    commit[(int) (n % commit.length)] = System.nanoTime() - s;
    return r.position();
  }

  /** Median in ms of the recorded (non-zero) latencies, via HdrHistogram. */
  private static double median(long[] nanos) {
    Histogram h = new Histogram(3);
    for (long v : nanos) {
      if (v > 0) {
        h.recordValue(v);
      }
    }
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(50) / 1e6;
  }
}
