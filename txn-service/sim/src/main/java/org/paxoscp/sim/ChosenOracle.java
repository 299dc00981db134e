package org.paxoscp.sim;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * What the simulator knows and no DC does: every vote every acceptor cast, hence which values
 * are <em>chosen</em> at each position (accepted by a majority of DCs in one ballot) at every
 * moment. It checks Paxos's own safety as it happens, before any client could notice:
 *
 * <ul>
 *   <li><b>agreement</b>: at most one value is ever chosen at a position;
 *   <li><b>learning</b>: nobody sends APPLY (or answers a learn request with) a value before it
 *       is chosen (a proposer that
 *       takes a value as chosen too early may be right by luck, which the client-level checker
 *       cannot tell from correct).
 * </ul>
 *
 * Values are compared whole (entries, reads, writes, steps), not by their ids alone.
 */
final class ChosenOracle {
  private final int majority;
  /** Per group and position, per ballot and value, the DCs that voted so. */
  private final Map<String, Map<Long, Map<Vote, Set<Integer>>>> votes = new HashMap<>();
  /** Per group and position, the values chosen so far. */
  private final Map<String, Map<Long, Set<LogValue>>> chosen = new HashMap<>();
  private final List<String> violations = new ArrayList<>();
  private long votesSeen;
  private long appliesChecked;

  private record Vote(Ballot ballot, LogValue value) {}

  ChosenOracle(int dcCount) {
    this.majority = dcCount / 2 + 1;
  }

  /** How a value is named in a report: its entries' transaction ids. */
  private static List<String> ids(LogValue v) {
    return v.entries().stream().map(LogEntry::txnId).toList();
  }

  /** DC {@code dc}'s acceptor accepted {@code value} in {@code ballot} at a position. */
  void accepted(String group, long position, Ballot ballot, LogValue value, int dc) {
    votesSeen++;
    Vote vote = new Vote(ballot, value);
    Set<Integer> voters = votes.computeIfAbsent(group, g -> new HashMap<>())
        .computeIfAbsent(position, p -> new HashMap<>())
        .computeIfAbsent(vote, v -> new HashSet<>());
    voters.add(dc);
    if (voters.size() >= majority) {
      Set<LogValue> here = chosen.computeIfAbsent(group, g -> new HashMap<>())
          .computeIfAbsent(position, p -> new LinkedHashSet<>());
      if (here.add(vote.value()) && here.size() == 2) {
        violations.add("agreement: group " + group + " position " + position + " chose two "
            + "values, " + String.join(" and ", here.stream().map(v -> ids(v).toString())
                .toList()) + " (the second in ballot " + ballot + ")");
      }
    }
  }

  /**
   * Someone told others that {@code value} is chosen at a position (an APPLY, a learn reply): it
   * must be chosen already.
   */
  void applied(String group, long position, LogValue value, String from) {
    appliesChecked++;
    Set<LogValue> here = chosen.getOrDefault(group, Map.of()).getOrDefault(position, Set.of());
    if (!here.contains(value) && violations.size() < 20) {
      violations.add("learning: " + from + " sent " + ids(value) + " as chosen for group "
          + group + " position " + position + " before a majority accepted it in one ballot "
          + "(chosen: " + here.stream().map(v -> ids(v).toString()).toList() + ")");
    }
  }

  List<String> violations() {
    return List.copyOf(violations);
  }

  long votesSeen() {
    return votesSeen;
  }

  long appliesChecked() {
    return appliesChecked;
  }
}
