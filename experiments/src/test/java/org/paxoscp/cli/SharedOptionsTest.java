package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.nemesis.NemesisCommand;
import picocli.CommandLine;

/**
 * The shared option mixins: each command keeps its own default, a value given replaces it (a
 * list is not appended to the default), and the help shows the command's default.
 */
class SharedOptionsTest {

  @Test
  void eachCommandKeepsItsOwnDefaults() {
    DemoCommand demo = parse(new DemoCommand());
    assertEquals(List.of("V1", "V2", "V3"), demo.dcList.dcs());
    assertEquals(LocalCluster.StoreKind.HBASE, demo.storeOption.kind());
    assertEquals(Path.of("./paxoscp-data/demo"), demo.outOption.dir());
    assertEquals(1, demo.seedOption.seed());
    assertTrue(demo.wanOptions.enabled());
    assertEquals(null, demo.exportOption.dirOrNull());

    FastPathBenchCommand fast = parse(new FastPathBenchCommand());
    assertEquals(List.of("V", "O", "C"), fast.dcList.dcs());
    assertEquals(Path.of("./paxoscp-data/bench"), fast.outOption.dir());

    ClusterCommand cluster = parse(new ClusterCommand());
    assertEquals(List.of("V1", "V2", "O"), cluster.dcList.dcs());
    assertEquals(2000, cluster.requestTimeout.timeout().toMillis());

    CommandLine nemesis = new CommandLine(new NemesisCommand());
    nemesis.parseArgs();
    assertEquals(1000L, (Long) nemesis.getCommandSpec().findOption("--request-timeout-ms")
        .getValue());
    assertEquals("V1,V2,O", nemesis.getCommandSpec().findOption("--dcs").getValue());
  }

  @Test
  void givenValuesReplaceTheDefaults() {
    DemoCommand demo = parse(new DemoCommand(), "--dcs", "A,B,C,D", "--store", "memory",
        "--no-wan", "--rtt", "A:B=5", "--rtt", "A:C=7,B:C=9", "--out", "x", "--export", "y",
        "--seed", "42");
    assertEquals(List.of("A", "B", "C", "D"), demo.dcList.dcs());
    assertEquals(LocalCluster.StoreKind.MEMORY, demo.storeOption.kind());
    assertFalse(demo.wanOptions.enabled());
    assertEquals(List.of("A:B=5", "A:C=7", "B:C=9"), demo.wanOptions.rtt.overrides());
    assertEquals(Path.of("x"), demo.outOption.dir());
    assertEquals(Path.of("y"), demo.exportOption.dirOrNull());
    assertEquals(42, demo.seedOption.seed());

    // A second command of the same class starts from its defaults again.
    assertEquals(List.of("V1", "V2", "V3"), parse(new DemoCommand()).dcList.dcs());
  }

  @Test
  void badValuesAreUsageErrorsNamingTheOption() {
    var err = new java.io.StringWriter();
    CommandLine cl = new CommandLine(new DemoCommand());
    cl.setErr(new java.io.PrintWriter(err));
    assertEquals(2, cl.execute("--store", "disk"));
    assertTrue(err.toString().contains("--store must be hbase or memory, was disk"), err.toString());

    ClusterCommand cluster = parse(new ClusterCommand(), "--dcs", "V1,,O",
        "--request-timeout-ms", "0");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> cluster.dcList.dcs());
    assertTrue(e.getMessage().contains("--dcs"), e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> cluster.requestTimeout.timeout());
    assertTrue(e.getMessage().contains("--request-timeout-ms"), e.getMessage());
  }

  @Test
  void helpShowsEachCommandsDefault() {
    assertTrue(usage(new DemoCommand()).contains("(default: V1,V2,V3)"));
    assertTrue(usage(new FastPathBenchCommand()).contains("(default: V,O,C)"));
    assertTrue(usage(new ClusterCommand()).contains("(default: V1,V2,O)"));
    assertTrue(usage(new ClusterCommand()).contains("(default: 2000)"));
    assertTrue(usage(new NemesisCommand()).contains("(default: 1000)"));
    assertTrue(usage(new XgBenchCommand()).contains("(default: ./paxoscp-data/bench)"));
  }

  private static <T> T parse(T command, String... args) {
    new CommandLine(command).parseArgs(args);
    return command;
  }

  private static String usage(Object command) {
    // Help wraps long descriptions; compare with the line breaks taken out.
    return new CommandLine(command).getUsageMessage(CommandLine.Help.Ansi.OFF)
        .replaceAll("\\s+", " ");
  }
}
