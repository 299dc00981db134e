package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.paxos.PlantedBugs;
import org.paxoscp.paxos.ProposerFactory;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.Admission;

/**
 * "No UNKNOWN without a fault" (docs/guarantees.md, "Overload"): with clients far beyond what the
 * services can serve and no fault at all, every commit ends COMMITTED or ABORTED, the checker
 * finds the history serializable, and the services did refuse requests OVERLOADED (PREPAREs and
 * ACCEPTs among them), so the refusal path was taken. Two planted bugs show the test can fail:
 * a service that answers a refused ACCEPT as a vote (a refusal counted as a vote: two values get
 * chosen), and a proposer that gives up after its attempts although every DC answered (UNKNOWN
 * where nothing failed). The same holds under the services' default admission settings, whose
 * long queues stretch every phase to hundreds of milliseconds ({@link #queueing}). {@code
 * -Dsim.overloadSeeds=N} sets the schedules per mode (default 3).
 */
@Timeout(600)
class OverloadSimulationTest {
  private static final int SEEDS = Integer.getInteger("sim.overloadSeeds", 3);
  private static final long FIRST_SEED = 4_500_000;
  /** Schedules per mode of the default-admission shape ({@code -Dsim.queueingSeeds}). */
  private static final int QUEUEING_SEEDS = Integer.getInteger("sim.queueingSeeds", 2);

  /**
   * 100 clients at 5 transactions per second each over one group, against DCs with one worker
   * of 2 ms per request: several times what a DC can serve. No faults; no deadlines (a deadline
   * is the caller's own choice to stop following a commit).
   */
  static Simulator overloaded(Protocol protocol, long seed, ProposerFactory proposers) {
    SimConfig cfg = SimConfig.paperDefaults(protocol, List.of("V1", "V2", "V3"), seed)
        .withWorkload(100, 100, 4, 600)
        .withTiming(5.0, 20_000)
        .withServiceMicros(2_000);
    return new Simulator(cfg, proposers).withDeadlines(0)
        .withServiceCapacity(1, new Admission(16, Duration.ofMillis(200)));
  }

  /**
   * The same clients against DCs with one worker of 4 ms per request under the services' default
   * admission ({@link Admission#DEFAULT}: 1,024 requests, 500 ms): requests queue for hundreds of
   * milliseconds before any is refused, so every phase takes that long and proposers on the hot
   * positions outbid each other unless their contention back-off scales with it.
   */
  static Simulator queueing(Protocol protocol, long seed, ProposerFactory proposers) {
    SimConfig cfg = SimConfig.paperDefaults(protocol, List.of("V1", "V2", "V3"), seed)
        .withWorkload(100, 100, 4, 600)
        .withTiming(5.0, 20_000)
        .withServiceMicros(4_000);
    return new Simulator(cfg, proposers).withDeadlines(0)
        .withServiceCapacity(1, Admission.DEFAULT);
  }

  /** What the runs of one shape added up to. */
  private record Totals(List<String> failures, int unknown, int committed, int overloadAborts,
      long backoffs, Map<String, Long> refusals) {}

  private static Totals runAll(Protocol protocol, int seeds,
      java.util.function.LongFunction<Simulator> shape) {
    List<String> failures = new ArrayList<>();
    Map<String, Long> refusals = new TreeMap<>();
    int unknown = 0;
    int committed = 0;
    int overloadAborts = 0;
    long backoffs = 0;
    for (long seed = FIRST_SEED; seed < FIRST_SEED + seeds; seed++) {
      Simulator sim = shape.apply(seed);
      SimResult r = sim.run();
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + seed + (r.finished() ? "" : " (did not finish)") + ": "
            + r.check().summary());
      }
      unknown += r.unknown();
      committed += r.committed();
      overloadAborts += sim.overloadAborts();
      backoffs += sim.clientOverloadBackoffs();
      sim.overloadRefusals().forEach((k, v) -> refusals.merge(k, v, Long::sum));
    }
    return new Totals(failures, unknown, committed, overloadAborts, backoffs, refusals);
  }

  @ParameterizedTest
  @EnumSource(value = Protocol.class, names = {"BASIC", "CP"})
  void noCommitEndsUnknownUnderOverloadWithoutFaults(Protocol protocol) {
    Totals t = runAll(protocol, SEEDS,
        seed -> overloaded(protocol, seed, ProposerFactory.STANDARD));
    assertTrue(t.failures().isEmpty(), String.join("\n", t.failures()));
    assertEquals(0, t.unknown(), "commits ended UNKNOWN without any fault");
    // Not vacuous: the services were overloaded, refused votes and promises, and clients backed
    // off; and work still got done.
    assertTrue(t.refusals().getOrDefault("prepare", 0L) > 0
        && t.refusals().getOrDefault("accept", 0L) > 0,
        "no PREPARE or no ACCEPT was refused: " + t.refusals());
    assertTrue(t.backoffs() > 0, "no client backed off");
    assertTrue(t.committed() > 0, "nothing committed");
    System.out.printf("%s: %d schedules, %d committed, %d aborted overloaded, %d back-offs, "
        + "refused %s%n", protocol, SEEDS, t.committed(), t.overloadAborts(), t.backoffs(),
        t.refusals());
  }

  /**
   * The default admission settings ({@link #queueing}): no UNKNOWN either, where a contention
   * back-off bounded by {@code backoffMax} (200 ms) let proposers duel through their 64 ballots
   * and end UNKNOWN by the hundred.
   */
  @ParameterizedTest
  @EnumSource(value = Protocol.class, names = {"BASIC", "CP"})
  void noCommitEndsUnknownWhenDefaultQueuesStretchEveryPhase(Protocol protocol) {
    Totals t = runAll(protocol, QUEUEING_SEEDS,
        seed -> queueing(protocol, seed, ProposerFactory.STANDARD));
    assertTrue(t.failures().isEmpty(), String.join("\n", t.failures()));
    assertEquals(0, t.unknown(), "commits ended UNKNOWN without any fault");
    assertTrue(t.committed() > 0, "nothing committed");
    System.out.printf("%s, default admission: %d schedules, %d committed, %d aborted overloaded, "
        + "%d back-offs, refused %s%n", protocol, QUEUEING_SEEDS, t.committed(),
        t.overloadAborts(), t.backoffs(), t.refusals());
  }

  @Test
  void aRefusalAnsweredAsAVoteIsCaught() {
    int caught = 0;
    for (long seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
      SimResult r = overloaded(Protocol.CP, seed, ProposerFactory.STANDARD)
          .withRefusalsCountedAsVotes().run();
      caught += r.safe() ? 0 : 1;
    }
    assertTrue(caught > 0, "a refused ACCEPT counted as a vote went unnoticed in " + SEEDS
        + " schedules");
  }

  @Test
  void aProposerThatGivesUpWhileDcsAnswerIsCaught() {
    int unknown = 0;
    for (long seed = FIRST_SEED; seed < FIRST_SEED + SEEDS; seed++) {
      SimResult r = overloaded(Protocol.CP, seed, PlantedBugs.GivesUpOnAnsweredRefusals::new)
          .run();
      assertTrue(r.safe(), r.check().summary());
      unknown += r.unknown();
    }
    assertTrue(unknown > 0, "a proposer giving up on answered refusals reported no UNKNOWN");
  }
}
