package org.paxoscp.nemesis;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;

/**
 * The verdict on an exported nemesis run: the serializability checker per group and across
 * groups, agreement and completeness of every DC's log, every COMMITTED transaction in the log,
 * and the closed economies' totals read through every DC's service; and the run's summary. A
 * position no DC's final log holds is judged from a log saved before a store loss ({@link
 * #mergeSaved}).
 */
final class NemesisVerdict {
  /**
   * The name under which the positions judged from logs saved before store losses join a group's
   * logs: not a DC's name, so the checks of every DC's own log leave it out.
   */
  static final String SAVED = "(saved before store loss)";

  /**
   * What {@link #check} found.
   *
   * @param fromSavedLogs positions missing from every DC's final log and judged from a log saved
   *     before a store loss, summed over the groups
   */
  record Result(List<String> violations, long fromSavedLogs) {
    Result {
      violations = List.copyOf(violations);
    }
  }

  /**
   * A group's logs merged with the logs saved before store losses.
   *
   * @param logs the final logs, by DC, and under {@link #SAVED} the positions judged from saved
   *     copies (absent when there is none)
   * @param fromSaved how many positions are judged from saved copies
   * @param conflicts a saved copy holding another value at a position than a final log or an
   *     earlier saved copy: agreement broken
   */
  record Merged(Map<String, SortedMap<Long, LogValue>> logs, int fromSaved,
      List<String> conflicts) {}

  private final NemesisCluster cluster;
  private final NemesisWorkload workload;
  private final Duration requestTimeout;
  private final RunLog log;

  NemesisVerdict(NemesisCluster cluster, NemesisWorkload workload, Duration requestTimeout,
      RunLog log) {
    this.cluster = cluster;
    this.workload = workload;
    this.requestTimeout = requestTimeout;
    this.log = log;
  }

  /**
   * Checks the exported run: the serializability checker per group, and the cross-group checker
   * over all of them when their logs hold steps of transactions across groups; every DC holds
   * the same, complete log; every COMMITTED read-write transaction is in it; every
   * closed-economy group holds its total at every DC, and the economy across groups its sum.
   * The logs saved before store losses fill the positions no DC's final log holds, and must
   * agree with every other copy ({@link #mergeSaved}).
   */
  Result check(Path export) {
    List<String> violations = new ArrayList<>();
    HistoryFiles.Run exported = HistoryFiles.read(export);
    Map<String, Map<String, SortedMap<Long, LogValue>>> saved = LogExport.readSaved(export);
    Map<String, Map<String, SortedMap<Long, LogValue>>> logsByGroup =
        new TreeMap<>(exported.logsByGroup());
    long fromSaved = 0;
    int conflicts = 0;
    for (var g : saved.entrySet()) {
      Merged m = mergeSaved(g.getKey(), logsByGroup.getOrDefault(g.getKey(), Map.of()),
          g.getValue());
      logsByGroup.put(g.getKey(), m.logs());
      violations.addAll(m.conflicts());
      fromSaved += m.fromSaved();
      conflicts += m.conflicts().size();
    }
    if (!saved.isEmpty()) {
      log.log("logs saved before store loss %s: %d positions missing from every DC's final log "
          + "judged from them; %d disagreements of a saved copy with another copy",
          saved.values().stream().flatMap(c -> c.keySet().stream()).distinct().sorted()
              .toList(), fromSaved, conflicts);
    }
    // Everything below judges the final logs and the saved positions together.
    HistoryFiles.Run run = new HistoryFiles.Run(logsByGroup, exported.recordsByGroup(),
        exported.crossGroup(), exported.crossGroupPositions());
    for (String group : workload.groups()) {
      Map<String, SortedMap<Long, LogValue>> logs =
          run.logsByGroup().getOrDefault(group, Map.of());
      List<TxnRecord> records = run.recordsByGroup().getOrDefault(group, List.of());
      Map<String, Long> collected = new java.util.HashMap<>();
      for (String dc : cluster.dcs()) {
        collected.put(dc, org.paxoscp.paxos.LogCollector.gcWatermark(cluster.stores().get(dc),
            group));
      }
      violations.addAll(checkGroup(group, cluster.dcs(), logs, records, collected));
    }
    if (run.hasCrossGroup()) {
      // One conflict graph over every group, with what the clients saw of transactions across
      // groups (each group's own check ran above).
      CrossGroupChecker.Result x = CrossGroupChecker.check(run.logsByGroup(),
          run.recordsByGroup(), run.crossGroup());
      log.log("across groups: %d transactions committed, %d aborted, %d undecided, %d client "
          + "records; %s", x.committed(), x.aborted(), x.undecided(), run.crossGroup().size(),
          x.crossGroup().ok() ? "serializable" : "VIOLATION");
      for (var v : x.crossGroup().violations()) {
        violations.add("across groups: checker: " + v);
      }
    }
    for (String group : workload.bankGroups()) {
      Map<String, Long> totals = totals(group, run.logsByGroup().getOrDefault(group, Map.of()),
          violations);
      totals.forEach((dc, sum) -> {
        if (sum != NemesisWorkload.total()) {
          violations.add(String.format("group %s: DC %s holds a total of %d, not %d", group, dc,
              sum, NemesisWorkload.total()));
        } else {
          log.log("group %s: DC %s holds the total %d", group, dc, sum);
        }
      });
    }
    if (!workload.xgGroups().isEmpty()) {
      Map<String, Long> sums = new TreeMap<>();
      for (String group : workload.xgGroups()) {
        totals(group, run.logsByGroup().getOrDefault(group, Map.of()), violations)
            .forEach((dc, sum) -> sums.merge(dc, sum, Long::sum));
      }
      for (String dc : cluster.dcs()) {
        Long sum = sums.get(dc);
        if (sum == null) {
          continue; // a group it did not answer for is reported already
        }
        if (sum != workload.xgTotal()) {
          violations.add(String.format("groups %s: DC %s holds a sum of %d, not %d",
              workload.xgGroups(), dc, sum, workload.xgTotal()));
        } else {
          log.log("groups %s: DC %s holds the sum %d", workload.xgGroups(), dc, sum);
        }
      }
    }
    return new Result(violations, fromSaved);
  }

