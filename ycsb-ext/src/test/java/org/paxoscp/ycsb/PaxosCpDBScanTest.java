package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.Vector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.service.InProcessCluster;
import site.ycsb.ByteIterator;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;
import site.ycsb.measurements.Measurements;

/** The binding's {@code scan}: a range read of one entity group, in each of its three modes. */
@Timeout(60)
class PaxosCpDBScanTest {
  private final List<PaxosCpDB> dbs = new ArrayList<>();

  @BeforeEach
  void startCluster() {
    Measurements.setProperties(new Properties());
    InProcessPaxosCpDB.cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
  }

  @AfterEach
  void stop() throws Exception {
    for (PaxosCpDB db : dbs) {
      db.cleanup();
    }
    InProcessPaxosCpDB.cluster.close();
  }

  private PaxosCpDB binding(String grouping) throws Exception {
    Properties p = new Properties();
    p.setProperty("fieldcount", "2");
    p.setProperty(PaxosCpDB.DC, "A");
    p.setProperty(PaxosCpDB.GROUPING, grouping);
    PaxosCpDB db = new InProcessPaxosCpDB();
    db.setProperties(p);
    db.init();
    dbs.add(db);
    return db;
  }

  private static Map<String, ByteIterator> record(String key) {
    Map<String, ByteIterator> m = new HashMap<>();
    m.put("field0", new StringByteIterator(key + "-0"));
    m.put("field1", new StringByteIterator(key + "-1"));
    return m;
  }

  /** Each record's fields as strings, in scan order. */
  private static List<Map<String, String>> strings(Vector<HashMap<String, ByteIterator>> rows) {
    List<Map<String, String>> out = new ArrayList<>();
    for (HashMap<String, ByteIterator> r : rows) {
      Map<String, String> m = new TreeMap<>();
      r.forEach((f, v) -> m.put(f, v.toString()));
      out.add(m);
    }
    return out;
  }

  private static Map<String, String> both(String key) {
    return Map.of("field0", key + "-0", "field1", key + "-1");
  }

  /** Loads k01..k05 into {@code group}, one committed transaction. */
  private static void load(PaxosCpDB db, String group) {
    assertTrue(db.begin(group));
    for (int i = 1; i <= 5; i++) {
      assertTrue(db.insert(group, "k0" + i, record("k0" + i)).isOk());
    }
    assertEquals(PaxosCpDB.Outcome.COMMITTED, db.commit().outcome());
  }

  @Test
  void outsideATransactionTableGroupingScansTheTablesGroupInKeyOrder() throws Exception {
    PaxosCpDB db = binding("table");
    for (String k : List.of("k03", "k01", "k05", "k02", "k04")) {
      assertEquals(Status.OK, db.insert("t", k, record(k)), k);
    }
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, db.scan("t", "k02", 2, null, rows));
    assertEquals(List.of(both("k02"), both("k03")), strings(rows));

    rows.clear();
    assertEquals(Status.OK, db.scan("t", "k00", 3, Set.of("field1"), rows));
    assertEquals(List.of(Map.of("field1", "k01-1"), Map.of("field1", "k02-1"),
        Map.of("field1", "k03-1")), strings(rows), "fields filtered like read's");

    rows.clear();
    assertEquals(Status.OK, db.scan("t", "k04", 10, null, rows));
    assertEquals(List.of(both("k04"), both("k05")), strings(rows), "the group's end");

    rows.clear();
    assertEquals(Status.OK, db.scan("t", "k06", 10, null, rows));
    assertTrue(rows.isEmpty());

    // The records are items of the one group "t": a read sees them there too.
    Map<String, ByteIterator> read = new HashMap<>();
    assertEquals(Status.OK, db.read("t", "k03", null, read));
    assertEquals("k03-1", read.get("field1").toString());
  }

  @Test
  void outsideATransactionRecordGroupingHasNoScan() throws Exception {
    PaxosCpDB db = binding("record");
    assertEquals(Status.OK, db.insert("t", "k01", record("k01")));
    Status s = db.scan("t", "k01", 1, null, new Vector<>());
    assertEquals("NOT_IMPLEMENTED", s.getName());
    assertTrue(s.getDescription().contains(PaxosCpDB.GROUPING + "=table"), s.getDescription());
  }

  @Test
  void aScanInATransactionShowsItsOwnWritesAndJoinsTheReadSet() throws Exception {
    PaxosCpDB db = binding("record");
    PaxosCpDB other = binding("record");
    load(db, "g");

    assertTrue(db.begin("g"));
    assertEquals(Status.OK, db.insert("g", "k02b", record("k02b")));
    assertEquals(Status.OK, db.delete("g", "k03"));
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, db.scan("ignored", "k01", 3, null, rows));
    assertEquals(List.of(both("k01"), both("k02"), both("k02b")), strings(rows),
        "its own insert shows, its own delete hides k03");

    // Another client inserts into the part scanned; this transaction wrote, so it aborts.
    assertTrue(other.begin("g"));
    assertEquals(Status.OK, other.insert("g", "k01a", record("k01a")));
    assertEquals(PaxosCpDB.Outcome.COMMITTED, other.commit().outcome());
    assertEquals(PaxosCpDB.Outcome.ABORTED, db.commit().outcome());
  }

  @Test
  void theReadSetEndsWhereTheScanStopped() throws Exception {
    PaxosCpDB db = binding("record");
    PaxosCpDB other = binding("record");
    load(db, "g");

    assertTrue(db.begin("g"));
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, db.scan("g", "k01", 2, null, rows));
    assertEquals(List.of(both("k01"), both("k02")), strings(rows));
    assertEquals(Status.OK, db.update("g", "k01", record("k01")));

    // An insert well past the records read does not touch the read set.
    assertTrue(other.begin("g"));
    assertEquals(Status.OK, other.insert("g", "k04a", record("k04a")));
    assertEquals(PaxosCpDB.Outcome.COMMITTED, other.commit().outcome());
    assertEquals(PaxosCpDB.Outcome.COMMITTED, db.commit().outcome());
  }

  @Test
  void inATransactionAcrossGroupsTheTableNamesTheGroupScanned() throws Exception {
    PaxosCpDB db = binding("record");
    load(db, "g1");
    load(db, "g2");
    db.beginMulti();
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    assertEquals(Status.OK, db.scan("g1", "k04", 5, Set.of("field0"), rows));
    assertEquals(Status.OK, db.scan("g2", "k01", 1, Set.of("field1"), rows));
    assertEquals(List.of(Map.of("field0", "k04-0"), Map.of("field0", "k05-0"),
        Map.of("field1", "k01-1")), strings(rows));
    PaxosCpDB.CommitInfo info = db.commit();
    assertEquals(PaxosCpDB.Outcome.COMMITTED, info.outcome());
    assertTrue(info.readOnly());
  }

  @Test
  void badArgumentsAreBadRequestsAndSendNothing() throws Exception {
    PaxosCpDB db = binding("table");
    assertEquals("BAD_REQUEST", db.scan("t", "k", 0, null, new Vector<>()).getName());
    assertEquals("BAD_REQUEST", db.scan("t", "\0k", 1, null, new Vector<>()).getName());
  }
}
