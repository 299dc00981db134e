package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
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
import site.ycsb.WorkloadException;

/**
 * The closed economy with {@code ce.credit=add} against an in-process cluster: transfers read only
 * their source and credit the destination by an add, in one group and across groups, and every
 * group's total still holds at every DC; a lost credit fails the validation.
 */
@Timeout(120)
class ClosedEconomyAddCreditTest {
  @TempDir
  Path dir;

  @BeforeEach
  void startCluster() {
    InProcessPaxosCpDB.cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
    WatchingDB.ADDS.set(0);
    WatchingDB.READ_CREDITED.set(0);
    LosingCreditDB.DONE.set(false);
  }

  @AfterEach
  void stop() {
    InProcessPaxosCpDB.cluster.close();
  }

  private Properties props(boolean run, double xg) {
    Properties p = new Properties();
    p.setProperty(ClosedEconomyWorkload.GROUPS, "2");
    p.setProperty(ClosedEconomyWorkload.ACCOUNTS, "5");
    p.setProperty(ClosedEconomyWorkload.AUDIT_PROPORTION, "0.2");
    p.setProperty(ClosedEconomyWorkload.XG_PROPORTION, Double.toString(xg));
    p.setProperty(ClosedEconomyWorkload.CREDIT, "add");
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

  /** Counts the adds, and the transactions that read an account they also credit by an add. */
  static final class WatchingDB extends InProcessPaxosCpDB {
    static final AtomicLong ADDS = new AtomicLong();
    static final AtomicLong READ_CREDITED = new AtomicLong();
    private final Set<String> read = new HashSet<>();

    @Override
    public boolean begin(String group) {
      read.clear();
      return super.begin(group);
    }

    @Override
    public void beginMulti() {
      read.clear();
      super.beginMulti();
    }

    @Override
    public Status read(String table, String key, Set<String> fields,
        Map<String, ByteIterator> result) {
      read.add(table + "/" + key);
      return super.read(table, key, fields, result);
    }

    @Override
    public Status add(String table, String key, String field, long delta) {
      ADDS.incrementAndGet();
      if (read.contains(table + "/" + key)) {
        READ_CREDITED.incrementAndGet();
      }
      return super.add(table, key, field, delta);
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
  void transfersCreditedByAnAddKeepEveryGroupsTotal() throws Exception {
    ClosedEconomyWorkload w = loadAndRun(0, 4, WatchingDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    assertTrue(WatchingDB.ADDS.get() > 0, "no transfer credited by an add");
    assertEquals(0, WatchingDB.READ_CREDITED.get(), "a transfer read the account it credited");
    assertEquals(0, w.auditAnomalies.get());
  }

  @Test
  void transfersAcrossGroupsCreditedByAnAddKeepTheSum() throws Exception {
    // One client, as in ClosedEconomyAuditTest: its audits across groups then always commit.
    ClosedEconomyWorkload w = loadAndRun(0.5, 1, WatchingDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    assertTrue(WatchingDB.ADDS.get() > 0, "no transfer credited by an add");
    assertEquals(0, w.auditAnomalies.get());
  }

  /** Drops the credits (answers OK, buffers nothing) until a transfer without one committed. */
  static final class LosingCreditDB extends InProcessPaxosCpDB {
    static final AtomicBoolean DONE = new AtomicBoolean();
    private boolean lost;

    @Override
    public boolean begin(String group) {
      lost = false;
      return super.begin(group);
    }

    @Override
    public Status add(String table, String key, String field, long delta) {
      if (!DONE.get()) {
        lost = true;
        return Status.OK;
      }
      return super.add(table, key, field, delta);
    }

    @Override
    public CommitInfo commit() {
      CommitInfo info = super.commit();
      if (lost && info.outcome() == Outcome.COMMITTED) {
        DONE.set(true);
      }
      return info;
    }
  }

  @Test
  void aLostCreditFailsTheValidation() throws Exception {
    loadAndRun(0, 2, LosingCreditDB::new);
    String v = validation();
    assertTrue(v.startsWith("FAILED") && v.matches("(?s).*group bank-\\d at DC [ABC] totals "
        + "\\d+, expected 5000.*"), v);
  }

  @Test
  void anUnknownCreditModeIsRefused() {
    Properties p = props(true, 0);
    p.setProperty(ClosedEconomyWorkload.CREDIT, "gift");
    WorkloadException e = assertThrows(WorkloadException.class, () -> workload().init(p));
    assertTrue(e.getMessage().contains("ce.credit must be rmw or add"), e.getMessage());
  }
}
