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
import java.util.Map;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.HdrHistogram.Histogram;
import org.paxoscp.bench.ScanContention;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.HistoryRecorder;
import org.paxoscp.client.ScanResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TxnClient;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.LogValue;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-scan}: a measurement, not a test. On one local cluster (embedded HBase by
 * default, the paper's round-trip times), three parts whose rows are measured in the same run:
 * (a) a range read of {@code --scan-size} keys against a get of one key, both at the client's
 * home DC, interleaved; (b) commits per second of the paper's contention workload with a share of
 * the operations as short scans, beside the same workload with a get of one key in their place
 * and the same workload with gets of the keys each scan returns in their place, run side by side
 * on three groups, per commit mode (the scans against the one-key gets is the target; against
 * the gets of the same keys it is the cost of the range itself, the read sets being equal);
 * (c) which of each workload's aborts a range caused, inferred from the logs (the client is told
 * the position it lost to, not whether a key or a range conflicted). Every group of (b) is
 * judged by the serializability checker.
 *
 * <p>Exit codes: 0 done (whatever the numbers); 1 a checker violation; 2 usage.
 */
@Command(name = "bench-scan", mixinStandardHelpOptions = true,
    footer = {"%nWrites scan.csv under --out.", "%nExplained in docs/benchmarks.md."},
    description = "Measure range reads on a local cluster: a scan's latency against a get's, "
        + "commits/s of the paper's contention workload with short scans against gets only and "
        + "against gets of the same keys per commit mode, and the share of aborts that ranges "
        + "caused.")
