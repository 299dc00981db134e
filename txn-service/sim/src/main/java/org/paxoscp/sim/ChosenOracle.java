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
 *   <li><b>learning</b>: nobody sends APPLY for a value before it is chosen (a proposer that
 *       takes a value as chosen too early may be right by luck, which the client-level checker
 *       cannot tell from correct).
 * </ul>
 *
 * A value is identified by its entries' transaction ids (unique per transaction and step; a no-op
 * has none).
 */
final class ChosenOracle {
  private final int majority;
  /** Per group and position, per ballot and value, the DCs that voted so. */
  private final Map<String, Map<Long, Map<Vote, Set<Integer>>>> votes = new HashMap<>();
  /** Per group and position, the values chosen so far. */
  private final Map<String, Map<Long, Set<List<String>>>> chosen = new HashMap<>();
  private final List<String> violations = new ArrayList<>();
  private long votesSeen;
  private long appliesChecked;

  private record Vote(Ballot ballot, List<String> value) {}

  ChosenOracle(int dcCount) {
    this.majority = dcCount / 2 + 1;
  }

  private static List<String> key(LogValue v) {
    return v.entries().stream().map(LogEntry::txnId).toList();
  }

  /** DC {@code dc}'s acceptor accepted {@code value} in {@code ballot} at a position. */
  void accepted(String group, long position, Ballot ballot, LogValue value, int dc) {
    votesSeen++;
    Vote vote = new Vote(ballot, key(value));
    Set<Integer> voters = votes.computeIfAbsent(group, g -> new HashMap<>())
        .computeIfAbsent(position, p -> new HashMap<>())
        .computeIfAbsent(vote, v -> new HashSet<>());
    voters.add(dc);
    if (voters.size() >= majority) {
      Set<List<String>> here = chosen.computeIfAbsent(group, g -> new HashMap<>())
          .computeIfAbsent(position, p -> new LinkedHashSet<>());
      if (here.add(vote.value()) && here.size() == 2) {
        violations.add("agreement: group " + group + " position " + position + " chose two "
            + "values, " + String.join(" and ", here.stream().map(Object::toString).toList())
            + " (the second in ballot " + ballot + ")");
      }
    }
  }

  /** Someone sent APPLY of {@code value} at a position: it must be chosen already. */
  void applied(String group, long position, LogValue value, String from) {
    appliesChecked++;
    Set<List<String>> here = chosen.getOrDefault(group, Map.of()).getOrDefault(position, Set.of());
    if (!here.contains(key(value)) && violations.size() < 20) {
      violations.add("learning: " + from + " sent APPLY of " + key(value) + " for group " + group
          + " position " + position + " before a majority accepted it in one ballot (chosen: "
          + here + ")");
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
