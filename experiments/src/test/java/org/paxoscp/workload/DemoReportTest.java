package org.paxoscp.workload;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DemoReportTest {
  private static final List<RunSummary> RUNS = List.of(
      new RunSummary("basic", new TreeMap<>(java.util.Map.of(0, 40)), 7, 30, 1, 0, 0, 4.2, 9.9,
          50, "ok", true),
      new RunSummary("cp", new TreeMap<>(java.util.Map.of(0, 40, 1, 20, 2, 5, 4, 1)), 7, 4, 0, 0,
          3, 4.4, 12.5, 50, "ok", true));

  @Test
  void tableShowsRoundsWithHigherRoundsSummedIntoTheLastColumn() {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    DemoReport.printTable(RUNS, new PrintStream(buf, true, StandardCharsets.UTF_8));
    String[] lines = buf.toString(StandardCharsets.UTF_8).split("\n");
    assertEquals(3, lines.length);
    List<String> cp = Arrays.asList(lines[2].trim().split("\\s+"));
    assertEquals(List.of("cp", "73", "40", "20", "5", "1", "7", "4", "0", "0", "3", "4.4", "12.5",
        "ok"), cp);
  }

  @Test
  void csvHasAHeaderAndOneRowPerRun(@TempDir Path dir) throws Exception {
    Path csv = dir.resolve("demo.csv");
    DemoReport.writeCsv(RUNS, csv);
    List<String> lines = Files.readAllLines(csv);
    assertEquals(3, lines.size());
    assertTrue(lines.get(0).startsWith("protocol,committed,r0,r1,r2,r3_or_more"));
    assertEquals("basic,47,40,0,0,0,7,30,1,0,0,4.20,9.90,50.0,true", lines.get(1));
  }

  @Test
  void chartIsAPngFile(@TempDir Path dir) throws Exception {
    Path png = dir.resolve("demo.png");
    DemoReport.writeChart(RUNS, png, "test");
    byte[] head = Arrays.copyOf(Files.readAllBytes(png), 8);
    assertArrayEquals(new byte[] {(byte) 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'}, head);
  }
}
