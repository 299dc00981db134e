package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.function.LongFunction;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.check.Violation;
import org.paxoscp.client.ClientHooks;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimulationSafetyTest.Mix;

/**
 * Bugs planted in the client library itself ({@link ClientHooks.Plant}), which the simulated
 * clients run: the normal run must catch each, on schedules where the shipped library passes
 * (the safety suites run the same schedules with it). Prints each rate (schedules per catch).
 */
@Timeout(600)
class ClientPlantedBugSimulationTest {

  /**
   * A begin in a group whose session position the client dropped from its cache (a cache of
   * one group, forced eviction; four groups) skips the majority floor query and takes what its
   * home DC has applied: when that DC lags (half the APPLYs lost, the rest late: targeted
   * faults on APPLY) it serves a snapshot older than the client's own last commit there, which
   * the simulator's session check sees as it happens. The shipped begin asks a majority first.
   */
  @Test
  void aBeginThatSkipsTheFloorQueryBreaksTheSession() {
    assertCaught("begin without the floor query after an evicted session", 100,
        seed -> new Simulator(SimulationSafetyTest.schedule(Protocol.CP, Mix.TARGETED, seed)
                .withWorkload(3, 20, 5, 60))
            .withCrossGroup(4, 0.0, CrossGroupSimulationTest.LOCK_TIMEOUT_MICROS)
            .withForcedEviction().withTargetedType("Apply")
            .withClientPlant(ClientHooks.Plant.SKIP_FLOOR_QUERY),
        r -> r.oracleViolations().stream().anyMatch(v -> v.contains("session position")));
  }

  /**
   * An unknown outcome "settled" by sending the same entry again through the next DC, as a
   * fail-over without settling would: the first try can still be chosen, so the entry lands
   * twice, or the outcome reported contradicts the log.
   */
  @ParameterizedTest
  @EnumSource(value = Protocol.class, names = {"BASIC", "CP"})
  void aRetryElsewhereWithoutSettlingIsCaught(Protocol protocol) {
    assertCaught("commit retried at another DC without settling (" + protocol + ")", 100,
        seed -> new Simulator(UnknownRangeSimulationTest.stormy(protocol, seed))
            .withClientPlant(ClientHooks.Plant.RETRY_UNKNOWN_ELSEWHERE),
        r -> !r.safe());
  }

  /**
   * A read in a group whose begin listed only the oldest cross-group locks (small replies cut
   * the table; clients crashing between PREPARE and DECIDE leave locks until their deadline)
   * checked against the locks listed only: it reads a key that an unlisted PREPARE holds.
   */
  @Test
  void aReadUncheckedOnACutLockTableIsCaught() {
    assertCaught("read unchecked on a cut lock table", 400,
        seed -> CrossGroupSimulationTest.hot(Protocol.CP, Mix.CRASHES, seed)
            .withReplyLimit(CrossGroupSimulationTest.SMALL_REPLIES)
            .withClientPlant(ClientHooks.Plant.CUT_TABLE_READS_UNCHECKED),
        r -> r.check().has(Violation.Kind.LOCK_VIOLATED) || !r.check().ok());
  }

  /**
   * A commit stopped at its deadline reported ABORTED although its entry had gone out in an
   * ACCEPT: under loss, someone finishing that position later chooses it, and the history holds
   * an ABORTED transaction that is in the log. Every transaction has a deadline here.
   */
  @Test
  void aDeadlineAbortOfASentEntryIsCaught() {
    assertCaught("commit past its deadline ABORTED with its entry sent", 60,
        seed -> new Simulator(UnknownRangeSimulationTest.stormy(Protocol.CP, seed))
            .withDeadlines(1.0)
            .withClientPlant(ClientHooks.Plant.DEADLINE_ABORTS_SENT),
        r -> !r.safe());
  }

  /**
   * An outcome handle naming only the first position its commit is sent for (promotions
   * uncapped): a crashed or unknown commit that a promotion took further is settled with it as
   * ABORTED while it is in the log at a later position.
   */
  @Test
  void aHandleNarrowerThanItsCommitIsCaught() {
    assertCaught("outcome handle naming the first position only", 200,
        seed -> new Simulator(UnknownRangeSimulationTest.stormy(Protocol.CP, seed))
            .withClientPlant(ClientHooks.Plant.HANDLE_RANGE_FIRST_ONLY),
        r -> !r.safe());
  }

  /**
   * Runs {@code schedules} seeds of {@code planted}, prints the rate and needs one catch; the
   * same seeds with the library as shipped ({@code planted} without its plant) must all be safe.
   */
  private static void assertCaught(String bug, int schedules, LongFunction<Simulator> planted,
      Predicate<SimResult> caught) {
    int hits = 0;
    for (long seed = 1; seed <= schedules; seed++) {
      if (caught.test(planted.apply(12_000_000L + seed).run())) {
        hits++;
      }
      SimResult shipped = planted.apply(12_000_000L + seed).withoutClientPlants().run();
      assertTrue(shipped.safe() && shipped.finished(), bug + ": seed " + (12_000_000L + seed)
          + " is not safe with the shipped library: " + shipped.check().summary() + " "
          + shipped.oracleViolations());
    }
    PlantedBugRate.report(bug, hits, schedules);
    assertTrue(hits > 0, bug + ": never caught in " + schedules + " schedules");
  }
}
