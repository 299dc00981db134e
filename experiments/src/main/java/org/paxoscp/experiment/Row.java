package org.paxoscp.experiment;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SortedMap;
import java.util.TreeMap;
import org.paxoscp.workload.WorkloadRunner.Sample;

/**
 * One data point's outcome for one commit mode: every transaction of the run, or of the run's
 * clients in one home DC ({@code homeDc} is {@code all} for the whole run).
 *
 * @param figure the figure
 * @param point the data point
 * @param mode the commit mode, lower case
 * @param homeDc {@code all}, or the home DC whose clients this row counts
 * @param samples how each transaction ended
 * @param seconds wall-clock length of the run
 * @param logLength the log length the run left (its group's highest proved position)
 * @param checkerOk whether the serializability checker accepted the run
 * @param checker the checker's verdict
 */
public record Row(Figure figure, Point point, String mode, String homeDc, List<Sample> samples,
    double seconds, long logLength, boolean checkerOk, String checker) {

  /** Promotion rounds with a column of their own; higher rounds count in the last one. */
  public static final int ROUNDS = 3;

  public Row {
    samples = List.copyOf(samples);
  }

  public int txns() {
    return samples.size();
  }

  private long count(String outcome) {
    return samples.stream().filter(s -> s.outcome().equals(outcome)).count();
  }

  /** Committed transactions, read-only ones included (as the demo counts them). */
  public int committed() {
    return (int) (count("committed") + count("read_only"));
  }

  public int readOnly() {
    return (int) count("read_only");
  }

  public int aborted() {
    return (int) count("aborted");
  }

  public int unknown() {
    return (int) count("unknown");
  }

  public int unavailable() {
    return (int) count("unavailable");
  }

  public int combined() {
    return (int) samples.stream().filter(Sample::combined).count();
  }

  /** Committed read-write transactions by promotions (0 = first try). */
  public SortedMap<Integer, Integer> byRound() {
    SortedMap<Integer, Integer> m = new TreeMap<>();
    for (Sample s : samples) {
      if (s.outcome().equals("committed")) {
        m.merge(s.promotions(), 1, Integer::sum);
      }
    }
    return m;
  }

  /** Committed read-write transactions in column {@code k} (the last column sums the rest). */
  public int round(int k) {
    SortedMap<Integer, Integer> m = byRound();
    if (k < ROUNDS) {
      return m.getOrDefault(k, 0);
    }
    return m.tailMap(ROUNDS).values().stream().mapToInt(Integer::intValue).sum();
  }

  public int maxRound() {
    SortedMap<Integer, Integer> m = byRound();
    return m.isEmpty() ? 0 : m.lastKey();
  }

  private List<Long> commitMicros(int column) {
    List<Long> l = new ArrayList<>();
    for (Sample s : samples) {
      if (s.outcome().equals("committed")
          && (column < 0 || Math.min(s.promotions(), ROUNDS) == column)) {
        l.add(s.commitMicros());
      }
    }
    return l;
  }

  /** Mean commit latency (commit call to outcome) of committed read-write transactions, ms. */
  public double meanCommitMs() {
    return mean(commitMicros(-1));
  }

  /** As {@link #meanCommitMs()}, of those committed in column {@code k}; NaN if none. */
  public double meanCommitMs(int k) {
    return mean(commitMicros(k));
  }

  public double commitPercentileMs(double pct) {
    List<Long> l = commitMicros(-1);
    if (l.isEmpty()) {
      return Double.NaN;
    }
    Collections.sort(l);
    int i = (int) Math.ceil(pct / 100.0 * l.size()) - 1;
    return l.get(Math.max(0, Math.min(l.size() - 1, i))) / 1000.0;
  }

  /** Mean begin-to-outcome time of committed read-write transactions, ms (think time in). */
  public double meanTxnMs() {
    List<Long> l = new ArrayList<>();
    for (Sample s : samples) {
      if (s.outcome().equals("committed")) {
        l.add(s.txnMicros());
      }
    }
    return mean(l);
  }

  /** Committed transactions scaled to the paper's 500 per experiment. */
  public double per500() {
    return txns() == 0 ? Double.NaN : committed() * 500.0 / txns();
  }

  private static double mean(List<Long> micros) {
    return micros.isEmpty() ? Double.NaN
        : micros.stream().mapToLong(Long::longValue).average().orElse(0) / 1000.0;
  }
}
