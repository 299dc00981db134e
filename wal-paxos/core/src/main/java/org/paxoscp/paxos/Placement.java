package org.paxoscp.paxos;

import java.util.List;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * The placement rule with the lock rule (ARCHITECTURE 5.5 and 10), in one place for every
 * proposer: a client's (promotion), a combiner's (list order), a leader's (server-side
 * promotion). An entry with read position r may be proposed at position q only if
 *
 * <ul>
 *   <li>no lock held at r blocks it ({@link XgLocks#blocking}; the client checks this against
 *       the table its begin returned), and
 *   <li>no value chosen at r+1 … q−1, and no earlier entry of its own list, {@link #conflicts}
 *       with it.
 * </ul>
 *
 * A lock released inside r+1 … q−1 still counts (conservative: the entry aborts and is retried,
 * never placed wrongly). Pure and thread-safe.
 */
public final class Placement {
  private Placement() {}

  /**
   * May {@code later} not follow {@code earlier}? True if {@code earlier} writes a key {@code
   * later} read (the paper's rule: {@code later}'s read is stale), or {@code earlier} is a
   * PREPARE whose locks {@code later} would break (it reads a key the PREPARE writes, or writes
   * a key the PREPARE reads or writes).
   */
  public static boolean conflicts(LogEntry earlier, LogEntry later) {
    if (earlier.writesAnyOf(later.readSet())) {
      return true;
    }
    return earlier.isPrepare() && new XgLocks.Lock(0, earlier).blocks(later);
  }

  /** {@link #conflicts} for any entry of {@code earlier}. */
  public static boolean conflicts(LogValue earlier, LogEntry later) {
    return conflicts(earlier.entries(), later);
  }

  /** {@link #conflicts} for any entry of {@code earlier}. */
  public static boolean conflicts(List<LogEntry> earlier, LogEntry later) {
    for (LogEntry e : earlier) {
      if (conflicts(e, later)) {
        return true;
      }
    }
    return false;
  }
}
