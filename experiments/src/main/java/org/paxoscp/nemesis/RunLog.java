package org.paxoscp.nemesis;

import java.io.PrintWriter;
import java.util.Locale;

/** A nemesis run's progress output: each line stamped with the seconds since the run began. */
final class RunLog {
  private final PrintWriter out;
  private final long startNanos = System.nanoTime();

  RunLog(PrintWriter out) {
    this.out = out;
  }

  /** One line, {@code [  12.3s] } and the formatted text. */
  void log(String fmt, Object... args) {
    double t = (System.nanoTime() - startNanos) / 1e9;
    out.printf(Locale.ROOT, "[%6.1fs] " + fmt + "%n", prepend(t, args));
    out.flush();
  }

  /** The output itself, for the summary. */
  PrintWriter out() {
    return out;
  }

  static Object[] prepend(Object first, Object[] rest) {
    Object[] all = new Object[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }
}
