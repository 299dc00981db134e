package org.paxoscp.experiment;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.stream.Stream;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.cli.WanOptions;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.local.LogCatchUp;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.LogValue;
import org.paxoscp.workload.WorkloadRunner.Sample;
import org.paxoscp.workload.WorkloadRunner;
import org.paxoscp.workload.WorkloadSpec;

/**
 * Runs one figure: one local cluster per distinct DC set (embedded HBase, UDP services, the
 * paper's round-trip times), and at every point every {@link CommitProtocol} in turn on the same
 * seed, each on an entity group of its own; each run is judged by the serializability checker.
 */
public final class FigureRunner {

  /**
   * How to run.
   *
   * @param txns transactions per mode per point (Figure 8: per DC client)
   * @param seed seeds keys and arrivals; the same for every mode at a point
   * @param opMs think time per operation (the transaction-duration knob)
   * @param ops operations per transaction
   * @param readFraction fraction of reads
   * @param store where the DCs keep their state
   * @param requestTimeout the protocol's timeout (the paper: 2 s)
   * @param modes the commit modes run at every point, in order
   * @param holdShare the services' {@code paxoscp.service.leader.hold.share}
   * @param leaderRtts the services' {@code paxoscp.service.leader.rtts}
   */
  public record Settings(int txns, long seed, long opMs, int ops, double readFraction,
      LocalCluster.StoreKind store, Duration requestTimeout, List<CommitProtocol> modes,
      double holdShare, ServiceConfig.LeaderRtts leaderRtts) {}

  private FigureRunner() {}

  /** Runs {@code figure}; returns its rows (per point, mode, and for Figure 8 per DC). */
  public static List<Row> run(Figure figure, Settings s, PrintStream out) throws IOException,
      InterruptedException {
    List<Point> points = figure.points(s.txns());
    Map<List<String>, List<Point>> byCluster = new LinkedHashMap<>();
    for (Point p : points) {
      byCluster.computeIfAbsent(p.dcs(), k -> new ArrayList<>()).add(p);
    }
    List<CommitProtocol> modes = s.modes();
    long total = points.stream().mapToLong(Point::totalTxns).sum() * modes.size();
    List<Row> rows = new ArrayList<>();
    try (ProgressBar bar = new ProgressBarBuilder().setTaskName(figure.cliName())
        .setInitialMax(total).setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(1000)
        .setConsumer(new ConsoleProgressBarConsumer(System.err)).setUnit(" txns", 1)
        .showSpeed().build()) {
      for (Map.Entry<List<String>, List<Point>> e : byCluster.entrySet()) {
        List<String> dcs = e.getKey();
        ClusterConfig.Wan wan = WanOptions.wan(dcs, List.of(), true);
        out.printf("%s: cluster %s, RTTs %s%n", figure.cliName(), dcs,
            WanOptions.rttSummary(wan, dcs));
        Path dataDir = Files.createTempDirectory("paxoscp-experiment-");
        try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, s.store(),
            dataDir, wan, s.requestTimeout(), 16), line -> out.println("  " + line),
            Map.of(ServiceConfig.LEADER_HOLD_SHARE.name(), Double.toString(s.holdShare()),
                ServiceConfig.LEADER_RTTS.name(),
                s.leaderRtts().name().toLowerCase(Locale.ROOT)))) {
          for (Point p : e.getValue()) {
            for (CommitProtocol mode : modes) {
              rows.addAll(runOne(figure, p, mode, s, cluster, bar, out));
            }
          }
        } finally {
          deleteRecursively(dataDir);
        }
      }
    }
    return rows;
  }

  private static List<Row> runOne(Figure figure, Point p, CommitProtocol mode, Settings s,
      LocalCluster cluster, ProgressBar bar, PrintStream out) throws InterruptedException {
    String label = mode.name().toLowerCase(Locale.ROOT);
    String group = "exp-" + figure.cliName() + "-" + p.label() + "-" + label + "-" + s.seed();
    WorkloadSpec spec = new WorkloadSpec(group, p.homeDcs(), p.clients(), p.attributes(),
        s.ops(), s.readFraction(), p.txnsPerClient(), p.ratePerClient(),
        Duration.ofMillis(s.opMs()), s.seed());
    bar.setExtraMessage(" " + p.label() + " " + label);
    List<Sample> samples = Collections.synchronizedList(new ArrayList<>());
    WorkloadRunner.Result r = WorkloadRunner.run(spec, home -> cluster.client(home, mode),
        n -> bar.step(), samples::add);
    long upTo = cluster.catchUpAll(group, LogCatchUp.provenPosition(r.history()),
        Duration.ofSeconds(10));
    Map<String, SortedMap<Long, LogValue>> logs = cluster.logs(group, upTo);
    CheckResult check = SerializabilityChecker.check(logs, r.history());
    String verdict = check.ok() ? "ok" : "VIOLATION: " + check;
    List<Sample> all = List.copyOf(samples);
    List<Row> rows = new ArrayList<>();
    rows.add(new Row(figure, p, label, "all", all, r.seconds(), upTo, check.ok(), verdict));
    if (figure.perDc()) {
      for (String dc : p.homeDcs()) {
        rows.add(new Row(figure, p, label, dc,
            all.stream().filter(x -> x.homeDc().equals(dc)).toList(), r.seconds(), upTo,
            check.ok(), verdict));
      }
    }
    Row row = rows.get(0);
    out.printf(Locale.ROOT, "%s %s %s: %d/%d committed in %.1f s, log length %d, checker %s%n",
        figure.cliName(), p.label(), label, row.committed(), row.txns(), r.seconds(), upTo,
        verdict);
    return rows;
  }

  static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> st = Files.walk(dir)) {
      for (Path q : st.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(q);
      }
    }
  }
}
