package org.paxoscp.store.hbase;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * Notices when this process did not run: frozen with SIGSTOP, suspended with its VM, or stopped
 * by a long collector pause. A daemon thread wakes every {@link #TICK_NANOS}; a wake-up that comes
 * more than {@link #THRESHOLD_NANOS} late means the whole process stood still for that long.
 *
 * <p>Why a store needs it: a deadline is measured on the monotonic clock, which goes on while the
 * process is frozen. Without this, every store call in flight when the process froze would fail
 * with "no answer within the deadline" the moment it resumed — a healthy store reported as
 * unavailable by the hundred. With it, time the process did not run does not count against a
 * deadline (see {@link Await}).
 *
 * <p>Thread-safe.
 */
final class StallDetector {
  static final long TICK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);
  static final long THRESHOLD_NANOS = TimeUnit.MILLISECONDS.toNanos(200);

  /** The process-wide detector, started on first use. */
  static final StallDetector PROCESS = startDaemon();

  private final AtomicLong stalledNanos = new AtomicLong();

  private static StallDetector startDaemon() {
    StallDetector d = new StallDetector();
    Thread t = new Thread(() -> {
      long last = System.nanoTime();
      while (true) {
        LockSupport.parkNanos(TICK_NANOS);
        long now = System.nanoTime();
        d.observe(now - last);
        last = now;
      }
    }, "paxoscp-stall-detector");
    t.setDaemon(true);
    t.start();
    return d;
  }

  /** Records one wake-up that came {@code gapNanos} after the previous one. */
  void observe(long gapNanos) {
    long late = gapNanos - TICK_NANOS;
    if (late > THRESHOLD_NANOS) {
      stalledNanos.addAndGet(late);
    }
  }

  /** Total time, in ns, this process is known not to have run since the detector started. */
  long stalledNanos() {
    return stalledNanos.get();
  }
}
