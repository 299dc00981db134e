package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgStep;

/**
 * The export format carries the steps of transactions across groups, and {@code check} judges
 * them across groups: a committed transfer passes; writes made visible for a transaction that
 * was never decided fail.
 */
class CheckCrossGroupTest {
  private static final List<String> GROUPS = List.of("a", "b");

  @TempDir
  Path dir;

  private static LogEntry entry(String id, long readPos, Map<String, String> writes,
      XgStep step) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    writes.forEach((k, v) -> w.put(k, Mutation.put(v.getBytes())));
    TreeSet<String> reads = new TreeSet<>();
    if (step.kind() == XgStep.Kind.DECIDE) {
      reads.add(XgStep.decisionKey(step.txn()));
    }
    return new LogEntry(id, "V1", readPos, reads, w, step);
  }

  /** T writes a:x and b:y: PREPARE in b, DECIDE(COMMIT) in a (unless {@code decided}), RESOLVE. */
  private Path export(String name, boolean decided) throws IOException {
    Path d = dir.resolve(name);
    Files.createDirectories(d.resolve("history"));
    SortedMap<Long, LogValue> a = new TreeMap<>();
    SortedMap<Long, LogValue> b = new TreeMap<>();
    b.put(1L, LogValue.of(entry("T@b", 0, Map.of("y", "1"), XgStep.prepare("T", GROUPS, 5))));
    if (decided) {
      a.put(1L, LogValue.of(entry("T", 0, Map.of("x", "1",
          XgStep.decisionKey("T"), "C"), XgStep.decide("T", GROUPS, true))));
    }
    b.put(2L, LogValue.of(entry("r1", 1, Map.of("y", "1"), XgStep.resolve("T", GROUPS, true))));
    for (String dc : List.of("V1", "V2")) {
      HistoryFiles.appendWal(d, dc, "a", a);
      HistoryFiles.appendWal(d, dc, "b", b);
    }
    return d;
  }

  @Test
  void stepsSurviveTheExportAndACommittedTransferPasses() throws IOException {
    Path d = export("ok", true);
    HistoryFiles.Run run = HistoryFiles.read(d);
    LogEntry prepare = run.logsByGroup().get("b").get("V1").get(1L).entries().get(0);
    assertEquals(XgStep.prepare("T", GROUPS, 5), prepare.xg());
    CommandRun.Result r = CommandRun.run(new CheckCommand(), d.toString());
    assertEquals(0, r.code(), r.out() + r.err());
    assertTrue(r.out().contains("across 2 groups: 1 cross-group transactions committed, 0 "
        + "aborted, 0 undecided: one-copy serializable"), r.out());
  }

  /** A client's line for T (HistoryRecorder's cross-group shape) reporting {@code outcome}. */
  private static void recordT(Path d, String outcome) throws IOException {
    Files.writeString(d.resolve("history").resolve("c1.jsonl"), "{\"xg\": \"T\", "
        + "\"client\": \"c1\", \"dc\": \"V1\", \"groups\": [\"a\", \"b\"], \"parts\": ["
        + "{\"group\": \"a\", \"readPos\": 0, \"reads\": [], \"writes\": [{\"key\": \"x\", "
        + "\"value\": \"MQ==\"}]}, {\"group\": \"b\", \"readPos\": 0, \"reads\": [], "
        + "\"writes\": [{\"key\": \"y\", \"value\": \"MQ==\"}]}], \"outcome\": \"" + outcome
        + "\", \"decidePos\": 1, \"readOnly\": false, \"protocol\": \"cp\", \"startMs\": 1, "
        + "\"endMs\": 2}\n");
  }

  @Test
  void aClientsRecordOfATransactionAcrossGroupsIsJudgedAgainstItsDecision() throws IOException {
    Path ok = export("reported-ok", true);
    recordT(ok, "COMMITTED");
    HistoryFiles.Run run = HistoryFiles.read(ok);
    assertEquals(1, run.crossGroup().size());
    assertEquals(Map.of("a", 1L, "b", 0L), run.crossGroupPositions());
    assertTrue(run.recordsByGroup().isEmpty(), "not a one-group record");
    CommandRun.Result r = CommandRun.run(new CheckCommand(), ok.toString());
    assertEquals(0, r.code(), r.out() + r.err());

    Path wrong = export("reported-wrong", true);
    recordT(wrong, "ABORTED");
    r = CommandRun.run(new CheckCommand(), wrong.toString());
    assertEquals(1, r.code(), r.out() + r.err());
    assertTrue(r.out().contains("XG_OUTCOME") && r.out().contains("reported T ABORTED"),
        r.out());
  }

  @Test
  void writesOfAnUndecidedTransactionAreAViolation() throws IOException {
    CommandRun.Result r = CommandRun.run(new CheckCommand(), export("bad", false).toString());
    assertEquals(1, r.code(), r.out() + r.err());
    assertTrue(r.out().contains("XG_ATOMICITY"), r.out());
  }
}
