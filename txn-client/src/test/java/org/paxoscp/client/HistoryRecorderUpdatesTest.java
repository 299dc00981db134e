package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.TxnRecord;

/**
 * The history export of commutative updates: an add and a set update are recorded as such
 * ({@code "add"}, {@code "set"}), and a refused entry as ABORTED at its position; the checker
 * replays the cluster's log against what the client observed and finds them consistent.
 */
@Timeout(60)
class HistoryRecorderUpdatesTest {
  private TestCluster cluster;

  @AfterEach
  void tearDown() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  private static String lineOf(List<String> lines, String txnId) {
    return lines.stream().filter(l -> l.startsWith("{\"txn\":\"" + txnId + "\"")).findFirst()
        .orElseThrow(() -> new AssertionError("no line of " + txnId + " in " + lines));
  }

  @Test
  void updatesAndARefusalAreRecordedAndPassTheChecker(@TempDir Path tmp) throws IOException {
    cluster = new TestCluster(Duration.ofSeconds(1));
    Path file = tmp.resolve("h.jsonl");
    History history = new History();
    String seedId;
    String addsId;
    String overId;
    long p2;
    long at;
    try (HistoryRecorder rec = HistoryRecorder.append(file)) {
      TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.CP)
          .recordHistory(rec).build());
      Transaction seed = c.begin("g");
      seed.put("c", Long.toString(Long.MAX_VALUE - 1));
      seed.setAdd("tags", "red");
      long p1 = seed.commit().position();
      history.add("c", seed, TxnRecord.Status.COMMITTED, p1);
      seedId = seed.txnId();

      Transaction adds = TestCluster.beginAtLeast(c, "g", p1);
      adds.add("c", 1);
      adds.setRemove("tags", "red");
      adds.setAdd("tags", "blue");
      p2 = adds.commit().position();
      history.add("c", adds, TxnRecord.Status.COMMITTED, p2);
      addsId = adds.txnId();

      Transaction over = TestCluster.beginAtLeast(c, "g", p2);
      over.add("c", 1);
      over.put("note", "written only if the add applies");
      UpdateRefusedException e = assertThrows(UpdateRefusedException.class, over::commit);
      at = e.position().orElseThrow();
      history.add("c", over, TxnRecord.Status.ABORTED, at);
      overId = over.txnId();

      Transaction r = TestCluster.beginAtLeast(c, "g", at);
      assertEquals(Long.MAX_VALUE, r.getCounter("c"));
      assertEquals(new TreeSet<>(List.of("blue")), r.getSet("tags"));
      assertEquals(Optional.empty(), r.get("note"));
      r.commit();
      history.add("c", r, TxnRecord.Status.COMMITTED, -1);
    }

    List<String> lines = Files.readAllLines(file);
    String seedLine = lineOf(lines, seedId);
    assertTrue(seedLine.contains("{\"key\":\"c\",\"value\":\"" + Base64.getEncoder()
        .encodeToString(Long.toString(Long.MAX_VALUE - 1).getBytes(StandardCharsets.US_ASCII))
        + "\"}"), seedLine);
    assertTrue(seedLine.contains("{\"key\":\"tags\",\"set\":{\"red\":1}}"), seedLine);
    String addsLine = lineOf(lines, addsId);
    assertTrue(addsLine.contains("\"writes\":[{\"key\":\"c\",\"add\":1},"
        + "{\"key\":\"tags\",\"set\":{\"blue\":1,\"red\":-1}}]"), addsLine);
    assertTrue(addsLine.contains("\"outcome\":\"COMMITTED\",\"commitPos\":" + p2 + ","),
        addsLine);
    String overLine = lineOf(lines, overId);
    assertTrue(overLine.contains("{\"key\":\"c\",\"add\":1}"), overLine);
    assertTrue(overLine.contains("\"outcome\":\"ABORTED\",\"commitPos\":" + at + ","), overLine);

    CheckResult result = history.check(TestCluster.quiescentLogs(cluster, List.of("g"),
        Map.of("g", at)).get("g"));
    assertTrue(result.ok(), result::summary);
    assertEquals(1, result.stats().entriesRefused(), result::summary);
    assertEquals(4, result.stats().updatesChecked(), result::summary);
    assertEquals(1, result.stats().readsChecked(), result::summary);
  }
}
