package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.HistoryRecorder;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.local.LogCatchUp;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.LogValue;
import org.paxoscp.workload.DemoReport;
import org.paxoscp.workload.RunSummary;
import org.paxoscp.workload.WorkloadRunner;
import org.paxoscp.workload.WorkloadSpec;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp demo}: starts a local multi-DC cluster (embedded HBase, one UDP Transaction
 * Service per DC, the paper's emulated round-trip times), runs the paper's workload shape with
 * basic Paxos, Paxos-CP and leader combination in turn, judges each run with the
 * serializability checker, and prints them side by side; the table is also written as CSV and
 * as a PNG chart.
 *
 * <p>Exit codes: 0 success; 1 a checker violation or a failed run; 2 usage.
 */
@Command(name = "demo", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/running.md.",
    description = "Run basic Paxos, Paxos-CP and leader combination side by side on a local "
        + "3-DC cluster (embedded HBase, UDP services, emulated WAN) and judge every run.")
public final class DemoCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,V3");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/demo");

  @Mixin
  SharedOptions.Export exportOption = new SharedOptions.Export();

  @Mixin
  SharedOptions.Seed seedOption = new SharedOptions.Seed();

  @Option(names = "--clients", defaultValue = "4", description = "Concurrent clients, spread "
      + "over the DCs (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--txns", defaultValue = "30",
      description = "Transactions per client per protocol (default: ${DEFAULT-VALUE}).")
  int txnsPerClient;

  @Option(names = "--attributes", defaultValue = "100",
      description = "Keys in the entity group (default: ${DEFAULT-VALUE}).")
  int attributes;

  @Option(names = "--ops", defaultValue = "10",
      description = "Operations per transaction (default: ${DEFAULT-VALUE}).")
  int ops;

  @Option(names = "--read-fraction", defaultValue = "0.5",
      description = "Fraction of operations that are reads (default: ${DEFAULT-VALUE}).")
  double readFraction;

  @Option(names = "--rate", defaultValue = "1.0",
      description = "Poisson arrivals per client per second (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(names = "--op-ms", defaultValue = "20",
      description = "Application time per operation in ms (default: ${DEFAULT-VALUE}).")
  long opMs;


  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    List<String> dcs = dcList.dcs();
    LocalCluster.StoreKind store = storeOption.kind();
    Path out = outOption.dir();
    Path export = exportOption.dirOrNull();
    long seed = seedOption.seed();
    ClusterConfig.Wan wan = wanOptions.wan(dcs);
    WorkloadSpec base = new WorkloadSpec("demo", dcs, clients, attributes, ops, readFraction,
        txnsPerClient, rate, Duration.ofMillis(opMs), seed);
    o.printf(Locale.ROOT, "demo: dcs=%s store=%s wan=%s clients=%d txns=%d per protocol "
            + "attributes=%d ops=%d reads=%.0f%% rate=%.1f/s per client op=%d ms%n",
        dcs, store, wanOptions.summary(wan, dcs), clients, base.totalTxns(),
        attributes, ops, readFraction * 100, rate, opMs);
    Path dataDir = Files.createTempDirectory("paxoscp-demo-");
    List<RunSummary> rows = new ArrayList<>();
    boolean safe = true;
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        wan, Duration.ofSeconds(2), 16), line -> o.println("  " + line))) {
      for (CommitProtocol p : List.of(CommitProtocol.BASIC, CommitProtocol.CP,
          CommitProtocol.LEADER)) {
        String label = p.name().toLowerCase(Locale.ROOT);
        WorkloadSpec spec = new WorkloadSpec("demo-" + label, base.homeDcs(), base.clients(),
            base.attributes(), base.ops(), base.readFraction(), base.txnsPerClient(),
            base.ratePerClient(), base.opTime(), base.seed());
        o.printf("%s: running %d transactions ...%n", label, spec.totalTxns());
        long started = System.nanoTime();
        int every = Math.max(1, spec.totalTxns() / 5);
        HistoryRecorder history = export == null ? null
            : HistoryRecorder.append(HistoryFiles.historyDir(export).resolve(label + ".jsonl"));
        WorkloadRunner.Result r;
        try {
          r = WorkloadRunner.run(spec, home -> history == null ? cluster.client(home, p)
              : cluster.client(home, p, history), n -> {
                if (n % every == 0 && n < spec.totalTxns()) {
                  o.printf(Locale.ROOT, "  %s: %d/%d done (%.0f s)%n", label, n,
                      spec.totalTxns(), (System.nanoTime() - started) / 1e9);
                }
              });
        } finally {
          if (history != null) {
            history.close();
          }
        }
        long upTo = cluster.catchUpAll(spec.group(),
            LogCatchUp.provenPosition(r.history()), Duration.ofSeconds(10));
        if (export != null) {
          cluster.exportWal(export, spec.group(), upTo);
        }
        Map<String, SortedMap<Long, LogValue>> logs = cluster.logs(spec.group(), upTo);
        CheckResult check = SerializabilityChecker.check(logs, r.history());
        safe &= check.ok();
        rows.add(new RunSummary(label, r.commitsByRound(), r.readOnly(), r.aborted(), r.unknown(),
            r.unavailable(), r.combined(), millis(r, 50), millis(r, 99), r.seconds(),
            check.ok() ? "ok" : "VIOLATION", check.ok()));
        o.printf(Locale.ROOT, "%s: finished in %.1f s, log length %d; checker: %s%n", label,
            r.seconds(), upTo, check.ok() ? "one-copy serializable" : check.toString());
      }
    } finally {
      deleteRecursively(dataDir);
    }
    o.println();
    DemoReport.printTable(rows, o);
    Files.createDirectories(out);
    Path csv = out.resolve("demo.csv");
    Path png = out.resolve("demo.png");
    DemoReport.writeCsv(rows, csv);
    DemoReport.writeChart(rows, png, "Commits by promotion round, " + dcs + ", "
        + base.totalTxns() + " transactions per protocol");
    o.printf("%nWrote %s and %s%n", csv, png);
    return safe ? 0 : 1;
  }

  private static double millis(WorkloadRunner.Result r, double percentile) {
    return r.commitLatencyMicros().getTotalCount() == 0 ? Double.NaN
        : r.commitLatencyMicros().getValueAtPercentile(percentile) / 1000.0;
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
