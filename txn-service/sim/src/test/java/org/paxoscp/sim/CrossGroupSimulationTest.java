package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimulationSafetyTest.Mix;

/**
 * Cross-group transactions (docs/architecture.md section 10) in seeded schedules: four entity
 * groups, a third of the transactions spanning 2 to 5 of them (a fifth of those read-only), the
 * rest one-group (a quarter of those read-only), every commit mode and every fault mix of
 * {@link SimulationSafetyTest}, client crashes falling between PREPARE and DECIDE and between
 * DECIDE and RESOLVE; half of the schedules run log and version GC at every DC in every group.
 * Each run is judged by the {@code CrossGroupChecker} over every group's whole log (collected
 * positions included) and every observation. A tenth of the writes are counter and set updates
 * ({@link SimConfig#DEFAULT_UPDATE_SHARE}): committed as updates in one group, turned into a
 * read and a put before the steps across groups. One schedule in five runs a cluster held at
 * version 5, where commits across groups take two rounds (the PREPAREs, then the DECIDE); the
 * others commit in one round. {@code -Dsim.xgSeeds=N} sets the schedules per commit mode
 * (default 2,000).
 */
@Timeout(900)
class CrossGroupSimulationTest {
  static final int SEEDS_PER_PROTOCOL = Integer.getInteger("sim.xgSeeds", 2000);
  static final int GROUPS = 4;
  static final double XG_FRACTION = 0.35;
  static final long LOCK_TIMEOUT_MICROS = 1_500_000;

  /**
   * The run of one schedule (for replaying a failing seed), {@link #withGcAndReadOnly}; one seed
   * in three with forced eviction: every client keeps one group's session position only, so that
   * its begins in the other groups ask a majority for their floor, under every fault mix.
   */
  static Simulator simulator(Protocol protocol, Mix mix, long seed) {
    Simulator sim = withGcAndReadOnly(new Simulator(SimulationSafetyTest.schedule(protocol, mix,
        seed)).withCrossGroup(GROUPS, XG_FRACTION, LOCK_TIMEOUT_MICROS), seed);
    if (seed % 5 == 4) {
      // A cluster held at version 5: commits across groups take the two rounds of the builds
      // before one round.
      sim.withClusterVersion(org.paxoscp.version.ClusterVersion.COMMUTATIVE_UPDATES);
    }
    return seed % 3 == 0 ? sim.withForcedEviction() : sim;
  }

  /** The share of one-group transactions that only read ({@link #withGcAndReadOnly}). */
  static final double READ_ONLY_SHARE = 0.25;

  /**
   * GC in the schedules that have it: retention 2, a round every 4 applied positions of a group
   * at each DC. Every round asks every other DC for its applied position, four groups' rounds
   * per position (as {@link GcSimulationTest#GC} has) would add half again to a schedule's
   * messages; a round every 4 positions adds a seventh, and the watermark still passes PREPAREs
   * whose locks are held.
   */
  static final SimGc GC = new SimGc(2, 4, false);

  /**
   * Whether the schedule of {@code seed} runs GC: seeds 0 and 1 mod 4, half of them, of every
   * residue mod 2 (small replies in the hot schedules), 3 (topology, forced eviction) and 5
   * (replayed messages).
   */
  static boolean collects(long seed) {
    return Math.floorMod(seed / 2, 2L) == 0;
  }

  /**
   * {@code sim} as this suite runs it: a quarter of the one-group transactions read-only
   * ({@link #READ_ONLY_SHARE}), whose reads the client refuses where a PREPARE's lock at the read
   * position holds the key; and, where {@link #collects}, log and version GC at every DC in
   * every group ({@link #GC}), so that the watermark passes unresolved PREPAREs, DECIDEs and
   * RESOLVEs during the run. The checker judges each group's whole log at every DC, what was
   * collected included.
   */
  static Simulator withGcAndReadOnly(Simulator sim, long seed) {
    sim.withOneGroupReadOnly(READ_ONLY_SHARE);
    return collects(seed) ? sim.withGc(GC) : sim;
  }

  /**
   * Replies of services in the hot schedules with an odd seed: small enough that a begin reply
   * lists only the first of a group's locks (in id order) once two or three PREPAREs hold keys
   * there (the client then refuses reads and commits in the group until they are resolved).
   */
  static final int SMALL_REPLIES = 512;

  /**
   * A hotter schedule: three keys per group, six clients, 48 transactions; with an odd seed,
   * small replies ({@link #SMALL_REPLIES}). The planted-bug tests run it as it is; this suite
   * adds read-only transactions and GC ({@link #hotWithGcAndReadOnly}).
   */
  static Simulator hot(Protocol protocol, Mix mix, long seed) {
    Simulator sim = new Simulator(SimulationSafetyTest.schedule(protocol, mix, seed)
        .withWorkload(6, 3, 4, 48)).withCrossGroup(GROUPS, XG_FRACTION, LOCK_TIMEOUT_MICROS);
    return seed % 2 == 1 ? sim.withReplyLimit(SMALL_REPLIES) : sim;
  }

