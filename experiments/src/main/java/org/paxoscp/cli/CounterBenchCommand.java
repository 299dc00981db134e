package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.HdrHistogram.Histogram;
import org.paxoscp.bench.CounterContention;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-counter}: a measurement, not a test. On one local cluster (embedded HBase
 * by default, the paper's round-trip times between V, O and C), per commit mode, closed-loop
 * clients at every DC increment one counter of one entity group, in two workloads side by side:
 * a commutative {@code add} (reads nothing, so concurrent adds never conflict) and a
 * read-modify-write (get, put the value plus one), each on a group and key of its own. Reports
 * commits per second, aborts by cause (a read-write conflict or other), commit p50 and p99 and
 * the ratio of the two workloads' commits per second; then reads each counter at every DC and
 * requires it to equal the number of committed increments.
 *
 * <p>Exit codes: 0 done (whatever the numbers); 1 a counter that does not hold its committed
 * increments at some DC; 2 usage.
 */
@Command(name = "bench-counter", mixinStandardHelpOptions = true,
    footer = {"%nWrites counter.csv under --out.", "%nExplained in docs/benchmarks.md."},
    description = "Measure commutative counter updates on a local cluster: closed-loop clients "
        + "at every DC incrementing one counter with add against read-modify-write, side by "
        + "side, per commit mode: commits/s, aborts by cause, commit p50/p99; then check the "
        + "counter at every DC against the committed increments.")
public final class CounterBenchCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V,O,C");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  @Option(names = "--protocols", defaultValue = "basic,cp,leader", split = ",",
      converter = CommitProtocolConverter.class,
      description = "Commit modes, in order (default: ${DEFAULT-VALUE}).")
  List<CommitProtocol> protocols;

  @Option(names = "--clients-per-dc", defaultValue = "16",
      description = "Closed-loop clients homed at each DC, per workload "
          + "(default: ${DEFAULT-VALUE}).")
  int clientsPerDc;

  @Option(names = "--duration", defaultValue = "45",
      description = "Measured seconds per mode, both workloads at once "
          + "(default: ${DEFAULT-VALUE}).")
  int duration;

  @Option(names = "--warmup", defaultValue = "5",
      description = "Unmeasured seconds before each mode's window (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--progress-seconds", defaultValue = "10",
      description = "Seconds between progress lines (default: ${DEFAULT-VALUE}).")
  int progressSeconds;

  private final PrintStream o = System.out;

  /** One mode and workload: what the clients measured and what every DC's counter holds. */
  private record Row(String mode, CounterContention.Spec spec, CounterContention.Result r,
      double addOverRmw, List<CounterContention.Reading> readings, long upTo, boolean valid) {}

  @Override
  public Integer call() throws Exception {
    List<String> dcs = dcList.dcs();
    if (clientsPerDc < 1 || duration < 1 || warmup < 0 || progressSeconds < 1
        || protocols.isEmpty() || new java.util.HashSet<>(protocols).size() < protocols.size()) {
      // A mode named twice would reuse its groups, whose counters then hold both runs.
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "need --clients-per-dc, --duration and --progress-seconds >= 1, --warmup >= 0 and "
              + "each mode at most once");
    }
    LocalCluster.StoreKind store = storeOption.kind();
    ClusterConfig.Wan wan = wanOptions.wan(dcs);
    int clients = clientsPerDc * dcs.size();
    o.printf(Locale.ROOT, "bench-counter: dcs=%s store=%s wan=%s; %d clients per DC per "
        + "workload (%d per workload), %d s warm-up + %d s per mode, modes %s%n", dcs, store,
        wanOptions.summary(wan, dcs), clientsPerDc, clients, warmup, duration, protocols.stream()
            .map(p -> p.name().toLowerCase(Locale.ROOT)).toList());
    long started = System.nanoTime();
    Path dataDir = Files.createTempDirectory("paxoscp-bench-counter-");
    List<Row> rows = new ArrayList<>();
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        wan, Duration.ofSeconds(2), 16), line -> o.println("  " + line))) {
      for (CommitProtocol p : protocols) {
        String mode = p.name().toLowerCase(Locale.ROOT);
        CounterContention.Spec add = spec("bench-counter-" + mode + "-add", "counter-add",
            CounterContention.Workload.ADD, dcs);
        CounterContention.Spec rmw = spec("bench-counter-" + mode + "-rmw", "counter-rmw",
            CounterContention.Workload.RMW, dcs);
        o.printf(Locale.ROOT, "%s: %d clients add, %d read-modify-write, side by side, %d s "
            + "warm-up + %d s ...%n", mode, clients, clients, warmup, duration);
        CounterContention.Result[] res = runSideBySide(cluster, p, mode, add, rmw);
        double ratio = res[0].commitsPerSecond() / res[1].commitsPerSecond();
        Row a = validate(cluster, dcs, mode, add, res[0], ratio);
        Row m = validate(cluster, dcs, mode, rmw, res[1], Double.NaN);
        rows.add(a);
        rows.add(m);
        for (Row r : List.of(a, m)) {
          o.printf(Locale.ROOT, "  %s %s: %.1f commits/s; counter %s, %s: %s%n",
              mode, r.r().workload().label(), r.r().commitsPerSecond(), counters(r),
              expected(r.r()), r.valid() ? "ok" : "MISMATCH");
        }
      }
    } finally {
      deleteRecursively(dataDir);
    }
    o.println();
    print(rows, dcs, clients);
    Path out = outOption.dir();
    Files.createDirectories(out);
    Path csv = out.resolve("counter.csv");
    writeCsv(csv, rows, store, dcs);
    o.println("wrote " + csv);
    o.printf(Locale.ROOT, "bench-counter: done in %.0f s%n", (System.nanoTime() - started) / 1e9);
    List<Row> bad = rows.stream().filter(r -> !r.valid()).toList();
    if (!bad.isEmpty()) {
      for (Row r : bad) {
        System.err.printf(Locale.ROOT, "bench-counter: VALIDATION FAILED: %s %s: the counter "
            + "%s of group %s reads %s (read positions %s), but the run made %s; every DC was "
            + "caught up to position %d%n", r.mode(), r.r().workload().label(), r.spec().key(),
            r.spec().group(), counters(r), r.readings().stream().map(x -> x.dc() + " "
                + x.readPosition()).toList(), expected(r.r()), r.upTo());
      }
      return 1;
    }
    return 0;
  }

  private CounterContention.Spec spec(String group, String key,
      CounterContention.Workload workload, List<String> dcs) {
    return new CounterContention.Spec(group, key, workload, dcs, clientsPerDc,
        Duration.ofSeconds(warmup), Duration.ofSeconds(duration));
  }

  /**
   * Opens every workload's clients first, one at a time, then runs the workloads at once, each
   * on a thread of its own, printing a progress line every {@code --progress-seconds} until both
   * are done. Returns their results in the order given.
   */
  private CounterContention.Result[] runSideBySide(LocalCluster cluster, CommitProtocol p,
      String mode, CounterContention.Spec... specs) throws InterruptedException {
    ExecutorService runners = Executors.newFixedThreadPool(specs.length, r -> {
      Thread t = new Thread(r, "counter-bench-workload");
      t.setDaemon(true);
      return t;
    });
    try {
      List<List<TxnClient>> opened = new ArrayList<>();
      long opening = System.nanoTime();
      try {
        for (CounterContention.Spec spec : specs) {
          opened.add(CounterContention.openClients(spec, dc -> cluster.client(dc, p)));
        }
      } catch (RuntimeException e) {
        opened.forEach(l -> l.forEach(TxnClient::close));
        throw e;
      }
      o.printf(Locale.ROOT, "  %s: opened %d clients in %.1f s%n", mode,
          opened.stream().mapToInt(List::size).sum(), (System.nanoTime() - opening) / 1e9);
      List<CounterContention.Live> live = new ArrayList<>();
      List<CompletableFuture<CounterContention.Result>> futures = new ArrayList<>();
      for (int i = 0; i < specs.length; i++) {
        CounterContention.Spec spec = specs[i];
        List<TxnClient> own = opened.get(i);
        CounterContention.Live l = new CounterContention.Live();
        live.add(l);
        futures.add(CompletableFuture.supplyAsync(() -> {
          try {
            return CounterContention.run(spec, own, l);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
          }
        }, runners));
      }
      CompletableFuture<Void> all = CompletableFuture.allOf(futures.toArray(
          new CompletableFuture<?>[0]));
      long started = System.nanoTime();
      while (true) {
        try {
          all.get(progressSeconds, TimeUnit.SECONDS);
          break;
        } catch (TimeoutException e) {
          StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %s %3d/%d s:",
              mode, (System.nanoTime() - started) / 1_000_000_000L, warmup + duration));
          for (int i = 0; i < specs.length; i++) {
            line.append(String.format(Locale.ROOT, "%s %s %d committed, %d aborted, %d unknown",
                i == 0 ? "" : ";", specs[i].workload().label(), live.get(i).committed(),
                live.get(i).aborted(), live.get(i).unknown()));
          }
          o.println(line);
        } catch (ExecutionException e) {
          throw new IllegalStateException("a workload failed: " + e.getCause(), e.getCause());
        }
      }
      CounterContention.Result[] results = new CounterContention.Result[specs.length];
      for (int i = 0; i < specs.length; i++) {
        results[i] = futures.get(i).join();
      }
      return results;
    } finally {
      runners.shutdownNow();
    }
  }

  /** Catches every DC up, then reads the counter at each and compares it with the commits. */
  private Row validate(LocalCluster cluster, List<String> dcs, String mode,
      CounterContention.Spec spec, CounterContention.Result r, double ratio) {
    long upTo = cluster.catchUpAll(spec.group(), r.provenPosition(), Duration.ofSeconds(30));
    List<CounterContention.Reading> readings = CounterContention.readEverywhere(cluster, dcs,
        spec.group(), spec.key(), upTo, Duration.ofSeconds(10));
    boolean valid = true;
    for (CounterContention.Reading reading : readings) {
      valid &= reading.readPosition() >= upTo
          && CounterContention.matches(reading.value(), r.increments(), r.stillUnknown());
    }
    return new Row(mode, spec, r, ratio, readings, upTo, valid);
  }

  /** Every DC's reading: one number when all agree, else each DC's. */
  private static String counters(Row r) {
    long first = r.readings().get(0).value();
    if (r.readings().stream().allMatch(x -> x.value() == first)) {
      return String.format(Locale.ROOT, "%,d at every DC", first);
    }
    return String.join(", ", r.readings().stream().map(x -> String.format(Locale.ROOT,
        "%s %,d", x.dc(), x.value())).toList());
  }

  /** The increments the run made, as the counter must show them. */
  private static String expected(CounterContention.Result r) {
    String s = String.format(Locale.ROOT, "%,d committed", r.totalCommitted());
    if (r.totalUnknown() > 0) {
      s += String.format(Locale.ROOT, " + %,d of %,d unknown settled committed",
          r.settledCommitted(), r.totalUnknown());
      if (r.stillUnknown() > 0) {
        s += String.format(Locale.ROOT, " (+ up to %,d still unknown)", r.stillUnknown());
      }
    }
    return s;
  }

  /** {@code v} to one place, or "-" when nothing was measured. */
  private static String one(double v) {
    return Double.isNaN(v) || Double.isInfinite(v) ? "-"
        : String.format(Locale.ROOT, "%.1f", v);
  }

  private static double ms(Histogram h, double pct) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(pct) / 1000.0;
  }

  private void print(List<Row> rows, List<String> dcs, int clients) {
    o.printf(Locale.ROOT, "One counter per workload, one group each; %d closed-loop clients per "
        + "workload (%d at each of %s), %d s measured per mode; both workloads at once%n%n",
        clients, clientsPerDc, String.join(", ", dcs), duration);
    o.println("| mode | workload | commits/s | add / rmw | committed | aborted: conflict "
        + "| aborted: other | unknown | commit p50 (ms) | commit p99 (ms) | promotions per commit "
        + "| combined | clients committing | counter at every DC | increments made | check |");
    o.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (Row r : rows) {
      CounterContention.Result x = r.r();
      o.printf(Locale.ROOT, "| %s | %s | %s | %s | %,d | %,d | %,d | %,d | %s | %s | %s "
          + "| %s | %d of %d | %s | %s | %s |%n", r.mode(), x.workload().label(),
          one(x.commitsPerSecond()), ratio(r), x.committed(), x.conflictAborts(),
          x.otherAborts(), x.unknown(), one(ms(x.commitMicros(), 50)),
          one(ms(x.commitMicros(), 99)), one((double) x.promotions() / x.committed()),
          x.committed() == 0 ? "-" : String.format(Locale.ROOT, "%.0f%%",
              100.0 * x.combinedCommits() / x.committed()),
          x.clientsCommitting(), x.clients(), counters(r),
          expected(x), r.valid() ? "ok" : "**MISMATCH**");
    }
    o.println();
    o.println("(commits/s, aborts, unknown outcomes and latencies over the measured window; the "
        + "commit call timed. promotions per commit: the mean number of later positions a "
        + "committed transaction was moved to; combined: the share of commits whose position "
        + "holds other transactions too. counter: the value read at every DC after catching "
        + "up; increments made: every commit of the run, warm-up included, and the unknown "
        + "outcomes of the whole run that settling found committed)");
    o.println();
    o.println("Targets:");
    for (Row r : rows) {
      if (r.r().workload() != CounterContention.Workload.ADD) {
        continue;
      }
      switch (r.mode()) {
        case "cp" -> {
          o.printf(Locale.ROOT, "  cp: add / rmw commits/s %s (target >= 5): %s%n",
              ratio(r), verdict(r, 5));
          o.printf(Locale.ROOT, "  cp: add aborted for a conflict %d times (target 0): %s%n",
              r.r().conflictAborts(), r.r().conflictAborts() == 0 ? "met" : "MISSED");
        }
        case "leader" -> o.printf(Locale.ROOT, "  leader: add / rmw commits/s %s "
            + "(target >= 1): %s%n", ratio(r), verdict(r, 1));
        default -> o.printf(Locale.ROOT, "  %s: add / rmw commits/s %s (baseline, no "
            + "target)%n", r.mode(), ratio(r));
      }
    }
    o.println();
    o.println("Other aborts by reason:");
    for (Row r : rows) {
      if (!r.r().otherReasons().isEmpty()) {
        o.printf(Locale.ROOT, "  %s %s: %s%n", r.mode(), r.r().workload().label(),
            String.join("; ", r.r().otherReasons().entrySet().stream()
                .map(e -> e.getValue() + " " + e.getKey()).toList()));
      }
    }
  }

  /**
   * Whether the add row's ratio meets {@code target}; not judged when the read-modify-write
   * committed nothing in the window (a ratio against 0 says nothing about either).
   */
  private static String verdict(Row add, double target) {
    if (Double.isNaN(add.addOverRmw()) || Double.isInfinite(add.addOverRmw())) {
      return String.format(Locale.ROOT, "NOT JUDGED: read-modify-write committed nothing in the "
          + "window (add committed %,d)", add.r().committed());
    }
    return add.addOverRmw() >= target ? "met" : "MISSED";
  }

  /** The add row's ratio to two places; "-" on the other row, or when both are 0. */
  private static String ratio(Row r) {
    if (Double.isNaN(r.addOverRmw())) {
      return r.r().workload() == CounterContention.Workload.ADD ? "- (0 / 0)" : "";
    }
    return Double.isInfinite(r.addOverRmw()) ? "inf (rmw 0)"
        : String.format(Locale.ROOT, "%.2f", r.addOverRmw());
  }

  private void writeCsv(Path csv, List<Row> rows, LocalCluster.StoreKind store,
      List<String> dcs) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
      w.println("mode,workload,clients,seconds,committed,commits_per_s,add_over_rmw,"
          + "conflict_aborts,other_aborts,unknown,unavailable,commit_p50_ms,commit_p99_ms,"
          + "promotions,combined_commits,"
          + "clients_committing,most_by_one_client,total_committed,total_unknown,"
          + "settled_committed,settled_aborted,still_unknown,"
          + String.join(",", dcs.stream().map(d -> "counter_" + d).toList())
          + ",check,store");
      for (Row r : rows) {
        CounterContention.Result x = r.r();
        w.printf(Locale.ROOT, "%s,%s,%d,%.1f,%d,%.3f,%s,%d,%d,%d,%d,%.3f,%.3f,%d,%d,%d,%d,%d,%d,"
            + "%d,%d,%d,%s,%s,%s%n", r.mode(), x.workload().name().toLowerCase(Locale.ROOT),
            x.clients(), x.seconds(), x.committed(), x.commitsPerSecond(),
            Double.isNaN(r.addOverRmw()) ? "" : String.format(Locale.ROOT, "%.3f",
                r.addOverRmw()), x.conflictAborts(),
            x.otherAborts(), x.unknown(), x.unavailable(), ms(x.commitMicros(), 50),
            ms(x.commitMicros(), 99), x.promotions(), x.combinedCommits(),
            x.clientsCommitting(), x.mostByOneClient(),
            x.totalCommitted(), x.totalUnknown(), x.settledCommitted(), x.settledAborted(),
            x.stillUnknown(), String.join(",", r.readings().stream()
                .map(g -> Long.toString(g.value())).toList()), r.valid() ? "ok" : "mismatch",
            store);
      }
    }
  }

  private static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (java.util.stream.Stream<Path> s = Files.walk(dir)) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
