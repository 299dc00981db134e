package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimConfig.Faults;

/**
 * Many seeded schedules, every commit mode, every fault mix; each run is judged by the checker.
 * {@code -Dsim.seeds=N} sets the number of schedules per commit mode (default 2,000), split evenly
 * over the fault mixes. A failure names the seed and how to replay it.
 *
 * <p>Every run is also judged as it happens by the simulator's {@code ChosenOracle}, which sees
 * every vote: two values chosen at one position, or an APPLY for a value not yet chosen, fails
 * it even when no client noticed. Leader combination's schedules place batchers by leading
 * costs given (the emulated WAN's; half of them), by none ({@code Simulator#withoutLeaderCosts}:
 * several DCs may batch a group at once; a quarter) and by round trips the services measure
 * ({@code Simulator#withMeasuredRtts}, probing every 100 ms: the batcher moves once the table
 * is agreed, and DCs may disagree for a while; a quarter); a quarter of the schedules run log
 * and version GC beside the workload.
 *
 * <p>A fifth of the schedules of every mix but the clean one also replay messages
 * ({@link SimConfig.Replay}, {@link #REPLAY}): late copies of 5% of the messages, to their
 * destination or redirected to another DC's service, the wire's checks not being simulated;
 * {@code -Dsim.replayAll=true} replays in every such schedule.
 *
 * <p>The same schedules run again with every service's per-group caches emptied after each
 * request it handles ({@code Simulator#withForcedEviction}, docs/architecture.md section 9):
 * {@code -Dsim.evictionSeeds=N} schedules per commit mode (default 700).
 */
@Timeout(600)
class SimulationSafetyTest {

  static final int SEEDS_PER_PROTOCOL = Integer.getInteger("sim.seeds", 2000);
  static final int EVICTION_SEEDS_PER_PROTOCOL = Integer.getInteger("sim.evictionSeeds", 700);
  static final boolean REPLAY_ALL = Boolean.getBoolean("sim.replayAll");

  /**
   * The replay of the schedules that have it: 5% of the messages again, 10 ms to 10 s late. A
   * schedule's workload takes about a second of virtual time, so copies arrive during it and
   * long after, when the positions they name are decided, applied, collected.
   */
  static final SimConfig.Replay REPLAY = new SimConfig.Replay(0.05, 10_000, 10_000_000);

  /**
   * The mixes of {@link FaultMix} but the compound one (which
   * {@code LeaderCompoundFaultsSimulationTest} runs).
   */
  enum Mix {
    CLEAN(FaultMix.CLEAN),
    LOSSY(FaultMix.LOSSY),
    PARTITIONS(FaultMix.PARTITIONS),
    CRASHES(FaultMix.CRASHES),
    OUTAGES(FaultMix.OUTAGES),
    RESTARTS(FaultMix.RESTARTS),
    EVERYTHING(FaultMix.EVERYTHING),
    TARGETED(FaultMix.TARGETED),
    STORE(FaultMix.STORE);

    final Faults faults;

