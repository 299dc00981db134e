package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.paxoscp.bench.GroupPicker;
import org.paxoscp.bench.GroupsBench;
import org.paxoscp.bench.GroupsChart;
import org.paxoscp.bench.GroupsRow;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp bench-groups}: a measurement, not a test. How a Transaction Service's memory,
 * CPU and throughput grow with the number of entity groups: for each number of groups and each
 * distribution, a fresh cluster of service processes (see {@link GroupsBench}) under a
 * closed-loop load of one-read-one-write transactions on groups drawn from that many. Prints
 * progress on stderr and a table on stdout; writes {@code groups.csv} and {@code groups.png}.
 *
 * <p>Exit codes: 0 every point ran (whatever the numbers); 1 a point could not be run (a service
 * or HBase did not start) or a service died during a point; 2 usage.
 */
@Command(name = "bench-groups", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Measure how Transaction Service memory, CPU and throughput grow with the number of "
            + "entity groups.",
        "",
        "For each N of --groups and each --dist: start one service process per DC (its own "
            + "JVM, -Xmx --service-heap), on a fresh standalone HBase (one namespace per DC) or "
            + "in-memory stores; run --clients closed-loop client threads in this process (client "
            + "i at home DC i mod --client-dcs, one TxnClient per home DC), each transaction "
            + "begin on a group drawn from N (uniform, zipf s=0.99 by YCSB's generator, or new: each "
            + "transaction the next group never used), read "
            + "one key, write one key, commit (no retry); after the load measure each service's "
            + "live heap (jcmd GC.run, then GC.heap_info), its CPU time over the load and its "
            + "store requests; stop everything. Each point starts from nothing; the first "
            + "--warmup-txns transactions are not measured.",
        ""},
    footer = {"",
        "Output (under --out): groups.csv (one row per N, distribution and region server "
            + "count), groups.png (heap and commits/s against groups, log x), "
            + "logs/<N>-<dist>[-<R>rs]/service-<DC>.log, histogram-<DC>.txt (jcmd "
            + "GC.class_histogram after the load, top 40 classes) and hbase-*.log (HBase's own "
            + "logs and its collector's, gc-*.log).",
        "",
        "--store hbase starts a standalone HBase process per point (with --regionservers R, a "
            + "master process and R region server processes); with --store memory each "
            + "service keeps its DC's data in its own heap.",
        "",
        "groups.csv columns (-1: not measured):",
        "  groups, dist, protocol, store, wan, clients  the point's settings",
        "  txns                     transactions attempted (after the warm-up); seconds: the "
            + "load's duration",
        "  commits, commits_per_s   committed transactions, and per second of the load",
        "  aborted, unknown, unavailable, errors  outcomes of the others (no retry)",
        "  failed                   unknown + unavailable + errors (aborts are conflicts, "
            + "counted apart)",
        "  commit_p50_ms, commit_p99_ms  latency of commit() of committed transactions",
        "  txn_p50_ms, txn_p99_ms   latency of a whole committed transaction",
        "  distinct_groups_touched  groups a transaction was begun on (warm-up included)",
        "  distinct_groups_committed  groups with at least one commit (warm-up included)",
        "  service_heap_mb_idle_max heap used after a full GC, before the load, max over DCs",
        "  service_heap_mb_max      heap used after a full GC, after the load, max over DCs "
            + "(with --store memory it includes the DC's data)",
        "  heap_growth_bytes_per_group  max over DCs of (after - before) / groups committed",
        "  service_cpu_ms, cpu_ms_per_commit  CPU time of all service processes over the load, "
            + "total and per commit",
        "  client_cpu_ms_per_commit  CPU time of this process (the clients) per commit",
        "  store_requests_per_commit  store reads, row reads, writes and check-and-writes of all "
            + "services per commit (garbage collection's deletes not counted); -1 with "
            + "--plain-service",
        "  services_alive           services still running after the load (a service that "
            + "ran out of heap exits)",
        "  heap_mb_<DC>, heap_idle_mb_<DC>  each service's heap after and before the load",
        "",
        "Example: ./paxoscp bench-groups --store memory --groups 100,10000 --clients 8 "
            + "--out /tmp/bg1", "%nExplained in docs/benchmarks.md."})
