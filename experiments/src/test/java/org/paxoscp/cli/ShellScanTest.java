package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;

/** The shell's {@code scan}, a session against an in-process cluster (real services, memory). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShellScanTest {
  private InProcessCluster cluster;
  private TxnClient client;
  private final StringWriter buffer = new StringWriter();
  private ShellCommand.Session session;

  @BeforeEach
  void start() {
    cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
    client = TxnClient.builder(cluster.config, "A", CommitProtocol.CP)
        .transport(cluster.network.transport("A")).build();
    session = new ShellCommand.Session(client, new PrintWriter(buffer, true));
  }

  @AfterEach
  void stop() {
    client.close();
    cluster.close();
  }

  /** Runs the lines; returns what they printed, line by line. */
  private List<String> run(String... lines) {
    buffer.getBuffer().setLength(0);
    for (String l : lines) {
      assertTrue(session.execute(l), l);
    }
    return buffer.toString().lines().toList();
  }

  private void seed() {
    run("begin g", "put order/1 one", "put order/2 two", "put order/3 three", "put orders x",
        "put other y", "commit");
  }

  @Test
  void aScanPrintsEachEntryAsGetDoesWithItsOwnWritesMergedIn() {
    seed();
    run("begin g", "put order/4 four", "delete order/2");
    assertEquals(List.of("order/1 = one", "order/3 = three", "order/4 = four"),
        run("scan order/ order/9"));
    assertEquals(run("get order/1").get(0), run("scan order/1 order/2").get(0));
    assertEquals(List.of("order/1 = one", "order/3 = three", "order/4 = four"),
        run("scan order/*"), "a prefix");
    assertEquals(List.of("order/1 = one", "order/3 = three",
        "(the limit of 2 stopped the scan: more keys follow order/3)"), run("scan order/* 2"));
    assertEquals(List.of("order/1 = one", "order/3 = three", "order/4 = four", "orders = x",
        "other = y"), run("scan *"), "the whole group");
    assertEquals(List.of("(no keys in the range)"), run("scan p q"));
    assertEquals(List.of("committed at position 2 (promotions 0)"), run("commit"));
  }

  @Test
  void badScansAreOneLineErrorsAndTheTransactionStaysOpen() {
    seed();
    List<String> out = run("scan a b", "begin g", "scan", "scan a", "scan a b c d",
        "scan a b many", "scan b a", "scan a b 0", "scan order/* 1", "status");
    assertEquals("error: no open transaction; begin <group> first", out.get(0));
    String usage = "error: usage: scan <from> <to> [limit] or scan <prefix>* [limit]";
    assertEquals(usage, out.get(2));
    assertEquals(usage, out.get(3));
    assertEquals(usage, out.get(4));
    assertTrue(out.get(5).startsWith(usage + " (the limit is a number"), out.get(5));
    assertTrue(out.get(6).startsWith("error: ") && out.get(6).contains("empty key range"),
        out.get(6));
    assertTrue(out.get(7).startsWith("error: ") && out.get(7).contains("limit"), out.get(7));
    assertEquals("order/1 = one", out.get(8));
    assertTrue(out.stream().anyMatch(l -> l.startsWith("transaction ") && l.contains(" on g,")),
        String.join("\n", out));
  }

  @Test
  void acrossGroupsTheBoundsNameTheirGroup() {
    seed();
    run("begin h", "put a 1", "commit");
    List<String> out = run("begin g,h", "scan g:order/* 2", "scan h:a h:b", "scan g:a h:b",
        "scan order/*", "commit");
    assertEquals(List.of("g:order/1 = one", "g:order/2 = two",
        "(the limit of 2 stopped the scan: more keys follow g:order/2)", "h:a = 1",
        "error: a scan reads one group: g:a and h:b name two"), out.subList(1, 6));
    assertTrue(out.get(6).startsWith("error: in a transaction across groups, name keys"),
        out.get(6));
    assertTrue(out.get(7).startsWith("committed (read-only"), out.get(7));
  }
}
