package org.paxoscp.service;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.RecentTimes;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.wal.LogEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where a group's entries are batched, for one service instance of leader combination
 * (docs/leader-combination.md): which DC batches a client's entry, which DC a round passes its
 * queued entries on to, and whose entry goes first in a list (its DC leads the next position,
 * docs/architecture.md section 5.3). It passes entries on and marks a DC that did not answer as
 * down for a while.
 *
 * <p>None of this is needed for safety: where an entry is batched decides only who proposes it;
 * the grant check-and-write and the acceptors arbitrate between batchers, and every batcher
 * judges an entry against the decided positions before placing it ({@link LeaderRounds}).
 *
 * <p>Three rules, by what the cluster knows of its round trips:
 * <ul>
 *   <li><b>With the RTTs between DCs</b> (configured, or measured and agreed by the services:
 * {@link RoundTrips}; and so each DC's leader cost, its nearest-majority RTT): the batcher is the
 * DC, not marked down, where a commit costs least on average over
 *       where the entries come from: {@code cost(b) = lead(b) + sum over DCs d of share(d) *
 *       rtt(d, b)}, with {@code share(d)} the share of recent committed entries whose client is
 *       homed at {@code d} ({@link OriginShares}; a client submits to its own DC's service, which
 *       passes the entry on to the batcher, so a client at {@code d} pays {@code rtt(d, b)} to
 *       reach it, and 0 when {@code d} batches) — but only when it beats the cheapest DC to lead
 *       (the next rule) by at least {@value #MIN_GAIN_MICROS} µs and {@value #MIN_GAIN_PERCENT}%;
 *       having moved, it stays while it costs no more than that DC (hysteresis). Re-chosen at
 *       most every {@value #EVAL_MICROS} µs, and not for {@value #DWELL_MICROS} µs after a move;
 *       at once when the batcher is marked down. Used once
 *       {@value #MIN_ENTRIES} entries were recorded here; the next rule before.
 *   <li><b>With leader costs only</b>: the cheapest DC to lead not marked down
 *       ({@link LeaderSubmit#batcher}, the rule clients use when their own DC is down).
 *   <li><b>Without either</b>: an entry goes to the DC that leads the group's next position as
 *       this DC knows it (which may be stale: the grant decides), and a round whose position
 *       another DC leads passes its clients' entries on there.
 * </ul>
 * With leader costs, a list's first entry (whose DC leads the next position) comes from the
 * cheapest DC to lead among its origins, this DC winning ties.
 *
 * <p>Thread-safe.
 */
final class BatcherPlacement {
  private static final Logger LOG = LoggerFactory.getLogger(BatcherPlacement.class);
  /** Pass-ons in a row a DC does not answer before it is marked down. */
  static final int DOWN_AFTER_MISSES = 3;
  /**
   * A pass-on not answered within this many times the median of the target's recent answers
   * (within {@link #moveBoundMicros}'s floor and ceiling) moves its entry on.
   */
  static final int MOVE_AFTER_MEDIANS = 3;
  /** The shortest move bound is the pass-on timeout over this. */
  static final int MOVE_FLOOR_SHARE = 80;
  /**
   * The first mark down of a DC lasts the longest one over this; each next one twice the last.
   */
  static final int FIRST_MARK_SHARE = 20;
  /** Entries recorded here before the weighted rule applies (the cheapest DC to lead before). */
  static final int MIN_ENTRIES = OriginShares.HORIZON / 2;
  /** After a move, the weighted rule keeps the batcher this long (µs) unless it is down. */
  static final long DWELL_MICROS = 5_000_000;
  /** The weighted rule re-chooses at most this often (µs). */
  static final long EVAL_MICROS = 500_000;
  /** The weighted rule moves only for a gain of at least this (µs) ... */
  static final long MIN_GAIN_MICROS = 5_000;
  /** ... and at least this share of the cost at the cheapest DC to lead (%). */
  static final int MIN_GAIN_PERCENT = 10;
  private final String dc;
  private final List<String> dcs;
  private final int dcIndex;
  /** What the cluster knows of its round trips, now (configured, or measured: may change). */
  private final Supplier<LeaderCosts> costs;
  private final Transport transport;
  private final Scheduler scheduler;
  private final Duration forwardTimeout;
  /** How long a DC that did not answer a pass-on counts as down ({@link LeaderSubmit#batcher}). */
  private final long downMicros;
  /** Per DC, until when it counts as down. */
  private final Map<String, Long> down = new ConcurrentHashMap<>();
  /** Per DC, pass-ons in a row it did not answer. */
  private final Map<String, Integer> misses = new ConcurrentHashMap<>();
  /** Per DC, times it was marked down with no answer from it since (each mark lasts longer). */
  private final Map<String, Integer> marks = new ConcurrentHashMap<>();
  /** Per DC, how long its answers to pass-ons took recently (for the move bound). */
  private final Map<String, RecentTimes> answerTimes = new ConcurrentHashMap<>();
  private final AtomicLong moved = new AtomicLong();
  private final AtomicLong forwarded = new AtomicLong();
  private final OriginShares shares;
  /** The weighted rule's batcher (null until chosen), when it may be re-chosen, and moves. */
  private String current;
  private long nextChoiceMicros;
  private final AtomicLong moves = new AtomicLong();

  /**
   * @param costs what leading costs at each DC and the RTTs between DCs, as known now:
   *     configured (fixed) or measured ({@link RoundTrips}: none until measured, and they may
   *     change)
   * @param forwardTimeout how long a pass-on waits for the other DC's answer
   * @param downMicros the longest a DC that did not answer pass-ons is passed over (its first
   *     mark lasts {@code 1/}{@value #FIRST_MARK_SHARE} of it, each next one twice the last)
   * @param shares where this DC's recorded entries come from (for the weighted rule)
   */
  BatcherPlacement(String dc, List<String> dcs, Supplier<LeaderCosts> costs,
      Transport transport, Scheduler scheduler, Duration forwardTimeout, long downMicros,
      OriginShares shares) {
    this.dc = Objects.requireNonNull(dc);
    this.dcs = List.copyOf(dcs);
    this.dcIndex = this.dcs.indexOf(dc);
    this.costs = Objects.requireNonNull(costs);
    this.transport = Objects.requireNonNull(transport);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.forwardTimeout = Objects.requireNonNull(forwardTimeout);
    this.downMicros = downMicros;
    this.shares = Objects.requireNonNull(shares);
  }

  /** What is known of the round trips now. */
  LeaderCosts costs() {
    return costs.get();
  }

  /** Whether leader costs are known (the first two rules of the class comment). */
  boolean hasCosts() {
    return costs.get().known();
  }

  /**
   * Where a client's entry goes instead of into rounds here, if anywhere. With leader costs, to
   * the group's batcher when that is another DC; without, to the DC that leads the next position
   * as this DC knows it ({@code leaderOfNext}, asked only then).
   */
  Optional<String> passOnTo(Supplier<OptionalInt> leaderOfNext) {
    return passOnTo(leaderOfNext, null);
  }

  /**
   * As {@link #passOnTo(Supplier)}, but never to {@code excluded} (a DC that just left a pass-on
   * of this entry unanswered; null: none): the next batcher by the same rule, treating it as
   * down; without leader costs, this DC.
   */
  Optional<String> passOnTo(Supplier<OptionalInt> leaderOfNext, String excluded) {
    LeaderCosts c = costs.get();
    if (c.known()) {
      String b = batcher(c);
      if (b.equals(excluded)) {
        Map<String, Long> without = new java.util.HashMap<>(down);
        without.put(excluded, Long.MAX_VALUE);
        b = LeaderSubmit.batcher(c.lead(), dcs, without, scheduler.nowMicros());
      }
      return b.equals(dc) || b.equals(excluded) ? Optional.empty() : Optional.of(b);
    }
    OptionalInt leader = leaderOfNext.get();
    // A leader marked down batches nothing: the entry runs here (asking no grant of it).
    return leader.isPresent() && leader.getAsInt() != dcIndex
        && !isDown(dcs.get(leader.getAsInt())) && !dcs.get(leader.getAsInt()).equals(excluded)
        ? Optional.of(dcs.get(leader.getAsInt())) : Optional.empty();
  }

  /**
   * Whether {@code other} counts as down here now: pass-ons to it went unanswered (see
   * {@link #forward}). A round asks no grant of a DC marked down, and no list starts with its
   * entry while another DC's is there.
   */
  boolean isDown(String other) {
    return down.getOrDefault(other, 0L) > scheduler.nowMicros();
  }

  /**
   * The DC a round at a position {@code leader} leads passes its clients' queued entries on to,
   * if any: only without leader costs, and only when another DC leads.
   */
  Optional<String> roundPassesOnTo(OptionalInt leader) {
    return !hasCosts() && leader.isPresent() && leader.getAsInt() != dcIndex
        && !isDown(dcs.get(leader.getAsInt()))
        ? Optional.of(dcs.get(leader.getAsInt())) : Optional.empty();
  }

  /**
   * The order that picks a list's first entry: the cheapest DC to lead first, this DC's entries
   * before other DCs' of equal cost (a stable minimum keeps arrival order among equals).
   */
  Comparator<LogEntry> firstEntryOrder() {
    // The costs are read at each comparison: measured ones arrive, and change, after start.
    // A DC marked down comes last: the next round would have to ask it for the grant.
    return Comparator.comparingInt((LogEntry e) -> isDown(e.originDc()) ? 1 : 0)
        .thenComparingLong(e -> costs.get().lead(e.originDc()))
        .thenComparingInt(e -> e.originDc().equals(dc) ? 0 : 1);
  }

  /** The batcher by the first rule that applies (see the class comment); with leader costs. */
  String batcher() {
    return batcher(costs.get());
  }

  private String batcher(LeaderCosts c) {
    long now = scheduler.nowMicros();
    String cheapest = LeaderSubmit.batcher(c.lead(), dcs, down, now);
    if (c.rtts() == null || shares.entries() < MIN_ENTRIES) {
      return cheapest;
    }
    synchronized (this) {
      boolean currentUp = current != null && down.getOrDefault(current, 0L) <= now;
      if (currentUp && now < nextChoiceMicros) {
        return current;
      }
      nextChoiceMicros = now + EVAL_MICROS;
      double[] w = shares.shares();
      String best = cheapest;
      double bestCost = weightedCost(c, cheapest, w);
      for (String b : dcs) {
        double cost = weightedCost(c, b, w);
        if (down.getOrDefault(b, 0L) <= now && cost < bestCost) {
          best = b;
          bestCost = cost;
        }
      }
      double cheapestCost = weightedCost(c, cheapest, w);
      double margin = Math.max(MIN_GAIN_MICROS, cheapestCost * MIN_GAIN_PERCENT / 100.0);
      // Away from the cheapest DC to lead only for a clear gain; back only when all of it is
      // gone (hysteresis). Decided from the shares alone, which every DC sees alike, so the DCs
      // agree on the batcher without asking each other.
      boolean stay = currentUp && !current.equals(cheapest)
          && weightedCost(c, current, w) <= cheapestCost;
      String chosen = stay ? current : bestCost + margin <= cheapestCost ? best : cheapest;
      if (!chosen.equals(current)) {
        if (current != null) {
          moves.incrementAndGet();
        }
        LOG.info("DC {}: leader combination batches at DC {} (was {}): mean commit cost {} ms "
            + "there, {} ms at the cheapest DC to lead ({}); recent entries from {}", dc, chosen,
            current == null ? "none" : current, ms(weightedCost(c, chosen, w)), ms(cheapestCost),
            cheapest, describe(w));
        current = chosen;
        nextChoiceMicros = now + DWELL_MICROS;
      }
      return current;
    }
  }

  /** What a commit costs on average when {@code b} batches, for entries from DCs as {@code w}. */
  private double weightedCost(LeaderCosts c, String b, double[] w) {
    double cost = c.lead(b);
    for (int d = 0; d < w.length; d++) {
      if (w[d] > 0 && !dcs.get(d).equals(b)) {
        cost += w[d] * c.rtts().rttMicros(dcs.get(d), b);
      }
    }
    return cost;
  }

  private static String ms(double micros) {
    return String.format(java.util.Locale.ROOT, "%.1f", micros / 1000);
  }

  private String describe(double[] w) {
    StringBuilder b = new StringBuilder();
    for (int d = 0; d < w.length; d++) {
      b.append(d == 0 ? "" : " ").append(dcs.get(d)).append(' ')
          .append(Math.round(w[d] * 100)).append('%');
    }
    return b.toString();
  }

  /** Times the weighted rule moved the batcher from one DC to another. */
  long moves() {
    return moves.get();
  }

  /**
   * Passes {@code s} on to {@code to}'s service and relays its answer; when {@code to} does not
   * answer within the move bound ({@link #moveBoundMicros}) the answer is LEADER_UNREACHABLE
   * (the client sends its next copy, or settles the outcome). After {@value #DOWN_AFTER_MISSES}
   * such in a row, or one while {@code to} was marked down before without answering since,
   * {@code to} is marked down.
   */
  CompletableFuture<Message> forward(SubmitRequest s, String to) {
    return forward(s, to, null);
  }

  /**
   * As {@link #forward(SubmitRequest, String)}, but an entry {@code to} leaves unanswered within
   * the move bound goes {@code elsewhere} instead (null: answered LEADER_UNREACHABLE): to the
   * next batcher, or into rounds here. Safe wherever it goes: every batcher judges an entry
   * against the decided positions before placing it (docs/leader-combination.md), so the entry
   * is placed at most once even if {@code to} still places it.
   */
  CompletableFuture<Message> forward(SubmitRequest s, String to,
      Supplier<CompletableFuture<Message>> elsewhere) {
    forwarded.incrementAndGet();
    long started = scheduler.nowMicros();
    long bound = moveBoundMicros(to);
    CompletableFuture<Message> reply;
    try {
      // The request stays open for the whole pass-on timeout, past the move bound: a late
      // answer is not relayed (the entry moved on), but it is timed, so that a batcher that
      // became slower raises its bound and is not given up on for good.
      reply = transport.request(to, s.asForwarded(), forwardTimeout);
    } catch (TransportException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    CompletableFuture<Message> result = new CompletableFuture<>();
    java.util.concurrent.atomic.AtomicBoolean decided =
        new java.util.concurrent.atomic.AtomicBoolean();
    Runnable giveUp = () -> {
      if (!decided.compareAndSet(false, true)) {
        return;
      }
      missed(to);
      CompletableFuture<Message> next;
      if (elsewhere != null) {
        moved.incrementAndGet();
        try {
          next = elsewhere.get();
        } catch (RuntimeException e) {
          next = CompletableFuture.failedFuture(e);
        }
      } else {
        next = CompletableFuture.completedFuture(new ErrorReply(s.group(), s.position(),
            ErrorCode.LEADER_UNREACHABLE, "DC " + dc + " passed the entry on to DC " + to
            + ", which did not answer in " + bound / 1000 + " ms"));
      }
      next.whenComplete((m, t) -> {
        if (t != null) {
          result.completeExceptionally(t);
        } else {
          result.complete(m);
        }
      });
    };
    Scheduler.Cancellable timer = scheduler.schedule(bound, giveUp);
    reply.whenComplete((m, t) -> {
      if (m instanceof SubmitReply || m instanceof ErrorReply) {
        answered(to, scheduler.nowMicros() - started);
        if (decided.compareAndSet(false, true)) {
          timer.cancel();
          result.complete(m);
        }
      } else {
        timer.cancel();
        giveUp.run();
      }
    });
    return result;
  }

  /**
   * How long a pass-on to {@code to} waits for its answer before the entry moves on:
   * {@value #MOVE_AFTER_MEDIANS} times the median of {@code to}'s recent answers (what a round
   * there takes now, queueing included), at least {@code 1/}{@value #MOVE_FLOOR_SHARE} and at
   * most all of the pass-on timeout. Before {@code to} answered
   * {@value RecentTimes#MIN_SAMPLES} times: as many times what a round there should take by the
   * round trips known (there and back, and {@code to}'s nearest majority), else as many
   * fortieths of the timeout. A batcher slower than that is treated as silent: its entries are safe anywhere.
   */
  long moveBoundMicros(String to) {
    long ceiling = forwardTimeout.toNanos() / 1000;
    LeaderCosts c = costs.get();
    // Before answers were timed: what a round there should take by the round trips known (the
    // way there and back, and its nearest majority), else a fortieth of the pass-on timeout.
    // (Answers that come after the bound are timed too: see forward.)
    long expected = c.rtts() != null ? c.rtts().rttMicros(dc, to) + c.lead(to)
        : ceiling / 40;
    return answerTimes.computeIfAbsent(to, d -> new RecentTimes())
        .bound(MOVE_AFTER_MEDIANS, ceiling / MOVE_FLOOR_SHARE, ceiling,
            MOVE_AFTER_MEDIANS * expected);
  }

  private void answered(String to, long micros) {
    answerTimes.computeIfAbsent(to, d -> new RecentTimes()).add(micros);
    heardFrom(to);
  }

  /** {@code other} answered a request of this DC (a pass-on, a grant asked ahead). */
  void heardFrom(String other) {
    misses.remove(other);
    marks.remove(other);
  }

  /**
   * {@code other} left a request of this DC unanswered (a grant asked ahead): counted as a
   * pass-on it did not answer ({@link #missed}). So the batching DC, which passes nothing on,
   * learns too which DC to ask no grant of.
   */
  void silent(String other) {
    missed(other);
  }

  /**
   * A pass-on {@code to} left unanswered. One lost datagram is not a DC down: only
   * {@value #DOWN_AFTER_MISSES} unanswered in a row are, or one after an earlier mark with no
   * answer since (its mark ran out while it was still silent). A mark lasts
   * {@code 1/}{@value #FIRST_MARK_SHARE} of the longest one first and twice as long each time again, so
   * a DC cut off briefly is used again soon and one that stays away is tried seldom.
   */
  private void missed(String to) {
    int n = misses.merge(to, 1, Integer::sum);
    int before = marks.getOrDefault(to, 0);
    if (n >= DOWN_AFTER_MISSES || before > 0) {
      misses.remove(to);
      int k = marks.merge(to, 1, Integer::sum);
      long span = Math.min(downMicros, (downMicros / FIRST_MARK_SHARE) << Math.min(k - 1, 20));
      down.put(to, scheduler.nowMicros() + span);
    }
  }

  /** Entries moved on from a DC that left their pass-on unanswered. */
  long moved() {
    return moved.get();
  }

  /** Submits passed on to another DC's service. */
  long forwarded() {
    return forwarded.get();
  }
}