public final class ScanBenchCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,V3");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.Seed seedOption = new SharedOptions.Seed();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  @Option(names = "--home", defaultValue = "V1",
      description = "The clients' home DC (default: ${DEFAULT-VALUE}).")
  String home;

  @Option(names = "--protocols", defaultValue = "basic,cp,leader", split = ",",
      converter = CommitProtocolConverter.class,
      description = "Commit modes of part (b), in order (default: ${DEFAULT-VALUE}).")
  List<CommitProtocol> protocols;

  @Option(names = "--keys", defaultValue = "1000",
      description = "(a) Keys loaded for the latency part (default: ${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--scan-size", defaultValue = "100",
      description = "(a) Keys per measured scan (default: ${DEFAULT-VALUE}).")
  int scanSize;

  @Option(names = "--value-bytes", defaultValue = "100",
      description = "(a) Bytes per value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--samples", defaultValue = "300",
      description = "(a) Measured gets, and as many scans (default: ${DEFAULT-VALUE}).")
  int samples;

  @Option(names = "--warmup", defaultValue = "100",
      description = "(a) Unmeasured gets and scans first (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--clients", defaultValue = "4",
      description = "(b) Clients per workload (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--txns", defaultValue = "25",
      description = "(b) Transactions per client per workload per mode "
          + "(default: ${DEFAULT-VALUE}).")
  int txns;

  @Option(names = "--attributes", defaultValue = "100",
      description = "(b) Keys of the contended group (default: ${DEFAULT-VALUE}).")
  int attributes;

  @Option(names = "--ops", defaultValue = "10",
      description = "(b) Operations per transaction (default: ${DEFAULT-VALUE}).")
  int ops;

  @Option(names = "--read-fraction", defaultValue = "0.5",
      description = "(b) Fraction of operations that read (default: ${DEFAULT-VALUE}).")
  double readFraction;

  @Option(names = "--scan-share", defaultValue = "0.1",
      description = "(b) Fraction of operations that scan, taken from the reads "
          + "(default: ${DEFAULT-VALUE}).")
  double scanShare;

  @Option(names = "--scan-keys", defaultValue = "10",
      description = "(b) Keys per scan (default: ${DEFAULT-VALUE}).")
  int scanKeys;

  @Option(names = "--rate", defaultValue = "1.0",
      description = "(b) Poisson arrivals per client per second (default: ${DEFAULT-VALUE}).")
  double rate;

  @Option(names = "--op-ms", defaultValue = "20",
      description = "(b) Application time per operation in ms (default: ${DEFAULT-VALUE}).")
  long opMs;

  private final PrintStream o = System.out;

  /**
   * One row of part (b) and (c).
   *
   * @param ratio commits/s against gets only (NaN on the gets-only row)
   * @param vsKeyGets commits/s against the key gets (NaN except on the scans row)
   */
  private record Row(String mode, String workload, ScanContention.Result r, double ratio,
      double vsKeyGets, long rangeAborts, long keyAborts, long otherAborts, long abortedScanning,
      long abortedOther, String checker) {}

  @Override
  public Integer call() throws Exception {
    List<String> dcs = dcList.dcs();
    LocalCluster.StoreKind store = storeOption.kind();
    if (!dcs.contains(home) || keys < scanSize || scanSize < 1 || samples < 1 || warmup < 0
        || valueBytes < 1 || scanSize > Transaction.MAX_SCAN_LIMIT) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "need --home among --dcs, 1 <= --scan-size <= --keys, --samples >= 1");
    }
    // Checks the rest of part (b)'s settings before anything starts.
    spec("check", ScanContention.ReadSlot.SCAN);
    ClusterConfig.Wan wan = wanOptions.wan(dcs);
    o.printf(Locale.ROOT, "bench-scan: dcs=%s store=%s wan=%s home=%s seed=%d%n", dcs, store,
        wanOptions.summary(wan, dcs), home, seedOption.seed());
    Path dataDir = Files.createTempDirectory("paxoscp-bench-scan-");
    Path history = Files.createTempDirectory("paxoscp-bench-scan-history-");
    Histogram get;
    Histogram scan;
    List<Row> rows = new ArrayList<>();
    boolean safe = true;
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        wan, Duration.ofSeconds(2), 16), line -> o.println("  " + line))) {
      Histogram[] lat = latency(cluster);
      get = lat[0];
      scan = lat[1];
      for (CommitProtocol p : protocols) {
        String mode = p.name().toLowerCase(Locale.ROOT);
        o.printf(Locale.ROOT, "(b) %s: %d clients x %d transactions per workload, all three "
            + "workloads side by side ...%n", mode, clients, txns);
        Path dir = history.resolve(mode);
        ScanContention.Spec gets = spec("bench-scan-" + mode + "-gets",
            ScanContention.ReadSlot.ONE_GET);
        ScanContention.Spec scans = spec("bench-scan-" + mode + "-scans",
            ScanContention.ReadSlot.SCAN);
        ScanContention.Spec keyGets = spec("bench-scan-" + mode + "-keygets",
            ScanContention.ReadSlot.KEY_GETS);
        try (TxnClient c = cluster.client(home, CommitProtocol.CP)) {
          ScanContention.preload(c, gets.group(), attributes);
          ScanContention.preload(c, scans.group(), attributes);
          ScanContention.preload(c, keyGets.group(), attributes);
        }
        ScanContention.Result[] res = runSideBySide(cluster, p, dir, gets, scans, keyGets);
        String share = Math.round(scanShare * 100) + "% " + scanKeys;
        Row g = judge(cluster, mode, "gets only", gets, res[0], dir, Double.NaN, Double.NaN);
        Row s = judge(cluster, mode, share + "-key scans", scans, res[1], dir,
            res[1].commitsPerSecond() / res[0].commitsPerSecond(),
            res[1].commitsPerSecond() / res[2].commitsPerSecond());
        Row k = judge(cluster, mode, share + "-key gets", keyGets, res[2], dir,
            res[2].commitsPerSecond() / res[0].commitsPerSecond(), Double.NaN);
        rows.add(g);
        rows.add(s);
        rows.add(k);
        safe &= g.checker().startsWith("ok") && s.checker().startsWith("ok")
            && k.checker().startsWith("ok");
        o.printf(Locale.ROOT, "  %s: gets only %d/%d committed, with scans %d/%d, with %d-key "
            + "gets %d/%d; checker %s, %s, %s%n", mode, res[0].committed(), res[0].txns().size(),
            res[1].committed(), res[1].txns().size(), scanKeys, res[2].committed(),
            res[2].txns().size(), g.checker(), s.checker(), k.checker());
      }
    } finally {
      deleteRecursively(dataDir);
      deleteRecursively(history);
    }
    print(get, scan, rows);
    Path out = outOption.dir();
    Files.createDirectories(out);
    Path csv = out.resolve("scan.csv");
    writeCsv(csv, get, scan, rows, store);
    o.println("wrote " + csv);
    return safe ? 0 : 1;
  }

  private ScanContention.Spec spec(String group, ScanContention.ReadSlot slot) {
    try {
      return new ScanContention.Spec(group, List.of(home), clients, attributes, ops,
          readFraction, scanShare, scanKeys, slot, txns, rate, Duration.ofMillis(opMs),
          seedOption.seed());
    } catch (IllegalArgumentException e) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "part (b): " + e.getMessage());
    }
  }

  /**
   * Part (a): loads {@code --keys} keys, then times gets of one key and scans of
   * {@code --scan-size} keys from a random key, interleaved, each in a transaction of its own
   * begun at the home DC (the begin is not timed). Returns {get, scan} in microseconds.
   */
  private Histogram[] latency(LocalCluster cluster) {
    String group = "bench-scan-latency";
    o.printf(Locale.ROOT, "(a) loading %d keys of %d bytes, then %d gets and %d %d-key scans "
        + "at DC %s ...%n", keys, valueBytes, samples, samples, scanSize, home);
    Histogram get = new Histogram(3);
    Histogram scan = new Histogram(3);
    String value = "v".repeat(valueBytes);
    try (TxnClient c = cluster.client(home, CommitProtocol.CP)) {
      int batch = Math.max(1, 20_000 / (valueBytes + 24));
      for (int from = 0; from < keys; from += batch) {
        int f = from;
        int to = Math.min(keys, from + batch);
        c.runInTransaction(group, t -> {
          for (int k = f; k < to; k++) {
            t.put(ScanContention.key(k), value);
          }
          return null;
        });
      }
      SplittableRandom rnd = new SplittableRandom(seedOption.seed());
      for (int i = 0; i < warmup + samples; i++) {
        boolean measured = i >= warmup;
        int k = rnd.nextInt(keys);
        int s = rnd.nextInt(keys - scanSize + 1);
        for (int j = 0; j < 2; j++) {
          // Alternate which goes first, so that neither always follows the other.
          boolean doScan = (j == 0) == (i % 2 == 0);
          Transaction t = c.begin(group);
          long t0 = System.nanoTime();
          if (doScan) {
            ScanResult r = t.scan(ScanContention.key(s), null, scanSize);
            long us = (System.nanoTime() - t0) / 1000;
            if (r.size() != scanSize) {
              throw new IllegalStateException("a scan of " + scanSize + " keys from "
                  + ScanContention.key(s) + " returned " + r.size());
            }
            if (measured) {
              scan.recordValue(Math.max(1, us));
            }
          } else {
            if (t.get(ScanContention.key(k)).isEmpty()) {
              throw new IllegalStateException("key " + ScanContention.key(k) + " not found");
            }
            long us = (System.nanoTime() - t0) / 1000;
            if (measured) {
              get.recordValue(Math.max(1, us));
            }
          }
          t.abort();
        }
      }
    }
    return new Histogram[] {get, scan};
  }

  /**
   * Runs the workloads all at once, each on a thread of its own (not the common pool, which may
   * have fewer threads than workloads), each client recording its history under {@code dir}.
   * Returns their results in the order given.
   */
  private ScanContention.Result[] runSideBySide(LocalCluster cluster, CommitProtocol p, Path dir,
      ScanContention.Spec... specs) throws InterruptedException {
    List<HistoryRecorder> recorders = new ArrayList<>();
    ExecutorService runners = Executors.newFixedThreadPool(specs.length,
        r -> {
          Thread t = new Thread(r, "scan-bench-workload");
          t.setDaemon(true);
          return t;
        });
    try {
      for (ScanContention.Spec spec : specs) {
        recorders.add(HistoryRecorder.append(HistoryFiles.historyDir(dir)
            .resolve(spec.group() + ".jsonl")));
      }
      List<CompletableFuture<ScanContention.Result>> futures = new ArrayList<>();
      for (int i = 0; i < specs.length; i++) {
        ScanContention.Spec spec = specs[i];
        HistoryRecorder h = recorders.get(i);
        futures.add(CompletableFuture.supplyAsync(() ->
            runQuietly(spec, dc -> cluster.client(dc, p, h)), runners));
      }
      ScanContention.Result[] results = new ScanContention.Result[specs.length];
      try {
        for (int i = 0; i < specs.length; i++) {
          results[i] = futures.get(i).join();
        }
      } catch (CompletionException e) {
        throw new IllegalStateException("a workload failed: " + e.getCause(), e.getCause());
      }
      return results;
    } finally {
      runners.shutdownNow();
      for (HistoryRecorder h : recorders) {
        h.close();
      }
    }
  }

  private static ScanContention.Result runQuietly(ScanContention.Spec spec,
      java.util.function.Function<String, TxnClient> clients) {
    try {
      return ScanContention.run(spec, clients);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /**
   * Catches every DC up, runs the checker over the recorded history and the logs, and sorts the
   * aborts by cause.
   */
  private Row judge(LocalCluster cluster, String mode, String workload,
      ScanContention.Spec spec, ScanContention.Result r, Path dir, double ratio,
      double vsKeyGets) {
    long upTo = cluster.catchUpAll(spec.group(), r.provenPosition(), Duration.ofSeconds(10));
    Map<String, SortedMap<Long, LogValue>> logs = cluster.logs(spec.group(), upTo);
    cluster.exportWal(dir, spec.group(), upTo);
    String checker;
    try {
      List<TxnRecord> records = HistoryFiles.read(dir).recordsByGroup()
          .getOrDefault(spec.group(), List.of());
      CheckResult c = SerializabilityChecker.check(logs, records);
      String why = c.toString().replaceAll("\\s*\\R\\s*", " ");
      checker = c.ok() ? "ok" : "VIOLATION: " + (why.length() > 300 ? why.substring(0, 300)
          + " ..." : why);
    } catch (IllegalArgumentException | java.io.UncheckedIOException e) {
      checker = "not judged: " + ClusterCommand.oneLine(e);
    }
    long range = 0;
    long key = 0;
    long other = 0;
    long scanning = 0;
    long notScanning = 0;
    for (ScanContention.Txn t : r.txns()) {
      if (!t.outcome().equals("aborted")) {
        continue;
      }
      if (t.scanned()) {
        scanning++;
      } else {
        notScanning++;
      }
      switch (ScanContention.cause(t, logs)) {
        case RANGE -> range++;
        case KEY -> key++;
        default -> other++;
      }
    }
    return new Row(mode, workload, r, ratio, vsKeyGets, range, key, other, scanning, notScanning,
        checker);
  }

  private static double ms(Histogram h, double pct) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(pct) / 1000.0;
  }

  private void print(Histogram get, Histogram scan, List<Row> rows) {
    o.println();
    o.printf(Locale.ROOT, "(a) read latency at the home DC %s (service reads, %d of each, "
        + "interleaved; values of %d bytes)%n", home, samples, valueBytes);
    o.printf(Locale.ROOT, "%-22s %9s %9s%n", "read", "p50 ms", "p99 ms");
    o.printf(Locale.ROOT, "%-22s %9.2f %9.2f%n", "get (1 key)", ms(get, 50), ms(get, 99));
    o.printf(Locale.ROOT, "%-22s %9.2f %9.2f%n", "scan (" + scanSize + " keys)", ms(scan, 50),
        ms(scan, 99));
    o.printf(Locale.ROOT, "scan / get p50: %.2f (target <= 2.5)%n", ms(scan, 50) / ms(get, 50));
    o.println();
    o.printf(Locale.ROOT, "(b) contention workload: %d clients at %s, %.1f txn/s each, %d ops "
        + "(%.0f%% reads), %d attributes, %d ms per op; the scan workload turns %.0f%% of the "
        + "operations into %d-key scans, the key-gets workload into gets of the same %d keys%n",
        clients, home, rate, ops, readFraction * 100, attributes, opMs, scanShare * 100, scanKeys,
        scanKeys);
    o.printf(Locale.ROOT, "%-7s %-18s %5s %9s %7s %9s %9s %11s %9s  %s%n", "mode", "workload",
        "txns", "committed", "aborted", "commits/s", "ratio", "vs key gets", "p50 ms", "checker");
    for (Row r : rows) {
      o.printf(Locale.ROOT, "%-7s %-18s %5d %9d %7d %9.2f %9s %11s %9.1f  %s%n", r.mode(),
          r.workload(), r.r().txns().size(), r.r().committed(), r.r().count("aborted"),
          r.r().commitsPerSecond(), fixed(r.ratio(), 2), fixed(r.vsKeyGets(), 2),
          ms(r.r().commitMicros(), 50), r.checker());
    }
    o.println("(ratio: commits/s / gets only, same mode, same run; target >= 0.90 for the scans."
        + " The scans read about " + scanKeys + " times the keys the gets-only workload reads "
        + "in the same slots; the key gets read exactly the scans' keys one by one, so vs key "
        + "gets, the scans' commits/s / the key gets', is the cost of the range itself)");
    o.println();
    o.println("(c) aborts by cause, inferred from the entries chosen at the position each abort "
        + "names");
    o.printf(Locale.ROOT, "%-7s %-18s %7s %7s %7s %7s %11s %22s%n", "mode", "workload",
        "aborted", "range", "key", "other", "range share", "aborted: scanned/not");
    for (Row r : rows) {
      long aborted = r.r().count("aborted");
      o.printf(Locale.ROOT, "%-7s %-18s %7d %7d %7d %7d %11s %22s%n", r.mode(), r.workload(),
          aborted, r.rangeAborts(), r.keyAborts(), r.otherAborts(),
          aborted == 0 ? "-" : String.format(Locale.ROOT, "%.0f%%",
              100.0 * r.rangeAborts() / aborted),
          r.abortedScanning() + " / " + r.abortedOther());
    }
    o.println("(range: a winner wrote into a range the aborted transaction scanned and into no "
        + "key it got; key: into a key it got; other: no conflict, e.g. basic Paxos's lost "
        + "position. The key gets make no range, so their conflicts are all key. scanned/not: "
        + "aborted transactions that read a scan slot, by a scan or by its key gets, and that "
        + "read none)");
  }

  /** {@code v} to {@code digits} places, or "" for NaN. */
  private static String fixed(double v, int digits) {
    return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%." + digits + "f", v);
  }

  private void writeCsv(Path csv, Histogram get, Histogram scan, List<Row> rows,
      LocalCluster.StoreKind store) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(csv))) {
      w.println("part,mode,workload,txns,committed,aborted,commits_per_s,ratio,"
          + "ratio_vs_key_gets,p50_ms,p99_ms,range_aborts,key_aborts,other_aborts,"
          + "aborted_scanning,aborted_not_scanning,checker,store,home");
      w.printf(Locale.ROOT, "a,,get 1 key,%d,,,,,,%.3f,%.3f,,,,,,,%s,%s%n", get.getTotalCount(),
          ms(get, 50), ms(get, 99), store, home);
      w.printf(Locale.ROOT, "a,,scan %d keys,%d,,,,%.3f,,%.3f,%.3f,,,,,,,%s,%s%n", scanSize,
          scan.getTotalCount(), ms(scan, 50) / ms(get, 50), ms(scan, 50), ms(scan, 99), store,
          home);
      for (Row r : rows) {
        w.printf(Locale.ROOT,
            "b,%s,%s,%d,%d,%d,%.3f,%s,%s,%.3f,%.3f,%d,%d,%d,%d,%d,%s,%s,%s%n",
            r.mode(), r.workload(), r.r().txns().size(), r.r().committed(),
            r.r().count("aborted"), r.r().commitsPerSecond(), fixed(r.ratio(), 3),
            fixed(r.vsKeyGets(), 3), ms(r.r().commitMicros(), 50), ms(r.r().commitMicros(), 99),
            r.rangeAborts(), r.keyAborts(), r.otherAborts(), r.abortedScanning(), r.abortedOther(),
            r.checker().startsWith("ok") ? "ok" : "violation", store, home);
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
