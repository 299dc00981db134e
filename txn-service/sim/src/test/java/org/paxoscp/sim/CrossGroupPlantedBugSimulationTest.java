package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimulationSafetyTest.Mix;

/**
 * The cross-group rules broken on purpose in the simulated clients: the checker must find the
 * violation each rule prevents, in the hot schedules {@link CrossGroupSimulationTest} runs
 * safely. Prints the detection rate (schedules per catch) over a fixed number of schedules.
 * Read-only transactions without validation are caught with outages only, about once in 15
 * schedules (the simulated clients run the client library, whose reads of keys locked at the read
 * position are refused: the anomaly needs one group read before the writer's PREPARE there and
 * another after its RESOLVE; since one-round commits lock the coordinator too, that window is
 * rare in clean schedules: 2 in 200 with Paxos-CP, none in 200 to 400 in the other modes). A
 * PREPARE that ignores its close key is caught once in about 20 schedules with every fault: it
 * needs a settler to close a group while the PREPARE is still being placed there.
 */
@Timeout(600)
class CrossGroupPlantedBugSimulationTest {
  @ParameterizedTest(name = "{0} {1} {2} {3}")
  @CsvSource({
      "IGNORE_LOCKS, CP, CLEAN, 60, LOCK_VIOLATED",
      "IGNORE_LOCKS, LEADER, CLEAN, 60, LOCK_VIOLATED",
      "IGNORE_LOCKS, BASIC, CLEAN, 60, LOCK_VIOLATED",
      "DECIDE_WITHOUT_EVERY_PREPARE, CP, CLEAN, 60, XG_ATOMICITY",
      "DECIDE_WITHOUT_EVERY_PREPARE, LEADER, CLEAN, 60, XG_ATOMICITY",
      "DECIDE_WITHOUT_EVERY_PREPARE, BASIC, CLEAN, 60, XG_ATOMICITY",
      "SKIP_READ_ONLY_VALIDATION, CP, OUTAGES, 300, XG_CYCLE",
      "SKIP_READ_ONLY_VALIDATION, LEADER, OUTAGES, 300, XG_CYCLE",
      "SKIP_READ_ONLY_VALIDATION, BASIC, OUTAGES, 300, XG_CYCLE",
      "PREPARE_IGNORES_CLOSE, CP, EVERYTHING, 200, XG_ATOMICITY",
      "PREPARE_IGNORES_CLOSE, LEADER, EVERYTHING, 200, XG_ATOMICITY"})
  void theCheckerCatchesThePlantedBug(Simulator.XgPlant plant, Protocol protocol, Mix mix,
      int schedules, Kind kind) {
    int caught = 0;
    long firstSeed = 9_000_000L + 10_000L * plant.ordinal() + 1_000L * protocol.ordinal()
        + 100_000L * mix.ordinal();
    for (int i = 0; i < schedules; i++) {
      SimResult r = CrossGroupSimulationTest.hot(protocol, mix, firstSeed + i)
          .withXgPlant(plant).run();
      if (r.check().has(kind)) {
        caught++;
      }
    }
    System.out.printf("planted %s, %s %s: %s in %d of %d schedules (%s schedules per catch)%n",
        plant, protocol, mix, kind, caught, schedules,
        caught == 0 ? "-" : String.format("%.1f", (double) schedules / caught));
    assertTrue(caught > 0, "the checker never caught " + plant + " in " + schedules
        + " schedules");
  }
}
