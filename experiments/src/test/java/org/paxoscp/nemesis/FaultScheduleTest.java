package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The nemesis's fault schedule alone, in virtual time. */
class FaultScheduleTest {

  /** A virtual clock: sleeping advances it, nothing waits. */
  private static final class VirtualClock implements FaultSchedule.Clock {
    long nanos;

    @Override
    public long nanoTime() {
      return nanos;
    }

    @Override
    public void sleep(long millis) {
      nanos += millis * 1_000_000;
    }
  }

  private record Step(Fault fault, long holdMs, long atMs, int victim) {}

  /** Records each fault, holds it as the real injector would, and draws a victim as it does. */
  private static List<Step> run(Set<Fault> kinds, long seed, Duration duration) {
    VirtualClock clock = new VirtualClock();
    List<Step> steps = new ArrayList<>();
    new FaultSchedule(kinds, seed).run(duration, (f, hold, random) -> {
      steps.add(new Step(f, hold, clock.nanos / 1_000_000, random.nextInt(4)));
      clock.sleep(hold);
    }, clock);
    return steps;
  }

  @Test
  void theSameSeedGivesTheSameSchedule() {
    Set<Fault> all = EnumSet.allOf(Fault.class);
    List<Step> a = run(all, 4242, Duration.ofSeconds(120));
    assertEquals(a, run(all, 4242, Duration.ofSeconds(120)));
    assertNotEquals(a, run(all, 4243, Duration.ofSeconds(120)));
    // The order does not depend on the order the kinds were given in.
    List<Fault> reversed = new ArrayList<>(all);
    java.util.Collections.reverse(reversed);
    assertEquals(a, run(new java.util.LinkedHashSet<>(reversed), 4242, Duration.ofSeconds(120)));
  }

  @Test
  void theFirstRoundInjectsEveryKindOnceEvenWithNoTimeLeft() {
    for (long seed = 1; seed <= 20; seed++) {
      List<Step> steps = run(EnumSet.allOf(Fault.class), seed, Duration.ZERO);
      assertEquals(Fault.values().length, steps.size(), "seed " + seed + ": " + steps);
      Set<Fault> seen = new HashSet<>();
      steps.forEach(s -> seen.add(s.fault()));
      assertEquals(EnumSet.allOf(Fault.class), seen, "seed " + seed);
    }
  }

  @Test
  void laterRoundsRunUntilTheDurationHasPassedAndEachRoundHoldsEveryKind() {
    Set<Fault> kinds = EnumSet.of(Fault.PAUSE, Fault.PARTITION, Fault.NET_BURST);
    List<Step> steps = run(kinds, 7, Duration.ofSeconds(90));
    assertTrue(steps.size() > kinds.size(), "more than one round in 90 s: " + steps);
    for (int from = 0; from + kinds.size() <= steps.size(); from += kinds.size()) {
      Set<Fault> round = new HashSet<>();
      steps.subList(from, from + kinds.size()).forEach(s -> round.add(s.fault()));
      assertEquals(kinds, round, "round at step " + from + ": " + steps);
    }
    // No fault starts after the duration, but the last one may begin just before it ends.
    Step last = steps.get(steps.size() - 1);
    assertTrue(last.atMs() < 90_000, "last fault at " + last.atMs() + " ms");
  }

  @Test
  void holdsAndTheCalmFirstStayInTheirRanges() {
    List<Step> steps = run(EnumSet.allOf(Fault.class), 11, Duration.ofSeconds(300));
    assertEquals(2000, steps.get(0).atMs(), "two fault-free seconds first");
    for (int i = 0; i < steps.size(); i++) {
      Step s = steps.get(i);
      assertTrue(s.holdMs() >= 1500 && s.holdMs() < 4000, s.toString());
      if (i > 0) {
        Step prev = steps.get(i - 1);
        long calm = s.atMs() - prev.atMs() - prev.holdMs();
        assertTrue(calm >= 500 && calm < 2000, "calm of " + calm + " ms before " + s);
      }
    }
  }

  @Test
  void noKindsMeansNoFaults() {
    assertEquals(List.of(), run(Set.of(), 1, Duration.ofSeconds(60)));
  }

  @Test
  void theInjectorsDrawsComeFromTheSameSeededRandom() {
    // A round's order is drawn before its first fault; the holds after a fault come from the
    // same random as the injector's own choices, so an injector that draws more shifts them.
    VirtualClock c1 = new VirtualClock();
    VirtualClock c2 = new VirtualClock();
    List<Fault> drawsOnce = new ArrayList<>();
    List<Fault> drawsTwice = new ArrayList<>();
    new FaultSchedule(EnumSet.allOf(Fault.class), 5).run(Duration.ZERO,
        (f, h, r) -> {
          drawsOnce.add(f);
          r.nextLong();
        }, c1);
    new FaultSchedule(EnumSet.allOf(Fault.class), 5).run(Duration.ZERO,
        (f, h, r) -> {
          drawsTwice.add(f);
          r.nextLong();
          r.nextLong();
        }, c2);
    assertEquals(drawsOnce, drawsTwice);
    assertNotEquals(c1.nanos, c2.nanos);
  }
}
