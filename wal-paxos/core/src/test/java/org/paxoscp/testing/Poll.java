package org.paxoscp.testing;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Bounded polling for tests: wait for a condition instead of sleeping for a guessed time. */
public final class Poll {
  private Poll() {}

  /**
   * Returns as soon as {@code condition} holds; fails with {@code what} if it does not within
   * {@code timeout}. The condition is checked every 20 ms.
   */
  public static void until(String what, Duration timeout, BooleanSupplier condition) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for " + what);
      }
      LockSupport.parkNanos(Duration.ofMillis(20).toNanos());
      if (Thread.interrupted()) {
        Thread.currentThread().interrupt();
        throw new AssertionError("interrupted while waiting for " + what);
      }
    }
  }
}
