package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Command-line parsing of {@code hbase}, and status/stop on a directory with no server. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HBaseCommandTest {
  @TempDir
  Path dir;

  private record Run(int code, String out, String err) {}

  private static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = new CommandLine(new HBaseCommand());
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int code = cl.execute(args);
    return new Run(code, out.toString(), err.toString());
  }

  @Test
  void statusOfAnEmptyDirectoryIsNotRunning() {
    Run r = run("status", "--dir", dir.toString());
    assertEquals(HBaseCommand.EXIT_NOT_RUNNING, r.code(), r.err());
    assertTrue(r.out().startsWith("HBase not running"), r.out());
    assertTrue(r.out().contains(dir.toAbsolutePath().toString()), r.out());
  }

  @Test
  void optionsMayComeBeforeOrAfterTheSubcommand() {
    Run before = run("--dir", dir.toString(), "status");
    assertEquals(HBaseCommand.EXIT_NOT_RUNNING, before.code(), before.err());
    assertTrue(before.out().contains(dir.toAbsolutePath().toString()), before.out());
  }

  @Test
  void stopWithoutServerIsANoOp() {
    Run r = run("stop", "--dir", dir.toString());
    assertEquals(0, r.code(), r.err());
    assertTrue(r.out().startsWith("HBase was not running"), r.out());
  }

  @Test
  void defaultsAndUsage() {
    HBaseCommand c = new HBaseCommand();
    new CommandLine(c).parseArgs();
    assertEquals(Path.of("./paxoscp-data/hbase"), c.dir);
    assertEquals(2181, c.zkPort);
    Run none = run();
    assertEquals(2, none.code());
    assertTrue(none.out().contains("start") && none.out().contains("status"), none.out());
    Run bad = run("start", "--zk-port", "notaport");
    assertEquals(2, bad.code());
  }
}
