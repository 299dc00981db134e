package org.paxoscp.experiment;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.service.LeaderCombiner;
import picocli.CommandLine;

/**
 * {@code paxoscp experiment contention|replicas --quick} on embedded HBase with the paper's
 * RTTs: the outputs are well formed, every run is one-copy serializable, and Paxos-CP commits at
 * least as many transactions as basic Paxos on the same seeds (summed over the figure's points;
 * single points of a short run are noisy). {@code --txns 12} shortens the quick runs further to
 * keep the suite's time down.
 */
@Timeout(value = 420, unit = TimeUnit.SECONDS)
class ExperimentCommandIT {
  private static final int TXNS = 12;

  @Test
  void quickContention(@TempDir Path dir) throws IOException {
    runAndCheck(Figure.CONTENTION, dir);
  }

  @Test
  void quickReplicas(@TempDir Path dir) throws IOException {
    runAndCheck(Figure.REPLICAS, dir);
  }

  private static void runAndCheck(Figure f, Path dir) throws IOException {
    int code = new CommandLine(new ExperimentCommand()).execute(f.cliName(), "--quick",
        "--txns", Integer.toString(TXNS), "--seed", "7", "--out", dir.toString());
    assertEquals(0, code, "exit code");
    Path d = dir.resolve(f.cliName());
    List<Point> points = f.points(TXNS);
    List<String> modes = Arrays.stream(CommitProtocol.values())
        .map(p -> p.name().toLowerCase(Locale.ROOT)).toList();

    List<String> lines = Files.readAllLines(d.resolve(f.cliName() + ".csv"),
        StandardCharsets.UTF_8);
    assertEquals(FigureReport.POINTS_HEADER, lines.get(0));
    List<String> header = List.of(lines.get(0).split(","));
    assertEquals(1 + points.size() * modes.size(), lines.size(), "one row per point and mode");
    Map<String, Integer> committedByMode = new HashMap<>();
    Set<String> seen = new HashSet<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] c = line.split(",", -1);
      assertEquals(header.size(), c.length, line);
      int txns = i(c, header, "txns");
      int committed = i(c, header, "committed");
      assertEquals(TXNS, txns, line);
      assertEquals(committed, i(c, header, "r0") + i(c, header, "r1") + i(c, header, "r2")
          + i(c, header, "r3_or_more") + i(c, header, "read_only"), line);
      assertEquals(txns, committed + i(c, header, "aborted") + i(c, header, "unknown")
          + i(c, header, "unavailable"), line);
      assertEquals("true", c[header.indexOf("checker_ok")], line);
      String mode = c[header.indexOf("mode")];
      assertTrue(modes.contains(mode), line);
      assertTrue(seen.add(c[header.indexOf("point")] + "/" + mode), "duplicate " + line);
      committedByMode.merge(mode, committed, Integer::sum);
    }
    assertTrue(committedByMode.get("cp") >= committedByMode.get("basic"),
        "cp commits at least as many as basic on the same seeds: " + committedByMode);

    List<String> txnLines = Files.readAllLines(d.resolve(f.cliName() + "-txns.csv"),
        StandardCharsets.UTF_8);
    assertEquals(1 + points.size() * modes.size() * TXNS, txnLines.size());
    for (String line : txnLines.subList(1, txnLines.size())) {
      String[] c = line.split(",", -1);
      assertEquals(c[5].equals("aborted"), !c[10].isEmpty(), "abort reason exactly on aborts: "
          + line);
    }

    JsonNode m = new ObjectMapper().readTree(d.resolve("manifest.json").toFile());
    assertEquals(f.cliName(), m.path("figure").asText());
    assertEquals(7, m.path("config").path("seed").asLong());
    assertEquals(TXNS, m.path("config").path("txns_per_mode_per_point").asInt());
    assertEquals(LeaderCombiner.Options.DEFAULT_HOLD_SHARE,
        m.path("config").path("leader_hold_share").asDouble());
    assertNotNull(m.path("git").get("revision"));
    assertFalse(m.path("jvm").path("java.version").asText().isEmpty());
    assertTrue(m.path("machine").path("cores").asInt() > 0);
    assertTrue(m.path("all_runs_serializable").asBoolean());

    assertCharts(f, d);

    // The charts can be drawn again from the files alone.
    for (String png : List.of("-commits.png", "-latency.png")) {
      Files.delete(d.resolve(f.cliName() + png));
    }
    assertEquals(0, new CommandLine(new ExperimentCommand()).execute(f.cliName(),
        "--charts-only", "--out", dir.toString()));
    assertCharts(f, d);
  }

  private static void assertCharts(Figure f, Path d) throws IOException {
    byte[] magic = {(byte) 0x89, 'P', 'N', 'G'};
    for (String png : List.of("-commits.png", "-latency.png")) {
      byte[] b = Files.readAllBytes(d.resolve(f.cliName() + png));
      assertTrue(b.length > 1000, png);
      assertArrayEquals(magic, Arrays.copyOf(b, 4), png);
    }
  }

  private static int i(String[] c, List<String> header, String col) {
    return Integer.parseInt(c[header.indexOf(col)]);
  }
}
