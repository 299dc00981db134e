package org.paxoscp.cli;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.ClientHooks;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-client}: a measurement, not a test. On one local cluster (embedded HBase
 * by default, the paper's round-trip times), two parts whose rows are measured in the same run:
 * (a) a read of {@code --keys} keys with one {@code getAll} against one {@code get} per key, in
 * transactions at the client's home DC, interleaved; (b) with the home DC's service hung
 * (registered and listening, answering nothing: {@link LocalCluster#setHung}), a
 * transaction of {@code --reads} reads from a fresh client and then a second one from the same
 * client, by the client that remembers silent DCs against one that asks the DCs in the
 * configured order every time ({@link ClientHooks#withoutDcHealth}), alternating.
 *
 * <p>Exit codes: 0 done (whatever the numbers); 2 usage.
 */
@Command(name = "bench-client", mixinStandardHelpOptions = true,
    footer = {"%nWrites client.csv under --out.", "%nExplained in docs/benchmarks.md."},
    description = "Measure the client's batch reads and its fail-over on a local cluster: "
        + "getAll of --keys keys against as many gets, and a transaction of --reads reads with "
        + "the home DC's service hung (answering nothing), by a client that remembers silent DCs against one "
        + "that does not.")
public final class ClientBenchCommand implements Callable<Integer> {

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,V3");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(2000);

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  @Option(names = "--home", defaultValue = "V1",
      description = "The clients' home DC, hung in part (b) (default: ${DEFAULT-VALUE}).")
  String home;

  @Option(names = "--keys", defaultValue = "100",
      description = "(a) Keys per batch read (default: ${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--value-bytes", defaultValue = "100",
      description = "(a) Bytes per value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--samples", defaultValue = "30",
      description = "(a) Measured batch reads, and as many runs of single gets "
          + "(default: ${DEFAULT-VALUE}).")
  int samples;

  @Option(names = "--warmup", defaultValue = "5",
      description = "(a) Unmeasured ones of each first (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--reads", defaultValue = "10",
      description = "(b) Reads per transaction (default: ${DEFAULT-VALUE}).")
  int reads;

  @Option(names = "--trials", defaultValue = "5",
      description = "(b) Fresh clients per fail-over mode (default: ${DEFAULT-VALUE}).")
  int trials;

  private final PrintStream o = System.out;

  /** One row of the table and the CSV. */
  private record Row(String part, String mode, Histogram ms) {
    double p50() {
      return ms.getValueAtPercentile(50) / 1000.0;
    }

    double p99() {
      return ms.getValueAtPercentile(99) / 1000.0;
    }
  }

  @Override
  public Integer call() throws Exception {
    List<String> dcs = dcList.dcs();
    if (!dcs.contains(home) || dcs.size() < 3 || keys < 1 || keys > 10_000 || samples < 1
        || warmup < 0 || reads < 1 || trials < 1 || valueBytes < 1) {
      throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this),
          "need --home among at least 3 --dcs, 1 <= --keys <= 10000, --samples, --reads, "
              + "--trials >= 1");
    }
    ClusterConfig.Wan wan = wanOptions.wan(dcs);
    Duration timeout = requestTimeout.timeout();
    o.printf(Locale.ROOT, "bench-client: dcs=%s store=%s wan=%s home=%s request timeout=%d ms%n",
        dcs, storeOption.kind(), wanOptions.summary(wan, dcs), home, timeout.toMillis());
    Path dataDir = Files.createTempDirectory("paxoscp-bench-client-");
    List<Row> rows = new ArrayList<>();
    String next = dcs.get(dcs.get(0).equals(home) ? 1 : 0);
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs,
        storeOption.kind(), dataDir, wan, timeout, 16), line -> o.println("  " + line))) {
      rows.addAll(batchReads(cluster));
      rows.addAll(failover(cluster));
    }
    o.println();
    o.printf(Locale.ROOT, "%-32s %-36s %10s %10s %7s%n", "part", "mode", "p50 ms", "p99 ms",
        "n");
    for (Row r : rows) {
      o.printf(Locale.ROOT, "%-32s %-36s %10.1f %10.1f %7d%n", r.part(), r.mode(), r.p50(),
          r.p99(), r.ms().getTotalCount());
    }
    o.println();
    o.printf(Locale.ROOT, "(a) %d gets / one getAll, p50: %.1fx%n", keys,
        rows.get(1).p50() / rows.get(0).p50());
    o.printf(Locale.ROOT, "(b) first transaction of a fresh client, home %s hung: without "
        + "DC health / with, p50: %.1fx; with DC health against the target (one request "
        + "timeout + %d round trips to %s at %.1f ms = %.0f ms): %.0f ms%n", home,
        rows.get(2).p50() / rows.get(4).p50(), reads, next,
        2 * wan.oneWayMicros(home, next) / 1000.0,
        timeout.toMillis() + reads * 2 * wan.oneWayMicros(home, next) / 1000.0,
        rows.get(4).p50());
    Path out = outOption.dir();
    Files.createDirectories(out);
    Path csv = out.resolve("client.csv");
    StringBuilder text = new StringBuilder("part,mode,p50_ms,p99_ms,n\n");
    for (Row r : rows) {
      text.append(String.format(Locale.ROOT, "%s,%s,%.2f,%.2f,%d%n", r.part(), r.mode(),
          r.p50(), r.p99(), r.ms().getTotalCount()));
    }
    Files.writeString(csv, text);
    o.println("wrote " + csv);
    return 0;
  }

  /** Part (a): one getAll against one get per key, interleaved, on a loaded group. */
  private List<Row> batchReads(LocalCluster cluster) {
    String group = "bench-client-read";
    List<String> names = new ArrayList<>();
    for (int i = 0; i < keys; i++) {
      names.add(String.format(Locale.ROOT, "k%05d", i));
    }
    Histogram all = new Histogram(3);
    Histogram each = new Histogram(3);
    try (TxnClient c = cluster.client(home, CommitProtocol.CP)) {
      String value = "v".repeat(valueBytes);
      for (int from = 0; from < keys; from += 100) {
        Transaction t = c.begin(group);
        for (String k : names.subList(from, Math.min(keys, from + 100))) {
          t.put(k, value);
        }
        t.commit();
      }
      o.printf(Locale.ROOT, "(a) %d keys of %d bytes: %d getAll and %d runs of %d gets, "
          + "interleaved, after %d of each unmeasured ...%n", keys, valueBytes, samples,
          samples, keys, warmup);
      for (int i = 0; i < warmup + samples; i++) {
        boolean measured = i >= warmup;
        try (Transaction t = c.begin(group)) {
          long t0 = System.nanoTime();
          int found = t.getAll(names).size();
          record(all, t0, measured);
          check(found);
        }
        try (Transaction t = c.begin(group)) {
          long t0 = System.nanoTime();
          int found = 0;
          for (String k : names) {
            found += t.get(k).isPresent() ? 1 : 0;
          }
          record(each, t0, measured);
          check(found);
        }
      }
    }
    return List.of(new Row("(a) read " + keys + " keys", "getAll", all),
        new Row("(a) read " + keys + " keys", keys + " gets", each));
  }

  private void check(int found) {
    if (found != keys) {
      throw new IllegalStateException("read " + found + " of " + keys + " keys");
    }
  }

  /**
   * Part (b): with the home DC's service hung, a fresh client's first transaction of
   * {@code reads} reads and its second, without and with DC health, alternating.
   */
  private List<Row> failover(LocalCluster cluster) {
    String group = "bench-client-failover";
    try (TxnClient c = cluster.client(home, CommitProtocol.CP)) {
      Transaction t = c.begin(group);
      for (int i = 0; i < reads; i++) {
        t.put("r" + i, "v" + i);
      }
      t.commit();
    }
    cluster.setHung(home, true);
    o.printf(Locale.ROOT, "(b) %s hung: %d fresh clients per mode, each a transaction of %d "
        + "reads and then a second, alternating ...%n", home, trials, reads);
    Histogram[] firstMs = {new Histogram(3), new Histogram(3)};
    Histogram[] secondMs = {new Histogram(3), new Histogram(3)};
    ClientHooks[] hooks = {ClientHooks.SHIPPED.withoutDcHealth(), ClientHooks.SHIPPED};
    for (int trial = 0; trial < trials; trial++) {
      for (int m = 0; m < 2; m++) {
        try (TxnClient c = TxnClient.builder(cluster.config(), home, CommitProtocol.CP)
            .hooks(hooks[m]).build()) {
          firstMs[m].recordValue(readTransaction(c, group));
          secondMs[m].recordValue(readTransaction(c, group));
        }
      }
      o.printf(Locale.ROOT, "  trial %d/%d done%n", trial + 1, trials);
    }
    cluster.setHung(home, false);
    String part = "(b) " + reads + " reads, " + home + " hung";
    return List.of(new Row(part, "without DC health, 1st txn", firstMs[0]),
        new Row(part, "without DC health, 2nd txn", secondMs[0]),
        new Row(part, "with DC health, 1st txn", firstMs[1]),
        new Row(part, "with DC health, 2nd txn", secondMs[1]));
  }

  /** A read-only transaction of {@code reads} reads, begin to commit, in microseconds. */
  private long readTransaction(TxnClient c, String group) {
    long t0 = System.nanoTime();
    try (Transaction t = c.begin(group)) {
      for (int i = 0; i < reads; i++) {
        if (t.get("r" + i).isEmpty()) {
          throw new IllegalStateException("r" + i + " has no value");
        }
      }
      t.commit();
    }
    return Math.max(1, (System.nanoTime() - t0) / 1000);
  }

  private static void record(Histogram h, long t0, boolean measured) {
    if (measured) {
      h.recordValue(Math.max(1, (System.nanoTime() - t0) / 1000));
    }
  }
}
