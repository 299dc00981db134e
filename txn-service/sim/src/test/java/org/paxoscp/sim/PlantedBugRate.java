package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.Function;
import java.util.function.Predicate;
import org.paxoscp.paxos.Protocol;

/** How often the simulator catches a planted bug: counted over schedules, printed, asserted. */
final class PlantedBugRate {
  /** Schedules per fault mix of the safety suite that the rate is measured on. */
  static final int SEEDS_PER_MIX = 60;

  private PlantedBugRate() {}

  /**
   * Runs {@code simulator} (the planted bug) on the safety suite's schedules of
   * {@code protocol}, {@link #SEEDS_PER_MIX} per fault mix, counts the runs {@code caught}
   * accepts, prints the rate and requires at least {@code atLeast}.
   */
  static void assertCaughtOnSafetySuite(String bug, Protocol protocol,
      Function<SimConfig, Simulator> simulator, Predicate<SimResult> caught, int atLeast) {
    int runs = 0;
    int hits = 0;
    for (SimulationSafetyTest.Mix mix : SimulationSafetyTest.Mix.values()) {
      for (long seed = 1; seed <= SEEDS_PER_MIX; seed++) {
        runs++;
        if (caught.test(simulator.apply(SimulationSafetyTest.schedule(protocol, mix, seed))
            .run())) {
          hits++;
        }
      }
    }
    report(bug, hits, runs);
    assertTrue(hits >= atLeast, bug + ": caught in only " + hits + " of " + runs + " schedules");
  }

  /** Prints "{@code bug}: caught in H of R schedules (one in N)". */
  static void report(String bug, int caught, int runs) {
    System.out.printf("%s: caught in %d of %d schedules (one in %.0f)%n", bug, caught, runs,
        caught == 0 ? Double.NaN : (double) runs / caught);
  }
}
