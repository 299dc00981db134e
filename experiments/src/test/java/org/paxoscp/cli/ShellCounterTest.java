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

/**
 * The shell's {@code add}, {@code sadd} and {@code srem}, and how {@code get} and {@code scan}
 * show counters and counting sets: a session against an in-process cluster.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShellCounterTest {
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

  @Test
  void countersAndSetsAreUpdatedAndShownByGetAndScan() {
    assertEquals(List.of("ok, 5 will be added to counter hits once committed",
        "ok, -2 will be added to counter hits once committed",
        "ok, one count more of red wine in set tags once committed",
        "ok, one count more of blue in set tags once committed",
        "ok, one count more of blue in set tags once committed",
        "ok, one count less of red wine in set tags once committed",
        "hits = 3", "tags = {blue}"),
        run("begin g", "add hits 5", "add hits -2", "sadd tags red wine", "sadd tags blue",
            "sadd tags blue", "srem tags red wine", "get hits", "get tags").subList(1, 9));
    List<String> status = run("put name ann", "status");
    assertTrue(status.containsAll(List.of("  add hits 5, add hits -2",
        "  sadd tags red wine, sadd tags blue, sadd tags blue, srem tags red wine",
        "  put name = ann")), String.join("\n", status));
    assertEquals(List.of("committed at position 1 (promotions 0)"), run("commit"));

    List<String> out = run("begin g", "get hits", "get tags", "get name", "scan *",
        "srem tags blue", "get tags", "commit");
    assertEquals(List.of("hits = 3", "tags = {blue}", "name = ann", "hits = 3", "name = ann",
        "tags = {blue}"), out.subList(1, 7));
    assertEquals("tags = {blue}", out.get(8), "counted twice, removed once: still present");
  }

  @Test
  void aCountingSetKeepsAnElementAddedMoreOftenThanRemoved() {
    run("begin g", "sadd s x", "sadd s x", "commit");
    List<String> out = run("begin g", "srem s x", "get s", "commit", "begin g", "get s",
        "srem s x", "get s", "commit");
    assertEquals("s = {x}", out.get(2));
    assertEquals("s = {x}", out.get(5));
    assertEquals("s = {}", out.get(7));
  }

  @Test
  void badUpdatesAreOneLineErrorsAndARefusedCommitSaysItHadNoEffect() {
    run("begin g", "put name ann", "put big 9223372036854775807", "commit");
    List<String> out = run("begin g", "add", "add hits", "add hits many", "sadd tags",
        "put n abc", "add n 1", "sadd hits x", "status");
    assertEquals("error: usage: add <key> <delta>", out.get(1));
    assertEquals("error: usage: add <key> <delta>", out.get(2));
    assertEquals("error: usage: add <key> <delta> (the delta is a whole number, not many)",
        out.get(3));
    assertEquals("error: usage: sadd <key> <element>", out.get(4));
    assertTrue(out.get(6).startsWith("error: ") && out.get(6).contains("not a counter"),
        out.get(6));
    assertTrue(out.get(7).startsWith("ok, "), "an update of a key never written: "
        + out.get(7));
    assertTrue(out.stream().anyMatch(l -> l.startsWith("transaction ") && l.contains(" on g,")),
        "the transaction stays open: " + String.join("\n", out));
    run("abort");

    out = run("begin g", "add big 1", "commit", "status");
    assertTrue(out.get(2).startsWith("refused: big: ") && out.get(2).contains("64-bit range")
        && out.get(2).endsWith("but has no effect; nothing was written"), out.get(2));
    assertEquals("no open transaction", out.get(4));
    assertEquals(List.of("big = 9223372036854775807", "name = ann"),
        run("begin g", "get big", "get name", "abort").subList(1, 3));
  }

  @Test
  void acrossGroupsTheKeysNameTheirGroup() {
    List<String> out = run("begin g,h", "add g:hits 2", "sadd h:tags x", "add hits 1",
        "commit");
    assertTrue(out.get(3).startsWith("error: in a transaction across groups, name keys"),
        out.get(3));
    assertTrue(out.get(4).startsWith("committed across [g, h]"), out.get(4));
    assertEquals(List.of("g:hits = 2", "h:tags = {x}"),
        run("begin g,h", "get g:hits", "get h:tags", "commit").subList(1, 3));
  }
}
