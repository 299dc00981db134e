package org.paxoscp.paxos;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * Paxos-CP combination (section 5, "Combination"): builds the longest ordered list that starts with
 * the proposer's own entry and adds entries from the received votes such that no entry reads a key
 * written by an earlier entry in the list, nor breaks the locks of an earlier PREPARE ({@link
 * Placement}). Such a list is one-copy equivalent to running its entries serially in list order.
 *
 * <p>Exhaustive over subsets and orders for up to {@code exhaustiveLimit} candidates (the paper:
 * "in practice only two or three"), one greedy pass beyond. Pure and thread-safe.
 */
public final class Combination {
  private Combination() {}

  /**
   * @param own the proposer's entry, always first
   * @param candidates entries seen in votes for {@code position}; duplicates (by txn id), the
   *     proposer's own txn and entries that could not belong to {@code position} are dropped
   * @param position the log position the list is for
   */
  public static LogValue combine(LogEntry own, Collection<LogEntry> candidates, long position,
      int exhaustiveLimit) {
    Map<String, LogEntry> unique = new LinkedHashMap<>();
    for (LogEntry e : candidates) {
      if (!e.txnId().equals(own.txnId()) && e.readPosition() < position) {
        unique.putIfAbsent(e.txnId(), e);
      }
    }
    List<LogEntry> pool = new ArrayList<>(unique.values());
    List<LogEntry> best;
    if (pool.size() <= exhaustiveLimit) {
      List<LogEntry> current = new ArrayList<>(List.of(own));
      best = new ArrayList<>(current);
      search(current, pool, new boolean[pool.size()], best);
    } else {
      best = new ArrayList<>(List.of(own));
      for (LogEntry e : pool) {
        if (canAppend(best, e)) {
          best.add(e);
        }
      }
    }
    return new LogValue(best);
  }

  /** Depth-first search over orders; keeps the first longest valid list found. */
  private static void search(List<LogEntry> current, List<LogEntry> pool, boolean[] used,
      List<LogEntry> best) {
    if (current.size() > best.size()) {
      best.clear();
      best.addAll(current);
    }
    if (best.size() == pool.size() + 1) {
      return;
    }
    for (int i = 0; i < pool.size(); i++) {
      if (!used[i] && canAppend(current, pool.get(i))) {
        used[i] = true;
        current.add(pool.get(i));
        search(current, pool, used, best);
        current.remove(current.size() - 1);
        used[i] = false;
      }
    }
  }

  /**
   * True if {@code next} may follow every entry already in {@code list} ({@link
   * Placement#conflicts}: it reads no key they write and breaks no lock of a PREPARE among them).
   */
  static boolean canAppend(List<LogEntry> list, LogEntry next) {
    return !Placement.conflicts(list, next);
  }
}
