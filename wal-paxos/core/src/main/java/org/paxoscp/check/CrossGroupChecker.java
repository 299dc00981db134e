package org.paxoscp.check;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Updates;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * The oracle for transactions across entity groups (docs/architecture.md section 10,
 * docs/cross-group.md): judges every group's log at once, without trusting protocol code.
 *
 * <ol>
 *   <li>Each group alone, by {@link SerializabilityChecker} (agreement, gaps, duplicates, L3, the
 *       lock rule, the clients' one-group records), replaying PREPAREs as locks and the first
 *       RESOLVE(COMMIT) as the writes.
 *   <li>Outcomes: at most one DECIDE per cross-group transaction ({@link Kind#XG_OUTCOME}); a
 *       RESOLVE agrees with the DECIDE; a transaction decided COMMIT has a PREPARE in every other
 *       group it names (in every group, its coordinator too, for a one-round transaction: one
 *       with a PREPARE in its coordinator or a PREPARE that reads its close key, which is
 *       committed exactly when every group holds its PREPARE, DECIDE or not, and none of whose
 *       PREPAREs may follow a CLOSE of its group), none of its groups released it as aborted,
 *       and no transaction not decided COMMIT had its writes made visible ({@link Kind#XG_ATOMICITY}); what a client reported
 *       agrees with the decision.
 *   <li>Serializability across groups: one conflict graph over every committed transaction of
 *       every group (one-group entries, cross-group transactions decided COMMIT, and the
 *       committed read-only observations given), with write-write, write-read and read-write
 *       edges per key in each group's version order; a cycle is a violation ({@link
 *       Kind#XG_CYCLE}). A cross-group transaction reads each group at the read position of its
 *       entry there and writes at its RESOLVE (at its DECIDE in the coordinator). A scanned
 *       range reads, at its read position, every key ever written inside it: so a transaction
 *       that wrote a key into the range after that position follows the scanner in the graph,
 *       as it follows a reader of the key (a phantom is an anti-dependency).
 * </ol>
 *
 * <p>Stateless and thread-safe; time and memory linear in the logs and observations.
 */
public final class CrossGroupChecker {
  private CrossGroupChecker() {}

  /**
   * What a client observed of a cross-group (or read-only multi-group) transaction.
   *
   * @param txnId the cross-group transaction's id
   * @param status the outcome the client reported (CRASHED: none)
   * @param groups the groups it joined
   * @param readVersions per group, per key read, the position that wrote the version read (0:
   *     never written)
   * @param readOnly true if it wrote nothing (then it is committed outside the logs)
   * @param rangeReads per group, the ranges it scanned (as far as each scan read) and the read
   *     position they were served at; the entries a scan returned belong in {@code
   *     readVersions} too
   */
  public record Observation(String txnId, TxnRecord.Status status, SortedSet<String> groups,
      Map<String, Map<String, Long>> readVersions, boolean readOnly,
      Map<String, List<RangeRead>> rangeReads) {

    /** An observation of a transaction that scanned no range. */
    public Observation(String txnId, TxnRecord.Status status, SortedSet<String> groups,
        Map<String, Map<String, Long>> readVersions, boolean readOnly) {
      this(txnId, status, groups, readVersions, readOnly, Map.of());
    }
  }

  /** A range scanned at a read position (the entries at or below it). */
  public record RangeRead(KeyRange range, long readPosition) {}

  /** The verdict with what each group's own check found. */
  public record Result(CheckResult crossGroup, Map<String, CheckResult> perGroup, int committed,
      int aborted, int undecided, int nodes, int edges) {
    public boolean ok() {
      return crossGroup.ok() && perGroup.values().stream().allMatch(CheckResult::ok);
    }

    /** Violations of {@code kind} in the cross-group check and every group's. */
    public int count(Kind kind) {
      return crossGroup.count(kind)
          + perGroup.values().stream().mapToInt(r -> r.count(kind)).sum();
    }

    /**
     * Everything found, as one {@link CheckResult}: the cross-group violations and every
     * group's, each group's prefixed with its name, and the groups' statistics summed.
     */
    public CheckResult combined() {
      ViolationCollector all = new ViolationCollector();
      addAll(all, "", crossGroup);
      perGroup.forEach((g, r) -> addAll(all, "group " + g + ": ", r));
      int[] sum = new int[18];
      long maxPosition = 0;
      for (CheckResult r : perGroup.values()) {
        CheckResult.Stats s = r.stats();
        int[] v = {s.dcs(), s.positions(), 0, s.entries(), s.combinedPositions(),
            s.noopPositions(), s.records(), s.committed(), s.aborted(), s.unknown(), s.crashed(),
            s.readOnly(), s.entriesWithoutRecord(), s.readsChecked(), s.readsUnverifiable(),
            s.scansChecked(), s.updatesChecked(), s.entriesRefused()};
        for (int i = 0; i < v.length; i++) {
          sum[i] = i == 0 ? Math.max(sum[i], v[i]) : sum[i] + v[i];
        }
        maxPosition = Math.max(maxPosition, s.maxPosition());
      }
      return new CheckResult(all, new CheckResult.Stats(sum[0], sum[1], maxPosition, sum[3],
          sum[4], sum[5], sum[6], sum[7], sum[8], sum[9], sum[10], sum[11], sum[12], sum[13],
          sum[14], sum[15], sum[16], sum[17]));
    }

    private static void addAll(ViolationCollector into, String prefix, CheckResult r) {
      for (Violation v : r.violations()) {
        into.add(v.kind(), v.position(), v.txnId(), prefix + v.message());
      }
      for (var c : r.violationCounts().entrySet()) {
        long kept = r.violations().stream().filter(v -> v.kind() == c.getKey()).count();
        for (long i = kept; i < c.getValue(); i++) {
          into.add(c.getKey(), -1, "", prefix + "(one more " + c.getKey() + ", not kept)");
        }
      }
    }

    public String summary() {
      StringBuilder sb = new StringBuilder(ok() ? "OK" : "VIOLATIONS");
      sb.append(" [groups=").append(perGroup.size()).append(" xg committed=").append(committed)
          .append(" aborted=").append(aborted).append(" undecided=").append(undecided)
          .append(" graph nodes=").append(nodes).append(" edges=").append(edges).append(']');
      if (!crossGroup.ok()) {
        sb.append("\n cross-group: ").append(crossGroup.summary());
      }
      perGroup.forEach((g, r) -> {
        if (!r.ok()) {
          sb.append("\n group ").append(g).append(": ").append(r.summary());
        }
      });
      return sb.toString();
    }

    @Override
    public String toString() {
      return summary();
    }
  }

  /**
   * @param logs per group, per DC, the positions that DC holds
   * @param history per group, the one-group transaction records (may be empty)
   * @param observations the clients' cross-group transactions
   */
  public static Result check(
      Map<String, ? extends Map<String, ? extends SortedMap<Long, LogValue>>> logs,
      Map<String, ? extends Collection<TxnRecord>> history, Collection<Observation> observations) {
    Map<String, CheckResult> perGroup = new TreeMap<>();
    Map<String, SortedMap<Long, LogValue>> merged = new TreeMap<>();
    for (var g : logs.entrySet()) {
      perGroup.put(g.getKey(), SerializabilityChecker.check(g.getValue(),
          history.containsKey(g.getKey()) ? history.get(g.getKey()) : List.of()));
      merged.put(g.getKey(), MergedLog.build(g.getValue(), new ViolationCollector()).values());
    }
    ViolationCollector out = new ViolationCollector();
    Graph graph = new Graph();
    Map<String, Decision> decisions = new HashMap<>();
    Map<String, Set<String>> prepared = new HashMap<>();
    List<Resolution> resolutions = new ArrayList<>();
    Map<String, TreeMap<String, List<Version>>> versions = new TreeMap<>();
    List<Read> reads = new ArrayList<>();
    List<Scanned> scanned = new ArrayList<>();
    Map<String, Steps> steps = new HashMap<>();
    for (var g : merged.entrySet()) {
      replay(g.getKey(), g.getValue(), out, decisions, prepared, resolutions,
          versions.computeIfAbsent(g.getKey(), k -> new TreeMap<>(KeyRange.ORDER)), reads,
          scanned, steps);
    }
    // One round: a transaction with a PREPARE in its coordinator committed exactly when every
    // one of its groups holds its PREPARE; no PREPARE of it may follow a CLOSE of its group.
    Set<String> oneRound = new HashSet<>();
    for (var t : steps.entrySet()) {
      Steps st = t.getValue();
      if (!st.prepares.containsKey(st.groups.get(0)) && !st.readsCloseKey) {
        continue;
      }
      oneRound.add(t.getKey());
      for (var c : st.closes.entrySet()) {
        long[] p = st.prepares.get(c.getKey());
        long[] k = c.getValue();
        if (p != null && (p[0] > k[0] || (p[0] == k[0] && p[1] > k[1]))) {
          out.add(Kind.XG_ATOMICITY, p[0], t.getKey(), "PREPARE of " + t.getKey()
              + " at position " + p[0] + " #" + p[1] + " of group " + c.getKey()
              + ", after the CLOSE at position " + k[0] + " #" + k[1]
              + " that closed the group for it");
        }
      }
      boolean allIn = st.prepares.keySet().containsAll(st.groups);
      Decision d = decisions.get(t.getKey());
      if (allIn && d == null) {
        decisions.put(t.getKey(), new Decision(st.groups.get(0), -1, true, st.groups));
      } else if (allIn && !d.commit()) {
        out.add(Kind.XG_ATOMICITY, d.position(), t.getKey(), "one-round transaction "
            + t.getKey() + " is decided ABORT at position " + d.position() + " of " + d.group()
            + " but every one of its groups holds its PREPARE: it committed when the last was "
            + "chosen");
      }
    }
    // Outcomes and atomicity.
    for (Resolution r : resolutions) {
      Decision d = decisions.get(r.txn());
      boolean committed = d != null && d.commit();
      String what = r.held() ? "" : " (void: it held no lock there any more)";
      if (r.commit() && !committed) {
        out.add(Kind.XG_ATOMICITY, r.position(), r.txn(), "RESOLVE(COMMIT) of " + r.txn()
            + " in group " + r.group() + " at position " + r.position()
            + (r.held() ? " made its writes visible" : what) + ", but it is "
            + (d == null ? "undecided" : "decided ABORT"));
      } else if (!r.commit() && committed) {
        out.add(Kind.XG_ATOMICITY, r.position(), r.txn(), "RESOLVE(ABORT) of " + r.txn()
            + " in group " + r.group() + " at position " + r.position()
            + (r.held() ? " dropped its writes" : what) + ", but it is decided COMMIT at "
            + "position " + d.position() + " of " + d.group());
      }
    }
    int committed = 0;
    int aborted = 0;
    for (var d : decisions.entrySet()) {
      if (!d.getValue().commit()) {
        aborted++;
        continue;
      }
      committed++;
      for (String g : d.getValue().groups()) {
        if ((!g.equals(d.getValue().group()) || oneRound.contains(d.getKey()))
            && !prepared.getOrDefault(d.getKey(), Set.of()).contains(g)) {
          out.add(Kind.XG_ATOMICITY, d.getValue().position(), d.getKey(), "cross-group "
              + "transaction " + d.getKey() + " is decided COMMIT in " + d.getValue().group()
              + " at position " + d.getValue().position() + " but has no PREPARE in group " + g
              + (merged.containsKey(g) ? "" : " (no log of it was given)"));
        }
      }
    }
    Set<String> undecided = new HashSet<>(prepared.keySet());
    undecided.removeAll(decisions.keySet());
    for (Observation o : observations) {
      Decision d = decisions.get(o.txnId());
      if (o.readOnly()) {
        if (o.status() == TxnRecord.Status.COMMITTED) {
          String node = "ro:" + o.txnId();
          graph.node(node);
          for (var g : o.readVersions().entrySet()) {
            for (var k : g.getValue().entrySet()) {
              reads.add(new Read(node, g.getKey(), k.getKey(), -1, k.getValue()));
            }
          }
          for (var g : o.rangeReads().entrySet()) {
            for (RangeRead rr : g.getValue()) {
              scanned.add(new Scanned(node, g.getKey(), rr.range(), rr.readPosition()));
            }
          }
        }
        continue;
      }
      if (o.status() == TxnRecord.Status.COMMITTED && (d == null || !d.commit())) {
        out.add(Kind.XG_OUTCOME, -1, o.txnId(), "client reported " + o.txnId() + " COMMITTED "
            + "but it is " + (d == null ? "undecided" : "decided ABORT"));
      } else if (o.status() == TxnRecord.Status.ABORTED && d != null && d.commit()) {
        out.add(Kind.XG_OUTCOME, d.position(), o.txnId(), "client reported " + o.txnId()
            + " ABORTED but it is decided COMMIT at position " + d.position() + " of "
            + d.group());
      }
    }
    // A scan reads every key written in its range, at its read position; every key is known
    // now that all logs are replayed.
    for (Scanned s : scanned) {
      TreeMap<String, List<Version>> inGroup = versions.getOrDefault(s.group(), new TreeMap<>());
      KeyRange range = s.range();
      SortedMap<String, List<Version>> keys = range.to() == null
          ? inGroup.tailMap(range.from()) : inGroup.subMap(range.from(), range.to());
      for (String k : keys.keySet()) {
        if (range.contains(k)) {
          reads.add(new Read(s.reader(), s.group(), k, s.atPosition(), -1));
        }
      }
    }
    // The conflict graph over committed transactions.
    for (var g : versions.entrySet()) {
      for (var k : g.getValue().entrySet()) {
        List<Version> vs = k.getValue();
        vs.removeIf(v -> !graph.committed(v.writer(), decisions));
        for (int i = 0; i + 1 < vs.size(); i++) {
          graph.edge(vs.get(i).writer(), vs.get(i + 1).writer());
        }
      }
    }
    for (Read r : reads) {
      if (!graph.committed(r.reader(), decisions)) {
        continue;
      }
      List<Version> vs = versions.getOrDefault(r.group(), new TreeMap<>())
          .getOrDefault(r.key(), List.of());
      int idx = -1;
      for (int i = 0; i < vs.size(); i++) {
        Version v = vs.get(i);
        if (r.atPosition() >= 0 ? v.position() <= r.atPosition() : v.position() <= r.version()) {
          idx = i;
        }
      }
      if (idx >= 0) {
        graph.edge(vs.get(idx).writer(), r.reader());
      }
      if (idx + 1 < vs.size()) {
        graph.edge(r.reader(), vs.get(idx + 1).writer());
      }
    }
    Optional<List<String>> cycle = graph.findCycle();
    cycle.ifPresent(c -> out.add(Kind.XG_CYCLE, -1, c.get(0), "the conflict graph over all "
        + "groups has a cycle: " + String.join(" -> ", c)));
    CheckResult.Stats none = new CheckResult.Stats(0, 0, 0, 0, 0, 0, observations.size(),
        committed, aborted, undecided.size(), 0, 0, 0, 0, 0, 0, 0, 0);
    return new Result(new CheckResult(out, none), perGroup, committed, aborted, undecided.size(),
        graph.nodes.size(), graph.edgeCount);
  }

  /**
   * A cross-group transaction's decision: its DECIDE, or for a one-round transaction without
   * one whose every group holds its PREPARE, COMMIT at no position ({@code position} -1).
   */
  private record Decision(String group, long position, boolean commit, List<String> groups) {}

  /**
   * Where a cross-group transaction's first PREPARE and first CLOSE are, per group (position,
   * index in its value), and whether a PREPARE of it read its close key (one round).
   */
  private static final class Steps {
    final List<String> groups;
    final Map<String, long[]> prepares = new HashMap<>();
    final Map<String, long[]> closes = new HashMap<>();
    boolean readsCloseKey;

    Steps(List<String> groups) {
      this.groups = groups;
    }
  }

  /**
   * A RESOLVE in a group; {@code held}: its transaction held locks there (else it was void, but
   * its outcome must still be the decision: a client resolves only with the outcome it read).
   */
  private record Resolution(String group, long position, String txn, boolean commit,
      boolean held) {}

  private record Version(long position, String writer) {}

  /**
   * A read: at a read position ({@code atPosition >= 0}, the version is the last one at or
   * below it) or of a known version ({@code atPosition < 0}).
   */
  private record Read(String reader, String group, String key, long atPosition, long version) {}

  /** A range read at a read position, expanded to {@link Read}s once every key is known. */
  private record Scanned(String reader, String group, KeyRange range, long atPosition) {}

  private static void replay(String group, SortedMap<Long, LogValue> log, ViolationCollector out,
      Map<String, Decision> decisions, Map<String, Set<String>> prepared,
      List<Resolution> resolutions, Map<String, List<Version>> versions, List<Read> reads,
      List<Scanned> scanned, Map<String, Steps> steps) {
    Map<String, XgLocks.Lock> locks = new LinkedHashMap<>();
    // The group's values, replayed as the applier folds them, only to tell which one-group
    // entries a commutative update refused: those took no effect, so they neither read nor
    // wrote anything (docs/guarantees.md, "Commutative updates").
    Map<String, java.util.Optional<byte[]>> state = new java.util.HashMap<>();
    XgLocks table = XgLocks.EMPTY;
    for (var p : log.entrySet()) {
      long q = p.getKey();
      XgLocks.Applied applied = table.apply(q, p.getValue());
      Updates.Folded folded = Updates.fold(applied.effects(),
          k -> state.getOrDefault(k, java.util.Optional.empty()));
      state.putAll(folded.values());
      table = applied.locks();
      List<LogEntry> list = p.getValue().entries();
      for (int index = 0; index < list.size(); index++) {
        LogEntry e = list.get(index);
        XgStep x = e.xg();
        if (x == null) {
          if (folded.refused().containsKey(e.txnId())) {
            continue;
          }
          String node = "e:" + e.txnId();
          readAll(reads, scanned, node, group, e);
          writeAll(versions, node, q, e);
          continue;
        }
        String node = "x:" + x.txn();
        Steps st = steps.computeIfAbsent(x.txn(), t -> new Steps(x.groups()));
        switch (x.kind()) {
          case CLOSE -> st.closes.putIfAbsent(group, new long[] {q, index});
          case PREPARE -> {
            st.prepares.putIfAbsent(group, new long[] {q, index});
            st.readsCloseKey |= e.readSet().contains(XgStep.closeKey(x.txn()));
            prepared.computeIfAbsent(x.txn(), t -> new HashSet<>()).add(group);
            locks.putIfAbsent(x.txn(), new XgLocks.Lock(q, e));
            readAll(reads, scanned, node, group, e);
          }
          case DECIDE -> {
            Decision first = decisions.get(x.txn());
            if (first != null) {
              out.add(Kind.XG_OUTCOME, q, x.txn(), "a second DECIDE("
                  + (x.commit() ? "COMMIT" : "ABORT") + ") for " + x.txn() + " at position " + q
                  + " of " + group + " after DECIDE(" + (first.commit() ? "COMMIT" : "ABORT")
                  + ") at position " + first.position() + " of " + first.group());
              continue;
            }
            decisions.put(x.txn(), new Decision(group, q, x.commit(), x.groups()));
            if (x.commit()) {
              readAll(reads, scanned, node, group, e);
              writeAll(versions, node, q, e);
            }
            XgLocks.Lock held = locks.remove(x.txn());
            if (held != null) {
              // One round: the DECIDE is also the coordinator's RESOLVE.
              resolutions.add(new Resolution(group, q, x.txn(), x.commit(), true));
              if (x.commit()) {
                writeAll(versions, node, q, held.prepare());
              }
            }
          }
          case VALIDATE -> {
            // A read-only transaction's reads enter the graph from its client's observation
            // (its outcome is the client's: COMMITTED only if every VALIDATE was chosen); the
            // entry's placement is checked by the group's own replay.
          }
          case RESOLVE -> {
            XgLocks.Lock held = locks.remove(x.txn());
            resolutions.add(new Resolution(group, q, x.txn(), x.commit(), held != null));
            if (held != null) {
              if (x.commit()) {
                writeAll(versions, node, q, held.prepare());
              }
            }
          }
        }
      }
    }
  }

  private static void readAll(List<Read> reads, List<Scanned> scanned, String node,
      String group, LogEntry e) {
    for (String k : e.readSet()) {
      if (!XgStep.isStepKey(k)) {
        reads.add(new Read(node, group, k, e.readPosition(), -1));
      }
    }
    for (KeyRange r : e.readRanges()) {
      scanned.add(new Scanned(node, group, r, e.readPosition()));
    }
  }

  private static void writeAll(Map<String, List<Version>> versions, String node, long q,
      LogEntry e) {
    for (String k : e.writes().keySet()) {
      if (!XgStep.isStepKey(k)) {
        versions.computeIfAbsent(k, x -> new ArrayList<>()).add(new Version(q, node));
      }
    }
  }

  /** A directed graph over transaction nodes, with cycle detection. */
  private static final class Graph {
    private final Map<String, Set<String>> nodes = new LinkedHashMap<>();
    private int edgeCount;

    void node(String n) {
      nodes.computeIfAbsent(n, k -> new LinkedHashSet<>());
    }

    void edge(String from, String to) {
      if (from.equals(to)) {
        return;
      }
      node(to);
      if (nodes.computeIfAbsent(from, k -> new LinkedHashSet<>()).add(to)) {
        edgeCount++;
      }
    }

    /** One-group entries are committed; cross-group ones when decided COMMIT; read-only given. */
    boolean committed(String node, Map<String, Decision> decisions) {
      if (node.startsWith("x:")) {
        Decision d = decisions.get(node.substring(2));
        return d != null && d.commit();
      }
      return true;
    }

    /** A cycle as a list of nodes (first repeated at the end), if any: iterative DFS. */
    Optional<List<String>> findCycle() {
      Map<String, Integer> state = new HashMap<>(); // 1 on the stack, 2 done
      for (String start : nodes.keySet()) {
        if (state.containsKey(start)) {
          continue;
        }
        ArrayDeque<String> path = new ArrayDeque<>();
        ArrayDeque<java.util.Iterator<String>> its = new ArrayDeque<>();
        path.push(start);
        its.push(nodes.get(start).iterator());
        state.put(start, 1);
        while (!path.isEmpty()) {
          java.util.Iterator<String> it = its.peek();
          if (it.hasNext()) {
            String next = it.next();
            Integer s = state.get(next);
            if (s == null) {
              state.put(next, 1);
              path.push(next);
              its.push(nodes.getOrDefault(next, Set.of()).iterator());
            } else if (s == 1) {
              List<String> cycle = new ArrayList<>();
              List<String> stack = new ArrayList<>(path);
              java.util.Collections.reverse(stack);
              cycle.addAll(stack.subList(stack.indexOf(next), stack.size()));
              cycle.add(next);
              return Optional.of(cycle);
            }
          } else {
            state.put(path.pop(), 2);
            its.pop();
          }
        }
      }
      return Optional.empty();
    }
  }
}
