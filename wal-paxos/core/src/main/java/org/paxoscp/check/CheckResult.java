package org.paxoscp.check;

import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * The outcome of one {@link SerializabilityChecker#check} call: the violations found (the first
 * 50 in full, all of them counted per kind) and statistics
 * about the checked log and history.
 *
 * <p>Immutable and thread-safe.
 */
public final class CheckResult {

  /**
   * Statistics of one check, to tell a vacuous pass (nothing was checked) from a real one.
   *
   * @param dcs number of DC logs given
   * @param positions positions present in the merged log (the union over DCs)
   * @param maxPosition highest position in the merged log, 0 when it is empty
   * @param entries transaction entries in the merged log, over all positions
   * @param combinedPositions positions whose value is a list of more than one entry (Paxos-CP
   *     combination)
   * @param noopPositions positions whose value is the no-op (empty list)
   * @param records transaction records in the history
   * @param committed records with status COMMITTED (read-only ones included)
   * @param aborted records with status ABORTED
   * @param unknown records with status UNKNOWN
   * @param crashed records with status CRASHED
   * @param readOnly records without writes
   * @param entriesWithoutRecord log entries whose txn id has no record in the history (allowed:
   *     e.g. an entry a recovering DC re-proposed after its client vanished)
   * @param readsChecked records whose observed reads were compared with the replayed state
   * @param readsUnverifiable records whose reads could not be compared because their read position
   *     lies at or after a gap in the merged log (the gap itself is reported)
   * @param scansChecked scans (range reads) of the checked records compared with the replayed
   *     state of their ranges
   * @param updatesChecked commutative updates (adds, counting-set updates) in the merged log
   *     that the replay folded into the values of their keys, those of refused entries included
   * @param entriesRefused entries the replay refused: one of their updates could not apply
   *     where the log folds it, so none of their writes took effect
   */
  public record Stats(
      int dcs,
      int positions,
      long maxPosition,
      int entries,
      int combinedPositions,
      int noopPositions,
      int records,
      int committed,
      int aborted,
      int unknown,
      int crashed,
      int readOnly,
      int entriesWithoutRecord,
      int readsChecked,
      int readsUnverifiable,
      int scansChecked,
      int updatesChecked,
      int entriesRefused) {

    @Override
    public String toString() {
      return "dcs=" + dcs + " positions=" + positions + " maxPosition=" + maxPosition
          + " entries=" + entries + " combinedPositions=" + combinedPositions
          + " noopPositions=" + noopPositions + " records=" + records + " committed=" + committed
          + " aborted=" + aborted + " unknown=" + unknown + " crashed=" + crashed
          + " readOnly=" + readOnly + " entriesWithoutRecord=" + entriesWithoutRecord
          + " readsChecked=" + readsChecked + " readsUnverifiable=" + readsUnverifiable
          + " scansChecked=" + scansChecked + " updatesChecked=" + updatesChecked
          + " entriesRefused=" + entriesRefused;
    }
  }

  private final List<Violation> violations;
  private final Map<Violation.Kind, Integer> counts;
  private final int violationCount;
  private final Stats stats;

  CheckResult(ViolationCollector collector, Stats stats) {
    this.violations = List.copyOf(collector.kept());
    Map<Violation.Kind, Integer> c = new EnumMap<>(Violation.Kind.class);
    c.putAll(collector.counts());
    this.counts = Collections.unmodifiableMap(c);
    this.violationCount = collector.total();
    this.stats = stats;
  }

  /** True if no violation was found. */
  public boolean ok() {
    return violationCount == 0;
  }

  /**
   * The violations found, in the order found, at most 50;
   * {@link #violationCount()} tells how many there were in all.
   */
  public List<Violation> violations() {
    return violations;
  }

  /** The number of violations found, including those left out of {@link #violations()}. */
  public int violationCount() {
    return violationCount;
  }

  /** Per kind, the number of violations found (kinds with none are absent). */
  public Map<Violation.Kind, Integer> violationCounts() {
    return counts;
  }

  /** The number of violations of {@code kind} found, including those left out of the list. */
  public int count(Violation.Kind kind) {
    return counts.getOrDefault(kind, 0);
  }

  /** True if at least one violation of {@code kind} was found. */
  public boolean has(Violation.Kind kind) {
    return count(kind) > 0;
  }

  public Stats stats() {
    return stats;
  }

  /** A multi-line report: the verdict, the statistics, the counts per kind and each violation. */
  public String summary() {
    StringBuilder sb = new StringBuilder();
    sb.append(ok() ? "OK" : "VIOLATIONS: " + violationCount).append(" [").append(stats)
        .append(']');
    if (!ok()) {
      sb.append("\n  by kind: ").append(counts);
      for (Violation v : violations) {
        sb.append("\n  ").append(v);
      }
      if (violationCount > violations.size()) {
        sb.append("\n  ... and ").append(violationCount - violations.size()).append(" more");
      }
    }
    return sb.toString();
  }

  @Override
  public String toString() {
    return summary();
  }
}
