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
 * across ballots (docs/architecture.md section 5.2) is caught by the simulator's vote oracle on the
 * safety suite's schedules, though it reaches a client-visible violation only in a specific
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
    PlantedBugRate.assertCaughtOnSafetySuite("votes counted across ballots", Protocol.CP,
        cfg -> new Simulator(cfg, PlantedBugs.VotesCountedAcrossBallots::new),
        r -> r.oracleViolations().stream().anyMatch(v -> v.startsWith("learning:")
            || v.startsWith("agreement:")), 3);
  }

  @Test
  void theSafetySuiteSchedulesAreCleanWithTheRealProposer() {
    for (SimulationSafetyTest.Mix mix : SimulationSafetyTest.Mix.values()) {
      for (long seed = 1; seed <= PlantedBugRate.SEEDS_PER_MIX; seed++) {
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
