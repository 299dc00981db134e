package org.paxoscp.check;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Accumulates violations during one check: keeps the first {@link #MAX_REPORTED} in the order found
 * and counts every one per kind, so a flood of one kind cannot hide that another kind occurred.
 *
 * <p>Not thread-safe; one instance per {@link SerializabilityChecker#check} call.
 */
final class ViolationCollector {
  /** How many violations are kept in full; the rest are only counted. */
  static final int MAX_REPORTED = 50;

  private final List<Violation> kept = new ArrayList<>();
  private final Map<Violation.Kind, Integer> counts = new EnumMap<>(Violation.Kind.class);
  private int total;

  void add(Violation.Kind kind, long position, String txnId, String message) {
    total++;
    counts.merge(kind, 1, Integer::sum);
    if (kept.size() < MAX_REPORTED) {
      kept.add(new Violation(kind, position, txnId == null ? "" : txnId, message));
    }
  }

  List<Violation> kept() {
    return kept;
  }

  Map<Violation.Kind, Integer> counts() {
    return counts;
  }

  int total() {
    return total;
  }
}