    Mix(FaultMix mix) {
      this.faults = mix.faults();
    }
  }

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (Protocol p : Protocol.values()) {
      for (Mix m : Mix.values()) {
        out.add(Arguments.of(p, m));
      }
    }
    return out.stream();
  }

  /**
   * Small, highly contended schedules: few keys, short transactions, high arrival rate, a tenth
   * of the reads range reads ({@link SimConfig#DEFAULT_SCAN_SHARE}), a tenth of the writes and
   * reads on counters and counting sets ({@link SimConfig#DEFAULT_UPDATE_SHARE}), and a
   * topology that rotates between three close DCs, the paper's V-O-C, and five DCs. One seed in
   * five (every seed with {@code -Dsim.replayAll=true}) of the mixes with faults replays
   * messages ({@link #REPLAY}); 5 is coprime with the moduli the seed picks the rest by (3 and
   * 16), so that replay meets every topology, placement and GC setting.
   */
  static SimConfig schedule(Protocol protocol, Mix mix, long seed) {
    List<String> dcs = switch ((int) Math.floorMod(seed, 3L)) {
      case 0 -> List.of("V1", "V2", "V3");
      case 1 -> List.of("V", "O", "C");
      default -> List.of("V1", "V2", "V3", "O", "C");
    };
    SimConfig base = SimConfig.paperDefaults(protocol, dcs, seed);
    return base
        .withProposer(base.proposer().withPhaseTimeoutMicros(400_000))
        .withWorkload(4 + (int) Math.floorMod(seed, 3L), 12, 5, 30)
        .withTiming(8.0, 3_000)
        .withScanShare(SimConfig.DEFAULT_SCAN_SHARE)
        .withUpdateShare(SimConfig.DEFAULT_UPDATE_SHARE)
        .withFaults(replays(mix, seed) ? mix.faults.withReplay(REPLAY) : mix.faults);
  }

  /** Whether the schedule of {@code mix} and {@code seed} replays messages. */
  static boolean replays(Mix mix, long seed) {
    return mix != Mix.CLEAN && (REPLAY_ALL || Math.floorMod(seed, 5L) == 2);
  }

  /**
   * The simulator for a schedule: leader combination with leading costs given for even seeds,
   * without any for seeds 1 mod 4, with round trips measured for seeds 3 mod 4 (the production
   * modes without WAN emulation: probes off and on); log and version GC running beside the
   * workload for one seed in four, of every residue mod 4 ({@link GcSimulationTest#GC}:
   * retention 2, a round per applied position).
   */
  static Simulator simulator(SimConfig cfg) {
    Simulator sim = new Simulator(cfg);
    if (cfg.protocol() == Protocol.LEADER && Math.floorMod(cfg.seed(), 4L) == 1) {
      sim.withoutLeaderCosts();
    } else if (cfg.protocol() == Protocol.LEADER && Math.floorMod(cfg.seed(), 4L) == 3) {
      // Short runs: probe every 100 ms, so that the measured table is in use for most of it.
      sim.withMeasuredRtts(java.time.Duration.ofMillis(100));
    }
    if (Math.floorMod(cfg.seed() / 4, 4L) == 1) {
      sim.withGc(GcSimulationTest.GC);
    }
    return sim;
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("cases")
  void everyScheduleIsOneCopySerializable(Protocol protocol, Mix mix) {
    check(protocol, mix, SEEDS_PER_PROTOCOL, false);
  }

  @ParameterizedTest(name = "{0} {1}, caches evicted after every request")
  @MethodSource("cases")
  void everyScheduleIsOneCopySerializableWithCachesEvictedAfterEveryRequest(Protocol protocol,
      Mix mix) {
    check(protocol, mix, EVICTION_SEEDS_PER_PROTOCOL, true);
  }

  private static void check(Protocol protocol, Mix mix, int seedsPerProtocol, boolean evict) {
    int perCase = Math.max(1, (seedsPerProtocol + Mix.values().length - 1)
        / Mix.values().length);
    // Evicting runs start elsewhere in the seed space, so that they add schedules.
    long firstSeed = 1_000L * mix.ordinal() + 100_000L * protocol.ordinal()
        + (evict ? 50_000L : 0);
    long evictions = 0;
    long targetedHits = 0;
    long collected = 0;
    long storeFaults = 0;
    SimResult.Replays replays = SimResult.Replays.NONE;
    SimResult.Updates updates = SimResult.Updates.NONE;
    List<String> failures = new ArrayList<>();
    long committed = 0;
    long promoted = 0;
    long combined = 0;
    SimResult.Exercised exercised = SimResult.Exercised.none();
    long dcsStarted = 0;
    for (int i = 0; i < perCase; i++) {
      SimConfig cfg = schedule(protocol, mix, firstSeed + i);
      dcsStarted += cfg.dcs().size();
      Simulator sim = simulator(cfg);
      if (evict) {
        sim.withForcedEviction();
      }
      SimResult r = sim.run();
      evictions += sim.forcedEvictions();
      targetedHits += sim.targetedHits();
      storeFaults += sim.storeFaults();
      collected += sim.collectedPositions();
      replays = replays.plus(r.replays());
      updates = updates.plus(r.updates());
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + cfg.seed() + (r.finished() ? "" : " (did not finish)")
            + (cfg.faults().replay().on() ? " (replaying)" : "") + ": "
            + r.check().summary() + " " + r.applyConflicts() + " " + r.oracleViolations()
            + "\n  replay: SimulationSafetyTest.simulator(SimulationSafetyTest.schedule("
            + protocol + ", " + mix + ", " + cfg.seed() + "))"
            + (evict ? " with forced eviction" : "")
            + (REPLAY_ALL ? ", -Dsim.replayAll=true" : ""));
      }
      committed += r.commitsByRound().values().stream().mapToInt(Integer::intValue).sum();
      promoted += r.commitsByRound().entrySet().stream().filter(e -> e.getKey() > 0)
          .mapToInt(java.util.Map.Entry::getValue).sum();
      combined += r.combinedTxns();
      exercised = exercised.plus(r.exercised());
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + perCase + " schedules violated "
        + "safety:\n" + String.join("\n", failures.subList(0, Math.min(5, failures.size()))));
    // The schedules must exercise the protocol, not pass vacuously.
    assertTrue(committed > perCase, "too few commits: " + committed);
    if (evict) {
      assertTrue(evictions > committed, "caches were hardly ever emptied: " + evictions);
    }
    if (perCase >= 8) {
      assertTrue(collected > 0, "GC never collected a position: " + collected);
    }
    if (mix == Mix.STORE) {
      assertTrue(storeFaults > perCase, "store faults hardly happened: " + storeFaults);
    }
    if (mix == Mix.TARGETED) {
      assertTrue(targetedHits > perCase, "targeted faults hardly hit: " + targetedHits);
    }
    if (mix != Mix.CLEAN && perCase >= 10) {
      assertTrue(replays.copies() > 0 && replays.redirected() > 0
          && replays.unmatchedReplies() > 0, "replay hardly happened: " + replays);
    }
    if (protocol == Protocol.CP && perCase >= 20) {
      assertTrue(promoted > 0, "no transaction was ever promoted");
    }
    if (protocol == Protocol.CP && mix == Mix.CLEAN && perCase >= 20) {
      assertTrue(combined > 0, "no position was ever combined");
    }
    // Counters and sets: updates committed and read, entries refused where they landed, and
    // every DC's state read back at the end.
    if (perCase >= 8) {
      assertTrue(updates.entriesApplied() > 0 && updates.reads() > 0
          && updates.finalReads() > 0, "updates hardly happened: " + updates);
    }
    if (perCase >= 100) {
      assertTrue(updates.refused() > 0, "no entry was ever refused: " + updates);
    }
    // Every path of the shipped service ran: begin, reads and scans at a read position, the
    // acceptor, grants, APPLY, learning from peers; learners and restarts where the mix makes
    // them.
    for (String type : List.of("BeginRequest", "ReadRequest", "ScanRequest", "Prepare",
        "Accept", "GrantRequest", "Apply", "Learn", "UpdatesRequest")) {
      assertTrue(exercised.messages(type) > 0, "no " + type + " was sent: " + exercised);
    }
    if (protocol == Protocol.LEADER) {
      assertTrue(exercised.messages("SubmitRequest") > 0 && exercised.leaderRounds() > 0
          && exercised.leaderCommits() > 0, "leader combination never ran: " + exercised);
      if (perCase >= 20 && (mix == Mix.RESTARTS || mix == Mix.EVERYTHING || mix == Mix.STORE)) {
        assertTrue(exercised.restartsMidRound() > 0, "no leader service was killed with a "
            + "round in flight: " + exercised);
        assertTrue(exercised.concurrentLeaderRounds() > 0, "two instances of one DC never ran "
            + "leader rounds at once: " + exercised);
      }
    } else {
      assertEquals(0, exercised.messages("SubmitRequest"), "a proposer mode submitted");
    }
    if (perCase >= 20) {
      assertTrue(exercised.learnedFromPeers() > 0, "no position learned from a peer: "
          + exercised);
      if (mix == Mix.EVERYTHING) {
        assertTrue(exercised.learnedByLearner() > 0, "no learner instance ran: " + exercised);
      }
      if (mix == Mix.RESTARTS || mix == Mix.EVERYTHING || mix == Mix.STORE) {
        assertTrue(exercised.restarts() > 0, "no service instance restarted: " + exercised);
        // One instance per DC, one more for a DC served twice in every run, one per restart.
        assertEquals(dcsStarted + perCase + exercised.restarts(), exercised.instances(),
            "instances started: " + exercised);
      }
    }
    System.out.printf("%s %s%s: %d schedules, %d committed, %d positions collected, %d store "
            + "faults, %d messages hit by targeted faults, %s, %s, %s%n", protocol, mix,
        evict ? " (caches evicted after every request, " + evictions + " times)" : "", perCase,
        committed, collected, storeFaults, targetedHits, replays, updates, exercised);
  }
}