  /**
   * Merges {@code group}'s final logs ({@code finals}, by DC) with the copies saved before store
   * losses ({@code saved}, by copy name {@code <dc>-<n>}). A position missing from every final
   * log but held by a saved copy is judged from the copy: a DC rebuilt after losing its store
   * holds the log above the position it was copied at only, so after a few losses no DC may
   * hold the group's first positions at the end, though they were chosen. A copy holding another
   * value at a position than a final log (the first DC in name order holding it) or, where no
   * final log holds it, than the first copy holding it, is a conflict: two values chosen at one
   * position. The first copy's value is the one judged then, and the conflict is reported.
   */
  static Merged mergeSaved(String group, Map<String, SortedMap<Long, LogValue>> finals,
      Map<String, SortedMap<Long, LogValue>> saved) {
    SortedMap<String, SortedMap<Long, LogValue>> byDc = new TreeMap<>(finals);
    SortedMap<Long, LogValue> fill = new TreeMap<>();
    Map<Long, String> filledFrom = new TreeMap<>();
    List<String> conflicts = new ArrayList<>();
    for (var copy : new TreeMap<>(saved).entrySet()) {
      for (var e : copy.getValue().entrySet()) {
        long p = e.getKey();
        String refName = null;
        LogValue ref = null;
        for (var dc : byDc.entrySet()) {
          ref = dc.getValue().get(p);
          if (ref != null) {
            refName = "DC " + dc.getKey() + "'s final log";
            break;
          }
        }
        if (ref == null) {
          ref = fill.putIfAbsent(p, e.getValue());
          if (ref == null) {
            filledFrom.put(p, copy.getKey());
            continue;
          }
          refName = savedName(filledFrom.get(p));
        }
        if (!ref.equals(e.getValue())) {
          conflicts.add(String.format("group %s: %s and %s disagree at position %d (agreement "
              + "broken)", group, refName, savedName(copy.getKey()), p));
        }
      }
    }
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>(finals);
    if (!fill.isEmpty()) {
      logs.put(SAVED, fill);
    }
    return new Merged(logs, fill.size(), conflicts);
  }