  /** A hot schedule as this suite runs it: {@link #hot}, {@link #withGcAndReadOnly}. */
  static Simulator hotWithGcAndReadOnly(Protocol protocol, Mix mix, long seed) {
    return withGcAndReadOnly(hot(protocol, mix, seed), seed);
  }

  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("org.paxoscp.sim.SimulationSafetyTest#cases")
  void crossGroupSchedulesAreOneCopySerializable(Protocol protocol, Mix mix) {
    run(protocol, mix, SEEDS_PER_PROTOCOL, 7_000_000L, false);
  }

  /** The hot schedules, a tenth as many (they caught the stale-validation bug first). */
  @ParameterizedTest(name = "{0} {1}")
  @MethodSource("org.paxoscp.sim.SimulationSafetyTest#cases")
  void hotCrossGroupSchedulesAreOneCopySerializable(Protocol protocol, Mix mix) {
    run(protocol, mix, Math.max(Mix.values().length, SEEDS_PER_PROTOCOL / 10), 8_000_000L,
        true);
  }

  private static void run(Protocol protocol, Mix mix, int seedsPerProtocol, long seedBase,
      boolean hot) {
    int perCase = Math.max(1, (seedsPerProtocol + Mix.values().length - 1)
        / Mix.values().length);
    long firstSeed = seedBase + 1_000L * mix.ordinal() + 100_000L * protocol.ordinal();
    List<String> failures = new ArrayList<>();
    Simulator.XgCounts total = new Simulator.XgCounts();
    long oneGroupCommits = 0;
    long oneGroupReadOnly = 0;
    SimResult.Updates updates = SimResult.Updates.NONE;
    Simulator.Collected collected = Simulator.Collected.NONE;
    int collecting = 0;
    for (int i = 0; i < perCase; i++) {
      Simulator sim = hot ? hotWithGcAndReadOnly(protocol, mix, firstSeed + i)
          : simulator(protocol, mix, firstSeed + i);
      collecting += collects(firstSeed + i) ? 1 : 0;
      SimResult r = sim.run();
      if (!r.safe() || !r.finished()) {
        failures.add("seed " + (firstSeed + i) + (r.finished() ? "" : " (did not finish)")
            + ": " + r.check().summary() + " " + r.applyConflicts()
            + "\n  replay: CrossGroupSimulationTest."
            + (hot ? "hotWithGcAndReadOnly(" : "simulator(") + protocol
            + ", " + mix + ", " + (firstSeed + i) + ").run()");
      }
      Simulator.XgCounts c = sim.crossGroupCounts();
      total.committed += c.committed;
      total.aborted += c.aborted;
      total.unknown += c.unknown;
      total.crashed += c.crashed;
      total.readOnly += c.readOnly;
      total.locksMet += c.locksMet;
      total.resolves += c.resolves;
      total.abortDecides += c.abortDecides;
      total.closes += c.closes;
      total.readOnlyRefused += c.readOnlyRefused;
      collected = collected.plus(sim.collected());
      oneGroupCommits += r.commitsByRound().values().stream().mapToInt(Integer::intValue).sum();
      oneGroupReadOnly += r.readOnlyCommits();
      updates = updates.plus(r.updates());
    }
    assertTrue(failures.isEmpty(), failures.size() + " of " + perCase + " schedules violated "
        + "safety:\n" + String.join("\n", failures.subList(0, Math.min(5, failures.size()))));
    // Not vacuous: cross-group commits, aborts, met locks and resolutions all happened.
    assertTrue(total.committed > perCase / 4, "too few cross-group commits: " + total);
    assertTrue(total.resolves > 0 && total.locksMet > 0, "no lock was met or resolved: " + total);
    if (perCase >= 100 && (mix == Mix.CRASHES || mix == Mix.EVERYTHING)) {
      assertTrue(total.crashed > 0 && total.abortDecides > 0,
          "no client crashed mid-protocol, or no one decided ABORT for it: " + total);
    }
    if (perCase >= 20) {
      // Updates in one group committed as updates, across groups turned into reads and puts.
      assertTrue(updates.entriesApplied() > 0 && updates.materialized() > 0,
          "updates hardly happened: " + updates);
    }
    // GC in every group, its watermark passing PREPAREs whose locks were still held and DECIDEs.
    if (collecting >= 2) {
      assertTrue(collected.byGroup().size() == GROUPS
          && collected.byGroup().values().stream().allMatch(n -> n > 0),
          "GC did not collect in every group: " + collected);
    }
    if (perCase >= 20) {
      assertTrue(collected.lockedPrepares() > 0 && collected.decides() > 0,
          "GC never passed an unresolved PREPARE, or never a DECIDE: " + collected);
    }
    // One-group read-only transactions whose reads met a lock and were refused.
    if (perCase >= 10) {
      assertTrue(total.readOnlyRefused > 0, "no read of a one-group read-only transaction was "
          + "refused for a lock: " + total);
    }
    System.out.printf("xg%s %s %s: %d schedules (%d with GC), %d one-group commits (and %d "
            + "read-only), %s, %s, %s%n", hot ? " (hot)" : "", protocol, mix, perCase, collecting,
        oneGroupCommits, oneGroupReadOnly, total, collected, updates);
  }
}
