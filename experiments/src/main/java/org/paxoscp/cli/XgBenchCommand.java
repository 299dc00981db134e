package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.paxoscp.bench.CrossGroupLoad;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.NearestMajority;
import org.paxoscp.wal.LogValue;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-xg}: a measurement, not a test. Commit latency and throughput of
 * transactions over 1, 2, 5 and 10 entity groups on a local cluster with an emulated WAN, each
 * load alone; then one-group transactions side by side with two-group ones in the same run, and
 * as a control side by side with as many other one-group clients; then the cross-group checker
 * over every group written. Prints a table and writes {@code xg.csv} and
 * {@code xg.png}.
 *
 * <p>Exit codes: 0 done (whatever the numbers); 1 a checker violation; 2 usage.
 */
@Command(name = "bench-xg", mixinStandardHelpOptions = true,
    footer = {"%nWrites xg.csv and xg.png under --out.", "%nExplained in docs/benchmarks.md."},
    description = "Measure commit latency and throughput of transactions across 1, 2, 5 and 10 "
        + "entity groups on a local cluster with an emulated WAN (docs/cross-group.md).")
public final class XgBenchCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V,O,C");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Option(names = "--home", defaultValue = "O",
      description = "The clients' DC (default: ${DEFAULT-VALUE}).")
  String home;

  @Option(names = "--protocol", defaultValue = "cp", converter = CommitProtocolConverter.class,
      description = "Commit mode: cp (default), basic or leader.")
  CommitProtocol protocol;

  @Option(names = "--groups", defaultValue = "1,2,5,10", split = ",",
      description = "Groups per transaction, one load each (default: ${DEFAULT-VALUE}).")
  List<Integer> groupsPerTxn;

  @Option(names = "--clients", defaultValue = "4",
      description = "Closed-loop clients per load, each on groups of its own "
          + "(default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--warmup", defaultValue = "5",
      description = "Unmeasured transactions per client (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--txns", defaultValue = "40",
      description = "Measured transactions per client (default: ${DEFAULT-VALUE}).")
  int txns;

  @Option(names = "--rounds", defaultValue = "one", split = ",",
      description = "Commit protocols across groups to measure, each on a cluster of its own, "
          + "one after the other in this run: one (cluster version 6, the default) and two "
          + "(a cluster held at version 5: PREPAREs, then the DECIDE); e.g. two,one.")
  List<String> rounds;

  @Option(names = "--quick", description = "A short run: 2 warm-up and 12 measured "
      + "transactions per client, groups 1,2,5, the in-memory store.")
  boolean quick;

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  private final PrintStream o = System.out;

  @Override
  public Integer call() throws Exception {
    List<String> dcs = dcList.dcs();
    LocalCluster.StoreKind store = storeOption.kind();
    Path out = outOption.dir();
    if (quick) {
      warmup = 2;
      txns = 12;
      groupsPerTxn = List.of(1, 2, 5);
      store = LocalCluster.StoreKind.MEMORY;
    }
    if (!dcs.contains(home) || clients < 1 || txns < 1 || warmup < 0
        || groupsPerTxn.stream().anyMatch(k -> k < 1 || k > 25)) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "need --home among --dcs, --clients and --txns >= 1, groups per transaction 1..25");
    }
    if (rounds.isEmpty() || !List.of("one", "two").containsAll(rounds)) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "--rounds takes one, two or both, not " + rounds);
    }
    ClusterConfig.Wan base = WanOptions.wan(dcs, List.of(), true);
    ClusterConfig.Wan wan = new ClusterConfig.Wan(true, base.latency(), 0, 0, 0, 0, Set.of());
    long nm = NearestMajority.rttMicros(wan.latency(), dcs, home);
    o.printf(Locale.ROOT, "bench-xg: dcs=%s store=%s wan=%s protocol=%s home=%s "
        + "(nearest-majority RTT %.0f ms), %d clients x %d measured transactions per load, "
        + "rounds %s%n", dcs, store, WanOptions.rttSummary(wan, dcs),
        protocol.name().toLowerCase(Locale.ROOT), home, nm / 1000.0, clients, txns,
        String.join(",", rounds));
    Files.createDirectories(out);
    Path csv = out.resolve("xg.csv");
    boolean ok = true;
    List<CrossGroupLoad.Result> charted = new ArrayList<>();
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
      w.println("rounds,load,groups_per_txn,txn_per_s,commit_p50_ms,commit_p99_ms,committed,"
          + "aborted,unknown,checker,protocol,home,store");
      for (String r : rounds) {
        o.printf("%s round%s: %s%n", r, r.equals("one") ? "" : "s", r.equals("one")
            ? "cluster version 6 (xg-one-round): every PREPARE at once, committed when all are "
                + "chosen"
            : "a cluster held at version 5: the PREPAREs, then the DECIDE");
        List<CrossGroupLoad.Result> rows = new ArrayList<>();
        String verdict = measure(r, dcs, store, wan, rows);
        table(r, rows, verdict);
        ok &= verdict.startsWith("ok");
        for (CrossGroupLoad.Result x : rows) {
          w.printf(Locale.ROOT, "%s,%s,%d,%.2f,%.1f,%.1f,%d,%d,%d,%s,%s,%s,%s%n", r, x.name(),
              x.groupsPerTxn(), x.txnPerSecond(), x.p50Millis(), x.p99Millis(), x.committed(),
              x.aborted(), x.unknown(), verdict.startsWith("ok") ? "ok" : "violation",
              protocol.name().toLowerCase(Locale.ROOT), home, store);
        }
        charted = rows;
      }
    }
    Path png = out.resolve("xg.png");
    chart(charted, png);
    o.println("wrote " + csv + " and " + png + " (the chart: " + rounds.get(rounds.size() - 1)
        + " round" + (rounds.get(rounds.size() - 1).equals("one") ? "" : "s") + ")");
    return ok ? 0 : 1;
  }

  /** One cluster, every load on it, the checker; fills {@code rows}, returns the verdict. */
  private String measure(String round, List<String> dcs, LocalCluster.StoreKind store,
      ClusterConfig.Wan wan, List<CrossGroupLoad.Result> rows) throws Exception {
    Path dataDir = Files.createTempDirectory("paxoscp-bench-xg-");
    String verdict;
    // Two rounds: every process held to cluster version 5, where commits across groups take
    // the protocol of the builds before version 6.
    Map<String, String> settings = round.equals("two")
        ? Map.of("paxoscp.cluster.version.max", "5") : Map.of();
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        wan, Duration.ofSeconds(2), 16), line -> o.println("  " + line), settings)) {
      // The first load would otherwise also pay the JIT's warm-up: one load, not reported.
      o.println("warm-up: 2-group transactions, not reported");
      CrossGroupLoad.Result warm = CrossGroupLoad.start(cluster, protocol, "warm-up", "warm", 2,
          clients, List.of(home), warmup + txns, 0).await();
      rows.add(warm);
      for (int k : groupsPerTxn) {
        o.printf(Locale.ROOT, "load: %d group%s per transaction, alone%n", k, k == 1 ? "" : "s");
        rows.add(CrossGroupLoad.start(cluster, protocol, k + " alone", "xg" + k, k, clients,
            List.of(home), warmup, txns).await());
      }
      o.println("load: 1 group per transaction beside 2-group transactions, in one run");
      CrossGroupLoad.Running one = CrossGroupLoad.start(cluster, protocol, "1 beside 2",
          "mix1", 1, clients, List.of(home), warmup, txns);
      CrossGroupLoad.Running two = CrossGroupLoad.start(cluster, protocol, "2 beside 1",
          "mix2", 2, clients, List.of(home), warmup, txns);
      rows.add(one.await());
      rows.add(two.await());
      // The control: the same number of clients, all on one group each, so that the ratio
      // below tells cross-group load apart from more load on the same machine.
      o.println("load: 1 group per transaction beside as many other 1-group clients (control)");
      CrossGroupLoad.Running oneA = CrossGroupLoad.start(cluster, protocol, "1 beside 1",
          "ctl1", 1, clients, List.of(home), warmup, txns);
      CrossGroupLoad.Running oneB = CrossGroupLoad.start(cluster, protocol, "1 (control)",
          "ctl2", 1, clients, List.of(home), warmup, txns);
      rows.add(oneA.await());
      rows.add(oneB.await());
      verdict = check(cluster, rows);
    }
    rows.remove(0); // the warm-up, checked but not reported
    return verdict;
  }

  /** The cross-group checker over every group the loads wrote. */
  private String check(LocalCluster cluster, List<CrossGroupLoad.Result> rows) {
    Map<String, Map<String, SortedMap<Long, LogValue>>> logs = new TreeMap<>();
    List<CrossGroupChecker.Observation> obs = new ArrayList<>();
    long upTo = 4L * (warmup + txns) + 16;
    for (CrossGroupLoad.Result r : rows) {
      for (String g : r.groupsUsed()) {
        logs.put(g, new LinkedHashMap<>(cluster.logs(g, upTo)));
      }
      obs.addAll(r.observations());
    }
    CrossGroupChecker.Result c = CrossGroupChecker.check(logs, Map.of(), obs);
    return c.ok() ? "ok (" + logs.size() + " groups, " + c.committed() + " cross-group commits)"
        : c.summary();
  }

  private void table(String round, List<CrossGroupLoad.Result> rows, String verdict) {
    o.printf(Locale.ROOT, "%-12s %6s %9s %9s %9s %9s %8s %8s%n", "load", "groups", "txn/s",
        "p50 ms", "p99 ms", "committed", "aborted", "unknown");
    double oneAlone = Double.NaN;
    double twoAlone = Double.NaN;
    double tenAlone = Double.NaN;
    double oneBeside = Double.NaN;
    double oneBesideOne = Double.NaN;
    for (CrossGroupLoad.Result r : rows) {
      o.printf(Locale.ROOT, "%-12s %6d %9.1f %9.1f %9.1f %9d %8d %8d%n", r.name(),
          r.groupsPerTxn(), r.txnPerSecond(), r.p50Millis(), r.p99Millis(), r.committed(),
          r.aborted(), r.unknown());
      if (r.name().equals("1 alone")) {
        oneAlone = r.p50Millis();
      } else if (r.name().equals("2 alone")) {
        twoAlone = r.p50Millis();
      } else if (r.name().equals("10 alone")) {
        tenAlone = r.p50Millis();
      } else if (r.name().equals("1 beside 2")) {
        oneBeside = r.p50Millis();
      } else if (r.name().equals("1 beside 1")) {
        oneBesideOne = r.p50Millis();
      }
    }
    boolean one = round.equals("one");
    o.printf(Locale.ROOT, "two-group / one-group commit p50: %.2f (target <= %s)%n",
        twoAlone / oneAlone, one ? "1.2" : "2.2, two rounds");
    if (!Double.isNaN(tenAlone)) {
      o.printf(Locale.ROOT, "ten-group / one-group commit p50: %.2f%s%n", tenAlone / oneAlone,
          one ? " (target <= 1.5)" : "");
    }
    o.printf(Locale.ROOT, "one-group commit p50 beside two-group load / alone: %.2f "
        + "(target <= 1.10)%n", oneBeside / oneAlone);
    o.printf(Locale.ROOT, "one-group commit p50 beside two-group load / beside as many "
        + "one-group clients: %.2f (cross-group load against the same added load)%n",
        oneBeside / oneBesideOne);
    // What parallel PREPAREs cannot beat: a k-group commit waits for the slowest of k
    // one-group commits, whose median is the one-group latency's 0.5^(1/k) quantile.
    CrossGroupLoad.Result single = rows.stream().filter(r -> r.name().equals("1 alone"))
        .findFirst().orElse(null);
    if (single != null && single.commitMicros().getTotalCount() > 0) {
      for (CrossGroupLoad.Result r : rows) {
        int k = r.groupsPerTxn();
        if (k > 1 && r.name().equals(k + " alone")) {
          double q = 100 * Math.pow(0.5, 1.0 / k);
          double slowest = single.commitMicros().getValueAtPercentile(q) / 1000.0;
          o.printf(Locale.ROOT, "  %d groups: the slowest of %d one-group commits has p50 %.1f ms "
              + "(the one-group p%.0f): %.2f x one-group; measured %.2f%n", k, k, slowest, q,
              slowest / oneAlone, r.p50Millis() / oneAlone);
        }
      }
    }
    o.println("checker: " + verdict);
  }

  private void chart(List<CrossGroupLoad.Result> rows, Path file) throws IOException {
    CategoryChart c = new CategoryChartBuilder().width(900).height(450)
        .title("Commit latency by groups per transaction (" + protocol.name().toLowerCase(
            Locale.ROOT) + ", home " + home + ", " + String.join("-", dcList.dcs()) + ")")
        .xAxisTitle("load").yAxisTitle("commit latency (ms)").build();
    List<String> names = new ArrayList<>();
    List<Double> p50 = new ArrayList<>();
    List<Double> p99 = new ArrayList<>();
    for (CrossGroupLoad.Result r : rows) {
      names.add(r.name());
      p50.add(Double.isNaN(r.p50Millis()) ? 0 : r.p50Millis());
      p99.add(Double.isNaN(r.p99Millis()) ? 0 : r.p99Millis());
    }
    c.addSeries("p50", names, p50);
    c.addSeries("p99", names, p99);
    BitmapEncoder.saveBitmap(c, file.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
