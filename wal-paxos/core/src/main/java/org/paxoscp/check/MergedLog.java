package org.paxoscp.check;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * The union of the DCs' logs, built once per check. Building it checks the properties that concern
 * the log alone: agreement (R1), completeness (no position missing at every DC below the maximum),
 * well-formedness, and that no transaction id appears twice.
 *
 * <p>Where DCs disagree, the value held by the most DCs (ties: by the first DC in name order) is
 * used for the merged log, so that the remaining checks still run; the disagreement itself is
 * reported.
 *
 * <p>Not thread-safe; built and read by one check.
 */
final class MergedLog {

  /** Where one entry sits in the merged log: position and index within the position's list. */
  record Slot(long position, int index, LogEntry entry) {
    @Override
    public String toString() {
      return "position " + position + " #" + index;
    }
  }

  private final TreeMap<Long, LogValue> values = new TreeMap<>();
  private final Map<String, List<Slot>> occurrences = new LinkedHashMap<>();
  private int dcs;
  private long firstGap;

  private MergedLog() {}

  static MergedLog build(
      Map<String, ? extends SortedMap<Long, LogValue>> logsByDc, ViolationCollector out) {
    MergedLog log = new MergedLog();
    log.merge(logsByDc, out);
    log.findGaps(out);
    log.indexEntries(out);
    return log;
  }

  /** Positions in ascending order with their (merged) values. */
  SortedMap<Long, LogValue> values() {
    return values;
  }

  /** Per txn id, every slot holding an entry with that id, in log order. */
  Map<String, List<Slot>> occurrences() {
    return occurrences;
  }

  int dcs() {
    return dcs;
  }

  long maxPosition() {
    return values.isEmpty() ? 0 : values.lastKey();
  }

  /**
   * The lowest position missing at every DC below the maximum, or {@code maxPosition() + 1} when
   * the merged log is contiguous from 1. The replayed state is exact only at read positions below
   * it.
   */
  long firstGap() {
    return firstGap;
  }

  private void merge(
      Map<String, ? extends SortedMap<Long, LogValue>> logsByDc, ViolationCollector out) {
    if (logsByDc == null) {
      out.add(Kind.MALFORMED_LOG, -1, "", "logsByDc is null; checking against an empty log");
      return;
    }
    // DCs in name order, so that messages and tie-breaks are deterministic.
    List<Map.Entry<String, ? extends SortedMap<Long, LogValue>>> dcLogs =
        new ArrayList<>(logsByDc.entrySet());
    dcLogs.sort(Comparator.comparing(e -> String.valueOf(e.getKey())));
    dcs = dcLogs.size();

    // position -> distinct value -> DCs holding it
    TreeMap<Long, Map<LogValue, List<String>>> held = new TreeMap<>();
    for (var dcLog : dcLogs) {
      String dc = String.valueOf(dcLog.getKey());
      if (dcLog.getValue() == null) {
        out.add(Kind.MALFORMED_LOG, -1, "", "the log of DC " + dc + " is null");
        continue;
      }
      for (var e : dcLog.getValue().entrySet()) {
        Long position = e.getKey();
        if (position == null || position < 1) {
          out.add(Kind.MALFORMED_LOG, position == null ? -1 : position, "",
              "DC " + dc + " holds a value at position " + position + "; positions start at 1");
          continue;
        }
        if (e.getValue() == null) {
          out.add(Kind.MALFORMED_LOG, position, "",
              "DC " + dc + " holds a null value at position " + position
                  + " (a no-op is an empty list); treated as missing there");
          continue;
        }
        held.computeIfAbsent(position, p -> new LinkedHashMap<>())
            .computeIfAbsent(e.getValue(), v -> new ArrayList<>()).add(dc);
      }
    }

    for (var p : held.entrySet()) {
      Map<LogValue, List<String>> byValue = p.getValue();
      LogValue chosen = null;
      int best = 0;
      // Insertion order follows DC name order, so the first value with the most DCs wins ties.
      for (var v : byValue.entrySet()) {
        if (v.getValue().size() > best) {
          chosen = v.getKey();
          best = v.getValue().size();
        }
      }
      values.put(p.getKey(), chosen);
      if (byValue.size() > 1) {
        out.add(Kind.AGREEMENT, p.getKey(), "", disagreement(p.getKey(), byValue, chosen));
      }
    }
  }

  private static String disagreement(
      long position, Map<LogValue, List<String>> byValue, LogValue chosen) {
    StringBuilder sb = new StringBuilder("R1: DCs hold different values at position ")
        .append(position).append(':');
    Set<String> rendered = new HashSet<>();
    for (var v : byValue.entrySet()) {
      sb.append(" DCs ").append(v.getValue()).append(" hold ").append(v.getKey()).append(';');
      rendered.add(v.getKey().toString());
    }
    if (rendered.size() < byValue.size()) {
      sb.append(" (the values differ only in written bytes);");
    }
    return sb.append(" the remaining checks use the value of DCs ").append(byValue.get(chosen))
        .toString();
  }

  private void findGaps(ViolationCollector out) {
    firstGap = maxPosition() + 1;
    long expected = 1;
    for (long p : values.keySet()) {
      if (p > expected) {
        if (firstGap > expected) {
          firstGap = expected;
        }
        String range = p - 1 == expected ? "position " + expected
            : "positions " + expected + ".." + (p - 1);
        out.add(Kind.LOG_GAP, expected, "",
            range + " missing at every DC, below the merged log's maximum " + maxPosition()
                + "; reads at read position " + firstGap + " or later are not value-checked");
      }
      expected = p + 1;
    }
  }

  private void indexEntries(ViolationCollector out) {
    for (var p : values.entrySet()) {
      List<LogEntry> entries = p.getValue().entries();
      for (int i = 0; i < entries.size(); i++) {
        LogEntry e = entries.get(i);
        occurrences.computeIfAbsent(e.txnId(), id -> new ArrayList<>())
            .add(new Slot(p.getKey(), i, e));
      }
    }
    for (var o : occurrences.entrySet()) {
      List<Slot> slots = o.getValue();
      if (slots.size() > 1) {
        out.add(Kind.DUPLICATE_ENTRY, slots.get(1).position(), o.getKey(),
            "txn " + o.getKey() + " appears " + slots.size() + " times in the merged log, at "
                + slots);
      }
    }
  }
}
