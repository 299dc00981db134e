package org.paxoscp.transport;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * The client's side of leader combination (docs/architecture.md section 5.5,
 * docs/leader-combination.md): submits an entry to the leader DC's service and turns its answer
 * into an {@link Outcome}.
 *
 * <ul>
 *   <li>COMMITTED / ABORTED answers come from decided positions and are final.
 *   <li>Anything else (no answer in time, an error) leaves the
 *       entry possibly placed at positions {@code p ... p + bound} and nowhere else: even a
 *       refusal does not prove that, since a duplicated or delayed copy of the submit may have
 *       reached another service instance, which placed it. The client
 *       then <em>settles</em> ({@link #settle}): position by position it decides each one,
 *       proposing the entry's withdrawal where nobody voted, and reports COMMITTED where a chosen
 *       value holds the entry, ABORTED once one conflicts with it (its withdrawal does) or every
 *       position is decided without it, and UNKNOWN when a position cannot be decided — naming
 *       it and {@code p + bound}, the range where the entry can still be chosen.
 * </ul>
 * The entry is never proposed by the client itself.
 *
 * <p>Thread-safe; never blocks.
 */
public final class LeaderSubmit {
  /** The promotion bound used when the client names none. */
  public static final int DEFAULT_BOUND = 16;
  /**
   * The submit timeout over this many is the longest wait between two copies of a submit
   * (and the wait after the first before any submit was answered).
   */
  static final int COPIES = 6;
  /** How many copies of a submit go out at most before the client settles. */
  static final int MAX_COPIES = 12;
  /**
   * The first wait between copies is this many times the lower quartile of how long recent
   * submits took to be answered ({@link #QUARTILE}), at least {@code 1/}{@value #FLOOR_SHARE} of
   * the longest wait between copies; see {@link Submission}.
   */
  static final int RESEND_AFTER = 2;
  /** The percentile of recent answer times the next copy's wait is taken from. */
  static final int QUARTILE = 25;
  /** The shortest wait between copies is the longest one over this. */
  static final int FLOOR_SHARE = 40;
  /** Before any submit was answered, the first wait is the longest one over this. */
  static final int FIRST_WAIT_SHARE = 4;

  private final Transport transport;
  private final List<String> dcs;
  private final ProposerDriver driver;
  private final ProposerConfig learnerConfig;
  private final Scheduler scheduler;
  private final Duration submitTimeout;
  private final Map<String, Long> leaderCosts;
  private final Map<String, Long> down = new ConcurrentHashMap<>();
  /** How long recent submits took to be answered COMMITTED or ABORTED (µs). */
  private final RecentTimes answerTimes = new RecentTimes();

  /**
   * @param driver runs the settling proposers
   * @param config the client's proposer settings (the settling proposers' phase timeout and
   *     back-off)
   * @param submitTimeout how long a submit waits for the leader's answer before settling
   */
  public LeaderSubmit(Transport transport, List<String> dcs, ProposerDriver driver,
      ProposerConfig config, Scheduler scheduler, Duration submitTimeout) {
    this(transport, dcs, driver, config, scheduler, submitTimeout, Map.of());
  }

  /**
   * As above, with {@code leaderCosts} (what leading costs per DC, e.g.
   * {@code ClusterConfig.leaderCosts()}; empty when the client knows none). Submits go to the
   * client's own DC, which passes them on to the group's batcher; while its own DC does not
   * answer, to the cheapest DC to lead ({@link #batcher}) with leader costs, else to the leader
   * the client was given. A DC that does not answer counts as down for ten submit timeouts.
   */
  public LeaderSubmit(Transport transport, List<String> dcs, ProposerDriver driver,
      ProposerConfig config, Scheduler scheduler, Duration submitTimeout,
      Map<String, Long> leaderCosts) {
    this.leaderCosts = Map.copyOf(leaderCosts);
    this.transport = Objects.requireNonNull(transport);
    this.dcs = List.copyOf(dcs);
    this.driver = Objects.requireNonNull(driver);
    this.learnerConfig = config.withProtocol(Protocol.BASIC);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.submitTimeout = Objects.requireNonNull(submitTimeout);
  }

  /** The bound for a client whose promotion cap is {@code maxPromotions} (negative: none). */
  public static int boundFor(int maxPromotions) {
    return maxPromotions < 0 ? DEFAULT_BOUND : Math.min(maxPromotions, SubmitRequest.MAX_BOUND);
  }

  /**
   * The leader a client falls back to for an entry read at {@code readPosition} when its own DC
   * does not answer and it knows no leader costs: the leader of {@code readPosition + 1} as its
   * begin named it, else {@code home} — after a no-op, and at a group's first position, whose
   * grantor ({@code Proposer.leaderOfFirst}) serves proposers only: a leader round there asks no
   * grant.
   */
  public static String submitTarget(List<String> dcs, OptionalInt leader, long readPosition,
      String home) {
    return leader.isPresent() && readPosition > 0 ? dcs.get(leader.getAsInt()) : home;
  }

  /**
   * Commits {@code entry} at a position from its read position + 1 to that + {@code bound},
   * submitting first to the client's own DC ({@link #target}; {@code leaderDc} when that is
   * down and no leader costs are known). The future completes with COMMITTED, ABORTED or
   * UNKNOWN; it fails only if a settling proposer throws (a broken invariant).
   */
  public CompletableFuture<Outcome> commit(String group, LogEntry entry, String leaderDc,
      int bound) {
    CompletableFuture<Outcome> result = new CompletableFuture<>();
    SubmitRequest request = new SubmitRequest(group, entry.readPosition() + 1, entry, bound);
    String target = target(entry.originDc(), leaderDc);
    new Submission(request, target, other(target, leaderDc), result).send();
    return result;
  }

  /**
   * Where every second copy of a submit goes: another DC than {@code target}, so that a copy
   * reaches the batcher while {@code target} itself does not answer (its own outage, or its
   * pass-on lost): the cheapest DC to lead of the rest with leader costs, else {@code leaderDc}
   * when that is another DC, else the next DC in cluster order. A copy at a second DC is safe:
   * it is the same entry, which every batcher judges against the decided positions before
   * placing it.
   */
  private String other(String target, String leaderDc) {
    if (dcs.size() < 2) {
      return target;
    }
    if (!leaderCosts.isEmpty()) {
      Map<String, Long> without = new java.util.HashMap<>(down);
      without.put(target, Long.MAX_VALUE);
      String b = batcher(leaderCosts, dcs, without, scheduler.nowMicros());
      if (!b.equals(target)) {
        return b;
      }
    }
    if (leaderDc != null && !leaderDc.equals(target) && dcs.contains(leaderDc)) {
      return leaderDc;
    }
    return dcs.get((dcs.indexOf(target) + 1) % dcs.size());
  }

  /**
   * Where a submit goes: the client's own DC, whose service passes it on to the group's batcher
   * (which it chooses from the leader costs and RTTs it was given or measured, and where entries
   * come from: see {@code BatcherPlacement}; without any, the next position's leader), so a
   * client never needs to know where that is. While its own DC is marked down: the batcher by
   * {@link #batcher} with leader costs, else {@code leaderDc}.
   */
  private String target(String home, String leaderDc) {
    long now = scheduler.nowMicros();
    if (dcs.contains(home) && down.getOrDefault(home, 0L) <= now) {
      return home;
    }
    return leaderCosts.isEmpty() ? leaderDc : batcher(leaderCosts, dcs, down, now);
  }

  /**
   * One submit and its copies, all waiting until one deadline. The first two go at once, to
   * {@code target} and to {@code other}; then, while nothing answered, one more at a time,
   * alternately to each: copy {@code n + 1} follows copy {@code n} after {@code firstWait *
   * 2^(n-1)}, at most {@code submitTimeout / COPIES} (so the third follows the first two after
   * twice {@code firstWait}, which is {@value #RESEND_AFTER} times the lower quartile of recent
   * submits' answer times). A lost request or reply is not a lost commit: the batcher joins a
   * copy to the entry it holds, or answers it from the log once decided. An error answer sends
   * the next copy at once when no other copy is out, but OVERLOADED, after which the next copy
   * waits its turn. When every copy ended without an answer and no more will go out, the
   * client {@link #settle}s, exactly once.
   */
  private final class Submission {
    final SubmitRequest s;
    final String target;
    final String other;
    final CompletableFuture<Outcome> result;
    final long startedMicros;
    final long deadlineMicros;
    /** The longest wait between two copies, and the first wait. */
    final long stepMicros;
    final long firstWaitMicros;
    /** Guarded by this: copies sent, copies not yet ended, whether a copy got an ErrorReply. */
    int sent;
    int open;
    boolean targetAnswered;
    String lastError;
    boolean settling;

    Submission(SubmitRequest s, String target, String other, CompletableFuture<Outcome> result) {
      this.s = s;
      this.target = target;
      this.other = other;
      this.result = result;
      this.startedMicros = scheduler.nowMicros();
      this.deadlineMicros = startedMicros + submitTimeout.toNanos() / 1000;
      this.stepMicros = Math.max(1, submitTimeout.toNanos() / 1000 / COPIES);
      this.firstWaitMicros = answerTimes.bound(QUARTILE, RESEND_AFTER, stepMicros / FLOOR_SHARE,
          stepMicros, stepMicros / FIRST_WAIT_SHARE);
    }

    /**
     * The first two copies go at once, to {@code target} and to {@code other}: each reaches the
     * batcher by another way (and at least one of them when {@code target} is down or its
     * pass-on is lost), at the cost of one more submit per commit, which the batcher joins to
     * the first.
     */
    void send() {
      sendCopy();
      if (!other.equals(target)) {
        sendCopy();
      }
    }

    /** The wait after the {@code n}th copy before the next one. */
    private long waitAfter(int n) {
      return Math.min(stepMicros, firstWaitMicros << Math.min(n - 1, 20));
    }

    /** Sends one more copy if one may still go out; settles if none is out and none will go. */
    void sendCopy() {
      long left;
      String to;
      int n;
      synchronized (this) {
        left = deadlineMicros - scheduler.nowMicros();
        if (result.isDone() || settling) {
          return;
        }
        if (sent >= MAX_COPIES || left <= 0) {
          settleIfIdle();
          return;
        }
        n = ++sent;
        open++;
        to = n % 2 == 1 ? target : other;
      }
      if (n < MAX_COPIES) {
        scheduler.schedule(waitAfter(n), () -> {
          synchronized (this) {
            if (sent != n) {
              return;  // an error answer sent the next copy already
            }
          }
          sendCopy();
        });
      }
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(to, s, Duration.ofNanos(left * 1000));
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply.whenComplete((m, t) -> ended(to, m, t));
    }

    private void ended(String to, Message m, Throwable t) {
      if (result.isDone()) {
        return;
      }
      long p = s.position();
      if (m instanceof SubmitReply r && r.txnId().equals(s.entry().txnId())
          && r.group().equals(s.group())) {
        answerTimes.add(scheduler.nowMicros() - startedMicros);
        switch (r.status()) {
          case COMMITTED -> result.complete(new Outcome(Outcome.Status.COMMITTED, r.position(),
              (int) (r.position() - p), null, null, false, r.entries()));
          case ABORTED -> result.complete(new Outcome(Outcome.Status.ABORTED, r.position(),
              (int) Math.max(0, r.position() - p), null, "leader " + to + ": " + r.detail(),
              true));
          default -> throw new IllegalStateException("unknown submit status " + r.status());
        }
        return;
      }
      boolean again;
      synchronized (this) {
        open--;
        if (m instanceof Message.ErrorReply e) {
          targetAnswered |= to.equals(target);
          lastError = "leader " + to + ": " + e.code() + " " + e.detail();
        }
        // An error answer frees its turn: the next copy goes out at once.
        again = m instanceof Message.ErrorReply e && e.code() != Message.ErrorCode.OVERLOADED
            && open == 0;
        if (!again) {
          settleIfIdle();
        }
      }
      if (again) {
        sendCopy();
      }
    }

    /**
     * Settles once no copy is out and no more may go; the caller holds this. The settle itself
     * runs off the lock (its proposers' callbacks never take it).
     */
    private void settleIfIdle() {
      boolean more = sent < MAX_COPIES && deadlineMicros > scheduler.nowMicros();
      if (open > 0 || more || settling || result.isDone()) {
        return;
      }
      settling = true;
      if (!targetAnswered) {
        down.put(target, scheduler.nowMicros() + submitTimeout.toNanos() / 100);
      }
      String why = lastError != null ? lastError : "no answer from leader " + target
          + (other.equals(target) ? "" : " or DC " + other) + " in "
          + submitTimeout.toMillis() + " ms (" + sent + " copies)";
      scheduler.execute(() -> settle(s, why, result));
    }
  }

  /**
   * The DC that batches a group's entries when leading costs differ between DCs: the cheapest
   * one not marked down (a submit or pass-on to it went unanswered), ties in cluster order; the
   * cheapest overall if all are down. Clients and services pick it by the same rule, so in a
   * healthy cluster one service batches and no entry is passed on twice. The batcher asks each
   * position's grant of the position's leader DC, wherever that is.
   *
   * @param downUntil per DC, until when (scheduler micros) it counts as down
   */
  public static String batcher(Map<String, Long> leaderCosts, List<String> dcs,
      Map<String, Long> downUntil, long nowMicros) {
    String best = null;
    String bestAll = null;
    for (String d : dcs) {
      long c = leaderCosts.getOrDefault(d, 0L);
      if (bestAll == null || c < leaderCosts.getOrDefault(bestAll, 0L)) {
        bestAll = d;
      }
      if (downUntil.getOrDefault(d, 0L) <= nowMicros
          && (best == null || c < leaderCosts.getOrDefault(best, 0L))) {
        best = d;
      }
    }
    return best != null ? best : bestAll;
  }

  /**
   * Settles an unanswered submit, position by position from {@code p}: at each it runs a proposer
   * whose own value is the entry's {@link Placement#withdrawal} (a vote it finds wins instead),
   * so each position ends decided. A value that holds the entry: COMMITTED there. A value that
   * {@link Placement#conflicts} with it — its withdrawal among them — ABORTED: every batcher
   * judges an entry against each decided position before placing it later, so none ever will,
   * and the earlier positions went to other values. Past {@code p + bound}: ABORTED (no batcher
   * places it there). A position that cannot be decided: UNKNOWN, naming it and the bound as the
   * range where the entry may still be chosen. So a settle decides at most one position past the
   * end of the log, never a run of no-ops.
   */
  private void settle(SubmitRequest s, String why, CompletableFuture<Outcome> result) {
    settleAt(s.group(), s.entry(), Placement.withdrawal(s.entry()), s.position(), s.position(),
        s.position() + s.bound(), why, result);
  }

  /**
   * Settles an unknown outcome later (any commit mode): the positions {@code from ... through}
   * where {@code entry} can still be chosen — an UNKNOWN's range — are decided in turn exactly as
   * after an unanswered submit ({@link #settle}). COMMITTED, ABORTED, or UNKNOWN with a range
   * no wider than the one given.
   */
  public CompletableFuture<Outcome> settle(String group, LogEntry entry, long from,
      long through) {
    if (from <= entry.readPosition() || through < from) {
      throw new IllegalArgumentException("positions " + from + ".." + through + " are no range "
          + "for an entry read at " + entry.readPosition());
    }
    CompletableFuture<Outcome> result = new CompletableFuture<>();
    settleAt(group, entry, Placement.withdrawal(entry), entry.readPosition() + 1, from, through,
        "settled later", result);
    return result;
  }

  /**
   * One step of a settle at {@code pos}; the entry was submitted for {@code first} and can be
   * chosen at no position after {@code last}.
   */
  private void settleAt(String group, LogEntry entry, LogEntry withdrawal, long first, long pos,
      long last, String why, CompletableFuture<Outcome> result) {
    if (pos > last) {
      result.complete(new Outcome(Outcome.Status.ABORTED, last, (int) (last - first), null, why
          + "; positions up to " + last + " were decided without it", true));
      return;
    }
    Proposer proposer = Proposer.forList(learnerConfig, group,
        ProposerId.random(scheduler.random()), LogValue.of(withdrawal), pos, OptionalInt.empty(),
        new SplittableRandom(scheduler.random().nextLong()));
    driver.run(proposer).whenComplete((o, t) -> {
      if (t != null) {
        result.completeExceptionally(t);
        return;
      }
      if (o.status() != Outcome.Status.LEARNED || o.chosen() == null) {
        result.complete(new Outcome(Outcome.Status.UNKNOWN, last, 0, null, why + "; position "
            + pos + " could not be decided: it may still be chosen at one of positions " + pos
            + ".." + last, false, 0, pos));
        return;
      }
      LogValue v = o.chosen();
      if (v.contains(entry.txnId())) {
        result.complete(new Outcome(Outcome.Status.COMMITTED, pos, (int) (pos - first), v, null,
            false));
      } else if (Placement.conflicts(v, entry)) {
        result.complete(new Outcome(Outcome.Status.ABORTED, pos, (int) (pos - first), v, why
            + (v.contains(withdrawal.txnId()) ? "; withdrawn at position " + pos
                : "; position " + pos + " holds a conflicting value")
            + ", no batcher places it later", true));
      } else {
        settleAt(group, entry, withdrawal, first, pos + 1, last, why, result);
      }
    });
  }
}
