package org.paxoscp.workload;

import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The outcome counts and latencies of one workload run against a cluster, one row of the demo's
 * table.
 *
 * @param label the row's name (the protocol)
 * @param commitsByRound committed read-write transactions by number of promotions (0 = first try)
 * @param readOnly read-only transactions (committed at once, outside the log)
 * @param aborted aborted transactions (certainly not in the log)
 * @param unknown transactions whose outcome the client could not learn
 * @param unavailable transactions that could not begin or read because no DC answered
 * @param combined committed transactions that shared their log position with another
 * @param p50Millis median commit latency of committed read-write transactions (commit call to
 *     outcome)
 * @param p99Millis 99th percentile of the same
 * @param seconds wall-clock length of the run
 * @param checker the serializability checker's one-line verdict
 * @param safe whether the checker found nothing wrong
 */
public record RunSummary(String label, SortedMap<Integer, Integer> commitsByRound, int readOnly,
    int aborted, int unknown, int unavailable, int combined, double p50Millis, double p99Millis,
    double seconds, String checker, boolean safe) {

  public RunSummary {
    commitsByRound = new TreeMap<>(commitsByRound);
  }

  /** Committed read-write transactions. */
  public int committedWrites() {
    return commitsByRound.values().stream().mapToInt(Integer::intValue).sum();
  }

  /** Committed read-write transactions that needed at least {@code round} promotions. */
  public int committedAtLeast(int round) {
    return commitsByRound.tailMap(round).values().stream().mapToInt(Integer::intValue).sum();
  }

  public int total() {
    return committedWrites() + readOnly + aborted + unknown + unavailable;
  }
}
