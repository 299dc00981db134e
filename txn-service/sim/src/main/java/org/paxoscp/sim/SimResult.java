package org.paxoscp.sim;

import java.util.List;
import java.util.SortedMap;
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CheckResult;

/**
 * What one simulated run produced: outcome counts, latency, the checker's verdict.
 *
 * @param config the run's configuration (with its seed, for replay)
 * @param commitsByRound committed read-write transactions by number of promotions (0 = first try)
 * @param readOnlyCommits read-only transactions (committed at once, outside the log)
 * @param aborted aborted transactions (certainly not in the log)
 * @param unknown transactions whose client could not learn the outcome
 * @param crashed transactions whose client crashed in mid-commit
 * @param combinedPositions log positions holding more than one entry
 * @param combinedTxns entries sharing a position with another entry
 * @param noopPositions positions that hold no transaction: no-ops, and withdrawals of
 *     leader-mode entries (docs/leader-combination.md)
 * @param withdrawalPositions of those, the positions holding a withdrawal (the rest are no-ops
 *     a learner or a settling proposer decided where nobody had voted)
 * @param positions the length of the decided log
 * @param commitLatencyMicros commit latency (commit call to outcome) of committed read-write txns
 * @param check the serializability checker's verdict on every DC's log and every history
 * @param applyConflicts DCs told two different chosen values for one position (R1 broken)
 * @param finished whether the run ended by itself within its virtual-time and event limits
 * @param virtualMicros virtual time the run took
 * @param messages messages sent
 * @param exercised what the run exercised of the shipped service
 * @param unknownFates where the UNKNOWN outcomes' entries ended up in the log
 * @param oracleViolations Paxos's own safety broken as it happened, seen from every vote cast
 *     ({@code ChosenOracle}): two values chosen at a position, or an APPLY sent for a value not
 *     yet chosen; and clients' sessions broken: a transaction that began below a position its
 *     own client process committed or began at in that group
 * @param replays what the network's replay fault did ({@link SimConfig.Replay})
 * @param updates what the clients' counters and counting sets did ({@link SimConfig#updateShare})
 */