public final class GroupsBenchCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--groups", defaultValue = "100,10000,1000000", split = ",",
      paramLabel = "N[,N...]",
      description = "Numbers of entity groups, one point each; 1e6, 10^6, 10k and 1m are "
          + "accepted (default: ${DEFAULT-VALUE}).")
  List<String> groupsText;

  @Option(names = "--dist", defaultValue = "uniform", split = ",",
      paramLabel = "uniform|zipf|new[,..]",
      description = "How a transaction's group is drawn: uniform, zipf (s=0.99, group 0 the "
          + "hottest), new (each transaction a group never used before, in order; with "
          + "--txns-per-n N and --warmup-txns 0 every group is written once), or several "
          + "(default: ${DEFAULT-VALUE}).")
  List<String> distText;

  @Option(names = "--clients", defaultValue = "16",
      description = "Closed-loop client threads (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--txns-per-n", paramLabel = "TXNS",
      description = "Measured transactions per point (default: max(2000, min(N, 50000)); "
          + "N=10^6 uniform then touches about 49,000 groups).")
  Long txnsPerN;

  @Option(names = "--seconds", paramLabel = "S",
      description = "Run each point's load for S seconds instead of a number of transactions.")
  Integer seconds;

  @Option(names = "--warmup-txns", defaultValue = "500", paramLabel = "TXNS",
      description = "Transactions run before each point's measured load, on the same groups "
          + "(JIT warm-up; their groups count as touched and are in the heap, nothing else of "
          + "them is counted; default: ${DEFAULT-VALUE}, 0 for none).")
  long warmupTxns;

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Option(names = "--regionservers", defaultValue = "1", split = ",", paramLabel = "N[,N...]",
      description = "Region servers of the HBase (default: ${DEFAULT-VALUE}, in the master's "
          + "process; more: each a process of its own); several, such as 1,3, measure every "
          + "point on each, side by side (store hbase/3rs in the table). With more than one "
          + "server, a point ends with every server's share of the requests and its distance "
          + "from an even share.")
  List<Integer> regionServerCounts;

  @Option(names = "--service-heap", defaultValue = "256m", paramLabel = "SIZE",
      description = "Each service's -Xmx (default: ${DEFAULT-VALUE}).")
  String serviceHeap;

  @Option(names = "--protocol", defaultValue = "cp", converter = CommitProtocolConverter.class,
      description = "Commit protocol: cp (Paxos-CP, default), basic or leader.")
  CommitProtocol protocol;

  @Option(names = "--wan", description = "Emulate the paper's WAN round-trip times between "
      + "DCs (the default).")
  boolean wanFlag;

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,O");

  @Option(names = "--client-dcs", split = ",",
      description = "Client i lives in DC i mod this list (default: every DC).")
  List<String> clientDcs;

  @Option(names = "--keys", defaultValue = "10",
      description = "Keys per group that reads and writes draw from (default: "
          + "${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--value-bytes", defaultValue = "16",
      description = "Size of a written value (default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--service-threads", defaultValue = "16",
      description = "Each service's worker threads (default: ${DEFAULT-VALUE}).")
  int serviceThreads;

  @Option(names = "--service-setting", paramLabel = "KEY=VALUE",
      description = "An extra service key for every service, e.g. "
          + "paxoscp.service.gc.retention.positions=1000 (repeatable).")
  List<String> serviceSettings = new ArrayList<>();

  @Option(names = "--service-jvm-option", paramLabel = "OPTION",
      description = "An extra JVM option for every service, after the defaults "
          + "(-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError), e.g. "
          + "-XX:TieredStopAtLevel=4 (repeatable).")
  List<String> serviceJvmOptions = new ArrayList<>();

  @Option(names = "--plain-service",
      description = "Run the services as `paxoscp service` itself rather than the same service "
          + "with a store-request counter around its store; store_requests_per_commit is then "
          + "-1.")
  boolean plainService;

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(2000);

  @Option(names = "--progress-seconds", defaultValue = "5",
      description = "Seconds between progress lines (default: ${DEFAULT-VALUE}).")
  int progressSeconds;

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("./paxoscp-data/bench-groups");

  @Override
  public Integer call() throws IOException {
    PrintStream o = System.out;
    PrintStream err = System.err;
    List<Long> groups = new ArrayList<>();
    List<GroupPicker.Dist> dists = new ArrayList<>();
    Map<String, String> settings = new LinkedHashMap<>();
    ClusterConfig.Wan wan;
    List<String> dcs;
    Duration timeout;
    LocalCluster.StoreKind store = storeOption.kind();
    try {
      dcs = dcList.dcs();
      timeout = requestTimeout.timeout();
      for (String g : groupsText) {
        groups.add(GroupsBench.parseCount(g));
      }
      for (String d : distText) {
        GroupPicker.Dist dist = GroupPicker.Dist.parse(d);
        if (!dists.contains(dist)) {
          dists.add(dist);
        }
      }
      for (String kv : serviceSettings) {
        int eq = kv.indexOf('=');
        if (eq <= 0) {
          throw new IllegalArgumentException("--service-setting expects KEY=VALUE, was " + kv);
        }
        settings.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
      }
      if (clientDcs == null || clientDcs.isEmpty()) {
        clientDcs = dcs;
      }
      for (String c : clientDcs) {
        if (!dcs.contains(c)) {
          throw new IllegalArgumentException("--client-dcs: " + c + " is not one of " + dcs);
        }
      }
      if (txnsPerN != null && seconds != null) {
        throw new IllegalArgumentException("give --txns-per-n or --seconds, not both");
      }
      if (clients < 1 || keys < 1 || valueBytes < 0 || serviceThreads < 1 || warmupTxns < 0
          || progressSeconds < 1 || (txnsPerN != null && txnsPerN < 1)
          || (seconds != null && seconds < 1)) {
        throw new IllegalArgumentException("--clients, --keys, --service-threads, "
            + "--progress-seconds, --txns-per-n and --seconds must be positive, --warmup-txns and "
            + "--value-bytes at least 0");
      }
      if (wanFlag && !wanOptions.enabled()) {
        throw new IllegalArgumentException("give --wan or --no-wan, not both");
      }
      wan = wanOptions.wan(dcs);
    } catch (IllegalArgumentException e) {
      throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
    }

    for (int regionServers : regionServerCounts) {
      if (regionServers < 1 || regionServers > org.paxoscp.store.hbase.StandaloneHBase
          .MAX_REGION_SERVERS || (regionServers > 1 && store != LocalCluster.StoreKind.HBASE)) {
        throw new CommandLine.ParameterException(spec.commandLine(), "--regionservers must be "
            + "in 1.." + org.paxoscp.store.hbase.StandaloneHBase.MAX_REGION_SERVERS
            + ", and 1 unless the store is hbase");
      }
    }
    Path outDir = outOption.dir().toAbsolutePath().normalize();
    Files.createDirectories(outDir);
    Path work = Files.createTempDirectory("paxoscp-bench-groups-");
    GroupsBench.Settings s = new GroupsBench.Settings(dcs, clientDcs, clients, store,
        serviceHeap, serviceJvmOptions, settings, serviceThreads, protocol, wan,
        txnsPerN == null ? 0 : txnsPerN, seconds == null ? null : Duration.ofSeconds(seconds),
        warmupTxns, keys, valueBytes, !plainService, timeout, work,
        outDir.resolve("logs"), Duration.ofSeconds(progressSeconds),
        regionServerCounts.get(0));
    String subtitle = String.format(Locale.ROOT, "%s, %s store%s, %d clients, -Xmx%s, WAN %s",
        protocol.name().toLowerCase(Locale.ROOT), store.toString().toLowerCase(Locale.ROOT),
        regionServerCounts.equals(List.of(1)) ? ""
            : " (region servers " + regionServerCounts + ")",
        clients, serviceHeap, wan.enabled() ? "on" : "off");
    err.printf(Locale.ROOT, "bench-groups: groups %s, dist %s, dcs %s, clients %d in %s, %s, "
            + "WAN %s, %s per point; out %s%n", groups,
        dists.stream().map(GroupPicker.Dist::label).toList(), dcs, clients, clientDcs,
        subtitle, wan.enabled() ? WanOptions.rttSummary(wan, dcs) : "off",
        seconds != null ? seconds + " s" : txnsPerN != null ? txnsPerN + " txns"
            : "max(2000, min(N, 50000)) txns", outDir);
    List<GroupsRow> rows = new ArrayList<>();
    int failedPoints = 0;
    Path csv = outDir.resolve("groups.csv");
    Path png = outDir.resolve("groups.png");
    try (GroupsBench bench = new GroupsBench(s, err)) {
      for (long n : groups) {
        for (GroupPicker.Dist d : dists) {
          for (int regionServers : regionServerCounts) {
          try {
            GroupsRow row = bench.run(n, d, regionServers);
            rows.add(row);
            if (row.servicesAlive() < dcs.size()) {
              failedPoints++;
            }
          } catch (RuntimeException e) {
            failedPoints++;
            err.printf(Locale.ROOT, "bench-groups: N=%d %s could not be run: %s%n", n,
                d.label(), ClusterCommand.oneLine(e));
          }
          writeCsv(rows, csv);
          if (!rows.isEmpty()) {
            GroupsChart.write(rows, subtitle, png);
          }
          }
        }
      }
    } finally {
      GroupsBench.deleteRecursivelyQuietly(work);
    }
    o.println();
    o.println("bench-groups: " + subtitle);
    printTable(rows, o);
    o.printf("%nWrote %s%s%n", csv, rows.isEmpty() ? "" : " and " + png);
    return failedPoints == 0 ? 0 : 1;
  }

  private void writeCsv(List<GroupsRow> rows, Path file) throws IOException {
    List<String> dcs = dcList.dcs();
    try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8))) {
      w.println(GroupsRow.csvHeader(dcs));
      for (GroupsRow r : rows) {
        w.println(r.csvLine(dcs));
      }
    }
  }

  private static void printTable(List<GroupsRow> rows, PrintStream o) {
    o.printf(Locale.ROOT, "%10s %-8s %-10s %7s %8s %9s %7s %9s %9s %9s %10s %10s %10s %9s %9s "
        + "%6s%n", "groups", "dist", "store", "txns", "commits", "commits/s", "failed", "p50(ms)", "p99(ms)",
        "touched", "heap0(MB)", "heap(MB)", "B/group", "cpu/c(ms)", "store/c", "alive");
    for (GroupsRow r : rows) {
      o.printf(Locale.ROOT, "%10d %-8s %-10s %7d %8d %9.1f %7d %9s %9s %9d %10s %10s %10s %9s "
              + "%9s %6s%n", r.groups(), r.dist().label(), r.store(), r.txns(), r.commits(),
          r.commitsPerSecond(), r.failed(), num(r.commitP50Ms(), 1), num(r.commitP99Ms(), 1),
          r.touched(), num(r.heapIdleMaxMb(), 1), num(r.heapMaxMb(), 1),
          num(r.heapGrowthBytesPerGroup(), 0), num(r.cpuMsPerCommit(), 2),
          num(r.storeRequestsPerCommit(), 1), r.servicesAlive() + "/" + r.heapMb().size());
    }
    o.println("heap0/heap = largest service heap after a full GC before/after the load; "
        + "B/group = largest heap growth per group with a commit; cpu/c = service CPU ms per "
        + "commit (all DCs); store/c = store requests per commit (all DCs); -1 = not measured");
  }

  private static String num(double v, int digits) {
    return v < 0 || Double.isNaN(v) ? "-1" : String.format(Locale.ROOT, "%." + digits + "f", v);
  }
}
