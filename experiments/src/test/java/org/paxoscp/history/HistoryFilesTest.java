package org.paxoscp.history;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.check.Violation;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The export format carries range reads: an entry's scanned ranges survive the WAL file, a
 * history line's scans become the record's, a part's scans the observation's; files without
 * them read as before.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HistoryFilesTest {
  /** "1", base64. */
  private static final String ONE = "MQ==";

  @TempDir
  Path dir;

  private static SortedMap<String, Mutation> put(String key, String value) {
    return new TreeMap<>(Map.of(key, Mutation.put(value.getBytes(StandardCharsets.UTF_8))));
  }

  /** T1 writes b at 1; T2 scanned [a, b] (a limit) and [c, end) at 1 and writes x at 2. */
  private void exportWal() {
    SortedMap<Long, LogValue> log = new TreeMap<>();
    log.put(1L, LogValue.of(new LogEntry("T1", "V1", 0, new TreeSet<>(), put("b", "1"))));
    log.put(2L, LogValue.of(new LogEntry("T2", "V1", 1, new TreeSet<>(Set.of("k")),
        List.of(new KeyRange("a", "e").through("b"), new KeyRange("c", null)),
        put("x", "2"))));
    HistoryFiles.appendWal(dir, "V1", "g", log);
  }

  private void history(String... lines) throws IOException {
    Files.createDirectories(HistoryFiles.historyDir(dir));
    Files.writeString(HistoryFiles.historyDir(dir).resolve("c1.jsonl"),
        String.join("\n", lines) + "\n");
  }

  /** A one-group history line of a read-only transaction with {@code scans} (JSON or empty). */
  private static String readOnlyLine(String txn, long readPos, String scans) {
    return "{\"txn\": \"" + txn + "\", \"client\": \"c1\", \"dc\": \"V1\", \"group\": \"g\", "
        + "\"readPos\": " + readPos + ", \"reads\": [], " + scans + "\"writes\": [], "
        + "\"outcome\": \"COMMITTED\", \"commitPos\": null, \"promotions\": 0, "
        + "\"protocol\": \"cp\", \"readOnly\": true, \"startMs\": 1, \"endMs\": 2}";
  }

  @Test
  void anEntrysRangesSurviveTheWalFileAndAreLeftOutWhenEmpty() throws IOException {
    exportWal();
    List<String> lines = Files.readAllLines(dir.resolve("wal").resolve("V1.jsonl"));
    assertFalse(lines.get(0).contains("readRanges"), lines.get(0));
    assertTrue(lines.get(1).contains("\"readRanges\""), lines.get(1));
    LogEntry t2 = HistoryFiles.read(dir).logsByGroup().get("g").get("V1").get(2L).entries()
        .get(0);
    assertEquals(List.of(new KeyRange("a", "b\0"), new KeyRange("c", null)), t2.readRanges());
    assertEquals(Set.of("k"), t2.readSet());
    LogEntry t1 = HistoryFiles.read(dir).logsByGroup().get("g").get("V1").get(1L).entries()
        .get(0);
    assertEquals(List.of(), t1.readRanges());
  }

  @Test
  void aHistoryLinesScansBecomeTheRecordsAndAreChecked() throws IOException {
    exportWal();
    history(
        readOnlyLine("R1", 1, "\"scans\": [{\"from\": \"a\", \"to\": \"c\", \"entries\": "
            + "[{\"key\": \"b\", \"value\": \"" + ONE + "\", \"version\": 1}]}], "),
        // Missed b: a phantom.
        readOnlyLine("R2", 1, "\"scans\": [{\"from\": \"a\", \"to\": null, \"entries\": []}], "),
        // An older line: no scans.
        readOnlyLine("R3", 1, ""));
    HistoryFiles.Run run = HistoryFiles.read(dir);
    Map<String, TxnRecord> byId = new TreeMap<>();
    run.recordsByGroup().get("g").forEach(r -> byId.put(r.txnId(), r));
    TxnRecord r1 = byId.get("R1");
    assertEquals(1, r1.scans().size());
    assertEquals(new KeyRange("a", "c"), r1.scans().get(0).range());
    assertArrayEquals("1".getBytes(StandardCharsets.UTF_8),
        r1.scans().get(0).entries().get("b"));
    assertEquals(List.of(KeyRange.ALL.startingAt("a")), byId.get("R2").scannedRanges());
    assertEquals(List.of(), byId.get("R3").scans());

    CheckResult result = SerializabilityChecker.check(run.logsByGroup().get("g"),
        run.recordsByGroup().get("g"));
    assertEquals(Map.of(Violation.Kind.PHANTOM, 1), result.violationCounts(), result::summary);
    assertEquals("R2", result.violations().get(0).txnId());
    assertEquals(2, result.stats().scansChecked());
  }

  @Test
  void aPartsScansBecomeTheObservationsRangeReads() throws IOException {
    history("{\"xg\": \"X\", \"client\": \"c1\", \"dc\": \"V1\", \"groups\": [\"a\", \"b\"], "
        + "\"parts\": [{\"group\": \"a\", \"readPos\": 3, \"reads\": [], \"scans\": [{\"from\": "
        + "\"k\", \"to\": \"l\", \"entries\": [{\"key\": \"k1\", \"value\": \"" + ONE + "\", "
        + "\"version\": 2}]}], \"writes\": []}, {\"group\": \"b\", \"readPos\": 4, \"reads\": "
        + "[{\"key\": \"y\", \"value\": null, \"version\": 0}], \"writes\": []}], "
        + "\"outcome\": \"COMMITTED\", \"decidePos\": null, \"readOnly\": true, "
        + "\"protocol\": \"cp\", \"startMs\": 1, \"endMs\": 2}");
    CrossGroupChecker.Observation o = HistoryFiles.read(dir).crossGroup().get(0);
    assertEquals(Map.of("a", List.of(new CrossGroupChecker.RangeRead(new KeyRange("k", "l"), 3))),
        o.rangeReads());
    assertEquals(Map.of("a", Map.of("k1", 2L), "b", Map.of("y", 0L)), o.readVersions());
    assertTrue(o.readOnly());
  }

  @Test
  void malformedScansAndRangesNameTheLine() throws IOException {
    history(readOnlyLine("R", 0, "\"scans\": [{\"from\": \"c\", \"to\": \"a\", \"entries\": "
        + "[]}], "));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> HistoryFiles.read(dir));
    assertTrue(e.getMessage().contains("c1.jsonl:1") && e.getMessage().contains("key range"),
        e.getMessage());

    history(readOnlyLine("R", 0, "\"scans\": [{\"from\": \"a\", \"to\": null, \"entries\": "
        + "[{\"key\": \"b\", \"value\": null, \"version\": 0}]}], "));
    e = assertThrows(IllegalArgumentException.class, () -> HistoryFiles.read(dir));
    assertTrue(e.getMessage().contains("c1.jsonl:1") && e.getMessage().contains("value"),
        e.getMessage());
  }
}