  /** {@code "the log saved before store loss 3 of DC V2"} for copy {@code V2-3}. */
  private static String savedName(String copy) {
    int dash = copy.lastIndexOf('-');
    return dash <= 0 ? "the saved log " + copy : "the log saved before store loss "
        + copy.substring(dash + 1) + " of DC " + copy.substring(0, dash);
  }

  /**
   * The checks of one group that need no running process: the checker, agreement and
   * completeness of every DC's log, and COMMITTED transactions in the log.
   */
  static List<String> checkGroup(String group, List<String> dcs,
      Map<String, SortedMap<Long, LogValue>> logs, List<TxnRecord> records) {
    return checkGroup(group, dcs, logs, records, Map.of());
  }

  /**
   * As above, where DC {@code d} collected the positions up to {@code collected.get(d)} (a DC
   * rebuilt after losing its store holds the log above the position it was copied at): its log
   * must hold every position above that. {@code logs} may hold, beside the DCs' logs, the
   * positions judged from logs saved before store losses under {@link #SAVED} ({@link
   * #mergeSaved}): they count for the checker and for finding COMMITTED transactions, not as a
   * DC's log.
   */
  static List<String> checkGroup(String group, List<String> dcs,
      Map<String, SortedMap<Long, LogValue>> logs, List<TxnRecord> records,
      Map<String, Long> collected) {
    List<String> violations = new ArrayList<>();
    CheckResult r = SerializabilityChecker.check(logs, records);
    for (var v : r.violations()) {
      violations.add("group " + group + ": checker: " + v);
    }
    long highest = 0;
    for (SortedMap<Long, LogValue> log : logs.values()) {
      if (!log.isEmpty()) {
        highest = Math.max(highest, log.lastKey());
      }
    }
    for (String dc : dcs) {
      SortedMap<Long, LogValue> log = logs.getOrDefault(dc, new TreeMap<>());
      long below = Math.min(highest, collected.getOrDefault(dc, 0L));
      if (log.size() != highest - below) {
        violations.add(String.format("group %s: DC %s holds %d of the %d positions after "
            + "catch-up%s", group, dc, log.size(), highest - below,
            below > 0 ? " (it collected the " + below + " below)" : ""));
      }
    }
    SortedMap<Long, LogValue> reference = logs.getOrDefault(dcs.get(0), new TreeMap<>());
    for (String dc : dcs) {
      SortedMap<Long, LogValue> log = logs.getOrDefault(dc, new TreeMap<>());
      for (var e : log.entrySet()) {
        LogValue ref = reference.get(e.getKey());
        if (ref != null && !ref.equals(e.getValue())) {
          violations.add(String.format("group %s: DCs %s and %s disagree at position %d",
              group, dcs.get(0), dc, e.getKey()));
        }
      }
    }
    for (TxnRecord rec : records) {
      if (rec.status() != TxnRecord.Status.COMMITTED || rec.writes().isEmpty()) {
        continue;
      }
      boolean found = false;
      for (SortedMap<Long, LogValue> log : logs.values()) {
        LogValue v = log.get(rec.commitPosition());
        if (v != null && v.contains(rec.txnId())) {
          found = true;
          break;
        }
      }
      if (!found) {
        violations.add(String.format("group %s: COMMITTED txn %s is not at its position %d in "
            + "any DC's log", group, rec.txnId(), rec.commitPosition()));
      }
    }
    return violations;
  }

