package org.paxoscp.experiment;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.paxoscp.cli.CommitProtocolConverter;
import org.paxoscp.cli.SharedOptions;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.service.ServiceConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code paxoscp experiment NAME}: one of the paper's section 6 figures (or all of them) on a
 * local cluster, every commit mode on the same seeds. Writes, per figure, DIR/NAME/NAME.csv
 * (every data point), NAME-txns.csv (every transaction), manifest.json and two PNG charts.
 *
 * <p>Exit codes: 0 success; 1 a checker violation or a failed run; 2 usage.
 */
@Command(name = "experiment", mixinStandardHelpOptions = true,
    footer = {"%nEach figure writes DIR/NAME/ under --out DIR.",
        "%nExplained in docs/benchmarks.md."},
    description = "Reproduce the paper's evaluation (Figures 4-8) on a local cluster (embedded "
        + "HBase, UDP services, the paper's round-trip times), every commit mode on the same "
        + "seeds; writes CSV, a manifest and charts.")
public final class ExperimentCommand implements Callable<Integer> {

  @Parameters(index = "0", paramLabel = "NAME",
      description = "replicas (Fig. 4), clusters (Fig. 5), contention (Fig. 6), concurrency "
          + "(Fig. 7), per-dc-clients (Fig. 8), or all.")
  String name;

  @Option(names = "--quick", description = "Fewer transactions per point (" + Figure.QUICK_TXNS
      + " per mode; Figure 8: " + Figure.QUICK_TXNS_PER_DC + " per DC client) at the paper's "
      + "rates and times (time is not scaled): about two minutes per figure.")
  boolean quick;

  @Option(names = "--txns", paramLabel = "N", description = "Transactions per mode per point "
      + "(Figure 8: per DC client); default: the paper's " + Figure.PAPER_TXNS + ", or the quick "
      + "count with --quick.")
  Integer txns;

  @Mixin
  SharedOptions.Seed seedOption = new SharedOptions.Seed();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/experiments");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(2000);

  @Option(names = "--op-ms", defaultValue = "30", description = "Think time per operation in ms, "
      + "the transaction-duration knob, identical for every mode; 30 was calibrated so that basic "
      + "Paxos commits about as often as in the paper (docs/RESULTS.md) "
      + "(default: ${DEFAULT-VALUE}).")
  long opMs;

  @Option(names = "--hold-share", paramLabel = "SHARE", description = "The services' "
      + "paxoscp.service.leader.hold.share: how long a leader round may wait for the batching "
      + "DC's answered clients, as a share of the round before (0: never; default: "
      + "${DEFAULT-VALUE}).")
  double holdShare = LeaderCombiner.Options.DEFAULT_HOLD_SHARE;

  @Option(names = "--leader-rtts", paramLabel = "SOURCE", description = "The services' "
      + "paxoscp.service.leader.rtts: auto places leader combination's batchers by the emulated "
      + "WAN's RTT table, measured by round trips the services measure themselves, off by "
      + "neither (default: ${DEFAULT-VALUE}).")
  ServiceConfig.LeaderRtts leaderRtts = ServiceConfig.LeaderRtts.AUTO;

  @Option(names = "--protocols", split = ",", paramLabel = "MODE",
      converter = CommitProtocolConverter.class,
      description = "Commit modes to run at every point, in this order: basic, cp, leader "
          + "(default: all three). Fewer modes for calibration runs; the results page uses all.")
  List<CommitProtocol> protocols;

  @Option(names = "--charts-only", description = "Run nothing: draw each figure's two charts "
      + "again from DIR/NAME/NAME.csv and manifest.json of an earlier run.")
  boolean chartsOnly;

