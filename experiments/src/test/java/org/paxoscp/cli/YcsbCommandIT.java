package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Latency;

/**
 * {@code paxoscp ycsb} against a local three-DC cluster on embedded HBase and UDP: YCSB's own
 * client, in a JVM of its own, runs this module's workloads through the binding. The cluster
 * starts once; each test uses groups of its own.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class YcsbCommandIT {
  private static final Path WORKLOADS = Path.of("..", "ycsb-ext", "workloads");
  private static Path dataDir;
  private static LocalCluster cluster;
  private static Path config;

  @BeforeAll
  static void startCluster() throws IOException {
    dataDir = Files.createTempDirectory("paxoscp-ycsb-it-");
    ClusterConfig.Wan wan = new ClusterConfig.Wan(false, Latency.paperRegions(), 0, 0.1, 0, 0,
        Set.of());
    cluster = LocalCluster.start(new LocalCluster.Options(List.of("V1", "V2", "V3"),
        LocalCluster.StoreKind.HBASE, dataDir, wan, Duration.ofSeconds(1), 8),
        line -> System.out.println("[cluster] " + line));
    config = dataDir.resolve("cluster.properties");
    cluster.writeConfig(config);
  }

  @AfterAll
  static void stopCluster() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
    if (dataDir != null) {
      try (Stream<Path> s = Files.walk(dataDir)) {
        s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static CommandRun.Result ycsb(String... args) {
    List<String> all = new ArrayList<>(List.of(args));
    all.add(1, "--config");
    all.add(2, config.toString());
    CommandRun.Result r = CommandRun.run(new YcsbCommand(), all.toArray(String[]::new));
    System.out.println(r.out());
    System.err.println(r.err());
    return r;
  }

  private static long count(String out, String line) {
    Matcher m = Pattern.compile(Pattern.quote(line) + ", (\\d+)").matcher(out);
    assertTrue(m.find(), "no '" + line + "' in the output");
    return Long.parseLong(m.group(1));
  }

  private static CommandRun.Result closedEconomy(String prefix, String protocol, String db) {
    return closedEconomy("closedeconomy", prefix, protocol, db);
  }

  private static CommandRun.Result closedEconomy(String workload, String prefix, String protocol,
      String db) {
    String[] common = {"-P", WORKLOADS.resolve(workload).toString(),
        "-p", "ce.groupprefix=" + prefix, "-p", "ce.groups=2", "-p", "recordcount=2",
        "-p", "ce.accounts=5", "-p", "paxoscp.protocol=" + protocol, "--db", db};
    CommandRun.Result load = ycsb(concat(new String[] {"load"}, common));
    assertEquals(0, load.code(), "load: " + load.err());
    return ycsb(concat(new String[] {"run", "-threads", "4", "-p", "operationcount=60"},
        common));
  }

  private static String[] concat(String[] a, String[] b) {
    String[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }

  @Test
  void closedEconomyValidatesInEveryCommitMode() {
    for (CommitProtocol mode : CommitProtocol.values()) {
      String name = mode.name().toLowerCase(Locale.ROOT);
      CommandRun.Result r = closedEconomy("ce-" + name, name, "org.paxoscp.ycsb.PaxosCpDB");
      assertEquals(0, r.code(), name + ": " + r.err());
      assertTrue(r.out().contains("[VALIDATION], Result, OK"), name);
      assertTrue(r.out().contains("[VALIDATION], AnomalyScore, 0.0"), name);
      for (String dc : List.of("V1", "V2", "V3")) {
        assertEquals(2 * 5 * 1000, count(r.out(), "[VALIDATION], DC " + dc + " counted total"));
      }
      assertTrue(count(r.out(), "[TRANSACTIONS], Committed") > 0, name + " committed nothing");
    }
  }

  @Test
  void closedEconomyAcrossGroupsValidatesInEveryCommitMode() {
    for (CommitProtocol mode : CommitProtocol.values()) {
      String name = mode.name().toLowerCase(Locale.ROOT);
      CommandRun.Result r = closedEconomy("closedeconomy-xg", "xg-" + name, name,
          "org.paxoscp.ycsb.PaxosCpDB");
      // Basic Paxos has no promotion for a DECIDE, so under this contention a run of 60
      // operations may commit no transfer across groups at all (more often the slower the
      // machine, as more of them overlap); up to six more runs, on fresh groups, before
      // concluding that the mode cannot.
      for (int again = 1; again <= 6 && r.code() == 0
          && count(r.out(), "[TRANSACTIONS], Committed across groups") == 0; again++) {
        r = closedEconomy("closedeconomy-xg", "xg-" + name + "-" + again, name,
            "org.paxoscp.ycsb.PaxosCpDB");
      }
      assertEquals(0, r.code(), name + ": " + r.err());
      assertTrue(r.out().contains("[VALIDATION], Result, OK"), name);
      for (String dc : List.of("V1", "V2", "V3")) {
        assertEquals(2 * 5 * 1000, count(r.out(), "[VALIDATION], DC " + dc + " counted total"));
      }
      assertTrue(count(r.out(), "[TRANSACTIONS], Committed") > 0, name + " committed nothing");
      assertTrue(count(r.out(), "[TRANSACTIONS], Committed across groups") > 0,
          name + " committed no transfer across groups");
      assertFalse(r.err().contains("audit of every group"), name + ": " + r.err());
    }
  }

  @Test
  void aBindingThatLosesOneUpdateAcrossGroupsFailsTheValidation() {
    CommandRun.Result r = closedEconomy("closedeconomy-xg", "xg-lossy", "cp",
        "org.paxoscp.ycsb.LossyPaxosCpDB");
    assertEquals(1, r.code(), "the lost update must fail the run");
    assertTrue(r.out().contains("[VALIDATION], Result, FAILED"));
    assertTrue(Pattern.compile("every group at DC V\\d totals \\d+, expected 10000")
        .matcher(r.err()).find(), r.err());
  }

  @Test
  void aBindingThatLosesOneUpdateFailsTheValidation() {
    CommandRun.Result r = closedEconomy("ce-lossy", "cp", "org.paxoscp.ycsb.LossyPaxosCpDB");
    assertEquals(1, r.code(), "the lost update must fail the run");
    assertTrue(r.out().contains("[VALIDATION], Result, FAILED"));
    assertTrue(r.err().contains("failed its validation"), r.err());
    // The message names the group, the DC and the totals.
    assertTrue(Pattern.compile("group ce-lossy-\\d at DC V\\d totals \\d+, expected 5000")
        .matcher(r.err()).find(), r.err());
  }

  @Test
  void attributeWorkloadReportsCommitsAbortsAndPromotionRounds() {
    CommandRun.Result r = ycsb("run", "-P", WORKLOADS.resolve("smoke").toString(),
        "-p", "attr.groupprefix=smoke", "-p", "paxoscp.protocol=cp", "-threads", "4");
    assertEquals(0, r.code(), r.err());
    long committed = count(r.out(), "[TRANSACTIONS], Committed");
    long aborted = count(r.out(), "[TRANSACTIONS], Aborted");
    long unknown = count(r.out(), "[TRANSACTIONS], Unknown");
    long readOnly = count(r.out(), "[TRANSACTIONS], Committed read-only");
    long unavailable = count(r.out(), "[TRANSACTIONS], Unavailable");
    assertEquals(40, committed + aborted + unknown + readOnly + unavailable,
        "every transaction has one outcome");
    assertTrue(committed > 0);
    long byRound = 0;
    Matcher m = Pattern.compile("\\[TRANSACTIONS\\], Committed after \\d+ promotions, (\\d+)")
        .matcher(r.out());
    while (m.find()) {
      byRound += Long.parseLong(m.group(1));
    }
    assertEquals(committed, byRound, "commits by promotion round add up");
    assertTrue(r.out().contains("[COMMIT-R0], Operations"), "YCSB's own measurement lines");
    assertTrue(r.out().contains("[READ], Operations"));
    assertTrue(r.out().contains("[OVERALL], Throughput(ops/sec)"));
  }

  @Test
  void coreWorkloadARunsEachOperationAsATransaction() {
    String[] common = {"-P", WORKLOADS.resolve("corea").toString(), "-p", "table=core",
        "-p", "recordcount=20", "-p", "operationcount=60", "-threads", "2"};
    CommandRun.Result load = ycsb(concat(new String[] {"load"}, common));
    assertEquals(0, load.code(), load.err());
    assertEquals(20, count(load.out(), "[INSERT], Return=OK"));
    CommandRun.Result run = ycsb(concat(new String[] {"run"}, common));
    assertEquals(0, run.code(), run.err());
    assertTrue(count(run.out(), "[READ], Return=OK") > 0, "reads of loaded records succeed");
    assertTrue(run.out().contains("[UPDATE], Operations"));
  }

  @Test
  void badConfigurationAndPhaseAreUsageErrors() {
    CommandRun.Result r = CommandRun.run(new YcsbCommand(), "walk", "--config",
        config.toString());
    assertEquals(2, r.code());
    assertTrue(r.err().contains("load or run"), r.err());
    r = CommandRun.run(new YcsbCommand(), "run", "--config", "/no/such/file");
    assertEquals(2, r.code());
    assertTrue(r.err().contains("bad configuration"), r.err());
  }
}
