package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.Vector;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.KeyRange;
import site.ycsb.ByteIterator;
import site.ycsb.Status;

/**
 * Workload E inside entity groups, against an in-process cluster: a clean run validates, and a
 * binding that loses a record from scans, or an insert, fails the checks.
 */
@Timeout(120)
class ScanWorkloadTest {
  @TempDir
  Path dir;

  @BeforeEach
  void startCluster() {
    InProcessPaxosCpDB.cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
  }

  @AfterEach
  void stop() {
    InProcessPaxosCpDB.cluster.close();
  }

  private Properties props(boolean run) {
    Properties p = new Properties();
    p.setProperty("recordcount", "40");
    p.setProperty(ScanWorkload.GROUPS, "2");
    p.setProperty("fieldcount", "2");
    p.setProperty("fieldlength", "16");
    p.setProperty("scanproportion", "0.8");
    p.setProperty("insertproportion", "0.2");
    p.setProperty("maxscanlength", "10");
    p.setProperty(PaxosCpDB.PROTOCOL, "cp");
    p.setProperty("dotransactions", Boolean.toString(run));
    p.setProperty(ClosedEconomyWorkload.VALIDATION_FILE, dir.resolve("validation").toString());
    return p;
  }

  /** The workload, its validation reading the in-process cluster. */
  private static ScanWorkload workload() {
    return new ScanWorkload() {
      @Override
      ClusterConfig clusterConfig(Properties p) {
        return Harness.config();
      }

      @Override
      TxnClient validationClient(ClusterConfig cluster, String dc) {
        return Harness.validationClient(dc);
      }
    };
  }

  /** Loads 40 records, then runs 2 threads of {@code ops} transactions with {@code dbs}. */
  private ScanWorkload loadAndRun(int ops, Supplier<? extends PaxosCpDB> dbs) throws Exception {
    ScanWorkload load = workload();
    Properties lp = props(false);
    load.init(lp);
    assertEquals(40, Harness.load(load, lp, 2, 40, InProcessPaxosCpDB::new));
    load.cleanup();
    ScanWorkload run = workload();
    Properties rp = props(true);
    run.init(rp);
    Harness.run(run, rp, 2, ops, dbs);
    run.cleanup();
    return run;
  }

  private String validation() throws Exception {
    return Files.readString(dir.resolve("validation"), StandardCharsets.UTF_8);
  }

  @Test
  void aRunOfScansAndInsertsPassesItsChecksAndValidation() throws Exception {
    ScanWorkload w = loadAndRun(60, InProcessPaxosCpDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    assertTrue(w.scansChecked.get() > 0, "no scan committed");
    assertEquals(0, w.scanAnomalies.get());
  }

  /** Drops the second record of every scan that returned two or more. */
  static final class SkippingScanDB extends InProcessPaxosCpDB {
    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
        Vector<HashMap<String, ByteIterator>> result) {
      Status s = super.scan(table, startkey, recordcount, fields, result);
      if (result.size() >= 2) {
        result.remove(1);
      }
      return s;
    }
  }

  @Test
  void aScanThatSkipsARecordIsCaught() throws Exception {
    ScanWorkload w = loadAndRun(40, SkippingScanDB::new);
    assertTrue(w.scanAnomalies.get() > 0, "no scan anomaly found");
    String v = validation();
    assertTrue(v.startsWith("FAILED") && v.contains("committed scan(s) failed their checks")
        && v.contains("is missing"), v);
  }

  /** Silently drops the writes of every insert of the run phase: the commit is read-only. */
  static final class LosingInsertDB extends InProcessPaxosCpDB {
    @Override
    public Status insert(String table, String key, Map<String, ByteIterator> values) {
      return Status.OK;
    }
  }

  @Test
  void aLostInsertIsCaughtByTheValidation() throws Exception {
    loadAndRun(40, LosingInsertDB::new);
    String v = validation();
    assertTrue(v.startsWith("FAILED") && v.contains("record(s) missing"), v);
  }

  @Test
  void theScanCheckNamesWhatIsWrong() throws Exception {
    ScanWorkload w = workload();
    Properties p = props(true);
    p.setProperty("recordcount", "6");
    p.setProperty(ScanWorkload.GROUPS, "1");
    w.init(p);
    TreeSet<String> keys = new TreeSet<>(KeyRange.ORDER);
    for (int n = 0; n < 6; n++) {
      keys.add(w.key(n));
    }
    List<String> sorted = List.copyOf(keys);
    String g = w.group(0);
    TreeSet<String> none = new TreeSet<>(KeyRange.ORDER);
    assertNull(w.checkScan(g, sorted.get(1), 2, rows(w, sorted.get(1), sorted.get(2)), none));
    assertNull(w.checkScan(g, sorted.get(4), 5, rows(w, sorted.get(4), sorted.get(5)), none),
        "fewer than asked: the group's end");
    assertTrue(w.checkScan(g, sorted.get(1), 2, rows(w, sorted.get(1), sorted.get(3)), none)
        .contains("record " + sorted.get(2) + " is missing"));
    assertTrue(w.checkScan(g, sorted.get(4), 5, rows(w, sorted.get(4)), none)
        .contains("record " + sorted.get(5) + " is missing"));
    assertTrue(w.checkScan(g, sorted.get(1), 2, rows(w, sorted.get(2), sorted.get(1)), none)
        .contains("out of key order"));
    assertTrue(w.checkScan(g, sorted.get(1), 1, rows(w, sorted.get(1), sorted.get(2)), none)
        .contains("more than asked"));
    assertTrue(w.checkScan(g, "user0", 2, rows(w, "user0"), none).contains("never inserted"));
    assertTrue(w.checkScan(g, sorted.get(1), 2, rows(w, sorted.get(0)), none)
        .contains("below the start key"));
    HashMap<String, ByteIterator> torn = rows(w, sorted.get(1)).get(0);
    torn.remove("field1");
    assertTrue(w.checkScan(g, sorted.get(1), 1, List.of(torn), none).contains("not whole"));
  }

  private static List<HashMap<String, ByteIterator>> rows(ScanWorkload w, String... keys) {
    Vector<HashMap<String, ByteIterator>> out = new Vector<>();
    for (String k : keys) {
      HashMap<String, ByteIterator> r = new HashMap<>();
      for (int f = 0; f < 2; f++) {
        r.put(w.field(f), new site.ycsb.StringByteIterator(w.value(k, w.field(f))));
      }
      out.add(r);
    }
    return out;
  }
}
