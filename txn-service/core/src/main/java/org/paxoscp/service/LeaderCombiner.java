package org.paxoscp.service;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage.GrantReply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Message.SubmitStatus;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Leader combination at one service instance (ARCHITECTURE 5.5; the rules and their safety
 * argument are in docs/leader-combination.md): entries submitted for a group wait in a queue
 * while one <em>round</em> is in flight; a round takes every waiting entry that may be placed at
 * the next position {@code q}, proposes them as one list (fast ballot when {@code q}'s leader DC
 * grants it, else basic Paxos), and when {@code q} is decided answers each entry in it COMMITTED;
 * the others wait for the next round, where they are placed at {@code q + 1} or answered.
 *
 * <p><b>Holding for returning clients.</b> A closed-loop client of this DC answered COMMITTED
 * submits its next entry a few milliseconds later, just after the next round started, and then
 * waits for that whole round before its own. So when {@code q} is decided with entries of this
 * DC's own clients in it, the next round waits until as many of this DC's clients have
 * submitted again, for at most a quarter of the round just decided ({@link Options#holdShare}),
 * and starts at once when they have. A lone client is its own returner: its next entry ends
 * the hold, so it never waits. After a hold that ended with none of them back (clients that
 * think between transactions), holds are tried only at every 2nd, 4th, then 8th decision until
 * one is useful again. A hold only postpones when a round starts; what the round does is
 * unchanged, so it has no part in safety.
 *
 * <p><b>Answers come only from decided positions.</b> Before an entry submitted for position
 * {@code p} with bound {@code b} joins round {@code q}, the values chosen at {@code p ... q-1}
 * (all decided and known here: {@code q} is one past the last position this instance saw
 * decided, or past those whose chosen values this DC has applied or holds, if that is higher)
 * are checked: one that holds the entry answers COMMITTED there; one that writes a key the
 * entry read, or holds its withdrawal, answers ABORTED (the placement rule forbids any later
 * position);
 * {@code q > p + b} answers ABORTED (the bound is used up, and every position in
 * {@code p ... p + b} is decided without it).
 * So a duplicate submit, a restarted instance or a second instance of this DC can never place
 * an entry twice or abort one that is chosen.
 *
 * <p>Nothing here is needed for safety beyond those checks: the grant check-and-write and the
 * acceptors arbitrate between rounds of different instances. A crash loses the queue; clients
 * settle their outcome by deciding {@code p, p + 1, ...} in turn, withdrawing the entry at the
 * first position nobody voted at (see {@code LeaderSubmit}).
 *
 * <p><b>Memory</b> (ARCHITECTURE section 9). A group's state is <em>live</em> while it has a round
 * in flight, a hold, a queued entry or an entry passed on and not yet answered: then it is in
 * {@code live} and cannot be evicted (it cannot be rebuilt from the store). When it becomes idle
 * it is retired: removed from {@code live}, with a small memo (the next position, the last
 * {@value #MEMO_POSITIONS} chosen values, the hold back-off, the grant asked ahead for the next
 * round) put in a cache bounded by entries
 * and evicted by recency. The next submit rebuilds the state from the memo, or from the store
 * when the memo was evicted. A retired state is never used again, so one group never has two
 * states here through eviction (and two would be no worse than two instances of this DC).
 *
 * <p>Thread-safe; never blocks on a message. Store work runs on the calling thread or the
 * {@link Scheduler}'s workers.
 */
public final class LeaderCombiner {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderCombiner.class);
  /**
   * Rounds in a row an entry may take part in without its position being decided (no quorum)
   * before it is dropped with CATCH_UP_FAILED; its client then settles the outcome itself.
   */
  static final int MAX_UNDECIDED_ROUNDS = 3;
  /**
   * Chosen values kept per group for placement checks (twice the largest bound); older ones are
   * read from the store. Bounds the memory a service holds per group it has batched for.
   */
  private static final int CACHED_POSITIONS = 2 * SubmitRequest.MAX_BOUND;
  /** After holds that none of the awaited clients came back to: hold at every 2^n-th decision. */
  private static final int MAX_HOLD_BACKOFF = 3;
  /** Chosen values an idle group's memo keeps: the last one names the next position's leader. */
  static final int MEMO_POSITIONS = 2;

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
   */
  public record Options(Map<String, Long> leaderCosts, Rules rules, double holdShare) {
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
    }

    public Options(Map<String, Long> leaderCosts, Rules rules) {
      this(leaderCosts, rules, DEFAULT_HOLD_SHARE);
    }
  }

  private final String dc;
  private final List<String> dcs;
  private final Map<String, Long> leaderCosts;
  private final int dcIndex;
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final CatchUp catchUp;
  private final ProposerDriver driver;
  private final ProposerConfig proposerConfig;
  private final Scheduler scheduler;
  private final Rules rules;
  private final double holdShare;
  private final int maxListBytes;
  private final int maxWaiting;
  /** Groups with live work here (see the class comment); never evicted. */
  private final ConcurrentHashMap<String, GroupState> live = new ConcurrentHashMap<>();
  private final java.util.concurrent.atomic.LongAdder idleEvictions =
      new java.util.concurrent.atomic.LongAdder();
  /** Idle groups' memos, bounded by entries, evicted by recency. */
  private final Cache<String, Memo> idle;
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong entriesCommitted = new AtomicLong();
  private final AtomicLong forwarded = new AtomicLong();
  private final AtomicLong holdsBegun = new AtomicLong();
  private final Transport transport;
  private final Duration forwardTimeout;
  /** How long a DC that did not answer a pass-on counts as down ({@link LeaderSubmit#batcher}). */
  private final long downMicros;
  /** Per DC, until when it counts as down. */
  private final Map<String, Long> down = new ConcurrentHashMap<>();

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
    this.dc = Objects.requireNonNull(dc);
    this.dcs = List.copyOf(dcs);
    this.dcIndex = this.dcs.indexOf(dc);
    this.acceptor = Objects.requireNonNull(acceptor);
    this.applier = Objects.requireNonNull(applier);
    this.catchUp = Objects.requireNonNull(catchUp);
    this.driver = catchUp.driver();
    this.transport = catchUp.transport();
    this.proposerConfig = catchUp.proposerConfig();
    this.scheduler = Objects.requireNonNull(scheduler);
    this.rules = options.rules();
    this.holdShare = options.holdShare();
    this.leaderCosts = options.leaderCosts();
    this.maxListBytes = maxListBytes;
    this.maxWaiting = maxWaiting;
    this.forwardTimeout = Duration.ofNanos(proposerConfig.phaseTimeoutMicros() * 2000);
    this.downMicros = proposerConfig.phaseTimeoutMicros() * 10;
  }

  /** Rounds started (lists proposed). */
  public long rounds() {
    return rounds.get();
  }

  /** Groups with a round in flight at this instance now. */
  public int roundsInFlight() {
    int n = 0;
    for (GroupState g : live.values()) {
      synchronized (g) {
        n += g.inFlight ? 1 : 0;
      }
    }
    return n;
  }

  /** Submits passed on to another DC's service (the group's batcher or the next leader). */
  public long forwarded() {
    return forwarded.get();
  }

  /** Holds begun: decisions after which the next round waited for this DC's clients. */
  public long holds() {
    return holdsBegun.get();
  }

  /** Whether {@code group}'s next round is held for this DC's returning clients. */
  boolean holding(String group) {
    GroupState g = live.get(group);
    if (g == null) {
      return false;
    }
    synchronized (g) {
      return g.awaited > 0;
    }
  }

  /** Entries answered COMMITTED. */
  public long entriesCommitted() {
    return entriesCommitted.get();
  }

  /**
   * Queues {@code s} for rounds here; the caller has asked {@link #passOn} first (an entry it
   * passed on is not submitted here) and knows every position up to {@code s.position() - 1}
   * chosen, its value applied here or held by the applier ({@link LogApplier#knownThrough}).
   * If the leader moved meanwhile, the entry still runs here: every round asks the grant of the
   * position's leader, and rounds pass clients' entries on when another DC leads. Starts a
   * round at once when none is in flight and no hold awaits this DC's clients (or this entry is
   * the last one awaited). The future completes with a {@link SubmitReply} or an
   * {@link ErrorReply}, or never (the client's timeout then settles the outcome).
   */
  CompletableFuture<Message> submit(SubmitRequest s) {
    while (true) {
      GroupState g = live.computeIfAbsent(s.group(),
          k -> new GroupState(k, idle.asMap().remove(k)));
      CompletableFuture<Message> reply = trySubmit(g, s);
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
    for (GroupState g : live.values()) {
      synchronized (g) {
        g.chosen.clear();
        g.ownListChosen = false;
      }
    }
  }

  /**
   * Retires {@code g} if it has no live work: its memo goes to the idle cache and it leaves the
   * live map; it is never used again (see the class comment).
   */
  private void retireIfIdle(GroupState g) {
    Memo m;
    synchronized (g) {
      if (g.retired || g.inFlight || g.awaited > 0 || !g.queue.isEmpty() || !g.byTxn.isEmpty()) {
        return;
      }
      g.retired = true;
      m = g.memo();
    }
    // The memo first: a submit spinning on the retired state rebuilds from it next.
    idle.put(g.name, m);
    live.remove(g.name, g);
  }

  /** {@link #submit} to {@code g}; null when {@code g} is retired. */
  private CompletableFuture<Message> trySubmit(GroupState g, SubmitRequest s) {
    Pending p;
    boolean start;
    synchronized (g) {
      if (g.retired) {
        return null;
      }
      Pending existing = g.byTxn.get(s.entry().txnId());
      if (existing != null) {
        // A duplicate (retransmitted or duplicated datagram): one placement, one answer.
        return existing.reply;
      }
      if (g.byTxn.size() >= maxWaiting) {
        return CompletableFuture.completedFuture(new ErrorReply(s.group(), s.position(),
            ErrorCode.OVERLOADED, "DC " + dc + " holds " + g.byTxn.size()
                + " waiting entries of group " + s.group() + "; nothing was placed"));
      }
      p = new Pending(s);
      g.queue.addLast(p);
      g.byTxn.put(s.entry().txnId(), p);
      if (g.awaited > 0) {
        // Holding: a returning client of this DC ends the hold when it is the last awaited.
        if (returns(s)) {
          g.returned++;
          start = --g.awaited == 0;
          if (start) {
            g.idleHolds = 0;
          }
        } else {
          start = false;
        }
      } else {
        start = !g.inFlight;
      }
      g.inFlight = true;
    }
    if (start) {
      startRound(g);
    }
    return p.reply;
  }

  /**
   * Passes a client's entry on to the DC that batches it when that is not this one (see
   * {@link #passOnTo}), relaying the answer; empty when it is batched here (and always for an
   * entry another DC passed on). Needs nothing applied at this DC.
   */
  Optional<CompletableFuture<Message>> passOn(SubmitRequest s) {
    if (s.forwarded()) {
      return Optional.empty();
    }
    GroupState g = live.get(s.group());
    boolean idleGroup = g == null;
    if (idleGroup) {
      // Decide from a transient state rebuilt from the memo (not made live: nothing runs here).
      g = new GroupState(s.group(), idle.getIfPresent(s.group()));
    }
    Optional<String> to = passOnTo(g);
    if (idleGroup && leaderCosts.isEmpty()) {
      // It read the log's end and the last chosen value: keep them for the next submit.
      Memo m;
      synchronized (g) {
        m = g.memo();
      }
      idle.put(g.name, m);
    }
    return to.map(leader -> forward(s, leader));
  }

  // ---- rounds ------------------------------------------------------------------------------

  /** The state of one group; guarded by its own monitor. */
  private static final class GroupState {
    final String name;
    final ArrayDeque<Pending> queue = new ArrayDeque<>();
    final Map<String, Pending> byTxn = new HashMap<>();
    final TreeMap<Long, LogValue> chosen = new TreeMap<>();
    /** The grant asked in advance for the next round, or null. */
    Prefetch prefetch;
    /** One past the last position this instance's rounds saw decided (every one below is). */
    long nextPosition = 1;
    /** The last round chose its own list: nextPosition is the log's end as far as we know. */
    boolean ownListChosen;
    /** A round is in flight, or a hold will start one (see {@link #endHold}). */
    boolean inFlight;
    /** While holding: how many of this DC's clients answered at the decision are still awaited. */
    int awaited;
    /** While holding: how many have submitted again. */
    int returned;
    /** Holds begun; a hold's timer ends only its own hold. */
    long holds;
    /** Holds in a row that ended with none of the awaited clients back (at most the cap). */
    int idleHolds;
    /** Decisions since the last hold. */
    int sinceHold;

    /** Retired: out of the live map, never used again (see the class comment). */
    boolean retired;

    /** A fresh state, or one rebuilt from an idle group's memo. */
    GroupState(String name, Memo memo) {
      this.name = name;
      if (memo != null) {
        nextPosition = memo.nextPosition();
        ownListChosen = memo.ownListChosen();
        idleHolds = memo.idleHolds();
        sinceHold = memo.sinceHold();
        prefetch = memo.prefetch();
        chosen.putAll(memo.chosen());
      }
    }

    /** What an idle group keeps; caller holds the monitor. */
    Memo memo() {
      TreeMap<Long, LogValue> last = new TreeMap<>();
      for (var e : chosen.descendingMap().entrySet()) {
        if (last.size() == MEMO_POSITIONS) {
          break;
        }
        last.put(e.getKey(), e.getValue());
      }
      return new Memo(nextPosition, ownListChosen, idleHolds, sinceHold, prefetch, last);
    }
  }

  /**
   * An idle group's state worth keeping: a cache of what the store holds, a heuristic's state,
   * and the grant asked ahead for the next round (granted to a holder only this instance knows:
   * dropping it costs that round the slow path).
   */
  private record Memo(long nextPosition, boolean ownListChosen, int idleHolds, int sinceHold,
      Prefetch prefetch, Map<Long, LogValue> chosen) {}

  private static final class Pending {
    final SubmitRequest request;
    final CompletableFuture<Message> reply = new CompletableFuture<>();
    boolean answered;
    int undecidedRounds;

    Pending(SubmitRequest request) {
      this.request = request;
    }

    LogEntry entry() {
      return request.entry();
    }
  }

  /** Builds and proposes the next list of {@code g}, or ends the group's rounds. */
  private void startRound(GroupState g) {
    List<Pending> list = new ArrayList<>();
    List<Runnable> answers = new ArrayList<>();
    List<Pending> toForward = new ArrayList<>();
    long q;
    OptionalInt leader;
    try {
      if (catchUp.isClosed()) {
        throw new CatchUpFailedException("the service instance of DC " + dc + " is stopping");
      }
      q = nextPosition(g);
      LogValue previous = q == 1 ? null : chosen(g, q - 1);
      leader = previous == null ? OptionalInt.empty() : Proposer.leaderAfter(dcs, previous);
      synchronized (g) {
        if (leaderCosts.isEmpty() && leader.isPresent() && leader.getAsInt() != dcIndex) {
          // Another DC leads q: pass the clients' entries on. A round here that failed at q may
          // have left votes for some of them at q; that is safe, since the leader's rounds judge
          // an entry against decided positions before placing it (a value chosen at q that holds
          // it answers it COMMITTED there, never placed again). Entries forwarded to this DC are
          // not passed on again; they run here, asking the leader's grant.
          for (var it = g.queue.iterator(); it.hasNext(); ) {
            Pending p = it.next();
            if (!p.request.forwarded()) {
              it.remove();
              toForward.add(p);
            }
          }
        }
        buildList(g, q, list, answers);
        if (list.isEmpty()) {
          g.inFlight = !g.queue.isEmpty();
        }
      }
    } catch (RuntimeException e) {
      failAll(g, e);
      return;
    }
    answers.forEach(Runnable::run);
    for (Pending p : toForward) {
      forward(p.request, dcs.get(leader.getAsInt())).whenComplete((m, t) -> {
        synchronized (g) {
          p.answered = true;
          g.byTxn.remove(p.entry().txnId(), p);
        }
        p.reply.complete(m);
        retireIfIdle(g);
      });
    }
    if (list.isEmpty()) {
      boolean done;
      synchronized (g) {
        done = !g.inFlight;
        g.ownListChosen &= done;
      }
      if (done) {
        retireIfIdle(g);
        return;
      }
      // Every waiting entry was held back (a later position only): read the log's end from the
      // store and try again shortly.
      scheduler.schedule(proposerConfig.backoffBaseMicros(), () -> startRound(g));
      return;
    }
    List<LogEntry> entries = new ArrayList<>();
    for (Pending p : list) {
      entries.add(p.entry());
    }
    LogValue value = new LogValue(entries);
    rounds.incrementAndGet();
    if (LOG.isDebugEnabled()) {
      LOG.debug("DC {} group {}: round at {} (leader {}), {} entries, first from {}", dc, g.name,
          q, leader.isPresent() ? dcs.get(leader.getAsInt()) : "none", entries.size(),
          entries.get(0).originDc());
    }
    if (rules.answerWhenProposed()) {
      for (Pending p : list) {
        answer(g, p, SubmitReply.committed(g.name, q, p.entry().txnId(), list.size())).run();
      }
    }
    long position = q;
    CompletableFuture<Boolean> asked;
    ProposerId id;
    synchronized (g) {
      boolean mine = g.prefetch != null && g.prefetch.position() == q && leader.isPresent()
          && leader.getAsInt() == g.prefetch.grantor();
      asked = mine ? g.prefetch.granted() : null;
      id = mine ? g.prefetch.holder() : ProposerId.random(scheduler.random());
      boolean askedAlready = g.prefetch != null && g.prefetch.position() == q + 1;
      if (!askedAlready) {
        g.prefetch = null;
        // If this list is chosen, its first entry's DC leads q + 1 (section 5.3): ask that
        // DC's grant for q + 1 now, in parallel with the round, so the next round can skip the
        // grant request. It is used only if the value chosen at q makes that DC the leader.
        int next = dcs.indexOf(value.entries().get(0).originDc());
        if (next >= 0) {
          g.prefetch = askGrant(g.name, q + 1, next);
        }
      }
    }
    SplittableRandom random = new SplittableRandom(scheduler.random().nextLong());
    long started = scheduler.nowMicros();
    CompletableFuture<Proposer> proposer = rules.fastWithoutGrant()
        ? CompletableFuture.completedFuture(Proposer.forGrantedList(proposerConfig, g.name, id,
            value, q, leader.orElse(dcIndex), random))
        : asked == null
        ? CompletableFuture.completedFuture(Proposer.forList(proposerConfig, g.name, id, value,
            q, leader, random))
        : asked.handle((granted, t) -> Boolean.TRUE.equals(granted)
            ? Proposer.forGrantedList(proposerConfig, g.name, id, value, q,
                leader.orElse(dcIndex), random)
            : Proposer.forList(proposerConfig, g.name, id, value, q, leader, random));
    proposer.thenCompose(driver::run).whenComplete((o, t) -> scheduler.execute(
        () -> roundDone(g, position, value, list, o, t, started)));
  }

  /** DC {@code grantor}'s fast-path grant for a position, asked before its round starts. */
  private record Prefetch(long position, int grantor, ProposerId holder,
      CompletableFuture<Boolean> granted) {}

  private Prefetch askGrant(String group, long position, int grantor) {
    ProposerId holder = ProposerId.random(scheduler.random());
    GrantRequest request = new GrantRequest(group, position, holder.toString());
    CompletableFuture<Boolean> granted;
    if (grantor == dcIndex) {
      granted = CompletableFuture.supplyAsync(() -> acceptor.grant(request).granted(),
          scheduler.executor());
    } else {
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(dcs.get(grantor), new Message.Paxos(request),
            Duration.ofNanos(proposerConfig.phaseTimeoutMicros() * 250));
      } catch (TransportException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      granted = reply.thenApply(m -> m instanceof Message.Paxos p
          && p.message() instanceof GrantReply r && r.granted()
          && r.requester().equals(holder.toString()) && r.position() == position);
    }
    return new Prefetch(position, grantor, holder, granted.exceptionally(t -> false));
  }

  /**
   * Answers the waiting entries that need no round and picks those that join round {@code q}
   * into {@code list}: first the earliest entry from the cheapest DC to lead (see
   * {@link Options}; the first entry's DC leads {@code q + 1}), then the others in arrival
   * order; an entry that reads a key an earlier one writes, or does not fit, waits. Caller holds
   * {@code g}.
   */
  private void buildList(GroupState g, long q, List<Pending> list, List<Runnable> answers) {
    List<Pending> eligible = new ArrayList<>();
    List<Pending> judged = new ArrayList<>();
    List<Message> replies = new ArrayList<>();
    for (Pending p : g.queue) {
      Message decided = judge(g, p, q);
      if (decided != null) {
        judged.add(p);
        replies.add(decided);
      } else if (p.request.position() <= q) {
        eligible.add(p);
      }
    }
    // Only once every entry is judged: a judgement that throws (the store failed) leaves them
    // all queued, and the round's failure answers each of them.
    for (int i = 0; i < judged.size(); i++) {
      g.queue.remove(judged.get(i));
      answers.add(answer(g, judged.get(i), replies.get(i)));
    }
    List<Pending> ordered = new ArrayList<>();
    // Stream.min keeps the earliest of equal entries: arrival order among equally cheap DCs.
    eligible.stream().min(Comparator.comparingLong((Pending p) -> cost(p.entry().originDc()))
        .thenComparingInt(p -> p.entry().originDc().equals(dc) ? 0 : 1))
        .ifPresent(ordered::add);
    for (Pending p : eligible) {
      if (!ordered.contains(p)) {
        ordered.add(p);
      }
    }
    List<LogEntry> entries = new ArrayList<>();
    // A list encodes as one header plus its entries, so the sum of one-entry encodings is an
    // upper bound on its size (computed once per entry, not once per candidate list).
    long bytes = 0;
    for (Pending p : ordered) {
      if (!entries.isEmpty() && rules.conflicts(p.entry(), new LogValue(entries))) {
        continue;
      }
      int size = LogCodec.encode(LogValue.of(p.entry())).length;
      if (!entries.isEmpty() && bytes + size > maxListBytes) {
        continue;
      }
      entries.add(p.entry());
      bytes += size;
      list.add(p);
    }
    g.queue.removeAll(list);
  }

  /**
   * Where a client's entry goes instead of into rounds here, if anywhere. With leader costs, to
   * the group's batcher ({@link LeaderSubmit#batcher}) when that is another DC; without, to the DC that
   * leads the next position as this DC knows it (which may be stale: a round anywhere asks the
   * leader's grant, so the grant decides).
   */
  private Optional<String> passOnTo(GroupState g) {
    if (!leaderCosts.isEmpty()) {
      String b = LeaderSubmit.batcher(leaderCosts, dcs, down, scheduler.nowMicros());
      return b.equals(dc) ? Optional.empty() : Optional.of(b);
    }
    OptionalInt leader = leaderOfNext(g);
    return leader.isPresent() && leader.getAsInt() != dcIndex
        ? Optional.of(dcs.get(leader.getAsInt())) : Optional.empty();
  }



  private long cost(String origin) {
    return leaderCosts.getOrDefault(origin, 0L);
  }

  /**
   * What decided positions say about {@code p} before round {@code q}: a reply, or null when it
   * may join the round (or must wait for a later one).
   */
  private Message judge(GroupState g, Pending p, long q) {
    SubmitRequest s = p.request;
    LogEntry e = s.entry();
    long last = Math.min(q - 1, s.position() + s.bound());
    for (long pos = s.position(); pos <= last; pos++) {
      LogValue v;
      try {
        v = chosen(g, pos);
      } catch (TooOldException ex) {
        return new ErrorReply(g.name, pos, ErrorCode.TOO_OLD, "DC " + dc + " collected position "
            + pos + " before judging " + e.txnId() + ": " + ex.getMessage());
      }
      if (v == null) {
        if (pos > applier.knownApplied(g.name)) {
          // Held when the entry was queued, then withdrawn: its recording here failed.
          throw new CatchUpFailedException("DC " + dc + " lost the chosen value of position "
              + pos + " of group " + g.name + " before recording it");
        }
        // Below the applied watermark every position is chosen; a gap means a broken store.
        throw new IllegalStateException("DC " + dc + " applied group " + g.name + " past "
            + pos + " without its chosen value");
      }
      if (v.contains(e.txnId())) {
        return SubmitReply.committed(g.name, pos, e.txnId(), v.entries().size());
      }
      if (rules.conflicts(e, v)) {
        boolean withdrawn = v.entries().stream().anyMatch(w -> Placement.withdraws(w, e));
        return SubmitReply.aborted(g.name, pos, e.txnId(), withdrawn
            ? "withdrawn at position " + pos + " by its client, which had no answer"
            : "read a key written at position " + pos);
      }
    }
    if (q > s.position() + s.bound()) {
      return SubmitReply.aborted(g.name, s.position() + s.bound(), e.txnId(), "promotion bound "
          + s.bound() + " used up: positions " + s.position() + ".." + (s.position() + s.bound())
          + " went to other entries");
    }
    return null;
  }

  private void roundDone(GroupState g, long q, LogValue proposed, List<Pending> list, Outcome o,
      Throwable t, long startedMicros) {
    boolean decided = t == null && o != null && o.status() == Outcome.Status.LEARNED
        && o.chosen() != null;
    List<Runnable> answers = new ArrayList<>();
    int returning = 0;
    if (decided) {
      LogValue v = o.chosen();
      // The proposer's APPLY, sent to every DC including this one, records and applies it here;
      // the next round starts at q + 1 at once, judging against the value kept in the cache.
      synchronized (g) {
        remember(g, q, v);
        g.nextPosition = Math.max(g.nextPosition, q + 1);
        g.ownListChosen = v.equals(proposed);
        for (Pending p : list) {
          if (v.contains(p.entry().txnId())) {
            if (!p.answered && returns(p.request)) {
              returning++;
            }
            answers.add(answer(g, p, SubmitReply.committed(g.name, q, p.entry().txnId(),
                v.entries().size())));
          }
        }
      }
    } else {
      LOG.debug("DC {}: round at group {} position {} ended undecided: {}", dc, g.name, q,
          t != null ? t.toString() : o == null ? "no outcome" : o.reason());
      synchronized (g) {
        g.ownListChosen = false;
        for (Pending p : list) {
          if (++p.undecidedRounds >= MAX_UNDECIDED_ROUNDS) {
            answers.add(answer(g, p, new ErrorReply(g.name, q, ErrorCode.CATCH_UP_FAILED,
                "DC " + dc + " could not decide position " + q + " in " + p.undecidedRounds
                    + " rounds (no quorum); the entry may be chosen there")));
          }
        }
      }
    }
    long hold = 0;
    synchronized (g) {
      // The others go back to the head, in order; the next round judges them against q.
      for (int i = list.size() - 1; i >= 0; i--) {
        Pending p = list.get(i);
        if (!p.answered && !(decided && o.chosen().contains(p.entry().txnId()))) {
          g.queue.addFirst(p);
        }
      }
      g.sinceHold++;
      if (returning > 0 && holdShare > 0 && g.sinceHold >= 1 << g.idleHolds) {
        // Set before the answers go out, so that a client's next entry finds the hold.
        g.awaited = returning;
        g.returned = 0;
        g.sinceHold = 0;
        hold = ++g.holds;
        g.inFlight = true;
        holdsBegun.incrementAndGet();
      } else if (g.queue.isEmpty()) {
        g.inFlight = false;
      }
    }
    answers.forEach(Runnable::run);
    if (hold > 0) {
      long h = hold;
      long roundMicros = Math.max(0, scheduler.nowMicros() - startedMicros);
      scheduler.schedule((long) (roundMicros * holdShare), () -> endHold(g, h));
      return;
    }
    boolean more;
    synchronized (g) {
      more = g.inFlight;
    }
    if (more) {
      if (decided) {
        startRound(g);
      } else {
        // No quorum: wait a phase before trying the same position again.
        scheduler.schedule(proposerConfig.phaseTimeoutMicros(), () -> startRound(g));
      }
    } else {
      retireIfIdle(g);
    }
  }

  /** An entry from a client of this DC that submitted here directly (a possible returner). */
  private boolean returns(SubmitRequest s) {
    return !s.forwarded() && dc.equals(s.entry().originDc());
  }

  /**
   * The hold's time is up: start the next round with what is waiting (see the class comment),
   * unless the last awaited client already started it.
   */
  private void endHold(GroupState g, long hold) {
    boolean start;
    synchronized (g) {
      if (g.holds != hold || g.awaited == 0) {
        return;
      }
      g.awaited = 0;
      g.idleHolds = g.returned == 0 ? Math.min(g.idleHolds + 1, MAX_HOLD_BACKOFF) : 0;
      start = !g.queue.isEmpty();
      g.inFlight = start;
    }
    if (start) {
      startRound(g);
    } else {
      retireIfIdle(g);
    }
  }

  /**
   * The next position to place entries at: one past this DC's applied watermark or the
   * positions after it whose chosen values the applier holds ({@link LogApplier#knownThrough}),
   * or past the last position a round of this instance saw decided if that is higher (its value
   * is then in the cache and being applied). Every position below is decided and its value
   * known here.
   */
  private long nextPosition(GroupState g) {
    synchronized (g) {
      long highestSubmitted = 0;
      for (Pending p : g.queue) {
        highestSubmitted = Math.max(highestSubmitted, p.request.position());
      }
      if (g.ownListChosen && highestSubmitted <= g.nextPosition) {
        // Saves a store read per round while this instance leads; a round that meets a value
        // chosen by someone else clears it, and a submit for a later position (its client read
        // there, so this DC applied it) proves the log moved on without us.
        return g.nextPosition;
      }
    }
    long applied = Math.max(applier.appliedWatermark(g.name), applier.knownThrough(g.name)) + 1;
    synchronized (g) {
      return Math.max(applied, g.nextPosition);
    }
  }

  /** The leader DC of the group's next position as this DC knows it (section 5.3). */
  private OptionalInt leaderOfNext(GroupState g) {
    long last = nextPosition(g) - 1;
    LogValue previous = last == 0 ? null : chosen(g, last);
    return previous == null ? OptionalInt.empty() : Proposer.leaderAfter(dcs, previous);
  }

  /**
   * Passes {@code s} on to {@code leader}'s service (the DC {@link #passOnTo} named) and relays
   * its answer; one that does not answer in time is marked down and gives LEADER_UNREACHABLE
   * (the client then settles the outcome).
   */
  private CompletableFuture<Message> forward(SubmitRequest s, String leader) {
    forwarded.incrementAndGet();
    CompletableFuture<Message> reply;
    try {
      reply = transport.request(leader, s.asForwarded(), forwardTimeout);
    } catch (TransportException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    return reply.handle((m, t) -> {
      if (m instanceof SubmitReply || m instanceof ErrorReply) {
        return m;
      }
      down.put(leader, scheduler.nowMicros() + downMicros);
      return new ErrorReply(s.group(), s.position(), ErrorCode.LEADER_UNREACHABLE, "DC " + dc
          + " passed the entry on to DC " + leader + ", which did not answer in "
          + forwardTimeout.toMillis() + " ms" + (t == null ? "" : ": " + t));
    });
  }

  /** Marks {@code p} answered (caller holds {@code g}); the returned action completes it. */
  private Runnable answer(GroupState g, Pending p, Message reply) {
    if (p.answered) {
      return () -> { };
    }
    p.answered = true;
    g.byTxn.remove(p.entry().txnId(), p);
    if (reply instanceof SubmitReply r && r.status() == SubmitStatus.COMMITTED) {
      entriesCommitted.incrementAndGet();
    }
    return () -> p.reply.complete(reply);
  }

  /** A store failure before a round: every waiting entry is told, none was placed by it. */
  private void failAll(GroupState g, RuntimeException e) {
    List<Runnable> answers = new ArrayList<>();
    ErrorCode code = e instanceof StoreUnavailableException ? ErrorCode.STORE_UNAVAILABLE
        : e instanceof TooOldException ? ErrorCode.TOO_OLD : ErrorCode.CATCH_UP_FAILED;
    if (e instanceof CatchUpFailedException || e instanceof TooOldException) {
      // Expected: the DC is behind, or the position was collected (the client is told TOO_OLD).
      LOG.debug("DC {}: no leader round for group {}: {}", dc, g.name, e.getMessage());
    } else if (!(e instanceof StoreUnavailableException)) {
      LOG.error("DC {}: leader round of group {} failed", dc, g.name, e);
    }
    synchronized (g) {
      for (Pending p : g.queue) {
        answers.add(answer(g, p, new ErrorReply(g.name, p.request.position(), code,
            "DC " + dc + " could not run a leader round: " + e.getMessage())));
      }
      g.queue.clear();
      g.inFlight = false;
    }
    answers.forEach(Runnable::run);
    retireIfIdle(g);
  }

  /**
   * The chosen value of {@code position} as this DC knows it, or null: from this instance's
   * cache, the values the applier holds (an APPLY brought them, not yet recorded), or the store.
   */
  private LogValue chosen(GroupState g, long position) {
    synchronized (g) {
      LogValue v = g.chosen.get(position);
      if (v != null) {
        return v;
      }
    }
    Optional<LogValue> v = applier.knownValue(g.name, position);
    if (v.isEmpty()) {
      v = acceptor.chosen(g.name, position);
    }
    if (v.isEmpty()) {
      return null;
    }
    synchronized (g) {
      remember(g, position, v.get());
    }
    return v.get();
  }

  private static void remember(GroupState g, long position, LogValue v) {
    g.chosen.put(position, v);
    while (g.chosen.size() > CACHED_POSITIONS) {
      g.chosen.pollFirstEntry();
    }
  }
}
