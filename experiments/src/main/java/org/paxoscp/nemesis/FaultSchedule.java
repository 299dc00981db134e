package org.paxoscp.nemesis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The seeded order of a nemesis run's faults: after two fault-free seconds, the selected kinds
 * in rounds, each round a shuffle of every kind, each fault held 1.5 to 4 s and followed by 0.5
 * to 2 s of calm. The first round always completes, so every kind gets its turn however slowly
 * processes start; later rounds stop once {@code duration} has passed.
 *
 * <p>One seeded random drives the order, the holds and the injector's own choices (which service,
 * which DC): the same seed gives the same schedule as long as the injector draws the same.
 */
final class FaultSchedule {
  /** Carries out one fault. */
  interface Injector {
    /**
     * Injects {@code fault} for about {@code holdMs}, heals it, and returns.
     *
     * @param random the schedule's random, for the injector's own choices
     */
    void inject(Fault fault, long holdMs, SplittableRandom random);
  }

  /** Time, so that a test can run a schedule in virtual time. */
  interface Clock {
    long nanoTime();

    void sleep(long millis);

    /** The system's clock; sleeping is {@link Thread#sleep}. */
    static Clock system() {
      return new Clock() {
        @Override
        public long nanoTime() {
          return System.nanoTime();
        }

        @Override
        public void sleep(long millis) {
          try {
            Thread.sleep(millis);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
          }
        }
      };
    }
  }

  private final List<Fault> kinds;
  private final long seed;

  FaultSchedule(Set<Fault> kinds, long seed) {
    List<Fault> sorted = new ArrayList<>(kinds);
    Collections.sort(sorted);
    this.kinds = List.copyOf(sorted);
    this.seed = seed;
  }

  /** Runs the schedule for at least {@code duration}, handing each fault to {@code injector}. */
  void run(Duration duration, Injector injector, Clock clock) {
    SplittableRandom random = new SplittableRandom(seed);
    long end = clock.nanoTime() + duration.toNanos();
    List<Fault> round = new ArrayList<>();
    clock.sleep(2000); // some fault-free commits first
    boolean firstRound = true;
    while ((firstRound || clock.nanoTime() - end < 0) && !kinds.isEmpty()) {
      if (round.isEmpty()) {
        round.addAll(kinds);
        Collections.shuffle(round, new Random(random.nextLong()));
      }
      Fault f = round.remove(0);
      firstRound &= !round.isEmpty();
      long hold = 1500 + random.nextLong(2500);
      injector.inject(f, hold, random);
      clock.sleep(500 + random.nextLong(1500));
    }
  }
}
