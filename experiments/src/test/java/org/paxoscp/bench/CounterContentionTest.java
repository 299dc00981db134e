package org.paxoscp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The pure parts of {@code paxoscp bench-counter}: abort causes and the end-value check. */
@Timeout(10)
class CounterContentionTest {

  @Test
  void onlyAReadKeyWrittenIsAConflict() {
    assertEquals(CounterContention.Cause.CONFLICT, CounterContention.cause("read a key written "
        + "at position 12, or would break a cross-group lock taken there, by V-ab/t1"));
    assertEquals(CounterContention.Cause.CONFLICT,
        CounterContention.cause("read a key written at position 7"));
    assertEquals(CounterContention.Cause.OTHER, CounterContention.cause("lost position 3"));
    assertEquals(CounterContention.Cause.OTHER,
        CounterContention.cause("promotion cap 4 reached"));
    assertEquals(CounterContention.Cause.OTHER, CounterContention.cause(""));
  }

  @Test
  void reasonsOfOneKindCountTogether() {
    assertEquals("lost position #", CounterContention.reasonKind("lost position 1234"));
    assertEquals("read a key written at position #, or would break a cross-group lock taken "
        + "there,", CounterContention.reasonKind("read a key written at position 9, or would "
            + "break a cross-group lock taken there, by O-x/t9"));
    assertEquals("(no reason given)", CounterContention.reasonKind(""));
  }

  @Test
  void theCounterHoldsEveryCommitAndAtMostTheUnknowns() {
    assertTrue(CounterContention.matches(10, 10, 0));
    assertFalse(CounterContention.matches(9, 10, 0));
    assertFalse(CounterContention.matches(11, 10, 0));
    assertTrue(CounterContention.matches(12, 10, 2));
    assertFalse(CounterContention.matches(13, 10, 2));
  }
}
