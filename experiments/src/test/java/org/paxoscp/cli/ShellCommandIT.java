package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.cli.CommandRun.Result;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;

/** {@code shell} driven by scripted input against a local 3-DC cluster (memory stores, UDP). */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ShellCommandIT {
  @TempDir
  static Path dir;

  private static LocalCluster cluster;
  private static Path config;

  @BeforeAll
  static void startCluster() {
    cluster = LocalCluster.start(new LocalCluster.Options(List.of("V1", "V2", "O"),
        LocalCluster.StoreKind.MEMORY, dir, ClusterConfig.Wan.off(), Duration.ofSeconds(1), 4),
        line -> { });
    config = dir.resolve("cluster.properties");
    cluster.writeConfig(config);
  }

  @AfterAll
  static void stopCluster() {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void settleWithoutAnUnknownOutcomeSaysSo() {
    Result r = CommandRun.shell(List.of("settle", "help"), "--config", config.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("error: no unknown outcome to settle\n"), r.out());
    assertTrue(r.out().contains("  settle               decide the last unknown outcome now"),
        r.out());
  }

  @Test
  void writeReadDeleteAndAbort() {
    Result r = CommandRun.shell(List.of(
        "begin accounts",
        "get alice",
        "put alice 100 euros",
        "put bob 5",
        "status",
        "commit",
        "begin accounts",
        "get alice",
        "delete bob",
        "commit",
        "begin accounts",
        "get bob",
        "put alice 0",
        "abort",
        "begin accounts",
        "get alice",
        "commit",
        "status"), "--config", config.toString());
    assertEquals(0, r.code(), r.err());
    List<String> out = r.out().lines().toList();
    assertEquals("Client of DC V1 (DCs [V1, V2, O], Paxos-CP). Type help for commands.",
        out.get(0));
    assertTrue(out.get(1).matches("began V1-\\S+ on accounts, reading at position 0"), r.out());
    assertEquals("alice: (no value)", out.get(2));
    assertEquals("ok, alice will be 100 euros once committed", out.get(3));
    assertTrue(r.out().contains("read position 0, 2 buffered writes\n  put alice = 100 euros\n"
        + "  put bob = 5\nsession positions: accounts=0\n"), r.out());
    assertTrue(r.out().contains("committed at position 1 (promotions 0)\n"
        + "began "), r.out());
    assertTrue(r.out().contains("on accounts, reading at position 1\nalice = 100 euros\n"
        + "ok, bob will be deleted once committed\ncommitted at position 2 (promotions 0)\n"),
        r.out());
    assertTrue(r.out().contains("on accounts, reading at position 2\nbob: (no value)\n"
        + "ok, alice will be 0 once committed\naborted; nothing was written\n"), r.out());
    assertTrue(r.out().contains("alice = 100 euros\ncommitted (read-only, at read position 2)\n"
        + "home DC V1, protocol Paxos-CP\nno open transaction\n"
        + "session positions: accounts=2\n"), r.out());
  }

  @Test
  void anotherDcReadsWhatWasCommitted() {
    Result w = CommandRun.shell(List.of("begin shared", "put greeting grüß dich", "commit"),
        "--config", config.toString(), "--dc", "V2", "--protocol", "basic");
    assertEquals(0, w.code(), w.err());
    assertTrue(w.out().contains("committed at position 1 (promotions 0)"), w.out());
    Result r = CommandRun.shell(List.of("begin shared", "get greeting", "quit"),
        "--config", config.toString(), "--dc", "O");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("greeting = grüß dich\n"), r.out());
    assertTrue(r.out().endsWith("the open transaction on shared was aborted\n"), r.out());
  }

  @Test
  void aTransactionAcrossGroups() {
    Result w = CommandRun.shell(List.of("begin xa,xb", "put alice 1", "put xa:alice 90",
        "put xb:bob 110", "put xc:carol 1", "status", "commit"),
        "--config", config.toString(), "--dc", "V1", "--protocol", "leader");
    assertEquals(0, w.code(), w.err());
    assertTrue(w.out().contains("(coordinator xa); keys are <group>:<key>"), w.out());
    assertTrue(w.out().contains("error: in a transaction across groups, name keys "
        + "<group>:<key>, e.g. xa:alice"), w.out());
    assertTrue(w.out().contains("error: group xc is not one of this transaction's [xa, xb]"),
        w.out());
    assertTrue(w.out().contains("  put xa:alice = 90\n  put xb:bob = 110\n"), w.out());
    assertTrue(w.out().contains("committed across [xa, xb] (at position 1 of xa)"),
        w.out());
    Result r = CommandRun.shell(List.of("begin xb", "get bob", "commit", "begin xa,xb",
        "get xa:alice", "get xb:bob", "commit"), "--config", config.toString(), "--dc", "O");
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().contains("bob = 110\n"), r.out());
    assertTrue(r.out().contains("xa:alice = 90\nxb:bob = 110\n"
        + "committed (read-only across 2 groups, validated)\n"), r.out());
  }
}