  /**
   * Every DC's total of the group's accounts, read through its service at the log's end; a DC
   * that does not answer is a violation and has no total.
   */
  private Map<String, Long> totals(String group, Map<String, SortedMap<Long, LogValue>> logs,
      List<String> violations) {
    Map<String, Long> totals = new TreeMap<>();
    long upTo = 0;
    for (SortedMap<Long, LogValue> log : logs.values()) {
      if (!log.isEmpty()) {
        upTo = Math.max(upTo, log.lastKey());
      }
    }
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < NemesisWorkload.ACCOUNTS; i++) {
      keys.add(NemesisWorkload.account(i));
    }
    try (UdpTransport t = UdpTransport.builder(cluster.config(), cluster.dcs().get(0)).build()) {
      for (String dc : cluster.dcs()) {
        Message reply;
        try {
          reply = t.request(dc, new Message.ReadRequest(group, upTo, keys),
              requestTimeout.multipliedBy(4)).join();
        } catch (CompletionException e) {
          violations.add("group " + group + ": DC " + dc + " did not answer the final read: "
              + e.getCause());
          continue;
        }
        if (!(reply instanceof Message.ReadReply rr)) {
          violations.add("group " + group + ": DC " + dc + " answered the final read with "
              + reply);
          continue;
        }
        long sum = 0;
        for (String k : keys) {
          byte[] v = rr.values().get(k);
          sum += v == null || v.length == 0 ? 0
              : Long.parseLong(new String(v, StandardCharsets.UTF_8));
        }
        totals.put(dc, sum);
      }
    }
    return totals;
  }

  static Map<String, Integer> historyOutcomes(Path export) {
    Map<String, Integer> m = new TreeMap<>();
    HistoryFiles.read(export).recordsByGroup().values().forEach(l -> l.forEach(r ->
        m.merge(r.status().name() + (r.writes().isEmpty() ? " (read-only)" : ""), 1,
            Integer::sum)));
    return m;
  }

  /**
   * Prints the run's summary: faults, outcomes, shapes, history records, the datagrams the
   * services dropped by reason, the verdict.
   */
  static void printSummary(NemesisRun.Report r, long seed, PrintWriter out) {
    out.println();
    out.println("=== nemesis summary (seed " + seed + ") ===");
    out.println("faults injected:");
    int total = 0;
    for (Fault f : Fault.values()) {
      int n = r.faults().get(f);
      total += n;
      out.printf(Locale.ROOT, "  %-16s %-64s %4d%n", f.cliName(), f.label(), n);
    }
    out.printf(Locale.ROOT, "  %-81s %4d%n", "total", total);
    out.println("transactions by outcome (as the application saw them):");
    long all = 0;
    for (var e : r.outcomes().entrySet()) {
      all += e.getValue();
      out.printf(Locale.ROOT, "  %-53s %6d%n", e.getKey().name().toLowerCase(Locale.ROOT),
          e.getValue());
    }
    out.printf(Locale.ROOT, "  %-53s %6d%n", "total", all);
    out.println("by shape:");
    r.byShape().forEach((k, v) -> out.printf(Locale.ROOT, "  %-53s %6d%n", k, v));
    out.println("history records by outcome:");
    r.historyOutcomes().forEach((k, v) -> out.printf(Locale.ROOT, "  %-53s %6d%n", k, v));
    out.printf(Locale.ROOT, "log positions checked (all groups):  %d%n", r.positions());
    out.printf(Locale.ROOT, "positions judged from logs saved before store loss:  %d%n",
        r.fromSavedLogs());
    // Not a verdict: what the services' wire refused (replayed copies: stale, replay,
    // misdirected; forgeries: bad_mac), read from their metrics.
    out.println("datagrams the services dropped before any handler, by reason (every process, "
        + "read at its kills and at the end):");
    long dropped = 0;
    for (var e : r.droppedByReason().entrySet()) {
      dropped += e.getValue();
      if (e.getValue() > 0) {
        out.printf(Locale.ROOT, "  %-53s %6d%n", e.getKey(), e.getValue());
      }
    }
    out.printf(Locale.ROOT, "  %-53s %6d%n", "total", dropped);
    for (String u : r.dropsUnread()) {
      out.println("  (not read: " + u + ")");
    }
    out.printf(Locale.ROOT, "violations: %d%n", r.violations().size());
    for (String v : r.violations()) {
      out.println("  VIOLATION " + v);
    }
    out.println(r.ok() ? "RESULT: PASS" : "RESULT: FAIL (seed " + seed + ")");
    out.flush();
  }
}
