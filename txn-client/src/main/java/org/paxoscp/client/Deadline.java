package org.paxoscp.client;

import java.time.Duration;
import org.paxoscp.transport.Scheduler;

/**
 * When a call or transaction must end, on the client scheduler's monotonic clock; {@link #NONE}
 * for never. Immutable.
 */
record Deadline(long atMicros, String what) {
  static final Deadline NONE = new Deadline(Long.MAX_VALUE, "none");

  /** {@code timeout} from now, or {@link #NONE} for a null timeout. */
  static Deadline after(Scheduler scheduler, Duration timeout, String what) {
    if (timeout == null || timeout.compareTo(Duration.ofDays(365L * 100)) > 0) {
      return NONE; // (A century is no deadline; toNanos would overflow past 292 years.)
    }
    long micros = Math.max(0, timeout.toNanos() / 1000);
    long now = scheduler.nowMicros();
    return new Deadline(micros > Long.MAX_VALUE - now ? Long.MAX_VALUE : now + micros,
        what + " of " + timeout.toMillis() + " ms");
  }

  boolean isNone() {
    return atMicros == Long.MAX_VALUE;
  }

  /** The earlier of this and {@code other}. */
  Deadline min(Deadline other) {
    return other.atMicros < atMicros ? other : this;
  }

  /** The time left, zero once passed; a very long time for {@link #NONE}. */
  Duration remaining(Scheduler scheduler) {
    if (isNone()) {
      return Duration.ofNanos(Long.MAX_VALUE);
    }
    return Duration.ofNanos(Math.max(0, atMicros - scheduler.nowMicros()) * 1000);
  }

  boolean passed(Scheduler scheduler) {
    return !isNone() && scheduler.nowMicros() >= atMicros;
  }

  /** The exception of a call that this deadline ended before {@code doing} was done. */
  DeadlineExceededException exceeded(String group, long position, String doing) {
    return new DeadlineExceededException("the " + what + " passed before " + doing, group,
        position, null);
  }
}
