package org.paxoscp.client;

import java.time.Duration;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/** Bounded polling for tests: wait for a condition instead of sleeping for a guessed time. */
final class Poll {
  private Poll() {}

  static void until(String what, Duration timeout, BooleanSupplier condition) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out after " + timeout.toMillis() + " ms waiting for "
            + what);
      }
      LockSupport.parkNanos(Duration.ofMillis(10).toNanos());
    }
  }
}
