package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.check.Violation;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimConfig.Faults;

/**
 * An UNKNOWN outcome names the range of positions its entry can still be chosen at
 * (docs/guarantees.md, "Settling an unknown outcome"): the checker holds every UNKNOWN record against its range
 * ({@link Violation.Kind#UNKNOWN_OUTSIDE_RANGE}). Under heavy faults, in every commit mode, no
 * entry is ever chosen outside it; and the old leader-mode report — only the position after the
 * read position — is caught, since a batcher may still place the entry up to its bound later.
 * Half the unknown outcomes are settled later by their clients ({@code LeaderSubmit#settle}, as
 * {@code TxnClient.settle} does), and the settled answer is what the checker judges.
 * {@code -Dsim.unknownSeeds=N} sets the schedules per mode (default 300).
 */
@Timeout(600)
class UnknownRangeSimulationTest {
  private static final int SEEDS = Integer.getInteger("sim.unknownSeeds", 300);

  /** Heavy faults of every kind, so that many commits end UNKNOWN. */
  static SimConfig stormy(Protocol protocol, long seed) {
    SimConfig base = SimConfig.paperDefaults(protocol, List.of("V1", "V2", "V3"), seed);
    return base.withProposer(base.proposer().withPhaseTimeoutMicros(400_000))
        .withWorkload(4, 12, 5, 30)
        .withTiming(8.0, 3_000)
        .withScanShare(SimConfig.DEFAULT_SCAN_SHARE)
        .withUpdateShare(SimConfig.DEFAULT_UPDATE_SHARE)
        .withFaults(new Faults(0.25, 0.1, 0.5, true, true, true, true, true));
  }

  @ParameterizedTest
  @EnumSource(Protocol.class)
  void noUnknownEntryIsChosenOutsideItsRange(Protocol protocol) {
    List<String> failures = new ArrayList<>();
    SimResult.UnknownFates fates = new SimResult.UnknownFates(0, 0, 0);
    int settledCommitted = 0;
    int settledAborted = 0;
    int settledUnknown = 0;
    for (long seed = 2_300_000; seed < 2_300_000 + SEEDS; seed++) {
      Simulator sim = new Simulator(stormy(protocol, seed));
      SimResult r = sim.run();
      fates = fates.plus(r.unknownFates());
      settledCommitted += sim.settledCounts().committed;
      settledAborted += sim.settledCounts().aborted;
      settledUnknown += sim.settledCounts().unknown;
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + seed + (r.finished() ? "" : " (did not finish)") + ": "
            + r.check().summary());
      }
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + SEEDS + " schedules failed:\n"
        + String.join("\n", failures.subList(0, Math.min(5, failures.size()))));
    // Not vacuous: outcomes were UNKNOWN, and some of their entries were chosen later.
    int unknowns = fates.reported() + settledCommitted + settledAborted;
    assertTrue(unknowns >= SEEDS / 2, "too few UNKNOWN outcomes: " + unknowns + "; " + fates);
    assertTrue(fates.inLog() > 0, "no UNKNOWN entry was ever chosen: " + fates);
    // Half the unknown outcomes are settled later (TxnClient.settle's steps), and the checker
    // holds each settled answer against the log: both answers must occur.
    assertTrue(settledCommitted > 0 && settledAborted > 0, "settles answered committed "
        + settledCommitted + ", aborted " + settledAborted);
    System.out.printf("%s: %d schedules, %s; settled later: %d committed, %d aborted, %d still "
        + "unknown%n", protocol, SEEDS, fates, settledCommitted, settledAborted, settledUnknown);
  }

  @Test
  void anUnknownNamingOnlyTheFirstPositionIsCaughtInLeaderMode() {
    int caught = 0;
    SimResult.UnknownFates fates = new SimResult.UnknownFates(0, 0, 0);
    for (long seed = 2_300_000; seed < 2_300_000 + SEEDS; seed++) {
      SimResult r = new Simulator(stormy(Protocol.LEADER, seed))
          .withUnknownNamingOnlyTheFirstPosition().run();
      fates = fates.plus(r.unknownFates());
      if (r.check().has(Violation.Kind.UNKNOWN_OUTSIDE_RANGE)) {
        caught++;
      }
    }
    System.out.printf("planted narrow UNKNOWN, leader: caught in %d of %d schedules (%s)%n",
        caught, SEEDS, fates);
    assertTrue(caught > 0, "an UNKNOWN naming only read position + 1 was never caught in "
        + SEEDS + " schedules: " + fates);
    // Every entry chosen past read position + 1 is a catch.
    assertTrue(caught >= 1 && fates.pastReadPositionPlusOne() >= caught, fates.toString());
  }
}
