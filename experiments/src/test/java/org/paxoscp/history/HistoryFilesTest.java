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
import java.util.Base64;
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
import org.paxoscp.wal.Updates;

/**
 * The export format carries range reads: an entry's scanned ranges survive the WAL file, a
 * history line's scans become the record's, a part's scans the observation's; files without
 * them read as before. It carries commutative updates: adds and counting-set updates survive
 * the WAL file and are read from history lines, and an ABORTED line with a commit position is a
 * refused entry.
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

  private static String base64(byte[] v) {
    return Base64.getEncoder().encodeToString(v);
  }

  /**
   * T1 at 1 adds 5 to c, adds a and b to the set s and puts text at t; T2 at 2 adds -7 to c and
   * removes b twice; T3 at 3 adds 1 to t (text: refused) and puts note.
   */
  private void exportUpdatesWal() {
    SortedMap<String, Mutation> w1 = new TreeMap<>();
    w1.put("c", Mutation.add(5));
    w1.put("s", Mutation.setUpdate(Map.of("a", 1L, "b", 1L)));
    w1.put("t", Mutation.put("text".getBytes(StandardCharsets.UTF_8)));
    SortedMap<String, Mutation> w2 = new TreeMap<>();
    w2.put("c", Mutation.add(-7));
    w2.put("s", Mutation.setUpdate(Map.of("b", -2L)));
    w2.put("gone", Mutation.delete());
    SortedMap<String, Mutation> w3 = new TreeMap<>();
    w3.put("t", Mutation.add(1));
    w3.put("note", Mutation.put("n".getBytes(StandardCharsets.UTF_8)));
    SortedMap<Long, LogValue> log = new TreeMap<>();
    log.put(1L, LogValue.of(new LogEntry("T1", "V1", 0, new TreeSet<>(), w1)));
    log.put(2L, LogValue.of(new LogEntry("T2", "V1", 1, new TreeSet<>(), w2)));
    log.put(3L, LogValue.of(new LogEntry("T3", "V1", 2, new TreeSet<>(), w3)));
    HistoryFiles.appendWal(dir, "V1", "g", log);
  }

  /** A one-group history line of a read-write transaction. */
  private static String writeLine(String txn, long readPos, String writes, String outcome,
      String commitPos) {
    return "{\"txn\":\"" + txn + "\",\"client\":\"c1\",\"dc\":\"V1\",\"group\":\"g\","
        + "\"readPos\":" + readPos + ",\"reads\":[],\"writes\":[" + writes + "],"
        + "\"outcome\":\"" + outcome + "\",\"commitPos\":" + commitPos + ",\"promotions\":0,"
        + "\"protocol\":\"cp\",\"readOnly\":false,\"startMs\":1,\"endMs\":2}";
  }

  @Test
  void updatesSurviveTheWalFile() throws IOException {
    exportUpdatesWal();
    List<String> lines = Files.readAllLines(dir.resolve("wal").resolve("V1.jsonl"));
    assertTrue(lines.get(0).contains("{\"key\":\"c\",\"add\":5}"), lines.get(0));
    assertTrue(lines.get(0).contains("{\"key\":\"s\",\"set\":{\"a\":1,\"b\":1}}"),
        lines.get(0));
    assertTrue(lines.get(1).contains("{\"key\":\"gone\",\"value\":null}"), lines.get(1));
    assertTrue(lines.get(1).contains("{\"key\":\"s\",\"set\":{\"b\":-2}}"), lines.get(1));
    SortedMap<Long, LogValue> read = HistoryFiles.read(dir).logsByGroup().get("g").get("V1");
    Map<String, Mutation> w1 = read.get(1L).entries().get(0).writes();
    assertEquals(Mutation.add(5), w1.get("c"));
    assertEquals(Mutation.setUpdate(Map.of("a", 1L, "b", 1L)), w1.get("s"));
    assertEquals(Mutation.put("text".getBytes(StandardCharsets.UTF_8)), w1.get("t"));
    Map<String, Mutation> w2 = read.get(2L).entries().get(0).writes();
    assertEquals(Mutation.add(-7), w2.get("c"));
    assertEquals(Mutation.setUpdate(Map.of("b", -2L)), w2.get("s"));
    assertEquals(Mutation.delete(), w2.get("gone"));
    // Written again from what was read, the file is the same.
    Path again = dir.resolve("again");
    HistoryFiles.appendWal(again, "V1", "g", read);
    assertEquals(lines, Files.readAllLines(again.resolve("wal").resolve("V1.jsonl")));
  }

  @Test
  void aHistoryLinesUpdatesAndARefusalAreReadAndChecked() throws IOException {
    exportUpdatesWal();
    String t1Writes = "{\"key\":\"c\",\"add\":5},{\"key\":\"s\",\"set\":{\"a\":1,\"b\":1}},"
        + "{\"key\":\"t\",\"value\":\"" + base64("text".getBytes(StandardCharsets.UTF_8))
        + "\"}";
    String t2Writes = "{\"key\":\"c\",\"add\":-7},{\"key\":\"gone\",\"value\":null},"
        + "{\"key\":\"s\",\"set\":{\"b\":-2}}";
    String t3Writes = "{\"key\":\"note\",\"value\":\"" + base64("n".getBytes(
        StandardCharsets.UTF_8)) + "\"},{\"key\":\"t\",\"add\":1}";
    // At 3: c is -2, s counts a once and b -1 (not present), t is still text, no note.
    String reads = "\"reads\": [{\"key\": \"c\", \"value\": \"" + base64(Updates.encodeCounter(-2))
        + "\", \"version\": 2}, {\"key\": \"s\", \"value\": \""
        + base64(Updates.encodeSet(Map.of("a", 1L, "b", -1L))) + "\", \"version\": 2}, "
        + "{\"key\": \"t\", \"value\": \"" + base64("text".getBytes(StandardCharsets.UTF_8))
        + "\", \"version\": 1}, {\"key\": \"note\", \"value\": null, \"version\": 0}], ";
    String reader = readOnlyLine("R", 3, "").replace("\"reads\": [], ", reads);
    history(writeLine("T1", 0, t1Writes, "COMMITTED", "1"),
        writeLine("T2", 1, t2Writes, "COMMITTED", "2"),
        writeLine("T3", 2, t3Writes, "ABORTED", "3"), reader);
    HistoryFiles.Run run = HistoryFiles.read(dir);
    Map<String, TxnRecord> byId = new TreeMap<>();
    run.recordsByGroup().get("g").forEach(r -> byId.put(r.txnId(), r));
    assertEquals(run.logsByGroup().get("g").get("V1").get(1L).entries().get(0).writes(),
        byId.get("T1").writes());
    TxnRecord t3 = byId.get("T3");
    assertEquals(TxnRecord.Status.ABORTED, t3.status());
    assertEquals(3, t3.commitPosition());
    assertEquals(Mutation.add(1), t3.writes().get("t"));

    CheckResult result = SerializabilityChecker.check(run.logsByGroup().get("g"),
        run.recordsByGroup().get("g"));
    assertTrue(result.ok(), result::summary);
    assertEquals(1, result.stats().entriesRefused());
    assertEquals(5, result.stats().updatesChecked());
    assertEquals(1, result.stats().readsChecked());

    // The same refused entry reported COMMITTED is caught.
    history(writeLine("T1", 0, t1Writes, "COMMITTED", "1"),
        writeLine("T2", 1, t2Writes, "COMMITTED", "2"),
        writeLine("T3", 2, t3Writes, "COMMITTED", "3"), reader);
    run = HistoryFiles.read(dir);
    result = SerializabilityChecker.check(run.logsByGroup().get("g"),
        run.recordsByGroup().get("g"));
    assertEquals(Map.of(Violation.Kind.REFUSAL_MISMATCH, 1), result.violationCounts(),
        result::summary);
  }

  @Test
  void malformedUpdatesNameTheLine() throws IOException {
    for (String write : List.of("{\"key\": \"c\", \"add\": 1, \"value\": null}",
        "{\"key\": \"c\", \"add\": 1.5}", "{\"key\": \"c\", \"add\": \"1\"}",
        "{\"key\": \"c\", \"add\": 9223372036854775808}",
        "{\"key\": \"s\", \"set\": [1]}", "{\"key\": \"s\", \"set\": {\"\": 1}}",
        "{\"key\": \"s\", \"set\": {\"e\": true}}", "{\"key\": \"c\"}")) {
      history(writeLine("T", 0, write, "ABORTED", "null"));
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> HistoryFiles.read(dir), write);
      assertTrue(e.getMessage().contains("c1.jsonl:1"), e.getMessage());
    }
  }
}
