package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimulationSafetyTest.Mix;
import org.paxoscp.sim.Simulator.StoreLoss;

/**
 * A DC loses its store in mid-run and is rebuilt from its peers while the workload goes on
 * (docs/architecture.md section 12), in every commit mode and fault mix, its services left running
 * through the loss in most runs (killed first in the others), a third of the schedules with log
 * GC beside it and a third with every cache emptied after each request, judged by the
 * serializability checker and the vote oracle; and the planted bug they must catch (the wiped
 * DC votes as if it were new). The planted bugs of a store lost under a running service (a
 * guard that trusts an unfenced meta row, an applier that trusts its memory) are caught by
 * {@code StoreLostUnderRunningServiceTest}: these short schedules reach their states too rarely
 * (docs/rebuilding.md). {@code -Dsim.storeLossSeeds=N} sets the schedules per case (default 30).
 */
@Timeout(600)
class StoreLossSimulationTest {

  static final int SEEDS = Integer.getInteger("sim.storeLossSeeds", 30);

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("org.paxoscp.sim.SimulationSafetyTest#cases")
  void aDcRebuiltAfterLosingItsStoreKeepsTheHistorySerializable(Protocol protocol, Mix mix) {
    List<String> failures = new ArrayList<>();
    int rebuilt = 0;
    int complete = 0;
    int running = 0;
    long refused = 0;
    long changes = 0;
    long firstSeed = 31_000L + 1_000L * mix.ordinal() + 100_000L * protocol.ordinal();
    for (int i = 0; i < SEEDS; i++) {
      SimConfig cfg = SimulationSafetyTest.schedule(protocol, mix, firstSeed + i);
      Simulator sim = new Simulator(cfg).withStoreLoss(StoreLoss.REBUILT);
      if (i % 3 == 0) {
        // A third with log GC beside it: the copy races the peers' collection (a page met by
        // TOO_OLD starts the copy again at a newer position), and the rebuilt DC holds only the
        // log above the position it was copied at.
        sim.withGc(GcSimulationTest.GC);
      } else if (i % 3 == 1) {
        // A third with every cache emptied after each request (docs/architecture.md section 9).
        sim.withForcedEviction();
      }
      SimResult r = sim.run();
      Simulator.StoreLossCounts lost = sim.storeLossCounts();
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + cfg.seed() + (r.finished() ? "" : " (did not finish)") + ": "
            + r.check().summary() + " " + r.applyConflicts() + " " + r.oracleViolations()
            + " store loss: " + lost);
      }
      rebuilt += lost.rebuilt;
      complete += lost.complete ? 1 : 0;
      refused += lost.refused;
      running += lost.servicesRunning ? 1 : 0;
      changes += lost.storeChanges;
    }
    System.out.printf("store loss %s %s: %d schedules, services left running in %d, rebuilt "
        + "groups %d, refused %d, store changes seen by running services %d%n", protocol, mix,
        SEEDS, running, rebuilt, refused, changes);
    assertTrue(failures.isEmpty(), failures.size() + " of " + SEEDS + " schedules violated "
        + "safety:\n" + String.join("\n", failures.subList(0, Math.min(5, failures.size()))));
    // Not vacuous: stores were lost and rebuilt, and the rebuilt DCs refused requests meanwhile.
    assertTrue(complete == SEEDS, "rebuilds completed in " + complete + " of " + SEEDS);
    assertTrue(rebuilt >= SEEDS, "groups rebuilt: " + rebuilt);
    assertTrue(refused > 0, "no request was ever refused as REBUILDING");
    assertTrue(running > 0, "services left running in none of " + SEEDS + " schedules");
    assertTrue(changes > 0, "no running service ever saw its store change");
  }

  /** The planted bug: a wiped DC that votes as if new makes two values chosen somewhere. */
  @Test
  void aWipedDcThatVotesAsIfNewIsCaught() {
    PlantedBugRate.assertCaughtOnSafetySuite("wiped DC votes as if empty", Protocol.CP,
        cfg -> new Simulator(cfg).withStoreLoss(StoreLoss.PLANTED_VOTES_AS_IF_EMPTY),
        r -> !r.oracleViolations().isEmpty() || !r.check().ok(), 4);
  }

}
