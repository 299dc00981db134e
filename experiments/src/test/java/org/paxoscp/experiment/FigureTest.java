package org.paxoscp.experiment;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.workload.WorkloadRunner;
import org.paxoscp.workload.WorkloadRunner.Sample;

class FigureTest {

  @Test
  void pointsFollowThePaper() {
    assertEquals(List.of("2", "3", "4", "5"),
        Figure.REPLICAS.points(500).stream().map(Point::label).toList());
    assertEquals(5, Figure.REPLICAS.points(500).get(3).dcs().size());
    assertEquals(List.of("VV", "OV", "VVV", "OCV", "VVVOC"),
        Figure.CLUSTERS.points(500).stream().map(Point::label).toList());
    assertEquals(List.of(20, 50, 100, 200, 500),
        Figure.CONTENTION.points(500).stream().map(Point::attributes).toList());
    for (Point p : Figure.CONTENTION.points(500)) {
      assertEquals(500, p.totalTxns());
      assertEquals(4, p.clients());
      assertEquals(1.0, p.ratePerClient());
    }
    Point voc = Figure.PER_DC_CLIENTS.points(500).get(0);
    assertEquals(List.of("V1", "O", "C"), voc.homeDcs());
    assertEquals(500, voc.txnsPerClient());
    assertEquals(Figure.PER_DC_CLIENTS, Figure.parse("per-dc-clients"));
    assertThrows(IllegalArgumentException.class, () -> Figure.parse("fig9"));
    assertEquals(Figure.QUICK_TXNS, Figure.CONTENTION.defaultTxns(true));
    assertEquals(Figure.PAPER_TXNS, Figure.CONTENTION.defaultTxns(false));
  }

  @Test
  void rowCountsRoundsAndLatencies(@TempDir Path dir) throws Exception {
    Point p = Figure.CONTENTION.points(8).get(0);
    List<Sample> s = List.of(new Sample(0, "V1", "committed", 0, false, 10_000, 300_000),
        new Sample(1, "V1", "committed", 1, true, 30_000, 320_000),
        new Sample(2, "V1", "committed", 5, false, 50_000, 400_000),
        new Sample(3, "V1", "aborted", 0, false, 9_000, 290_000),
        new Sample(0, "V1", "read_only", 0, false, 0, 250_000));
    Row r = new Row(Figure.CONTENTION, p, "cp", "all", s, 5.0, 3, true, "ok");
    assertEquals(4, r.committed());
    assertEquals(1, r.round(0));
    assertEquals(1, r.round(1));
    assertEquals(0, r.round(2));
    assertEquals(1, r.round(3));
    assertEquals(5, r.maxRound());
    assertEquals(1, r.aborted());
    assertEquals(1, r.combined());
    assertEquals(30.0, r.meanCommitMs(), 1e-9);
    assertEquals(10.0, r.meanCommitMs(0), 1e-9);
    assertTrue(Double.isNaN(r.meanCommitMs(2)));
    assertEquals(400.0, r.per500(), 1e-9);
    Path csv = dir.resolve("x.csv");
    FigureReport.writePointsCsv(List.of(r), csv);
    List<String> lines = Files.readAllLines(csv);
    assertEquals(2, lines.size());
    assertEquals(lines.get(0).split(",").length, lines.get(1).split(",", -1).length);
    FigureReport.writeCommitsChart(List.of(r), dir.resolve("c.png"), "t");
    FigureReport.writeLatencyChart(List.of(r), dir.resolve("l.png"), "t");
    assertTrue(Files.size(dir.resolve("c.png")) > 0);
    assertTrue(Files.size(dir.resolve("l.png")) > 0);
  }

  @Test
  void abortReasonsAreNamedByKind() {
    assertEquals("conflict", WorkloadRunner.abortKind("read a key written at position 7 by t1"));
    assertEquals("lost-position", WorkloadRunner.abortKind("lost position 7"));
    assertEquals("no-quorum", WorkloadRunner.abortKind("no quorum at position 7 after 3 "
        + "attempts (competing proposers held higher ballots)"));
    assertEquals("cap", WorkloadRunner.abortKind("promotion cap 2 reached"));
    assertEquals("bound", WorkloadRunner.abortKind("promotion bound 16 used up: positions 3..19"
        + " went to other entries"));
    assertEquals("too-old", WorkloadRunner.abortKind("position 4 is below the group's GC "
        + "watermark: collected"));
    assertEquals("other", WorkloadRunner.abortKind(null));
  }
}
