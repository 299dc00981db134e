package org.paxoscp.paxos;

import java.util.List;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * The placement rule with the lock rule (docs/architecture.md sections 5.5 and 10), in one place
 * for every proposer: a client's (promotion), a combiner's (list order), a leader's (server-side
 * promotion). An entry with read position r may be proposed at position q only if
 *
 * <ul>
 *   <li>no lock held at r blocks it ({@link XgLocks#blocking}; the client checks this against
 *       the table its begin returned), and
 *   <li>no value chosen at r+1 … q−1, and no earlier entry of its own list, {@link #conflicts}
 *       with it (a stale read, a lock, or the entry's {@link #withdrawal}).
 * </ul>
 *
 * A lock released inside r+1 … q−1 still counts (conservative: the entry aborts and is retried,
 * never placed wrongly). Pure and thread-safe.
 */
public final class Placement {
  private Placement() {}

  /** What a withdrawal's transaction id starts with; the rest is the withdrawn entry's id. */
  public static final String WITHDRAWAL_PREFIX = "withdraw:";

  /**
   * May {@code later} not follow {@code earlier}? True if {@code earlier} writes a key {@code
   * later} read, by key or inside a range it scanned (the paper's rule: {@code later}'s read is
   * stale, or its scan missed a key, a phantom; docs/architecture.md section 14), or
   * {@code earlier} is a PREPARE whose locks {@code later} would break (it reads a key the PREPARE
   * writes, or writes a key the PREPARE reads or writes), or {@code earlier} is {@code later}'s
   * withdrawal.
   */
  public static boolean conflicts(LogEntry earlier, LogEntry later) {
    if (earlier.writesWhatIsReadBy(later) || withdraws(earlier, later)) {
      return true;
    }
    return earlier.isPrepare() && new XgLocks.Lock(0, earlier).blocks(later);
  }

  /**
   * The withdrawal of a leader-mode entry (docs/leader-combination.md, "The client"): an entry
   * that reads and writes nothing, which a client whose submit went unanswered decides at the
   * first position it finds undecided. Once it is chosen, the placement rule keeps every batcher
   * from placing {@code entry} at any later position, so the client can report ABORTED without
   * filling every position up to its bound with no-ops.
   */
  public static LogEntry withdrawal(LogEntry entry) {
    return new LogEntry(WITHDRAWAL_PREFIX + entry.txnId(), entry.originDc(),
        entry.readPosition(), new java.util.TreeSet<>(), new java.util.TreeMap<>());
  }

  /** Is {@code earlier} the withdrawal of {@code later}? */
  public static boolean withdraws(LogEntry earlier, LogEntry later) {
    return earlier.txnId().equals(WITHDRAWAL_PREFIX + later.txnId());
  }

  /** Is {@code entry} a withdrawal (of any entry)? */
  public static boolean isWithdrawal(LogEntry entry) {
    return entry.txnId().startsWith(WITHDRAWAL_PREFIX) && entry.readSet().isEmpty()
        && entry.readRanges().isEmpty() && entry.writes().isEmpty() && entry.xg() == null;
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
