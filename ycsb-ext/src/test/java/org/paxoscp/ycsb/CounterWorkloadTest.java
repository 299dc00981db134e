package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.Status;

/**
 * The counter workload against an in-process cluster: many threads adding to a few hot counters
 * in Paxos-CP commit with no conflict abort, and the counters read at every DC match the tallies;
 * a binding that adds more than it tallies, or loses an add, fails the validation.
 */
@Timeout(120)
class CounterWorkloadTest {
  @TempDir
  Path dir;

  @BeforeEach
  void startCluster() {
    InProcessPaxosCpDB.cluster = new InProcessCluster(Duration.ofSeconds(1), 60_000);
    TamperingDB.DONE.set(false);
    LosingAddDB.DONE.set(false);
  }

  @AfterEach
  void stop() {
    InProcessPaxosCpDB.cluster.close();
  }

  private Properties props(boolean run, double reads) {
    Properties p = new Properties();
    p.setProperty(CounterWorkload.GROUPS, "2");
    p.setProperty(CounterWorkload.KEYS, "3");
    p.setProperty(CounterWorkload.MAX_DELTA, "10");
    p.setProperty(CounterWorkload.READ_PROPORTION, Double.toString(reads));
    p.setProperty(PaxosCpDB.PROTOCOL, "cp");
    p.setProperty("dotransactions", Boolean.toString(run));
    p.setProperty(ClosedEconomyWorkload.VALIDATION_FILE, dir.resolve("validation").toString());
    return p;
  }

  private static CounterWorkload workload() {
    return new CounterWorkload() {
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

  /** Loads both groups, then runs 6 threads of 30 transactions each with {@code dbs}. */
  private CounterWorkload loadAndRun(double reads, Supplier<? extends PaxosCpDB> dbs)
      throws Exception {
    CounterWorkload load = workload();
    Properties lp = props(false, reads);
    load.init(lp);
    assertEquals(2, Harness.load(load, lp, 1, 2, InProcessPaxosCpDB::new));
    load.cleanup();
    CounterWorkload run = workload();
    Properties rp = props(true, reads);
    run.init(rp);
    Harness.run(run, rp, 6, 30, dbs);
    run.cleanup();
    return run;
  }

  private String validation() throws Exception {
    return Files.readString(dir.resolve("validation"), StandardCharsets.UTF_8);
  }

  @Test
  void concurrentIncrementsCommitWithoutConflictsAndEveryDcHoldsTheTally() throws Exception {
    CounterWorkload w = loadAndRun(0.2, InProcessPaxosCpDB::new);
    assertTrue(validation().startsWith("OK"), validation());
    CounterWorkload.Tally t = w.total();
    assertTrue(t.committedCount > 0, "no increment committed");
    assertEquals(0, t.lostPositionAborts,
        "an add reads nothing: Paxos-CP promotes it past a lost position, it never conflicts");
    assertTrue(w.readsChecked.get() > 0, "no read committed");
    assertEquals(0, w.readAnomalies.get());
  }

  /**
   * Adds 1,000,000 more than asked, outside every client's tally, until one transaction that did
   * so has committed (several threads may each do it once before that).
   */
  static final class TamperingDB extends InProcessPaxosCpDB {
    static final AtomicBoolean DONE = new AtomicBoolean();
    private boolean tampered;

    @Override
    public boolean begin(String group) {
      tampered = false;
      return super.begin(group);
    }

    @Override
    public Status add(String table, String key, String field, long delta) {
      if (inTransaction() && !DONE.get() && !tampered) {
        tampered = true;
        return super.add(table, key, field, delta + 1_000_000);
      }
      return super.add(table, key, field, delta);
    }

    @Override
    public CommitInfo commit() {
      CommitInfo info = super.commit();
      if (tampered && info.outcome() == Outcome.COMMITTED) {
        DONE.set(true);
      }
      return info;
    }
  }

  @Test
  void aCounterAboveItsTallyFailsTheValidation() throws Exception {
    loadAndRun(0, TamperingDB::new);
    String v = validation();
    assertTrue(v.startsWith("FAILED"), v);
    // Named at every DC: the validation reads at or past the tampered commit's position.
    for (String dc : new String[] {"A", "B", "C"}) {
      assertTrue(v.matches("(?s).*counter counters-\\d/counter\\d at DC " + dc
          + " is \\d+, expected \\d+ .*"), v);
    }
  }

  /**
   * Answers OK to an add inside a transaction without buffering it, until one transaction that
   * lost its add has committed.
   */
  static final class LosingAddDB extends InProcessPaxosCpDB {
    static final AtomicBoolean DONE = new AtomicBoolean();
    private boolean lost;

    @Override
    public boolean begin(String group) {
      lost = false;
      return super.begin(group);
    }

    @Override
    public Status add(String table, String key, String field, long delta) {
      if (inTransaction() && !DONE.get()) {
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
  void aLostIncrementFailsTheValidation() throws Exception {
    loadAndRun(0, LosingAddDB::new);
    String v = validation();
    assertTrue(v.startsWith("FAILED") && v.contains("expected"), v);
  }
}
