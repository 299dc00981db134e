package org.paxoscp.service;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.service.LeaderGroup.Memo;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Latency;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * Leader combination at one service instance (docs/architecture.md section 5.5; the rules and their
 * safety argument are in docs/leader-combination.md). Three parts, each with its own job:
 * <ul>
 *   <li>{@link BatcherPlacement}: which DC batches a client's entry, where a round passes
 *       entries on, whose entry leads a list; passing on, and DCs marked down;
 *   <li>{@link LeaderRounds}: a group's queue, its rounds (one in flight at a time), holds for
 *       returning clients, the grant asked ahead;
 *   <li>{@link RoundPlanner}: what decided positions answer, and which waiting entries join a
 *       round's list: the safety-critical judgement.
 * </ul>
 * This class keeps the groups' states and is the service's entry point.
 *
 * <p>Nothing here is needed for safety beyond the planner's checks: the grant check-and-write and
 * the acceptors arbitrate between rounds of different instances. A crash loses the queue; clients
 * settle their outcome by deciding {@code p, p + 1, ...} in turn, withdrawing the entry at the
 * first position nobody voted at (see {@code LeaderSubmit}).
 *
 * <p><b>Memory</b> (docs/architecture.md section 9). A group's state is <em>live</em> while it has
 * a round in flight, a hold, a queued entry or an entry passed on and not yet answered: then it is
 * in {@code live} and cannot be evicted (it cannot be rebuilt from the store). When it becomes idle
 * it is retired: removed from {@code live}, with a small memo (the next position, the last
 * {@value LeaderGroup#MEMO_POSITIONS} chosen values, the hold back-off, the grant asked ahead for
 * the next round) put in a cache bounded by entries and evicted by recency. The next submit
 * rebuilds the state from the memo, or from the store when the memo was evicted. A retired state
 * is never used again, so one group never has two states here through eviction (and two would be
 * no worse than two instances of this DC).
 *
 * <p>Thread-safe; never blocks on a message.
 */
public final class LeaderCombiner {
  /**
   * Rounds in a row an entry may take part in without its position being decided (no quorum)
   * before it is dropped with CATCH_UP_FAILED; its client then settles the outcome itself.
   */
  static final int MAX_UNDECIDED_ROUNDS = 3;

  /**
   * The combiner's safety-critical decisions. Production code uses {@link #SHIPPED}; tests
   * override a method to plant a bug and prove the checker catches it.
   */
  public static class Rules {
    /** The rules as shipped. */
    public static final Rules SHIPPED = new Rules();

    /**
     * Placement rule: does {@code entry} read a key that {@code earlier} writes, break the locks
     * of a PREPARE in it, or is it withdrawn there ({@link Placement})?
     */
    protected boolean conflicts(LogEntry entry, LogValue earlier) {
      return Placement.conflicts(earlier, entry);
    }

    /** Whether to answer COMMITTED when a list is proposed rather than when it is chosen. */
    protected boolean answerWhenProposed() {
      return false;
    }

    /**
     * Whether a round proposes its list at the fast ballot without holding the position's grant
     * (section 5.3: only the grant holder may).
     */
    protected boolean fastWithoutGrant() {
      return false;
    }
  }

  /**
   * How a service combines.
   *
   * @param leaderCosts what leading costs at each DC (its nearest-majority RTT; missing: 0).
   *     A list's first entry, whose DC leads the next position (section 5.3), comes from the
   *     cheapest DC among the list's origins, this DC winning ties: so leadership moves to a
   *     cheaper DC when one has an entry waiting, and otherwise stays here while this DC has one.
   * @param rules the safety-critical decisions ({@link Rules#SHIPPED} outside planted-bug tests)
   * @param holdShare how long, at most, the round after a decision waits for this DC's clients
   *     answered at it, as a share of the round just decided (0: never; default
   *     {@link #DEFAULT_HOLD_SHARE})
   * @param latency the RTTs between DCs the leader costs come from, or null: with them, a
   *     group's batcher follows where the committed entries come from ({@link BatcherPlacement});
   *     without, it is the cheapest DC to lead
   * @param rttProbe with no leader costs given, how often this service times the round trip to
   *     each other DC ({@link RoundTrips}), whose agreed table then gives the costs and RTTs;
   *     null: it does not, and without costs the batcher is the next position's leader
   */
  public record Options(Map<String, Long> leaderCosts, Rules rules, double holdShare,
      Latency latency, Duration rttProbe) {
    /** A hold lasts at most a quarter of the round before it. */
    public static final double DEFAULT_HOLD_SHARE = 0.25;
    /** Every DC costs the same (own-DC entries first); the shipped rules. */
    public static final Options DEFAULT = new Options(Map.of(), Rules.SHIPPED);

    public Options {
      leaderCosts = Map.copyOf(leaderCosts);
      Objects.requireNonNull(rules);
      if (!(holdShare >= 0)) {
        throw new IllegalArgumentException("holdShare must be >= 0, got " + holdShare);
      }
      if (rttProbe != null && (rttProbe.isNegative() || rttProbe.isZero())) {
        throw new IllegalArgumentException("rttProbe must be > 0, got " + rttProbe);
      }
    }

    /** With configured costs and RTTs (or none), measuring nothing. */
    public Options(Map<String, Long> leaderCosts, Rules rules, double holdShare,
        Latency latency) {
      this(leaderCosts, rules, holdShare, latency, null);
    }

    /** Without RTTs: the batcher is the cheapest DC to lead. */
    public Options(Map<String, Long> leaderCosts, Rules rules, double holdShare) {
      this(leaderCosts, rules, holdShare, null, null);
    }

    public Options(Map<String, Long> leaderCosts, Rules rules) {
      this(leaderCosts, rules, DEFAULT_HOLD_SHARE);
    }
  }

  private final int maxWaiting;
  private final List<String> dcs;
  private final RoundTrips roundTrips;
  private volatile boolean probesStopped;
  private final BatcherPlacement placement;
  private final LeaderRounds rounds;
  /** Groups with live work here (see the class comment); never evicted. */
  private final ConcurrentHashMap<String, LeaderGroup> live = new ConcurrentHashMap<>();
  private final LongAdder idleEvictions = new LongAdder();
  /** Idle groups' memos, bounded by entries, evicted by recency. */
  private final Cache<String, Memo> idle;

  /**
   * @param maxListBytes the largest encoded list one round proposes
   * @param maxWaiting the most entries one group may hold waiting; more are refused OVERLOADED
   */
  LeaderCombiner(String dc, List<String> dcs, Acceptor acceptor, LogApplier applier,
      CatchUp catchUp, Scheduler scheduler, Options options, int maxListBytes, int maxWaiting) {
    this(dc, dcs, acceptor, applier, catchUp, scheduler, options, maxListBytes, maxWaiting,
        LogApplier.DEFAULT_MAX_GROUPS);
  }

  /** As above, keeping at most {@code maxIdleGroups} idle groups' memos. */
  LeaderCombiner(String dc, List<String> dcs, Acceptor acceptor, LogApplier applier,
      CatchUp catchUp, Scheduler scheduler, Options options, int maxListBytes, int maxWaiting,
      int maxIdleGroups) {
    this.idle = Caffeine.newBuilder().maximumSize(maxIdleGroups)
        .evictionListener((g, memo, cause) -> idleEvictions.increment()).build();
    this.maxWaiting = maxWaiting;
    this.dcs = List.copyOf(dcs);
    ProposerConfig proposerConfig = catchUp.proposerConfig();
    this.roundTrips = new RoundTrips(dc, dcs);
    LeaderCosts configured = new LeaderCosts(options.leaderCosts(), options.latency());
    boolean measured = !configured.known() && options.rttProbe() != null
        && roundTrips.measurable();
    if (measured) {
      roundTrips.start(catchUp.transport(), scheduler, options.rttProbe(),
          () -> probesStopped || catchUp.isClosed());
    }
    this.placement = new BatcherPlacement(dc, dcs,
        measured ? roundTrips::costs : () -> configured, catchUp.transport(), scheduler,
        Duration.ofNanos(proposerConfig.phaseTimeoutMicros() * 2000),
        proposerConfig.phaseTimeoutMicros() * 10, catchUp.originShares());
    this.rounds = new LeaderRounds(dc, dcs, acceptor, applier, catchUp, scheduler,
        options.rules(), options.holdShare(), maxListBytes, placement, this::retireIfIdle,
        this::submit);
  }

  /**
   * The answer to another DC's round-trip probe (every service answers, whether or not it
   * measures): its rows merged here, and the rows known here.
   */
  public Message answer(Message.RttProbe probe) {
    return roundTrips.answer(probe);
  }

  /**
   * Stops probing the other DCs (the simulator, once its workload ended; a service stops when
   * its catch-up closes). The round trips measured so far stay in use.
   */
  public void stopProbes() {
    probesStopped = true;
  }

  /**
   * What leading costs at each DC as this service knows now (configured or measured, µs); empty
   * while it knows none.
   */
  public Map<String, Long> leaderCosts() {
    return placement.costs().lead();
  }

  /** The round trips between DCs this service places by now, or empty. */
  public Optional<org.paxoscp.transport.Latency> roundTrips() {
    return Optional.ofNullable(placement.costs().rtts());
  }

  /**
   * The round trips between DCs this service places batchers by, in ms ("O-C 20.1, O-V1 90.2,
   * ..."), or "" while it knows none.
   */
  public String describeRoundTrips() {
    org.paxoscp.transport.Latency rtts = placement.costs().rtts();
    if (rtts == null) {
      return "";
    }
    List<String> parts = new java.util.ArrayList<>();
    for (int i = 0; i < dcs.size(); i++) {
      for (int j = i + 1; j < dcs.size(); j++) {
        parts.add(dcs.get(i) + "-" + dcs.get(j) + " " + String.format(java.util.Locale.ROOT,
            "%.1f", rtts.rttMicros(dcs.get(i), dcs.get(j)) / 1000.0));
      }
    }
    return String.join(", ", parts);
  }

  /** Where this service batches its groups' entries now, when it knows costs; else empty. */
  public Optional<String> batcher() {
    return placement.hasCosts() ? Optional.of(placement.batcher()) : Optional.empty();
  }

  /** Rounds started (lists proposed). */
  public long rounds() {
    return rounds.rounds();
  }

  /** Groups with a round in flight at this instance now. */
  public int roundsInFlight() {
    int n = 0;
    for (LeaderGroup g : live.values()) {
      synchronized (g) {
        n += g.inFlight ? 1 : 0;
      }
    }
    return n;
  }

  /** Submits passed on to another DC's service (the group's batcher or the next leader). */
  public long forwarded() {
    return placement.forwarded();
  }

  /** Times the batcher moved from one DC to another by where entries come from. */
  public long batcherMoves() {
    return placement.moves();
  }

  /** Holds begun: decisions after which the next round waited for this DC's clients. */
  public long holds() {
    return rounds.holds();
  }

  /** Whether {@code group}'s next round is held for this DC's returning clients. */
  boolean holding(String group) {
    LeaderGroup g = live.get(group);
    if (g == null) {
      return false;
    }
    synchronized (g) {
      return g.awaited > 0;
    }
  }

  /** Entries answered COMMITTED. */
  public long entriesCommitted() {
    return rounds.entriesCommitted();
  }

  /**
   * Queues {@code s} for rounds here; the caller has asked {@link #passOn} first (an entry it
   * passed on is not submitted here) and knows every position up to {@code s.position() - 1}
   * chosen, its value applied here or held by the applier ({@link LogApplier#knownThrough}).
   * If the leader moved meanwhile, the entry still runs here: every round asks the grant of the
   * position's leader, and rounds pass clients' entries on when another DC leads. The future
   * completes with a {@link SubmitReply} or an {@link ErrorReply}, or never (the client's
   * timeout then settles the outcome).
   */
  CompletableFuture<Message> submit(SubmitRequest s) {
    while (true) {
      LeaderGroup g = live.computeIfAbsent(s.group(),
          k -> new LeaderGroup(k, idle.asMap().remove(k)));
      CompletableFuture<Message> reply = rounds.queue(g, s, maxWaiting);
      if (reply != null) {
        return reply;
      }
      // g was being retired by another thread; the next lookup rebuilds it from its memo.
      Thread.onSpinWait();
    }
  }

  /**
   * Groups whose state is here now: live ones (a round, hold, queue or pass-on) and idle ones'
   * memos (an estimate, as Caffeine gives it).
   */
  public long cachedGroups() {
    return live.size() + idle.estimatedSize();
  }

  /** Idle groups' memos dropped to stay within the bound, since this combiner was made. */
  public long evictions() {
    return idleEvictions.sum();
  }

  /** Groups with live work here now (never evicted; see the class comment). */
  public int liveGroups() {
    return live.size();
  }

  /**
   * Drops every idle group's memo and the chosen values live groups cache, as if evicted (the
   * forced-eviction test mode); live work is kept.
   */
  void forgetCached() {
    idle.invalidateAll();
    for (LeaderGroup g : live.values()) {
      synchronized (g) {
        g.chosen.clear();
        g.ownListChosen = false;
      }
    }
  }

  /**
   * Passes a client's entry on to the DC that batches it when that is not this one
   * ({@link BatcherPlacement#passOnTo}), relaying the answer; empty when it is batched here (and
   * always for an entry another DC passed on). Needs nothing applied at this DC. An entry the
   * batcher leaves unanswered within the move bound ({@link BatcherPlacement#moveBoundMicros})
   * moves on to the next batcher by the same rule, once, or into rounds here through
   * {@code here} (which queues it once this DC knows the positions before it).
   */
  Optional<CompletableFuture<Message>> passOn(SubmitRequest s,
      java.util.function.Supplier<CompletableFuture<Message>> here) {
    if (s.forwarded()) {
      return Optional.empty();
    }
    LeaderGroup g = live.get(s.group());
    boolean idleGroup = g == null;
    if (idleGroup) {
      // Decide from a transient state rebuilt from the memo (not made live: nothing runs here).
      g = new LeaderGroup(s.group(), idle.getIfPresent(s.group()));
    }
    LeaderGroup group = g;
    Optional<String> to = placement.passOnTo(() -> rounds.leaderOfNext(group));
    if (idleGroup && !placement.hasCosts()) {
      // It read the log's end and the last chosen value: keep them for the next submit.
      Memo m;
      synchronized (g) {
        m = g.memo();
      }
      idle.put(g.name, m);
    }
    return to.map(dc -> placement.forward(s, dc, () -> placement
        .passOnTo(() -> rounds.leaderOfNext(group), dc)
        .map(next -> placement.forward(s, next, here))
        .orElseGet(here)));
  }

  /** Entries moved on from a batcher that left their pass-on unanswered (see {@link #passOn}). */
  public long entriesMoved() {
    return placement.moved();
  }

  /**
   * Retires {@code g} if it has no live work: its memo goes to the idle cache and it leaves the
   * live map; it is never used again (see the class comment).
   */
  private void retireIfIdle(LeaderGroup g) {
    Memo m;
    synchronized (g) {
      if (g.retired || g.live()) {
        return;
      }
      g.retired = true;
      m = g.memo();
    }
    // The memo first: a submit spinning on the retired state rebuilds from it next.
    idle.put(g.name, m);
    live.remove(g.name, g);
  }
}
