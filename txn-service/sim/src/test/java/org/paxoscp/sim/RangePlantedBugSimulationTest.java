package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.LongFunction;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.paxos.PlantedBugs;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.sim.SimulationSafetyTest.Mix;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * Proof that the simulator and checker catch range reads (scans) handled wrongly: each planted
 * bug below is caught on seeded schedules, its rate printed, and the same schedules are clean
 * with the shipped code.
 *
 * <ul>
 *   <li>Ranges dropped from the entries ({@link Simulator.RangePlant#DROP_RANGES_FROM_ENTRIES}):
 *       the clients' entries carry no ranges, their histories the scans. The checker reports
 *       every such entry ({@link Kind#ENTRY_MISMATCH}: its ranges differ from what its client
 *       scanned); and with the ranges the histories record put back into the entries, it finds
 *       the phantoms the placement let in ({@link Kind#PHANTOM}).
 *   <li>Scans that ignore the read position ({@link Simulator.RangePlant#SCAN_AT_LATEST}: the
 *       stores answer them at their newest versions): {@link Kind#WRONG_READ_VALUE} (a key
 *       written after the read position, or its newer value) or {@link Kind#PHANTOM}.
 *   <li>Paxos-CP combination by keys alone ({@link PlantedBugs.CombinationIgnoresRanges}),
 *       promotion by keys alone ({@link PlantedBugs.PromotionIgnoresRanges}) and leader
 *       combination's placement by keys alone ({@link PlacementIgnoresRanges}): an entry placed
 *       after one that wrote into a range it scanned, {@link Kind#PHANTOM}.
 * </ul>
 */
@Timeout(600)
class RangePlantedBugSimulationTest {
  private static final int SEEDS = 40;

  /** The safety suite's clean schedule with half the reads range reads. */
  static SimConfig scanning(Protocol protocol, long seed) {
    return SimulationSafetyTest.schedule(protocol, Mix.CLEAN, seed).withScanShare(0.5);
  }

  /**
   * Hot enough for Paxos-CP to combine often: five close DCs, eight clients on twelve keys,
   * 200 transactions, every read a range read.
   */
  static SimConfig hot(Protocol protocol, long seed) {
    SimConfig base =
        SimConfig.paperDefaults(protocol, List.of("V1", "V2", "V3", "V4", "V5"), seed);
    return base.withProposer(base.proposer().withPhaseTimeoutMicros(400_000))
        .withWorkload(8, 12, 5, 200)
        .withTiming(8.0, 3_000)
        .withScanShare(1.0);
  }

  /** Leader combination's placement rule by keys alone: the entry's ranges are ignored. */
  static final class PlacementIgnoresRanges extends LeaderCombiner.Rules {
    @Override
    protected boolean conflicts(LogEntry entry, LogValue earlier) {
      return super.conflicts(PlantedBugs.withoutRanges(entry), earlier);
    }
  }

  private static int caught(String bug, LongFunction<Simulator> simulator,
      Predicate<SimResult> caught) {
    int hits = 0;
    for (long seed = 1; seed <= SEEDS; seed++) {
      if (caught.test(simulator.apply(seed).run())) {
        hits++;
      }
    }
    PlantedBugRate.report(bug, hits, SEEDS);
    return hits;
  }

  @Test
  void rangesDroppedFromTheEntriesAreCaught() {
    int mismatch = 0;
    int phantom = 0;
    int letIn = 0;
    for (long seed = 1; seed <= SEEDS; seed++) {
      Simulator sim = new Simulator(scanning(Protocol.CP, seed))
          .withRangePlant(Simulator.RangePlant.DROP_RANGES_FROM_ENTRIES);
      SimResult r = sim.run();
      if (r.check().violations().stream().anyMatch(v -> v.kind() == Kind.ENTRY_MISMATCH
          && v.message().contains("scanned ranges"))) {
        mismatch++;
      }
      phantom += r.check().has(Kind.PHANTOM) ? 1 : 0;
      letIn += withRangesFromHistory(sim).has(Kind.PHANTOM) ? 1 : 0;
    }
    PlantedBugRate.report("ranges dropped from the entries (ENTRY_MISMATCH)", mismatch, SEEDS);
    PlantedBugRate.report("ranges dropped from the entries (PHANTOM)", phantom, SEEDS);
    PlantedBugRate.report("ranges dropped from the entries (PHANTOM, the entries' ranges put "
        + "back from the history)", letIn, SEEDS);
    assertTrue(mismatch >= SEEDS * 3 / 4, "entries without their ranges were reported in only "
        + mismatch + " of " + SEEDS + " schedules");
    assertTrue(letIn >= SEEDS / 4, "the dropped ranges let a phantom in in only " + letIn
        + " of " + SEEDS + " schedules");
  }

  /**
   * The last run's logs judged again with each entry given the ranges its client's record
   * scanned: the phantoms that placement without the ranges let into the log.
   */
  private static CheckResult withRangesFromHistory(Simulator sim) {
    List<TxnRecord> history = sim.historyOf(Simulator.GROUP);
    Map<String, List<KeyRange>> scanned = new HashMap<>();
    for (TxnRecord r : history) {
      scanned.put(r.txnId(), r.scannedRanges());
    }
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    sim.logs().get(Simulator.GROUP).forEach((dc, log) -> {
      SortedMap<Long, LogValue> restored = new TreeMap<>();
      log.forEach((position, value) -> restored.put(position, new LogValue(
          value.entries().stream().map(e -> scanned.containsKey(e.txnId())
              ? new LogEntry(e.txnId(), e.originDc(), e.readPosition(), e.readSet(),
                  scanned.get(e.txnId()), e.writes(), e.xg())
              : e).toList())));
      logs.put(dc, restored);
    });
    return SerializabilityChecker.check(logs, history);
  }

  private static boolean wrongScan(SimResult r) {
    return r.check().has(Kind.PHANTOM) || r.check().has(Kind.WRONG_READ_VALUE);
  }

  @Test
  void scansThatIgnoreTheReadPositionAreCaught() {
    int caught = caught("scans at the newest versions", seed -> new Simulator(
        scanning(Protocol.CP, seed)).withRangePlant(Simulator.RangePlant.SCAN_AT_LATEST),
        RangePlantedBugSimulationTest::wrongScan);
    assertTrue(caught >= SEEDS / 2, "caught in only " + caught + " of " + SEEDS);
    // On the safety suite's schedules, a tenth of the reads scans.
    PlantedBugRate.assertCaughtOnSafetySuite("scans at the newest versions (safety suite)",
        Protocol.CP,
        cfg -> new Simulator(cfg).withRangePlant(Simulator.RangePlant.SCAN_AT_LATEST),
        RangePlantedBugSimulationTest::wrongScan, 40);
  }

  @Test
  void combinationByKeysAloneIsCaught() {
    int caught = caught("Paxos-CP combination by keys alone", seed -> new Simulator(
        hot(Protocol.CP, seed), PlantedBugs.CombinationIgnoresRanges::new),
        r -> r.check().has(Kind.PHANTOM));
    assertTrue(caught >= SEEDS / 5, "caught in only " + caught + " of " + SEEDS);
    // Combination is rare on the safety suite's schedules: a rate, not a proof.
    PlantedBugRate.assertCaughtOnSafetySuite("Paxos-CP combination by keys alone (safety suite)",
        Protocol.CP, cfg -> new Simulator(cfg, PlantedBugs.CombinationIgnoresRanges::new),
        r -> r.check().has(Kind.PHANTOM), 1);
  }

  @Test
  void promotionByKeysAloneIsCaught() {
    int caught = caught("Paxos-CP promotion by keys alone", seed -> new Simulator(
        scanning(Protocol.CP, seed), PlantedBugs.PromotionIgnoresRanges::new),
        r -> r.check().has(Kind.PHANTOM));
    assertTrue(caught >= SEEDS / 2, "caught in only " + caught + " of " + SEEDS);
    PlantedBugRate.assertCaughtOnSafetySuite("Paxos-CP promotion by keys alone (safety suite)",
        Protocol.CP, cfg -> new Simulator(cfg, PlantedBugs.PromotionIgnoresRanges::new),
        r -> r.check().has(Kind.PHANTOM), 100);
  }

  @Test
  void leaderPlacementByKeysAloneIsCaught() {
    int caught = caught("leader placement by keys alone", seed -> new Simulator(
        scanning(Protocol.LEADER, seed)).withLeaderRules(new PlacementIgnoresRanges()),
        r -> r.check().has(Kind.PHANTOM));
    assertTrue(caught >= SEEDS / 2, "caught in only " + caught + " of " + SEEDS);
  }

  @Test
  void theSameSchedulesAreCleanWithTheShippedCode() {
    for (Protocol protocol : Protocol.values()) {
      for (long seed = 1; seed <= SEEDS; seed++) {
        for (SimConfig cfg : List.of(scanning(protocol, seed), hot(protocol, seed))) {
          Simulator sim = new Simulator(cfg);
          SimResult r = sim.run();
          assertTrue(r.safe() && r.finished(), protocol + " seed " + seed + " (scan share "
              + cfg.scanShare() + "): " + r.check() + r.oracleViolations());
          assertTrue(sim.scans() > 0, "no scan in " + cfg);
          // The re-check the dropped ranges are judged by: the shipped code's entries carry
          // exactly the ranges their histories scanned, so it finds nothing either.
          assertTrue(withRangesFromHistory(sim).ok(), protocol + " seed " + seed);
        }
      }
    }
  }
}
