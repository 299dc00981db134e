package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** A group the collector does not remember (new, or evicted) gets its rounds where it would have. */
class GroupCollectorTriggerTest {

  /** Whether {@code onApplied(applied)} starts a round for a group unknown to the collector. */
  private static boolean startsRound(long applied, long every) {
    return applied - GroupCollector.assumedLastRound(applied, every) >= every;
  }

  @Test
  void aRoundStartsExactlyAtTheMultiplesOfTheInterval() {
    assertEquals(false, startsRound(1, 100));
    assertEquals(false, startsRound(99, 100));
    assertEquals(true, startsRound(100, 100));
    assertEquals(false, startsRound(150, 100), "evicted between 100 and 200: nothing extra");
    assertEquals(true, startsRound(200, 100));
    assertEquals(false, startsRound(0, 100));
    // A round per applied position when the interval is 1, as the GC simulation runs it.
    assertEquals(true, startsRound(1, 1));
    assertEquals(true, startsRound(57, 1));
  }
}
