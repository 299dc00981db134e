package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.paxoscp.bench.ClosedLoopThroughput;
import org.paxoscp.bench.FastPathLatency;
import org.paxoscp.bench.ForgedFlood;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.NearestMajority;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-fastpath}: a measurement, not a test. Part 1: the uncontended fast-path
 * commit latency of one client per setting (home DC), against the emulated round-trip time to
 * its nearest majority, with the same commits on a cluster without WAN emulation giving the
 * local (HBase and loopback) cost. Part 2: closed-loop throughput of many clients on one entity
 * group with disjoint keys, next to 1/RTT of the nearest majority. Prints tables and writes CSV.
 *
 * <p>Exit codes: 0 done (whatever the numbers); 1 a checker violation or a failed commit in the
 * latency part; 2 usage.
 */
@Command(name = "bench-fastpath", mixinStandardHelpOptions = true,
    footer = {"%nWrites fastpath.csv and throughput.csv under --out.",
        "%nExplained in docs/benchmarks.md."},
    description = "Measure uncontended fast-path commit latency against the emulated RTT to the "
        + "nearest majority, and closed-loop throughput on one entity group, on a local cluster.")
public final class FastPathBenchCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V,O,C");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Rtt rtt = new SharedOptions.Rtt();

  @Option(names = "--jitter", defaultValue = "0",
      description = "WAN delay jitter as a fraction of the one-way delay (default: "
          + "${DEFAULT-VALUE}).")
  double jitter;

  @Option(names = "--homes", defaultValue = "V,O", split = ",",
      description = "Latency settings: the home DC of the one client, each giving a different "
          + "nearest-majority RTT (default: ${DEFAULT-VALUE}).")
  List<String> homes;

  @Option(names = "--access", defaultValue = "both",
      description = "service (every message through the home DC's service), direct (the home "
          + "DC's store accessed directly, as in the paper's prototype) or both (default).")
  String access;

  @Option(names = "--warmup", defaultValue = "20",
      description = "Unmeasured commits per setting (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--txns", defaultValue = "200",
      description = "Measured commits per setting (default: ${DEFAULT-VALUE}).")
  int txns;

  @Option(names = "--no-local", description = "Skip the no-WAN run that measures local cost.")
  boolean noLocal;

  @Option(names = "--clients", defaultValue = "16",
      description = "Throughput: concurrent clients (default: ${DEFAULT-VALUE}; 0 skips).")
  int clients;

  @Option(names = "--client-dcs", defaultValue = "V,O,C", split = ",",
      description = "Throughput: client i lives in DC i mod this list (default: "
          + "${DEFAULT-VALUE}).")
  List<String> clientDcs;

  @Option(names = "--protocols", defaultValue = "leader,cp,basic", split = ",",
      converter = CommitProtocolConverter.class,
      description = "Throughput: commit modes to run, side by side in one cluster: leader "
          + "(leader combination), cp (Paxos-CP), basic (default: ${DEFAULT-VALUE}).")
  List<CommitProtocol> protocols;

  @Option(names = "--hold-share", paramLabel = "SHARE",
      description = "Throughput: the services' paxoscp.service.leader.hold.share, how long a "
          + "leader round may wait for the batching DC's answered clients, as a share of the "
          + "round before (0: never; default: the service default, 0.25).")
  Double holdShare;

  @Option(names = "--tput-direct", description = "Throughput: clients access their home "
      + "DC's store directly.")
  boolean tputDirect;

  @Option(names = "--tput-warmup", defaultValue = "5",
      description = "Throughput: warm-up seconds (default: ${DEFAULT-VALUE}).")
  int tputWarmup;

  @Option(names = "--duration", defaultValue = "20",
      description = "Throughput: measured seconds (default: ${DEFAULT-VALUE}).")
  int duration;

  @Option(names = "--wire", defaultValue = "encrypted", split = ",",
      paramLabel = "encrypted|clear|both",
      description = "Datagrams encrypted and authenticated (paxoscp.wire.encrypt=true) or "
          + "authenticated only (clear); several, comma-separated, run every part once per "
          + "setting in that order (both = encrypted,clear; a JVM that has run one setting is "
          + "warmer for the next, so compare e.g. encrypted,clear,clear,encrypted), and the "
          + "tables show them side by side (default: ${DEFAULT-VALUE}).")
  List<String> wire;

  @Option(names = "--flood", defaultValue = "0", paramLabel = "N",
      description = "Latency with WAN emulation is measured again while N forged 1 KB "
          + "datagrams per second (a valid header under the service key's public id, a wrong "
          + "tag) flood the home DC's service; rows labelled +flood (default: ${DEFAULT-VALUE}, "
          + "none).")
  int flood;

  private static final int FLOOD_BYTES = 1024;

  @Option(names = "--metrics", defaultValue = "on", split = ",", paramLabel = "on|off|both",
      description = "The services' metrics (paxoscp.service.metrics) on or off; several, "
          + "comma-separated, run every part once per setting and wire setting, side by side "
          + "(both = on,off) (default: ${DEFAULT-VALUE}).")
  List<String> metrics;

  @Mixin
  SharedOptions.Export exportOption = new SharedOptions.Export();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  private final PrintStream o = System.out;
  private List<String> dcs;
  private LocalCluster.StoreKind store;
  private Path export;
  private Path out;

  /** One latency row: a setting, its access mode, WAN on or off, the wire setting. */
  private record Row(boolean wan, FastPathLatency.Result r, long rttMicros, String wire) {}

  /** One throughput run and the wire setting it ran with. */
  private record Tput(ClosedLoopThroughput.Result t, String wire) {}

  @Override
  public Integer call() throws Exception {
    dcs = dcList.dcs();
    store = storeOption.kind();
    export = exportOption.dirOrNull();
    out = outOption.dir();
    List<Boolean> modes = switch (access) {
      case "service" -> List.of(false);
      case "direct" -> List.of(true);
      case "both" -> List.of(false, true);
      default -> throw new picocli.CommandLine.ParameterException(
          new picocli.CommandLine(this), "--access must be service, direct or both");
    };
    List<String> encryptions = new ArrayList<>();
    for (String w : wire) {
      switch (w) {
        case "encrypted", "clear", "v3" -> encryptions.add(w);
        case "both" -> encryptions.addAll(List.of("encrypted", "clear"));
        default -> throw new picocli.CommandLine.ParameterException(
            new picocli.CommandLine(this), "--wire takes encrypted, clear, v3 or both, was "
                + w);
      }
    }
    if (flood < 0) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "--flood must be >= 0");
    }
    List<Boolean> metricsSettings = new ArrayList<>();
    for (String m : metrics) {
      switch (m) {
        case "on" -> metricsSettings.add(true);
        case "off" -> metricsSettings.add(false);
        case "both" -> metricsSettings.addAll(List.of(true, false));
        default -> throw new picocli.CommandLine.ParameterException(
            new picocli.CommandLine(this), "--metrics takes on, off or both, was " + m);
      }
    }
    for (String h : homes) {
      if (!dcs.contains(h)) {
        throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
            "--homes: " + h + " is not one of " + dcs);
      }
    }
    ClusterConfig.Wan base = WanOptions.wan(dcs, rtt.overrides(), true);
    ClusterConfig.Wan wan = new ClusterConfig.Wan(true, base.latency(), 0, jitter, 0, 0, Set.of());
    Map<String, Long> nm = new LinkedHashMap<>();
    for (String dc : dcs) {
      nm.put(dc, NearestMajority.rttMicros(wan.latency(), dcs, dc));
    }
    o.printf(Locale.ROOT, "bench-fastpath: dcs=%s store=%s wan=%s jitter=%.2f%n", dcs, store,
        WanOptions.rttSummary(wan, dcs), jitter);
    o.printf(Locale.ROOT, "  nearest-majority RTT: %s%n", describeNm(nm));
    o.printf(Locale.ROOT, "  latency: homes=%s access=%s warm-up=%d measured=%d per setting; "
        + "throughput: %d clients in %s, %s, %d s after %d s warm-up%n", homes, access, warmup,
        txns, clients, clientDcs, protocols.stream()
            .map(m -> m.name().toLowerCase(Locale.ROOT)).toList(), duration, tputWarmup);
    List<Row> rows = new ArrayList<>();
    List<Tput> tput = new ArrayList<>();
    int failures = 0;
    Map<String, Integer> passes = new LinkedHashMap<>();
    List<Object[]> runs = new ArrayList<>();
    for (String encrypt : encryptions) {
      for (boolean metered : metricsSettings) {
        runs.add(new Object[] {encrypt, metered});
      }
    }
    boolean labelMetrics = metricsSettings.contains(false);
    for (Object[] run : runs) {
      String wireSetting = (String) run[0];
      boolean encrypt = !wireSetting.equals("clear");
      boolean metered = (Boolean) run[1];
      String name = wireSetting + (labelMetrics ? (metered ? "+metrics" : "+no-metrics")
          : "");
      // A setting run again is labelled with its pass: encrypted, then encrypted-2, ...
      int pass = passes.merge(name, 1, Integer::sum);
      String w = name + (pass > 1 ? "-" + pass : "");
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put(ClusterConfig.WIRE_ENCRYPT.name(), Boolean.toString(encrypt));
      // Clear datagrams are opened only where encryption is not required.
      settings.put(ClusterConfig.WIRE_REQUIRE_ENCRYPTED.name(), Boolean.toString(encrypt));
      if (wireSetting.equals("v3")) {
        // Every process held to cluster version 1: wire version 3, no freshness, no roles.
        settings.put(ClusterConfig.CLUSTER_VERSION_MAX.name(),
            Integer.toString(org.paxoscp.version.ClusterVersion.WIRE_3));
      }
      settings.put(ServiceConfig.METRICS.name(), Boolean.toString(metered));
      if (holdShare != null) {
        settings.put(ServiceConfig.LEADER_HOLD_SHARE.name(), Double.toString(holdShare));
      }
      if (!noLocal) {
        o.printf("phase 1: local cost (WAN emulation off), wire %s%n", w);
        failures += latencyPhase(ClusterConfig.Wan.off(), modes, nm, settings, w, rows);
      }
      o.printf("phase 2: WAN emulation on, wire %s%n", w);
      Path dataDir = Files.createTempDirectory("paxoscp-bench-");
      try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store,
          dataDir, wan, Duration.ofSeconds(2), 16), line -> o.println("  " + line), settings)) {
        failures += latency(cluster, modes, nm, true, w, rows);
        if (clients > 0) {
          for (CommitProtocol protocol : protocols) {
            String p = protocol.name().toLowerCase(Locale.ROOT);
            o.printf(Locale.ROOT, "  throughput %s: %d clients, %d s warm-up + %d s ...%n", p,
                clients, tputWarmup, duration);
            ClosedLoopThroughput.Result t = ClosedLoopThroughput.run(cluster, protocol,
                clientDcs, clients, tputDirect, "tput-" + p, Duration.ofSeconds(tputWarmup),
                Duration.ofSeconds(duration), export);
            o.printf(Locale.ROOT, "  throughput %s: %.1f txn/s; log %d positions; checker: %s%n",
                p, t.txnPerSecond(), t.logLength(), t.check().ok() ? "one-copy serializable"
                    : t.check().summary());
            tput.add(new Tput(t, w));
          }
        }
      } finally {
        deleteRecursively(dataDir);
      }
    }
    o.println();
    printLatency(rows, nm);
    if (!tput.isEmpty()) {
      o.println();
      printThroughput(tput, nm);
    }
    Files.createDirectories(out);
    Path fp = out.resolve("fastpath.csv");
    writeLatencyCsv(rows, fp);
    o.printf("%nWrote %s", fp);
    if (!tput.isEmpty()) {
      Path tp = out.resolve("throughput.csv");
      writeThroughputCsv(tput, nm, tp);
      o.printf(" and %s", tp);
    }
    o.println();
    boolean safe = tput.stream().allMatch(t -> t.t().check().ok());
    return safe && failures == 0 ? 0 : 1;
  }

  private int latencyPhase(ClusterConfig.Wan w, List<Boolean> modes, Map<String, Long> nm,
      Map<String, String> settings, String wireSetting, List<Row> rows) throws IOException {
    Path dataDir = Files.createTempDirectory("paxoscp-bench-local-");
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        w, Duration.ofSeconds(2), 16), line -> o.println("  " + line), settings)) {
      return latency(cluster, modes, nm, false, wireSetting, rows);
    } finally {
      deleteRecursively(dataDir);
    }
  }

  private int latency(LocalCluster cluster, List<Boolean> modes, Map<String, Long> nm,
      boolean wanOn, String wireSetting, List<Row> rows) {
    int failures = 0;
    for (String home : homes) {
      for (boolean direct : modes) {
        String group = "fp-" + home + (direct ? "-direct" : "-service");
        FastPathLatency.Result r = FastPathLatency.run(cluster, home, direct, group, warmup, txns);
        rows.add(new Row(wanOn, r, nm.get(home), wireSetting));
        failures += r.failed();
        o.printf(Locale.ROOT, "  %s %-7s begin p50 %6.2f ms, commit p50 %6.2f ms, p99 %6.2f ms, "
                + "fast path %d/%d%s%n", home, direct ? "direct" : "service",
            p50(r.beginMicros()), p50(r.commitMicros()), pct(r.commitMicros(), 99),
            r.fastPath(), r.measured(), r.failed() > 0 ? ", " + r.failed() + " FAILED" : "");
        if (wanOn && flood > 0) {
          // The same measurement while forged datagrams flood the home DC's service.
          InetSocketAddress target = cluster.config().dc(home).endpoints().get(0);
          try (ForgedFlood f = ForgedFlood.start(cluster.config(), home, target, flood,
              FLOOD_BYTES)) {
            FastPathLatency.Result fr = FastPathLatency.run(cluster, home, direct,
                group + "-flood", warmup, txns);
            rows.add(new Row(wanOn, fr, nm.get(home), wireSetting + "+flood"));
            failures += fr.failed();
            o.printf(Locale.ROOT, "  %s %-7s under a flood of %.0f forged %d-byte datagrams/s: "
                    + "begin p50 %6.2f ms, commit p50 %6.2f ms, p99 %6.2f ms, fast path %d/%d%s%n",
                home, direct ? "direct" : "service", f.achievedRate(), FLOOD_BYTES,
                p50(fr.beginMicros()), p50(fr.commitMicros()), pct(fr.commitMicros(), 99),
                fr.fastPath(), fr.measured(), fr.failed() > 0 ? ", " + fr.failed()
                    + " FAILED" : "");
          }
        }
      }
    }
    return failures;
  }

  private void printLatency(List<Row> rows, Map<String, Long> nm) {
    o.println("Uncontended commit latency (ms); ratio = commit p50 / nearest-majority RTT; "
        + "ratio-local = (commit p50 - local commit p50) / RTT");
    o.printf(Locale.ROOT, "%-5s %-8s %-4s %-20s %7s %9s %9s %9s %9s %9s %9s %9s %7s %11s%n",
        "home", "access", "wan", "wire", "RTT", "fast", "begin50", "commit50", "commit90",
        "commit99", "mean", "local50", "ratio", "ratio-local");
    for (Row row : rows) {
      FastPathLatency.Result r = row.r();
      Histogram c = r.commitMicros();
      double local = localP50(rows, row);
      double rttMs = row.rttMicros() / 1000.0;
      o.printf(Locale.ROOT,
          "%-5s %-8s %-4s %-20s %7.1f %9s %9.2f %9.2f %9.2f %9.2f %9.2f %9s %7s %11s%n",
          r.home(), r.direct() ? "direct" : "service", row.wan() ? "on" : "off", row.wire(),
          row.wan() ? rttMs : 0.0, r.fastPath() + "/" + r.measured(), p50(r.beginMicros()),
          p50(c), pct(c, 90), pct(c, 99), c.getMean() / 1000.0,
          row.wan() && !Double.isNaN(local) ? fmt(local) : "-",
          row.wan() ? fmt(p50(c) / rttMs) : "-",
          row.wan() && !Double.isNaN(local) ? fmt((p50(c) - local) / rttMs) : "-");
    }
    o.println("Request-to-reply p50 (ms) of the protocol messages the client sent over the "
        + "network (WAN on):");
    for (Row row : rows) {
      if (!row.wan()) {
        continue;
      }
      List<String> parts = new ArrayList<>();
      row.r().replyMicros().forEach((k, h) -> parts.add(String.format(Locale.ROOT, "%s %.2f",
          k, h.getValueAtPercentile(50) / 1000.0)));
      o.printf(Locale.ROOT, "  %s %-7s %-20s %s%n", row.r().home(),
          row.r().direct() ? "direct" : "service", row.wire(), String.join(", ", parts));
    }
  }

  private void printThroughput(List<Tput> tput, Map<String, Long> nm) {
    o.printf(Locale.ROOT, "Closed-loop throughput, one entity group, %d clients in %s (client i "
        + "in DC i mod %d), disjoint keys, %s access%n", clients, clientDcs, clientDcs.size(),
        tputDirect ? "direct" : "service");
    o.printf(Locale.ROOT, "  1/RTT of the nearest majority: %s%n", describeNm(
        nm.entrySet().stream().filter(e -> clientDcs.contains(e.getKey()))
            .collect(java.util.stream.Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue,
                (a, b) -> a, LinkedHashMap::new))));
    o.printf(Locale.ROOT,
        "%-6s %-20s %8s %9s %7s %7s %7s %6s %9s %9s %8s %9s %9s %6s %9s %7s %s%n",
        "proto", "wire", "txn/s", "commits", "abort", "unknwn", "unavl", "promo", "combined", "pos/s",
        "ent/pos", "commit50", "commit99", "noops", "clients", "top1", "checker");
    for (Tput row : tput) {
      ClosedLoopThroughput.Result t = row.t();
      o.printf(Locale.ROOT,
          "%-6s %-20s %8.1f %9d %7d %7d %7d %6d %9d %9.1f %8.2f %9.1f %9.1f %6d %9s %7d %s%n",
          t.protocol().name().toLowerCase(Locale.ROOT), row.wire(), t.txnPerSecond(), t.committed(),
          t.aborted(), t.unknown(), t.unavailable(), t.promotions(), t.combinedCommits(),
          t.positionsPerSecond(), t.entriesPerPosition(), p50(t.commitMicros()),
          pct(t.commitMicros(), 99), t.noops(), t.clientsCommitting() + "/" + t.clients(),
          t.mostByOneClient(), t.check().ok() ? "ok" : "VIOLATION");
    }
    o.println("  clients = clients with at least one commit in the window; top1 = the most "
        + "commits one client made");
    o.println("Commit latency by home DC (ms), p50 / p99 (commits):");
    for (Tput row : tput) {
      printByHome(row, row.t().commitMicrosByHome());
    }
    o.println("Begin latency by home DC (ms), p50 / p99 (begins):");
    for (Tput row : tput) {
      printByHome(row, row.t().beginMicrosByHome());
    }
  }

  private void printByHome(Tput row, Map<String, Histogram> byHome) {
    List<String> parts = new ArrayList<>();
    byHome.forEach((home, h) -> parts.add(String.format(Locale.ROOT,
        "%s %.1f / %.1f (%d)", home, p50(h), pct(h, 99), h.getTotalCount())));
    o.printf(Locale.ROOT, "  %-6s %-20s %s%n",
        row.t().protocol().name().toLowerCase(Locale.ROOT), row.wire(), String.join(", ", parts));
  }

  private void writeLatencyCsv(List<Row> rows, Path file) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("home,access,wan,wire,nearest_majority_rtt_ms,measured,fast_path,failed,begin_p50_ms,"
          + "commit_p50_ms,commit_p90_ms,commit_p99_ms,commit_mean_ms,local_commit_p50_ms,ratio,"
          + "ratio_minus_local");
      for (Row row : rows) {
        FastPathLatency.Result r = row.r();
        Histogram c = r.commitMicros();
        double local = localP50(rows, row);
        double rttMs = row.wan() ? row.rttMicros() / 1000.0 : 0;
        w.printf(Locale.ROOT, "%s,%s,%s,%s,%.1f,%d,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%s,%s,%s%n",
            r.home(), r.direct() ? "direct" : "service", row.wan() ? "on" : "off", row.wire(),
            rttMs,
            r.measured(), r.fastPath(), r.failed(), p50(r.beginMicros()), p50(c), pct(c, 90),
            pct(c, 99), c.getMean() / 1000.0, row.wan() && !Double.isNaN(local) ? fmt(local) : "",
            row.wan() ? fmt(p50(c) / rttMs) : "",
            row.wan() && !Double.isNaN(local) ? fmt((p50(c) - local) / rttMs) : "");
      }
    }
  }

  private void writeThroughputCsv(List<Tput> tput, Map<String, Long> nm, Path file)
      throws IOException {
    long best = clientDcs.stream().mapToLong(nm::get).min().orElse(0);
    long worst = clientDcs.stream().mapToLong(nm::get).max().orElse(0);
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("protocol,wire,clients,client_dcs,access,seconds,txn_per_s,committed,aborted,unknown,"
          + "unavailable,promotions,combined,positions_per_s,entries_per_position,prepares,"
          + "commit_p50_ms,commit_p99_ms,log_length,noops,checker,nearest_majority_rtt_min_ms,"
          + "nearest_majority_rtt_max_ms,inv_rtt_min_per_s,inv_rtt_max_per_s,clients_committing,"
          + "most_commits_by_one_client" + byHomeHeader());
      for (Tput row : tput) {
        ClosedLoopThroughput.Result t = row.t();
        w.printf(Locale.ROOT, "%s,%s,%d,%s,%s,%.1f,%.2f,%d,%d,%d,%d,%d,%d,%.2f,%.3f,%d,%.3f,%.3f,"
                + "%d,%d,%s,%.1f,%.1f,%.2f,%.2f,%d,%d", t.protocol().name().toLowerCase(Locale.ROOT),
            row.wire(), t.clients(), String.join("+", clientDcs), tputDirect ? "direct" : "service",
            t.seconds(), t.txnPerSecond(), t.committed(), t.aborted(), t.unknown(),
            t.unavailable(), t.promotions(), t.combinedCommits(), t.positionsPerSecond(),
            t.entriesPerPosition(), t.prepares(), p50(t.commitMicros()), pct(t.commitMicros(), 99),
            t.logLength(), t.noops(), t.check().ok() ? "ok" : "violation", best / 1000.0,
            worst / 1000.0, best == 0 ? 0 : 1e6 / best, worst == 0 ? 0 : 1e6 / worst,
            t.clientsCommitting(), t.mostByOneClient());
        w.println(byHome(t));
      }
    }
  }

  /**
   * Extra throughput.csv columns: commit p50 and p99 per client home DC, then begin p50 and p99
   * per client home DC.
   */
  private String byHomeHeader() {
    StringBuilder b = new StringBuilder();
    for (String what : List.of("commit", "begin")) {
      for (String dc : clientDcs) {
        b.append(',').append(what).append("_p50_ms_").append(dc)
            .append(',').append(what).append("_p99_ms_").append(dc);
      }
    }
    return b.toString();
  }

  private static String byHome(ClosedLoopThroughput.Result t) {
    StringBuilder b = new StringBuilder();
    for (Map<String, Histogram> m : List.of(t.commitMicrosByHome(), t.beginMicrosByHome())) {
      m.forEach((dc, h) -> b.append(String.format(Locale.ROOT, ",%.3f,%.3f", p50(h),
          pct(h, 99))));
    }
    return b.toString();
  }

  /** The no-WAN commit p50 of the same home, access and wire pass, NaN if not measured. */
  private static double localP50(List<Row> rows, Row row) {
    FastPathLatency.Result r = row.r();
    return rows.stream().filter(x -> !x.wan() && x.r().home().equals(r.home())
            && x.r().direct() == r.direct() && x.wire().equals(row.wire()))
        .mapToDouble(x -> p50(x.r().commitMicros())).findFirst().orElse(Double.NaN);
  }

  private static String describeNm(Map<String, Long> nm) {
    List<String> parts = new ArrayList<>();
    nm.forEach((dc, us) -> parts.add(String.format(Locale.ROOT, "%s %.1f ms (1/RTT %.1f/s)", dc,
        us / 1000.0, us == 0 ? Double.POSITIVE_INFINITY : 1e6 / us)));
    return String.join(", ", parts);
  }

  private static double p50(Histogram h) {
    return pct(h, 50);
  }

  private static double pct(Histogram h, double p) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1000.0;
  }

  private static String fmt(double v) {
    return String.format(Locale.ROOT, "%.3f", v);
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