  @Override
  public Integer call() throws Exception {
    PrintStream o = System.out;
    long seed = seedOption.seed();
    LocalCluster.StoreKind store = storeOption.kind();
    List<CommitProtocol> modes = protocols == null ? List.of(CommitProtocol.values()) : protocols;
    if (modes.stream().distinct().count() < modes.size()) {
      // Each (point, mode) run has an entity group of its own, named after the mode.
      System.err.println("paxoscp experiment: --protocols names a mode twice: " + modes);
      return 2;
    }
    List<Figure> figures = new ArrayList<>();
    if (name.equals("all")) {
      figures.addAll(List.of(Figure.values()));
    } else {
      try {
        figures.add(Figure.parse(name));
      } catch (IllegalArgumentException e) {
        System.err.println("paxoscp experiment: unknown NAME " + name + "; one of replicas, "
            + "clusters, contention, concurrency, per-dc-clients, all");
        return 2;
      }
    }
    if (txns != null && txns < 1) {
      System.err.println("paxoscp experiment: --txns must be positive");
      return 2;
    }
    if (chartsOnly) {
      return redrawCharts(figures, o);
    }
    long allStarted = System.nanoTime();
    boolean ok = true;
    for (Figure f : figures) {
      int n = txns != null ? txns : f.defaultTxns(quick);
      FigureRunner.Settings s = new FigureRunner.Settings(n, seed, opMs, 10, 0.5, store,
          requestTimeout.timeout(), List.copyOf(modes), holdShare, leaderRtts);
      List<Point> points = f.points(n);
      o.printf(Locale.ROOT, "experiment %s (%s): %d points x %d modes, %d transactions per mode "
          + "per point%s, seed %d, think time %d ms/op%n", f.cliName(), f.paperName(),
          points.size(), modes.size(),
          points.get(0).totalTxns(), f.perDc() ? " (" + n + " per DC client)" : "", seed, opMs);
      String started = Instant.now().toString();
      long t0 = System.nanoTime();
      List<Row> rows = FigureRunner.run(f, s, o);
      double wall = (System.nanoTime() - t0) / 1e9;
      boolean figOk = rows.stream().allMatch(Row::checkerOk);
      ok &= figOk;
      Path dir = outOption.dir().resolve(f.cliName());
      Files.createDirectories(dir);
      FigureReport.writePointsCsv(rows, dir.resolve(f.cliName() + ".csv"));
      FigureReport.writeTxnsCsv(rows, dir.resolve(f.cliName() + "-txns.csv"));
      String what = chartSubject(f, n, quick, seed);
      FigureReport.writeCommitsChart(rows, dir.resolve(f.cliName() + "-commits.png"),
          "Commits by promotion round: " + what);
      FigureReport.writeLatencyChart(rows, dir.resolve(f.cliName() + "-latency.png"),
          "Commit latency by round: " + what);
      List<String> args = new ArrayList<>(List.of(f.cliName()));
      if (quick) {
        args.add("--quick");
      }
      if (txns != null) {
        args.addAll(List.of("--txns", Integer.toString(txns)));
      }
      if (protocols != null) {
        args.addAll(List.of("--protocols", String.join(",",
            modes.stream().map(m -> m.name().toLowerCase(Locale.ROOT)).toList())));
      }
      args.addAll(List.of("--seed", Long.toString(seed), "--op-ms", Long.toString(opMs),
          "--request-timeout-ms", Long.toString(requestTimeout.timeout().toMillis()),
          "--store", store.toString(),
          "--hold-share", Double.toString(holdShare),
          "--leader-rtts", leaderRtts.name().toLowerCase(Locale.ROOT)));
      Manifest.write(dir.resolve("manifest.json"), f, points, s, quick, args, started, wall,
          figOk);
      o.println();
      FigureReport.printTable(rows, o);
      o.printf(Locale.ROOT, "%s: %.1f s; wrote %s%n%n", f.cliName(), wall, dir);
    }
    if (figures.size() > 1) {
      o.printf(Locale.ROOT, "experiment all: %.1f s wall time%n",
          (System.nanoTime() - allStarted) / 1e9);
    }
    return ok ? 0 : 1;
  }

  /** What a chart's title says the run was. */
  private static String chartSubject(Figure f, int txns, boolean quick, long seed) {
    return f.paperName() + " (" + f.cliName() + "), " + f.points(txns).get(0).totalTxns()
        + " txns per mode per point" + (quick ? ", --quick" : "") + ", seed " + seed;
  }

  /** {@code --charts-only}: the charts of each figure under {@code out}, from its files. */
  private int redrawCharts(List<Figure> figures, PrintStream o) throws IOException {
    for (Figure f : figures) {
      Path dir = outOption.dir().resolve(f.cliName());
      Path csv = dir.resolve(f.cliName() + ".csv");
      Path manifest = dir.resolve("manifest.json");
      if (!Files.exists(csv) || !Files.exists(manifest)) {
        System.err.println("paxoscp experiment: --charts-only needs " + csv + " and " + manifest
            + " from an earlier run");
        return 2;
      }
      String what;
      List<FigureReport.Bar> bars;
      try {
        JsonNode cfg = new ObjectMapper().readTree(manifest.toFile()).path("config");
        what = chartSubject(f, cfg.path("txns_per_mode_per_point").asInt(1),
            cfg.path("quick").asBoolean(), cfg.path("seed").asLong());
        bars = FigureReport.readBars(csv, f);
      } catch (IOException | RuntimeException e) {
        System.err.println("paxoscp experiment: --charts-only cannot read " + dir + ": "
            + e.getMessage());
        return 2;
      }
      FigureReport.writeCommitsChart(bars, f.xAxis(), dir.resolve(f.cliName() + "-commits.png"),
          "Commits by promotion round: " + what);
      FigureReport.writeLatencyChart(bars, f.xAxis(), dir.resolve(f.cliName() + "-latency.png"),
          "Commit latency by round: " + what);
      o.printf("%s: charts drawn again from %s%n", f.cliName(), csv);
    }
    return 0;
  }
}
