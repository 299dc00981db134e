package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.HBaseSchema;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;

/**
 * {@code paxoscp dc rebuild} on three DCs over embedded HBase (docs/architecture.md section 12): a
 * DC that was away while its peers collected past it, and a DC whose tables were emptied, are
 * rebuilt with the command while the others serve, and then read what the others read at every
 * position above their GC watermark.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DcRebuildIT {
  private static final List<String> DCS = List.of("V1", "V2", "V3");
  private static final List<String> KEYS = List.of("k0", "k1", "k2", "k3", "k4", "k5", "k6",
      "k7");
  private static Path dataDir;
  private static Path configFile;
  private static LocalCluster cluster;

  @BeforeAll
  static void start() throws IOException {
    dataDir = Files.createTempDirectory("paxoscp-rebuild-it-");
    configFile = dataDir.resolve("cluster.properties");
    ClusterConfig.Wan noWan = new ClusterConfig.Wan(false, org.paxoscp.transport.Latency
        .paperRegions(), 0, 0, 0, 0, Set.of());
    // Collect often and keep little, and stop waiting for a silent DC after 20 positions.
    cluster = LocalCluster.start(new LocalCluster.Options(DCS, LocalCluster.StoreKind.HBASE,
        dataDir, noWan, Duration.ofSeconds(1), 4), line -> System.out.println("[cluster] " + line),
        Map.of("paxoscp.service.gc.retention.positions", "10",
            "paxoscp.service.gc.every.positions", "1",
            "paxoscp.service.gc.max.lag.positions", "20"));
    cluster.writeConfig(configFile);
  }

  @AfterAll
  static void stop() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
    if (dataDir != null) {
      try (Stream<Path> s = Files.walk(dataDir)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  /** Whatever a test stopped, the next one finds every service running. */
  @AfterEach
  void restartStopped() {
    for (String dc : DCS) {
      if (!cluster.isRunning(dc)) {
        cluster.startService(dc);
      }
    }
  }

  private static void commitMany(String group, String home, int n) {
    try (TxnClient client = cluster.client(home, CommitProtocol.CP)) {
      for (int i = 0; i < n; i++) {
        int at = i;
        client.runInTransaction(group, t -> {
          t.put(KEYS.get(at % KEYS.size()), "v" + at);
          return null;
        });
      }
    }
  }

  private static long gcWatermark(String dc, String group) {
    return LogCollector.gcWatermark(cluster.store(dc), group);
  }

  private static Message ask(UdpTransport t, String dc, Message m) {
    return t.request(dc, m, Duration.ofSeconds(5)).join();
  }

  /**
   * The rebuilt DC's reads equal V1's at every position from {@code from} to V1's head, at
   * least {@code atLeast} of them.
   */
  private static void assertSameReadsAbove(String rebuilt, String group, long from,
      int atLeast) {
    try (UdpTransport t = UdpTransport.builder(cluster.config(), "V1").build()) {
      long head = ((Message.BeginReply) ask(t, "V1", new Message.BeginRequest(group, 0)))
          .position();
      Message b = ask(t, rebuilt, new Message.BeginRequest(group, head));
      assertEquals(head, ((Message.BeginReply) b).position(), rebuilt + " caught up: " + b);
      int compared = 0;
      // (Both keep collecting: positions at or below a watermark are refused TOO_OLD.)
      long start = Math.max(from, Math.max(gcWatermark(rebuilt, group), gcWatermark("V1", group))
          + 1);
      for (long p = start; p <= head; p++) {
        Message.ReadReply here = (Message.ReadReply) ask(t, rebuilt,
            new Message.ReadRequest(group, p, KEYS));
        Message.ReadReply there = (Message.ReadReply) ask(t, "V1",
            new Message.ReadRequest(group, p, KEYS));
        assertEquals(there, here, "reads at position " + p);
        compared++;
      }
      System.out.printf("%s reads equal V1's at positions %d..%d (%d positions)%n", rebuilt,
          start, head, compared);
      assertTrue(compared >= atLeast, "compared " + compared);
    }
  }

  @Test
  void aDcBackFromALongOutageIsRebuiltWithTheCommand() {
    String group = "outage";
    commitMany(group, "V1", 5);
    cluster.stopService("V3");
    commitMany(group, "V1", 60);
    // A GC round runs after an apply and waits for V3 up to the request timeout; a few more
    // commits while the rounds that go on without V3 finish.
    org.paxoscp.testing.Poll.until("the peers to collect past V3", Duration.ofSeconds(30),
        () -> {
          commitMany(group, "V1", 1);
          return gcWatermark("V1", group) > 20;
        });
    cluster.startService("V3");

    CommandRun.Result r = CommandRun.run(new DcCommand(), "rebuild", "--config",
        configFile.toString(), "--dc", "V3", "--groups", group);
    System.out.println("$ paxoscp dc rebuild --dc V3 --groups " + group + "\n" + r.out()
        + r.err());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("REBUILT=1"), r.out());
    long watermark = gcWatermark("V3", group);
    assertSameReadsAbove("V3", group, watermark + 1, 1);
    commitMany(group, "V3", 5);
    assertSameReadsAbove("V3", group, watermark + 1, 6);
  }

  @Test
  void aDcWhoseTablesWereEmptiedIsRebuiltWithTheCommand() {
    List<String> groups = new ArrayList<>();
    for (int g = 0; g < 5; g++) {
      groups.add("wiped-" + g);
      commitMany("wiped-" + g, g % 2 == 0 ? "V1" : "V3", 12);
    }
    cluster.stopService("V2");
    HBaseSchema.truncate(((HBaseKvStore) cluster.store("V2")).config());
    assertTrue(StoreMarker.read(cluster.store("V2")).isEmpty(), "the marker went too");
    cluster.startService("V2");

    try (UdpTransport t = UdpTransport.builder(cluster.config(), "V1").build()) {
      Message refused = ask(t, "V2", new Message.BeginRequest("wiped-0", 0));
      assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) refused).code(),
          refused.toString());
    }
    // Clients homed at V2 fail over and commit meanwhile.
    commitMany("wiped-1", "V2", 3);
    CommandRun.Result status = CommandRun.run(new StatusCommand(), "--config",
        configFile.toString(), "--interval", "200");
    System.out.println("$ paxoscp status\n" + status.out());
    assertTrue(status.out().matches("(?s).*\\nV2 +\\S+ +rebuild .*"), status.out());
    assertTrue(status.out().contains("DC V2 (") && status.out().contains("store lost"),
        status.out());

    CommandRun.Result r = CommandRun.run(new DcCommand(), "rebuild", "--config",
        configFile.toString(), "--dc", "V2", "--all");
    System.out.println("$ paxoscp dc rebuild --dc V2 --all\n" + r.out() + r.err());
    assertEquals(0, r.code(), r.err());
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("REBUILT=(\\d+)")
        .matcher(r.out());
    assertTrue(m.find() && Integer.parseInt(m.group(1)) >= groups.size(), r.out());
    assertTrue(r.out().contains("DC V2 rebuilt"), r.out());
    assertEquals(StoreMarker.State.SERVING,
        StoreMarker.read(cluster.store("V2")).orElseThrow().state());
    CommandRun.Result after = CommandRun.run(new StatusCommand(), "--config",
        configFile.toString(), "--interval", "200");
    assertTrue(after.out().matches("(?s).*\\nV2 +\\S+ +up .*"), after.out());
    for (String g : groups) {
      assertSameReadsAbove("V2", g, gcWatermark("V2", g) + 1, 1);
    }
    CommandRun.Result again = CommandRun.run(new DcCommand(), "rebuild", "--config",
        configFile.toString(), "--dc", "V2", "--groups", "wiped-0");
    assertEquals(0, again.code(), again.err());
    assertTrue(again.out().contains("NOT_BEHIND=1"), "a second run finds nothing to do: "
        + again.out());
    long watermark = gcWatermark("V2", "wiped-0");
    commitMany("wiped-0", "V2", 5);
    assertSameReadsAbove("V2", "wiped-0", watermark + 1, 6);
  }
}