public record SimResult(
    SimConfig config,
    SortedMap<Integer, Integer> commitsByRound,
    int readOnlyCommits,
    int aborted,
    int unknown,
    int crashed,
    int combinedPositions,
    int combinedTxns,
    int noopPositions,
    int withdrawalPositions,
    long positions,
    Histogram commitLatencyMicros,
    CheckResult check,
    List<String> applyConflicts,
    boolean finished,
    long virtualMicros,
    long messages,
    Exercised exercised,
    UnknownFates unknownFates,
    List<String> oracleViolations,
    Replays replays,
    Updates updates) {

  /**
   * The commutative updates of a run ({@link SimConfig#updateShare}).
   *
   * @param opsCommitted update operations (one per key and entry, a transaction's updates of a
   *     key combined) in entries committed whose updates applied
   * @param entriesApplied one-group entries with updates committed and applied
   * @param refused entries with updates in the log but refused where they landed (an add past
   *     the 64-bit range, or to a value that is not a counter): their clients record ABORTED at
   *     that position
   * @param unknown entries with updates in the log whose clients learned from no DC whether
   *     they applied (recorded UNKNOWN at that position)
   * @param reads reads of a counter or a counting set ({@code getCounter}, {@code getSet})
   * @param materialized updates that transactions across groups turned into a read and a put
   *     before their steps
   * @param finalReads DCs that read every key back at the end of the run (per group), each
   *     judged by the checker as a read-only transaction
   */
  public record Updates(long opsCommitted, long entriesApplied, long refused, long unknown,
      long reads, long materialized, long finalReads) {
    public static final Updates NONE = new Updates(0, 0, 0, 0, 0, 0, 0);

    public Updates plus(Updates o) {
      return new Updates(opsCommitted + o.opsCommitted, entriesApplied + o.entriesApplied,
          refused + o.refused, unknown + o.unknown, reads + o.reads,
          materialized + o.materialized, finalReads + o.finalReads);
    }

    @Override
    public String toString() {
      return opsCommitted + " update ops committed in " + entriesApplied + " entries, "
          + refused + " entries refused, " + unknown + " unknown whether applied, " + reads
          + " counter and set reads, " + materialized + " updates turned into puts across "
          + "groups, " + finalReads + " DCs read every key back at the end";
    }
  }

  /**
   * Late copies the network delivered ({@link SimConfig.Replay}).
   *
   * @param copies messages replayed (each once)
   * @param redirected of those, copies sent to another DC's service than the original's
   * @param unmatchedReplies replies that reached a node where no request matched them: copies of
   *     replies redirected there, and the answers to redirected copies of requests
   */
  public record Replays(long copies, long redirected, long unmatchedReplies) {
    public static final Replays NONE = new Replays(0, 0, 0);

    public Replays plus(Replays o) {
      return new Replays(copies + o.copies, redirected + o.redirected,
          unmatchedReplies + o.unmatchedReplies);
    }

    @Override
    public String toString() {
      return copies + " copies replayed (" + redirected + " redirected to another DC), "
          + unmatchedReplies + " replies matched nothing";
    }
  }

  /**
   * The fate of UNKNOWN outcomes (one-group transactions): the checker holds each against the
   * range of positions its client was told ({@code Violation.Kind.UNKNOWN_OUTSIDE_RANGE}); these
   * counts show how often the range mattered.
   *
   * @param reported UNKNOWN outcomes told a range of positions
   * @param inLog of those, entries that are in the decided log
   * @param pastReadPositionPlusOne of those, entries chosen after the position following their
   *     read position (which an UNKNOWN once named alone in leader mode)
   */
  public record UnknownFates(int reported, int inLog, int pastReadPositionPlusOne) {
    public UnknownFates plus(UnknownFates o) {
      return new UnknownFates(reported + o.reported, inLog + o.inLog,
          pastReadPositionPlusOne + o.pastReadPositionPlusOne);
    }

    @Override
    public String toString() {
      return reported + " UNKNOWN told a range, " + inLog + " of them in the log, "
          + pastReadPositionPlusOne + " past read position + 1";
    }
  }

  /**
   * What a run exercised, so that a run cannot pass while exercising nothing.
   *
   * @param messagesByType messages sent, by type (PREPARE, ACCEPT, APPLY, grant, learn, begin,
   *     read requests, ...)
   * @param learnedFromPeers positions a service's catch-up learned from a peer DC
   * @param learnedByLearner positions a service's catch-up learned by running a learner instance
   * @param restarts service instances killed and restarted (memory lost, store kept)
   * @param instances service instances started in all
   * @param leaderRounds lists the services' leader combination proposed
   * @param leaderCommits entries the services answered COMMITTED in leader combination
   * @param restartsMidRound restarts that killed an instance with a leader round in flight
   * @param concurrentLeaderRounds submits served while two instances of one DC both had leader
   *     rounds in flight
   * @param entriesMoved entries a service moved off a batcher that left their pass-on
   *     unanswered (docs/leader-combination.md, "Under compound faults")
   */
  public record Exercised(SortedMap<String, Long> messagesByType, long learnedFromPeers,
      long learnedByLearner, long restarts, long instances, long leaderRounds,
      long leaderCommits, long restartsMidRound, long concurrentLeaderRounds,
      long entriesMoved) {

    public long messages(String type) {
      return messagesByType.getOrDefault(type, 0L);
    }

    /** Adds another run's counts. */
    public Exercised plus(Exercised o) {
      SortedMap<String, Long> m = new java.util.TreeMap<>(messagesByType);
      o.messagesByType.forEach((k, v) -> m.merge(k, v, Long::sum));
      return new Exercised(m, learnedFromPeers + o.learnedFromPeers,
          learnedByLearner + o.learnedByLearner, restarts + o.restarts, instances + o.instances,
          leaderRounds + o.leaderRounds, leaderCommits + o.leaderCommits,
          restartsMidRound + o.restartsMidRound, concurrentLeaderRounds + o.concurrentLeaderRounds,
          entriesMoved + o.entriesMoved);
    }

    public static Exercised none() {
      return new Exercised(new java.util.TreeMap<>(), 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    @Override
    public String toString() {
      return "messages " + messagesByType + ", positions learned from peers " + learnedFromPeers
          + ", by learners " + learnedByLearner + ", service restarts " + restarts
          + ", service instances " + instances
          + (leaderRounds > 0 ? ", leader rounds " + leaderRounds + " (entries committed "
              + leaderCommits + ", restarts mid-round " + restartsMidRound
              + ", submits while two instances of a DC ran rounds " + concurrentLeaderRounds
              + ", entries moved off a silent batcher " + entriesMoved + ")" : "");
    }
  }

  public int committed() {
    return commitsByRound.values().stream().mapToInt(Integer::intValue).sum() + readOnlyCommits;
  }

  /**
   * True when the checker found nothing, no DC saw conflicting chosen values, and every vote and
   * APPLY kept Paxos's agreement.
   */
  public boolean safe() {
    return check.ok() && applyConflicts.isEmpty() && oracleViolations.isEmpty();
  }

  public double latencyMillis(double percentile) {
    return commitLatencyMicros.getTotalCount() == 0 ? Double.NaN
        : commitLatencyMicros.getValueAtPercentile(percentile) / 1000.0;
  }
}
