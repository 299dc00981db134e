package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.Violation;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.sim.SimConfig.Faults;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * Proof that the simulator and checker catch leader combination's placement, answering and
 * granting rules broken (docs/architecture.md section 5.5): the same schedules are clean with the
 * shipped rules and violate one-copy serializability, or Paxos's agreement as the simulator's vote
 * oracle sees it, with each planted bug. A list proposed at the fast ballot without the grant needs
 * two batchers at one position: the production mode without leading costs, where several DCs batch
 * ({@code FastWithoutGrantCounterexampleTest} replays the interleaving by hand).
 */
@Timeout(300)
class LeaderPlantedBugSimulationTest {
  private static final int SEEDS = 20;

  /** Places entries without the placement rule's conflict check (chosen values and list). */
  static final class NoPlacementCheck extends LeaderCombiner.Rules {
    @Override
    protected boolean conflicts(LogEntry entry, LogValue earlier) {
      return false;
    }
  }

  /** Answers COMMITTED as soon as the list goes out, before a majority accepted it. */
  static final class CommittedBeforeChosen extends LeaderCombiner.Rules {
    @Override
    protected boolean answerWhenProposed() {
      return true;
    }
  }

  /** Contended: few keys, many clients in three DCs, a fast arrival rate. */
  private static SimConfig contended(long seed, Faults faults) {
    return SimConfig.paperDefaults(Protocol.LEADER, List.of("V", "O", "C"), seed)
        .withWorkload(9, 10, 6, 60)
        .withTiming(6.0, 10_000)
        .withFaults(faults);
  }

  private static final Faults LOSSY = new Faults(0.10, 0.05, 0.10, false, false, false, false,
      false);
  /** Lossy, and one DC served by two service instances at once (two batchers if it batches). */
  private static final Faults TWO_INSTANCES = new Faults(0.10, 0.05, 0.10, false, false, false,
      false, true);

  private static int caught(LeaderCombiner.Rules rules, Faults faults, int seeds,
      Predicate<SimResult> violation) {
    int caught = 0;
    for (long seed = 1; seed <= seeds; seed++) {
      SimResult r = new Simulator(contended(seed, faults)).withLeaderRules(rules).run();
      if (violation.test(r)) {
        caught++;
      }
    }
    return caught;
  }

  @Test
  void placementWithoutTheConflictCheckIsCaught() {
    int caught = caught(new NoPlacementCheck(), Faults.NONE, SEEDS,
        r -> r.check().has(Violation.Kind.CONFLICTING_WRITE)
            || r.check().has(Violation.Kind.WRONG_READ_VALUE));
    assertTrue(caught >= SEEDS / 2, "caught in only " + caught + " of " + SEEDS + " runs");
  }

  @Test
  void committedBeforeAMajorityAcceptedIsCaught() {
    int caught = caught(new CommittedBeforeChosen(), LOSSY, SEEDS,
        r -> r.check().has(Violation.Kind.COMMITTED_NOT_IN_LOG)
            || r.check().has(Violation.Kind.WRONG_COMMIT_POSITION));
    assertTrue(caught >= 1, "an early COMMITTED was never caught in " + SEEDS + " runs");
  }

  /** Proposes every list at the fast ballot, whether or not the position's grant is held. */
  static final class FastWithoutGrant extends LeaderCombiner.Rules {
    @Override
    protected boolean fastWithoutGrant() {
      return true;
    }
  }

  @Test
  void aFastListWithoutTheGrantIsCaughtInTheProductionMode() {
    PlantedBugRate.assertCaughtOnSafetySuite("fast list without the grant", Protocol.LEADER,
        cfg -> new Simulator(cfg).withoutLeaderCosts().withLeaderRules(new FastWithoutGrant()),
        r -> r.oracleViolations().stream().anyMatch(v -> v.startsWith("agreement:"))
            || r.check().has(Violation.Kind.AGREEMENT), 3);
  }

  /** Judges entries as if withdrawals were not there. */
  static final class IgnoresWithdrawals extends LeaderCombiner.Rules {
    @Override
    protected boolean conflicts(LogEntry entry, LogValue earlier) {
      return Placement.conflicts(earlier.entries().stream()
          .filter(e -> !Placement.withdraws(e, entry)).toList(), entry);
    }
  }

  @Test
  void aBatcherThatIgnoresWithdrawalsIsCaught() {
    int caught = 0;
    int runs = 0;
    for (long seed = 2_300_000; seed < 2_300_300; seed++) {
      SimResult r = new Simulator(UnknownRangeSimulationTest.stormy(Protocol.LEADER, seed))
          .withLeaderRules(new IgnoresWithdrawals()).run();
      runs++;
      if (r.check().has(Violation.Kind.ABORTED_IN_LOG)) {
        caught++;
      }
    }
    PlantedBugRate.report("withdrawals ignored", caught, runs);
    assertTrue(caught >= 1, "a placement after the withdrawal was never caught in " + runs
        + " schedules");
  }

  @Test
  void theSafetySuiteSchedulesAreCleanInTheProductionModeWithTheShippedRules() {
    for (SimulationSafetyTest.Mix mix : SimulationSafetyTest.Mix.values()) {
      for (long seed = 1; seed <= PlantedBugRate.SEEDS_PER_MIX; seed++) {
        SimResult r = new Simulator(SimulationSafetyTest.schedule(Protocol.LEADER, mix, seed))
            .withoutLeaderCosts().run();
        assertTrue(r.safe() && r.finished(), mix + " seed " + seed + ": " + r.check()
            + r.oracleViolations());
      }
    }
  }

  @Test
  void theSameSchedulesAreCleanWithTheShippedRules() {
    for (Faults faults : List.of(Faults.NONE, LOSSY, TWO_INSTANCES)) {
      for (long seed = 1; seed <= SEEDS; seed++) {
        SimResult r = new Simulator(contended(seed, faults)).run();
        assertTrue(r.safe() && r.finished(), "seed " + seed + ": " + r.check());
      }
    }
  }
}
