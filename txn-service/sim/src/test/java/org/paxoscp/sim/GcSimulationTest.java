package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.paxoscp.check.Violation;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimulationSafetyTest.Mix;

/**
 * Log and version GC (docs/architecture.md section 7) running concurrently with the workload under
 * every fault mix and both protocols, judged by the serializability checker; and the planted bug
 * (reads served below the watermark) that the checker must catch. {@code -Dsim.gcSeeds=N} sets the
 * schedules per case (default 40).
 */
@Timeout(300)
class GcSimulationTest {

  static final int SEEDS = Integer.getInteger("sim.gcSeeds", 40);

  /** Retention of 2 positions, a round per applied position: collection overtakes many reads. */
  static final SimGc GC = new SimGc(2, 1, false);

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (Protocol p : Protocol.values()) {
      for (Mix m : Mix.values()) {
        out.add(Arguments.of(p, m));
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void collectionUnderFaultsStaysOneCopySerializable(Protocol protocol, Mix mix) {
    List<String> failures = new ArrayList<>();
    long collected = 0;
    long tooOld = 0;
    long committed = 0;
    long firstSeed = 7_000L + 1_000L * mix.ordinal() + 100_000L * protocol.ordinal();
    for (int i = 0; i < SEEDS; i++) {
      SimConfig cfg = SimulationSafetyTest.schedule(protocol, mix, firstSeed + i);
      Simulator sim = new Simulator(cfg).withGc(GC);
      SimResult r = sim.run();
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + cfg.seed() + (r.finished() ? "" : " (did not finish)") + ": "
            + r.check().summary() + " " + r.applyConflicts());
      }
      collected += sim.collectedPositions();
      tooOld += sim.tooOldReads() + sim.tooOldRequests();
      committed += r.commitsByRound().values().stream().mapToInt(Integer::intValue).sum();
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + SEEDS + " schedules violated "
        + "safety:\n" + String.join("\n", failures.subList(0, Math.min(5, failures.size()))));
    // Not vacuous: positions were collected, commits happened, and TOO_OLD was answered.
    assertTrue(collected > SEEDS, "too little collected: " + collected);
    assertTrue(committed > SEEDS, "too few commits: " + committed);
    assertTrue(tooOld > 0, "no request ever met the watermark");
  }

  /**
   * The contended schedule with more transactions and mostly reads: a transaction whose read
   * position was overtaken cannot commit writes there, so the wrong values it reads (and the
   * keys its scans miss) show in the checked history through the read-only transactions.
   */
  static SimConfig plantedSchedule(long seed) {
    return SimulationSafetyTest.schedule(Protocol.CP, Mix.CLEAN, seed).withWorkload(6, 12, 5, 300)
        .withKeys(0.8, false);
  }

  @Test
  void readsServedBelowTheWatermarkAreCaught() {
    int caught = 0;
    int runs = 100;
    for (long seed = 1; seed <= runs; seed++) {
      SimResult r = new Simulator(plantedSchedule(seed)).withGc(new SimGc(1, 1, true)).run();
      // A read below the watermark gets a wrong value; a scan there also misses the keys whose
      // versions at its read position were collected (a phantom).
      if (r.check().has(Violation.Kind.WRONG_READ_VALUE)
          || r.check().has(Violation.Kind.PHANTOM)) {
        caught++;
      }
    }
    PlantedBugRate.report("reads served below the watermark", caught, runs);
    assertTrue(caught >= 5, "the planted bug was caught in only " + caught + " of " + runs
        + " runs");
  }

  @Test
  void theSameSchedulesAreCleanWithTheWatermarkChecked() {
    for (long seed = 1; seed <= 20; seed++) {
      Simulator sim = new Simulator(plantedSchedule(seed)).withGc(new SimGc(1, 1, false));
      SimResult r = sim.run();
      assertTrue(r.safe() && r.finished(), "seed " + seed + ": " + r.check());
    }
  }
}
