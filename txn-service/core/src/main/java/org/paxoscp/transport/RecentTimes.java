package org.paxoscp.transport;

import java.util.Arrays;

/**
 * How long something recently took: the median of the last {@value #WINDOW} samples, and from
 * it a wait bound ({@link #bound}). Used where a process must tell "slow as usual" from "not
 * answering" without a fixed timeout: a submit's next copy (LeaderSubmit) and an entry passed
 * on to a batcher that stopped answering (the service's batcher placement). A median moves
 * little for one slow answer or a pause; a window this short follows a change of load within
 * a few answers.
 *
 * <p>Written by hand rather than taken from a metrics library: what is needed is a sliding
 * window's median, which the histogram libraries in use (HdrHistogram, Micrometer) do not keep.
 *
 * <p>Thread-safe.
 */
public final class RecentTimes {
  /** Samples the median is taken over. */
  public static final int WINDOW = 16;
  /** Samples needed before a median is given. */
  public static final int MIN_SAMPLES = 3;
  private final long[] window = new long[WINDOW];
  private int count;

  /** Records one duration (µs; negative ones are ignored). */
  public synchronized void add(long micros) {
    if (micros < 0) {
      return;
    }
    window[count % WINDOW] = micros;
    count++;
  }

  /** Samples recorded so far. */
  public synchronized int samples() {
    return count;
  }

  /**
   * {@code times} the median of the recent samples, within {@code floor ... ceiling}; or
   * {@code initial} (also kept within them) before {@value #MIN_SAMPLES} samples.
   */
  public synchronized long bound(int times, long floor, long ceiling, long initial) {
    return bound(50, times, floor, ceiling, initial);
  }

  /** As {@link #bound(int, long, long, long)}, from the {@code percent} percentile. */
  public synchronized long bound(int percent, int times, long floor, long ceiling,
      long initial) {
    long b;
    if (count < MIN_SAMPLES) {
      b = initial;
    } else {
      long[] taken = Arrays.copyOf(window, Math.min(count, WINDOW));
      Arrays.sort(taken);
      b = taken[(taken.length - 1) * percent / 100] * times;
    }
    return Math.max(floor, Math.min(ceiling, b));
  }
}
