package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.cli.CommandRun.Result;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.testing.Poll;

/**
 * {@code cluster} (memory stores, no WAN) runs until stopped, and a shell connects with the
 * command it prints; {@code service} runs a one-DC cluster from a properties file.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClusterCommandIT {
  @TempDir
  Path dir;

  @Test
  void clusterPrintsHowToConnectAndStopsCleanly() throws Exception {
    ClusterCommand command = new ClusterCommand();
    CommandRun run = CommandRun.background(command, "--store", "memory", "--no-wan",
        "--dcs", "V1,V2,V3", "--dir", dir.toString(), "--request-timeout-ms", "1000");
    Poll.until("the cluster to start", Duration.ofSeconds(60),
        () -> command.running() || run.exit().isDone());
    try {
      assertTrue(command.running(), run.err());
      Path config = dir.resolve("cluster.properties");
      assertTrue(Files.isRegularFile(config));
      assertEquals("rw-------", PosixFilePermissions.toString(
          Files.getPosixFilePermissions(config)), "it holds the key: owner-only");
      String connect = "./paxoscp shell --config " + config + " --dc V1";
      assertTrue(run.out().contains("Connect with:\n  " + connect + "\n"), run.out());
      assertTrue(run.out().matches("(?s).*  DC V3  udp 127\\.0\\.0\\.1:\\d+\n.*"), run.out());
      assertTrue(run.out().contains("ZooKeeper (discovery): 127.0.0.1:"), run.out());
      assertTrue(run.out().contains("./paxoscp status --config " + config), run.out());

      assertAShellCommitsAndReadsBack(config, "V3");
      assertMetricsServed(run.out(), "V3", "127\\.0\\.0\\.1");
    } finally {
      command.stop();
    }
    assertEquals(0, run.exit().get(30, TimeUnit.SECONDS), run.err());
    assertTrue(run.out().endsWith("cluster: stopping ...\ncluster: stopped\n"), run.out());
  }

  /**
   * {@code --regionservers 2}: HBase as a master and two region server processes under
   * {@code <dir>/hbase-servers}; a shell commits through them, and stopping the cluster stops
   * every HBase process.
   */
  @Test
  @Timeout(value = 10, unit = TimeUnit.MINUTES) // three HBase JVMs start on a loaded machine
  void clusterWithRegionServersRunsHBaseAsProcessesAndStopsThem() throws Exception {
    ClusterCommand command = new ClusterCommand();
    CommandRun run = CommandRun.background(command, "--regionservers", "2", "--no-wan",
        "--dir", dir.toString(), "--request-timeout-ms", "2000", "--no-metrics-http");
    Path hbaseDir = org.paxoscp.local.LocalCluster.hbaseServersDir(dir);
    List<Long> pids = new java.util.ArrayList<>();
    try {
      Poll.until("the cluster to start", Duration.ofSeconds(240),
          () -> command.running() || run.exit().isDone());
      assertTrue(command.running(), run.err() + run.out());
      assertTrue(run.out().contains("store hbase (2 region servers)"), run.out());
      StandaloneHBase.Status hbase = StandaloneHBase.status(hbaseDir);
      assertTrue(hbase.running(), hbase.detail());
      pids.add(hbase.pid().getAsLong());
      List<StandaloneHBase.RegionServer> servers = StandaloneHBase.regionServers(hbaseDir);
      assertEquals(2, servers.size(), servers.toString());
      for (StandaloneHBase.RegionServer rs : servers) {
        assertTrue(rs.pid().isPresent(), "region server " + rs.index() + " runs");
        pids.add(rs.pid().getAsLong());
      }
      // The DCs' stores are on these processes: the configuration names their ZooKeeper, and
      // no embedded HBase was started beside them.
      String config = Files.readString(dir.resolve("cluster.properties"));
      assertTrue(config.contains("paxoscp.dc.V2.hbase.zk.port=" + hbase.zkPort() + "\n"),
          config);
      assertFalse(Files.exists(dir.resolve("hbase")), "no embedded HBase's directory");
      assertTrue(config.contains("paxoscp.discovery.path=/paxoscp-run-"), config);
      assertAShellCommitsAndReadsBack(dir.resolve("cluster.properties"), "V2");
    } finally {
      command.stop();
      if (!command.running()) {
        // The start failed or took too long: let it end (it gives up within 240 s), then
        // nothing may outlive the test.
        try {
          run.exit().get(250, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
          // Stopped below in any case.
        }
        command.stop();
        StandaloneHBase.stop(hbaseDir);
      }
    }
    assertEquals(0, run.exit().get(90, TimeUnit.SECONDS), run.err());
    for (long pid : pids) {
      assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false),
          "HBase process " + pid + " stopped with the cluster");
    }
  }

  /** {@code --netns}: each DC's service in its own namespace; a shell on this host commits. */
  @Test
  void clusterInNetworkNamespacesServesAShellOnThisHost() throws Exception {
    String why = org.paxoscp.nemesis.NamespaceCluster.unavailableReason();
    org.junit.jupiter.api.Assumptions.assumeTrue(why == null, "--netns skipped: " + why);
    ClusterCommand command = new ClusterCommand();
    CommandRun run = CommandRun.background(command, "--netns", "--store", "memory", "--no-wan",
        "--dcs", "V1,V2,O", "--dir", dir.toString(), "--request-timeout-ms", "1000");
    Poll.until("the cluster to start", Duration.ofSeconds(90),
        () -> command.running() || run.exit().isDone());
    try {
      assertTrue(command.running(), run.err());
      assertTrue(run.out().contains("each DC on an address of its own"), run.out());
      assertTrue(run.out().matches("(?s).*  DC O   udp 10\\.\\d+\\.\\d+\\.12:7101\n.*"),
          run.out());
      assertAShellCommitsAndReadsBack(dir.resolve("cluster.properties"), "O");
      assertMetricsServed(run.out(), "O", "10\\.\\d+\\.\\d+\\.12");
    } finally {
      command.stop();
    }
    assertEquals(0, run.exit().get(30, TimeUnit.SECONDS), run.err());
  }

  /**
   * The cluster printed DC {@code dc}'s /metrics URL on {@code host}, and a GET there from this
   * host returns its meters, with the shell's commit among the entries it applied.
   */
  private static void assertMetricsServed(String out, String dc, String host) throws Exception {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("metrics of DC " + dc
        + " +(http://" + host + ":\\d+/metrics)\n").matcher(out);
    assertTrue(m.find(), out);
    var response = java.net.http.HttpClient.newHttpClient().send(
        java.net.http.HttpRequest.newBuilder(java.net.URI.create(m.group(1)))
            .timeout(Duration.ofSeconds(5)).build(),
        java.net.http.HttpResponse.BodyHandlers.ofString());
    assertEquals(200, response.statusCode());
    assertTrue(response.body().matches("(?s).*\npaxoscp_service_recorded_entries_total\\{dc=\""
        + dc + "\"} [1-9].*"), response.body());
  }

  /** The shell, homed at {@code dc}, commits a first write to a fresh group and reads it back. */
  private static void assertAShellCommitsAndReadsBack(Path config, String dc) {
    Result shell = CommandRun.shell(List.of("begin g", "put k v", "commit", "begin g", "get k"),
        "--config", config.toString(), "--dc", dc);
    assertEquals(0, shell.code(), shell.err());
    assertTrue(shell.out().contains("committed at position 1 (promotions 0)\n"), shell.out());
    assertTrue(shell.out().contains("k = v\n"), shell.out());
  }

  @Test
  void clusterRejectsBadOptions() {
    assertUsageError("--store must be hbase or memory", "--store", "disk");
    assertUsageError("--rtt expects A:B=MS", "--rtt", "V1-O=80");
    assertUsageError("add --store memory", "--netns");
    assertUsageError("--regionservers 2 needs the HBase store", "--regionservers", "2",
        "--store", "memory");
    assertUsageError("--regionservers must be in 1..16, was 0", "--regionservers", "0");
    assertUsageError("--regionservers is for the HBase store", "--regionservers", "3", "--netns",
        "--store", "memory");
  }

  /** `cluster ARGS --dir <dir>` exits 2 (usage) and says {@code expected}. */
  private void assertUsageError(String expected, String... args) {
    List<String> all = new java.util.ArrayList<>(List.of(args));
    all.addAll(List.of("--dir", dir.toString()));
    Result r = CommandRun.run(new ClusterCommand(), all.toArray(String[]::new));
    assertEquals(2, r.code(), String.join(" ", args) + ": " + r.err());
    assertTrue(r.err().contains(expected), r.err());
  }

  @Test
  void serviceServesAOneDcClusterUntilStopped() throws Exception {
    Path file = CommandRun.write(dir.resolve("v1.properties"), new java.util.LinkedHashMap<>(
        java.util.Map.of(
            "paxoscp.dcs", "V1",
            "paxoscp.key", CommandRun.key(),
            "paxoscp.dc.V1.endpoints", "127.0.0.1:" + CommandRun.freeUdpPort(),
            "paxoscp.service.dc", "V1",
            "paxoscp.service.store", "memory",
            "paxoscp.service.threads", "2")));
    ServiceCommand command = new ServiceCommand();
    CommandRun run = CommandRun.background(command, "--config", file.toString(),
        "--new-cluster");
    Poll.until("the service to start", Duration.ofSeconds(30),
        () -> run.out().contains("serving") || run.exit().isDone());
    try {
      assertTrue(run.out().startsWith("service: DC V1 serving on udp 127.0.0.1:"), run.out()
          + run.err());
      Result shell = CommandRun.shell(List.of("begin g", "put k v", "commit", "begin g",
          "get k"), "--config", file.toString());
      assertEquals(0, shell.code(), shell.err());
      assertTrue(shell.out().contains("committed at position 1 (promotions 0)\n"), shell.out());
      assertTrue(shell.out().contains("k = v\n"), shell.out());
    } finally {
      command.stop();
    }
    assertEquals(0, run.exit().get(30, TimeUnit.SECONDS), run.err());
    assertTrue(run.out().endsWith("service: DC V1 stopped\n"), run.out());
  }
}
