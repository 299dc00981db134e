package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.ByteIterator;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * The closed economy against an in-process cluster: its audits list each group's accounts by a
 * range read, in one group and across groups, and a listing with an account too many is caught.
 */
@Timeout(120)
class ClosedEconomyAuditTest {
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

  private Properties props(boolean run, double xg) {
    Properties p = new Properties();
    p.setProperty(ClosedEconomyWorkload.GROUPS, "2");
    p.setProperty(ClosedEconomyWorkload.ACCOUNTS, "5");
    p.setProperty(ClosedEconomyWorkload.AUDIT_PROPORTION, "0.4");
    p.setProperty(ClosedEconomyWorkload.XG_PROPORTION, Double.toString(xg));
    p.setProperty(PaxosCpDB.PROTOCOL, "cp");
    p.setProperty("dotransactions", Boolean.toString(run));
    p.setProperty(ClosedEconomyWorkload.VALIDATION_FILE, dir.resolve("validation").toString());
    return p;
  }

  private static ClosedEconomyWorkload workload() {
    return new ClosedEconomyWorkload() {
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

  /** Counts the binding's scans and reads. */
  static class CountingDB extends InProcessPaxosCpDB {
    static final AtomicLong SCANS = new AtomicLong();

    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
        Vector<HashMap<String, ByteIterator>> result) {
      SCANS.incrementAndGet();
      return super.scan(table, startkey, recordcount, fields, result);
    }
  }

  /** Lists one account too many: a phantom holding nothing. */
  static final class PhantomAccountDB extends InProcessPaxosCpDB {
    @Override
    public Status scan(String table, String startkey, int recordcount, Set<String> fields,
        Vector<HashMap<String, ByteIterator>> result) {
      Status s = super.scan(table, startkey, recordcount, fields, result);
      HashMap<String, ByteIterator> phantom = new HashMap<>();
      phantom.put(PaxosCpDB.VALUE_FIELD, new StringByteIterator("0"));
      result.add(phantom);
      return s;
    }
  }

  private ClosedEconomyWorkload loadAndRun(double xg, int threads,
      Supplier<? extends PaxosCpDB> dbs) throws Exception {
    ClosedEconomyWorkload load = workload();
    Properties lp = props(false, xg);
    load.init(lp);
    assertEquals(2, Harness.load(load, lp, 1, 2, InProcessPaxosCpDB::new));
    load.cleanup();
    ClosedEconomyWorkload run = workload();
    Properties rp = props(true, xg);
    run.init(rp);
    Harness.run(run, rp, threads, 60 / threads, dbs);
    run.cleanup();
    return run;
  }

  private String validation() throws Exception {
    return Files.readString(dir.resolve("validation"), StandardCharsets.UTF_8);
  }

  @Test
  void auditsListEachGroupByAScanAndFindTheTotal() throws Exception {
    CountingDB.SCANS.set(0);
    ClosedEconomyWorkload w = loadAndRun(0, 2, CountingDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    assertTrue(w.audits.get() > 0, "no audit committed");
    assertEquals(0, w.auditAnomalies.get());
    assertTrue(CountingDB.SCANS.get() >= w.audits.get(), "audits without scans");
  }

  @Test
  void auditsAcrossGroupsListEveryGroupByAScan() throws Exception {
    CountingDB.SCANS.set(0);
    // One client: an audit across groups then never meets another client's transfer half done
    // (its own it waits for), so audits commit whatever the timing.
    ClosedEconomyWorkload w = loadAndRun(0.5, 1, CountingDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    assertTrue(w.audits.get() > 0, "no audit committed");
    assertEquals(0, w.auditAnomalies.get());
    assertTrue(CountingDB.SCANS.get() >= 2 * w.audits.get(), "an audit without a scan per group");
  }

  @Test
  void anAuditThatListsAPhantomAccountFailsTheValidation() throws Exception {
    ClosedEconomyWorkload w = loadAndRun(0, 2, PhantomAccountDB::new);
    assertTrue(w.auditAnomalies.get() > 0, "the phantom went unnoticed");
    String v = validation();
    assertTrue(v.startsWith("FAILED") && v.contains("listed 6 accounts"), v);
  }
}
