package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Violation;
import org.paxoscp.paxos.PlantedBugs;
import org.paxoscp.paxos.Protocol;

/**
 * Proof that the simulator and checker can fail: a Paxos-CP proposer that promotes without the
 * conflict check is caught on ordinary contended schedules; one that counts votes per value
 * across ballots (ARCHITECTURE 5.2) is caught by the simulator's vote oracle on the safety
 * suite's schedules, though it reaches a client-visible violation only in a specific
 * interleaving ({@code PromotionCounterexampleTest} replays one).
 */
@Timeout(300)
class PlantedBugSimulationTest {

  @Test
  void promotionWithoutConflictCheckIsCaught() {
    int caught = 0;
    long firstCaught = -1;
    for (long seed = 1; seed <= 20; seed++) {
      SimConfig cfg = SimConfig.paperDefaults(Protocol.CP, List.of("V1", "V2", "V3"), seed)
          .withWorkload(4, 10, 6, 40)
          .withTiming(4.0, 10_000);
      SimResult r = new Simulator(cfg, PlantedBugs.NoPromotionConflictCheck::new).run();
      if (r.check().has(Violation.Kind.CONFLICTING_WRITE)) {
        caught++;
        if (firstCaught < 0) {
          firstCaught = seed;
        }
      }
    }
    assertTrue(caught >= 10, "the planted bug was caught in only " + caught + " of 20 runs");
  }

  @Test
  void votesCountedAcrossBallotsAreCaught() {
    int runs = 0;
    int caught = 0;
    for (SimulationSafetyTest.Mix mix : SimulationSafetyTest.Mix.values()) {
      for (long seed = 1; seed <= 60; seed++) {
        SimResult r = new Simulator(SimulationSafetyTest.schedule(Protocol.CP, mix, seed),
            PlantedBugs.VotesCountedAcrossBallots::new).run();
        runs++;
        if (r.oracleViolations().stream().anyMatch(v -> v.startsWith("learning:")
            || v.startsWith("agreement:"))) {
          caught++;
        }
      }
    }
    System.out.printf("votes counted across ballots: caught in %d of %d schedules (one in %.0f)%n",
        caught, runs, caught == 0 ? Double.NaN : (double) runs / caught);
    assertTrue(caught >= 3, "caught in only " + caught + " of " + runs + " schedules");
  }

  @Test
  void theSafetySuiteSchedulesAreCleanWithTheRealProposer() {
    for (SimulationSafetyTest.Mix mix : SimulationSafetyTest.Mix.values()) {
      for (long seed = 1; seed <= 60; seed++) {
        SimResult r = new Simulator(SimulationSafetyTest.schedule(Protocol.CP, mix, seed)).run();
        assertTrue(r.safe(), mix + " seed " + seed + ": " + r.check() + r.oracleViolations());
      }
    }
  }

  @Test
  void theSameSchedulesAreCleanWithTheRealProposer() {
    for (long seed = 1; seed <= 20; seed++) {
      SimConfig cfg = SimConfig.paperDefaults(Protocol.CP, List.of("V1", "V2", "V3"), seed)
          .withWorkload(4, 10, 6, 40)
          .withTiming(4.0, 10_000);
      SimResult r = new Simulator(cfg).run();
      assertTrue(r.safe(), "seed " + seed + ": " + r.check());
    }
  }
}
