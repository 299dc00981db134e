package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.paxoscp.bench.AsyncClosedLoop;
import org.paxoscp.bench.GroupsBench;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp bench-async}: a measurement, not a test. On one local cluster (embedded HBase
 * by default, the paper's round-trip times), the same closed loop of {@code --in-flight}
 * one-read-one-write transactions on groups drawn from many, driven in turn by ONE application
 * thread through the client's asynchronous API and by {@code --in-flight} application threads
 * through the blocking API (see {@link AsyncClosedLoop}). Reports per mode commits per second,
 * outcomes, commit and transaction latency, and what the mode cost this JVM: threads, heap after
 * a full GC, resident set, CPU.
 *
 * <p>Exit codes: 0 every mode ran (whatever the numbers); 1 a mode could not be run; 2 usage.
 */
@Command(name = "bench-async", mixinStandardHelpOptions = true, sortOptions = false,
    footer = {"%nWrites async.csv under --out.", "%nExplained in docs/benchmarks.md."},
    description = {"Measure the client's asynchronous API against its blocking API on a local "
        + "cluster: the same closed loop of --in-flight one-read-one-write transactions on "
        + "groups drawn from --groups, from ONE application thread (beginAsync, getAsync, put, "
        + "commitAsync; the next transaction starts when one ends) and from --in-flight "
        + "application threads (begin, get, put, commit), one mode after the other in this "
        + "process: commits/s, aborts, unknown outcomes, commit p50/p99, and the JVM's "
        + "threads, heap after a full GC and resident set before each mode, at the end of its "
        + "window (every transaction in flight) and after it closed its clients.",
        "",
        "The cluster's request timeout is 10 s here, not 2 s as in the other benches: with "
            + "1,000 transactions in flight on two cores and embedded HBase a request waits "
            + "seconds in the services' queues, and at 2 s the clients time out, retry at the "
            + "other DCs and commit nothing in either mode (docs/benchmarks.md)."})
public final class AsyncBenchCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--modes", defaultValue = "async,blocking", split = ",",
      paramLabel = "async|blocking[,..]",
      description = "The modes, in order, one after the other in this process; a mode named "
          + "again runs again, labelled -2, -3 (e.g. async,blocking,blocking,async) "
          + "(default: ${DEFAULT-VALUE}).")
  List<String> modesText;

  @Option(names = "--in-flight", defaultValue = "1000", paramLabel = "N",
      description = "Transactions in flight: the async mode's slots, the blocking mode's "
          + "application threads (default: ${DEFAULT-VALUE}).")
  int inFlight;

  @Option(names = "--api", defaultValue = "steps", paramLabel = "steps|run",
      description = "steps: begin, get, put, commit, no retry (an abort is counted and the "
          + "next transaction starts); run: runInTransactionAsync / runInTransaction, which "
          + "re-run aborted attempts with back-off (each aborted attempt counted) "
          + "(default: ${DEFAULT-VALUE}).")
  String apiText;

  @Option(names = "--protocol", defaultValue = "cp", converter = CommitProtocolConverter.class,
      description = "Commit protocol: cp (Paxos-CP, default), basic or leader.")
  CommitProtocol protocol;

  @Option(names = "--groups", defaultValue = "100000", paramLabel = "N",
      description = "Groups a transaction's group is drawn from, uniformly, so that conflicts "
          + "are rare; 1e5, 10^5 and 100k are accepted (default: ${DEFAULT-VALUE}).")
  String groupsText;

  @Option(names = "--keys", defaultValue = "10",
      description = "Keys per group that the read and the write draw from "
          + "(default: ${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--value-bytes", defaultValue = "16",
      description = "Size of a written value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--warmup", defaultValue = "10", paramLabel = "S",
      description = "Unmeasured seconds before each mode's window (default: ${DEFAULT-VALUE}).")
  int warmup;

  @Option(names = "--duration", defaultValue = "20", paramLabel = "S",
      description = "Measured seconds per mode (default: ${DEFAULT-VALUE}).")
  int duration;

  @Option(names = "--drain", defaultValue = "60", paramLabel = "S",
      description = "After the window, at most this long to wait for the transactions in "
          + "flight to end before closing the clients (default: ${DEFAULT-VALUE}).")
  int drain;

  @Option(names = "--cluster-warmup", defaultValue = "10", paramLabel = "S",
      description = "Before the first mode, this long of the async load on groups of its own, "
          + "not measured: the services' worker pools grow to their size and their code is "
          + "compiled, so that the first mode's baseline holds the services' threads "
          + "(default: ${DEFAULT-VALUE}; 0 for none).")
  int clusterWarmup;

  @Option(names = "--client-dcs", defaultValue = "O", split = ",",
      description = "One TxnClient per DC of this list, per mode; transactions (async) or "
          + "application threads (blocking) take them in turn (default: ${DEFAULT-VALUE}).")
  List<String> clientDcs;

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V,O,C");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(10_000);

  @Option(names = "--service-threads", defaultValue = "16",
      description = "Each service's worker threads (default: ${DEFAULT-VALUE}).")
  int serviceThreads;

  @Option(names = "--progress-seconds", defaultValue = "5",
      description = "Seconds between progress lines (default: ${DEFAULT-VALUE}).")
  int progressSeconds;

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench");

  private final PrintStream o = System.out;

  @Override
  public Integer call() throws Exception {
    List<AsyncClosedLoop.Mode> modes = new ArrayList<>();
    AsyncClosedLoop.Api api;
    long groups;
    List<String> dcs;
    ClusterConfig.Wan wan;
    Duration timeout;
    try {
      for (String m : modesText) {
        modes.add(AsyncClosedLoop.Mode.parse(m));
      }
      api = AsyncClosedLoop.Api.parse(apiText);
      groups = GroupsBench.parseCount(groupsText);
      dcs = dcList.dcs();
      for (String c : clientDcs) {
        if (!dcs.contains(c)) {
          throw new IllegalArgumentException("--client-dcs: " + c + " is not one of " + dcs);
        }
      }
      if (modes.isEmpty() || inFlight < 1 || keys < 1 || valueBytes < 0 || warmup < 0
          || duration < 1 || drain < 0 || clusterWarmup < 0 || serviceThreads < 1
          || progressSeconds < 1) {
        throw new IllegalArgumentException("need a mode, --in-flight, --keys, --duration, "
            + "--service-threads and --progress-seconds >= 1, --value-bytes, --warmup, "
            + "--cluster-warmup and --drain >= 0");
      }
      wan = wanOptions.wan(dcs);
      timeout = requestTimeout.timeout();
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }
    List<String> labels = AsyncClosedLoop.labels(modes);
    LocalCluster.StoreKind store = storeOption.kind();
    String proto = protocol.name().toLowerCase(Locale.ROOT);
    o.printf(Locale.ROOT, "bench-async: dcs=%s store=%s wan=%s; %s, %,d in flight, clients "
            + "in %s, groups drawn from %,d (%d keys each), api %s; modes %s, each %d s "
            + "warm-up + %d s%n", dcs, store, wanOptions.summary(wan, dcs), proto, inFlight,
        clientDcs, groups, keys, api.label(), labels, warmup, duration);
    o.printf(Locale.ROOT, "  JVM: %s, %d processors, max heap %.0f MB%n",
        System.getProperty("java.vm.version"), Runtime.getRuntime().availableProcessors(),
        Runtime.getRuntime().maxMemory() / (1024.0 * 1024.0));
    long started = System.nanoTime();
    Path dataDir = Files.createTempDirectory("paxoscp-bench-async-");
    List<AsyncClosedLoop.Result> results = new ArrayList<>();
    int failed = 0;
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(dcs, store, dataDir,
        wan, timeout, serviceThreads), line -> o.println("  " + line))) {
      if (clusterWarmup > 0) {
        o.printf(Locale.ROOT, "cluster warm-up: async, %,d in flight, %d s, not measured%n",
            inFlight, clusterWarmup);
        AsyncClosedLoop.Live w = new AsyncClosedLoop.Live();
        AsyncClosedLoop.run(new AsyncClosedLoop.Spec("cluster warm-up",
                AsyncClosedLoop.Mode.ASYNC, api, "warmup-", groups, keys, valueBytes, inFlight,
                Duration.ZERO, Duration.ofSeconds(clusterWarmup), Duration.ofSeconds(drain)),
            () -> open(cluster), w, line -> o.println("  " + line),
            Duration.ofSeconds(progressSeconds));
        o.printf(Locale.ROOT, "  cluster warm-up: %,d committed, %,d not (drain included)%n",
            w.committed(), w.notCommitted());
      }
      for (int i = 0; i < modes.size(); i++) {
        String label = labels.get(i);
        AsyncClosedLoop.Spec s = new AsyncClosedLoop.Spec(label, modes.get(i), api,
            label + "-", groups, keys, valueBytes, inFlight, Duration.ofSeconds(warmup),
            Duration.ofSeconds(duration), Duration.ofSeconds(drain));
        o.printf(Locale.ROOT, "%s: %,d application thread%s, %,d in flight, %d s warm-up + %d "
                + "s ...%n", label, s.appThreads(), s.appThreads() == 1 ? "" : "s", inFlight,
            warmup, duration);
        try {
          AsyncClosedLoop.Result r = AsyncClosedLoop.run(s, () -> open(cluster),
              new AsyncClosedLoop.Live(), line -> o.println("  " + line),
              Duration.ofSeconds(progressSeconds));
          results.add(r);
          o.printf(Locale.ROOT, "  %s: %.1f commits/s, commit p50 %s ms, p99 %s ms; %,d "
                  + "threads added; heap %.0f MB in flight, %.0f MB after%n", label,
              r.commitsPerSecond(), ms(r.commitMicros(), 50), ms(r.commitMicros(), 99),
              r.addedThreads(), r.during().heapUsedMb(), r.after().heapUsedMb());
        } catch (RuntimeException | OutOfMemoryError e) {
          failed++;
          o.printf(Locale.ROOT, "  %s: FAILED: %s%n", label, e);
          System.err.printf(Locale.ROOT, "bench-async: %s could not be run: %s%n", label,
              ClusterCommand.oneLine(e));
        }
      }
    } finally {
      deleteRecursively(dataDir);
    }
    o.println();
    print(results, proto, store, groups);
    Path out = outOption.dir();
    Files.createDirectories(out);
    Path csv = out.resolve("async.csv");
    writeCsv(csv, results, proto, store, groups);
    o.println("wrote " + csv);
    o.printf(Locale.ROOT, "bench-async: done in %.0f s%n", (System.nanoTime() - started) / 1e9);
    return failed == 0 ? 0 : 1;
  }

  /** The mode's clients: one per client DC, each opening its own transport. */
  private List<TxnClient> open(LocalCluster cluster) {
    List<TxnClient> clients = new ArrayList<>();
    try {
      for (String dc : clientDcs) {
        clients.add(cluster.client(dc, protocol));
      }
      return clients;
    } catch (RuntimeException e) {
      clients.forEach(TxnClient::close);
      throw e;
    }
  }

  private void print(List<AsyncClosedLoop.Result> rows, String proto,
      LocalCluster.StoreKind store, long groups) {
    o.printf(Locale.ROOT, "%s, %s store, clients in %s, %,d transactions in flight per mode on "
        + "groups drawn from %,d, %d s measured per mode; modes one after the other in this "
        + "process%n%n", proto, store, clientDcs, inFlight, groups, duration);
    o.println("| mode | app threads | commits/s | committed | aborted | unknown | unavailable "
        + "| errors | commit p50 (ms) | commit p99 (ms) | txn p50 (ms) | txn p99 (ms) "
        + "| JVM threads before / in flight / peak | threads added | heap MB before / in flight "
        + "/ after | in-flight heap MB | RSS MB before / in flight / after "
        + "| RSS - committed heap MB before / in flight / after "
        + "| CPU ms per commit: process / added threads |");
    o.println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (AsyncClosedLoop.Result r : rows) {
      o.printf(Locale.ROOT, "| %s | %,d | %.1f | %,d | %,d | %,d | %,d | %,d | %s | %s | %s | "
              + "%s | %,d / %,d / %,d | %,d | %.0f / %.0f / %.0f | %.0f | %.0f / %.0f / %.0f "
              + "| %.0f / %.0f / %.0f | %s / %s |%n",
          r.spec().label(), r.spec().appThreads(), r.commitsPerSecond(), r.committed(),
          r.aborted(), r.unknown(), r.unavailable(), r.errors(), ms(r.commitMicros(), 50),
          ms(r.commitMicros(), 99), ms(r.txnMicros(), 50), ms(r.txnMicros(), 99),
          r.before().threads(), r.during().threads(), r.peakThreads(), r.addedThreads(),
          r.before().heapUsedMb(), r.during().heapUsedMb(), r.after().heapUsedMb(),
          r.during().heapUsedMb() - r.after().heapUsedMb(), r.before().rssMb(),
          r.during().rssMb(), r.after().rssMb(), r.before().nativeMb(), r.during().nativeMb(),
          r.after().nativeMb(), perCommit(r.processCpuNanos(), r),
          perCommit(r.addedCpuNanos(), r));
    }
    o.println();
    o.println("(commits/s, outcomes and latencies over the measured window; commit: the commit "
        + "call; txn: begin to commit result. JVM threads and heap: the whole process, services "
        + "and HBase included; heap after a full GC; 'in flight' is measured at the end of the "
        + "window with the transactions still in flight, 'after' once the mode drained and "
        + "closed its clients, so in-flight heap = in flight - after. RSS and RSS - committed "
        + "heap: read just before that GC; the latter approximates the process's memory outside "
        + "the Java heap (thread stacks among it). threads added: alive at the end of the "
        + "window and not before the mode. CPU: in the window)");
    o.println();
    o.println("Threads added, by name (# = a sequence number), alive at the end of the window, "
        + "with their CPU time in the window:");
    for (AsyncClosedLoop.Result r : rows) {
      List<String> parts = new ArrayList<>();
      for (AsyncClosedLoop.ThreadKind k : r.added()) {
        parts.add(String.format(Locale.ROOT, "%s %,d (%,.0f ms)", k.kind(), k.alive(),
            k.cpuNanos() / 1e6));
      }
      o.printf(Locale.ROOT, "  %s: %s%n", r.spec().label(), parts.isEmpty() ? "none"
          : String.join(", ", parts));
      if (r.unfinished() > 0) {
        o.printf(Locale.ROOT, "  %s: %,d transactions had not ended %d s after the window%n",
            r.spec().label(), r.unfinished(), drain);
      }
    }
  }

  private void writeCsv(Path file, List<AsyncClosedLoop.Result> rows, String proto,
      LocalCluster.StoreKind store, long groups) throws IOException {
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println("mode,api,protocol,store,client_dcs,groups,in_flight,app_threads,seconds,"
          + "committed,commits_per_s,aborted,unknown,unavailable,errors,commit_p50_ms,"
          + "commit_p99_ms,txn_p50_ms,txn_p99_ms,threads_before,threads_in_flight,threads_peak,"
          + "threads_after,threads_added,heap_mb_before,heap_mb_in_flight,heap_mb_after,"
          + "rss_mb_before,rss_mb_in_flight,rss_mb_after,rss_minus_heap_committed_mb_before,"
          + "rss_minus_heap_committed_mb_in_flight,rss_minus_heap_committed_mb_after,"
          + "process_cpu_ms_per_commit,added_threads_cpu_ms_per_commit,in_flight_at_window_end,"
          + "unfinished,request_timeout_ms");
      for (AsyncClosedLoop.Result r : rows) {
        w.printf(Locale.ROOT, "%s,%s,%s,%s,%s,%d,%d,%d,%.1f,%d,%.2f,%d,%d,%d,%d,%s,%s,%s,%s,%d,%d,"
                + "%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%s,%s,%d,%d,%d%n",
            r.spec().label(), r.spec().api().label(), proto, store, String.join("+", clientDcs),
            groups, inFlight,
            r.spec().appThreads(), r.seconds(), r.committed(), r.commitsPerSecond(), r.aborted(),
            r.unknown(), r.unavailable(), r.errors(), ms(r.commitMicros(), 50),
            ms(r.commitMicros(), 99), ms(r.txnMicros(), 50), ms(r.txnMicros(), 99),
            r.before().threads(), r.during().threads(), r.peakThreads(), r.after().threads(),
            r.addedThreads(), r.before().heapUsedMb(), r.during().heapUsedMb(),
            r.after().heapUsedMb(), r.before().rssMb(), r.during().rssMb(), r.after().rssMb(),
            r.before().nativeMb(), r.during().nativeMb(), r.after().nativeMb(),
            perCommit(r.processCpuNanos(), r), perCommit(r.addedCpuNanos(), r),
            r.inFlightAtEnd(), r.unfinished(), requestTimeout.timeout().toMillis());
      }
    }
  }

  /** CPU milliseconds per commit in the window, or "-". */
  private static String perCommit(long nanos, AsyncClosedLoop.Result r) {
    return nanos < 0 || r.committed() == 0 ? "-"
        : String.format(Locale.ROOT, "%.2f", nanos / 1e6 / r.committed());
  }

  /** The percentile in ms to one place, or "-" when nothing was measured. */
  private static String ms(Histogram h, double pct) {
    return h.getTotalCount() == 0 ? "-"
        : String.format(Locale.ROOT, "%.1f", h.getValueAtPercentile(pct) / 1000.0);
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
