package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.cli.CommandRun.Result;

/** {@code shell} without a running cluster: option errors, usage errors, an unavailable DC. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShellCommandTest {
  @TempDir
  Path dir;

  /** Two DCs whose endpoints nobody listens on. */
  private Path config() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("paxoscp.dcs", "V1,V2");
    p.put("paxoscp.key", CommandRun.key());
    p.put("paxoscp.request.timeout.ms", "100");
    p.put("paxoscp.dc.V1.endpoints", "127.0.0.1:" + CommandRun.freeUdpPort());
    p.put("paxoscp.dc.V2.endpoints", "127.0.0.1:" + CommandRun.freeUdpPort());
    return CommandRun.write(dir.resolve("cluster.properties"), p);
  }

  @Test
  void badOptionsAndConfigurationAreExit2() {
    String file = config().toString();
    Result noFile = CommandRun.shell(List.of(), "--config", dir.resolve("nope").toString());
    assertEquals(2, noFile.code());
    assertTrue(noFile.err().contains("no such file"), noFile.err());

    Result badDc = CommandRun.shell(List.of(), "--config", file, "--dc", "O");
    assertEquals(2, badDc.code());
    assertTrue(badDc.err().contains("--dc O"), badDc.err());

    Result badProtocol = CommandRun.shell(List.of(), "--config", file, "--protocol", "raft");
    assertEquals(2, badProtocol.code());
    assertTrue(badProtocol.err().contains("--protocol"), badProtocol.err());

    Path noKey = CommandRun.write(dir.resolve("nokey.properties"), Map.of("paxoscp.dcs", "V1"));
    Result missing = CommandRun.shell(List.of(), "--config", noKey.toString());
    assertEquals(2, missing.code());
    assertTrue(missing.err().contains("paxoscp.key"), missing.err());
  }

  @Test
  void everyFailureIsOneLineAndTheShellGoesOn() {
    Result r = CommandRun.shell(List.of("get x", "frobnicate", "put x", "commit", "begin",
        "begin g", "status", "help", "exit", "begin never-reached"),
        "--config", config().toString(), "--dc", "V2", "--protocol", "basic");
    assertEquals(0, r.code(), r.err());
    String out = r.out();
    assertTrue(out.startsWith("Client of DC V2 (DCs [V1, V2], basic Paxos)"), out);
    assertTrue(out.contains("error: no open transaction; begin <group> first"), out);
    assertTrue(out.contains("error: unknown command 'frobnicate'; type help"), out);
    assertTrue(out.contains("error: usage: put <key> <value>"), out);
    assertTrue(out.contains("error: usage: begin <group>"), out);
    assertTrue(out.lines().anyMatch(l -> l.startsWith("unavailable: ")
        && l.endsWith("nothing was written; try again later")), out);
    assertTrue(out.contains("home DC V2, protocol basic Paxos"), out);
    assertTrue(out.contains("no open transaction"), out);
    assertTrue(out.contains("session positions: g=0"), out);
    assertTrue(out.contains("put <key> <value>"), out);
    assertTrue(out.contains("scan <from> <to> [n]") && out.contains("scan <prefix>* [n]"), out);
    assertFalse(out.contains("never-reached"), out);
    assertFalse(out.contains("Exception"), out);
  }
}
