package org.paxoscp.client;

import java.util.List;
import java.util.OptionalInt;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerFactory;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;

/**
 * A client's commit: runs a {@link Proposer} for an entry through the {@link ProposerDriver}
 * (basic Paxos, Paxos-CP) or submits it to the leader DC's service ({@link LeaderSubmit}, leader
 * combination) and turns its outcome into a {@link CommitResult} or the typed exception, without
 * blocking. Commits still running when the client closes end as unknown outcomes.
 */
final class CommitDriver {
  private final String homeDc;
  private final List<String> dcs;
  private final ProposerConfig config;
  private final ProposerDriver driver;
  private final LeaderSubmit leaderSubmit;
  private final RandomGenerator random;
  /** The commits and settles running (close ends them). */
  private final Set<CompletableFuture<Outcome>> inFlight = ConcurrentHashMap.newKeySet();
  /** The same, by transaction id (an interrupted caller stops its own). */
  private final Map<String, Set<CompletableFuture<Outcome>>> byTxn = new ConcurrentHashMap<>();
  /** Makes each commit's proposer (a planted bug's proposer in tests). */
  private final ProposerFactory proposers;
  /** A planted bug: a commit stopped at its deadline is ABORTED even if its entry went out. */
  private final boolean deadlineAbortsSent;
  /** A planted bug: an unknown outcome names only the first position its entry was sent for. */
  private final boolean firstPositionOnly;
  private volatile boolean closed;
  private final Scheduler scheduler;
  /** Counts the back-offs proposers took after OVERLOADED refusals (client metrics). */
  private final io.micrometer.core.instrument.Counter overloadBackoffs;

  /** Ends a commit at its deadline ({@link #commit}). */
  private static final class DeadlinePassed extends CancellationException {
    private static final long serialVersionUID = 1L;

    DeadlinePassed(String what) {
      super("the " + what + " passed");
    }
  }

  /** {@code random} seeds each proposer's back-off; guarded by its own monitor. */
  CommitDriver(String homeDc, List<String> dcs, ProposerConfig config, ProposerDriver driver,
      LeaderSubmit leaderSubmit, RandomGenerator random, ClientHooks hooks, Scheduler scheduler,
      io.micrometer.core.instrument.Counter overloadBackoffs) {
    this.overloadBackoffs = overloadBackoffs;
    this.scheduler = scheduler;
    this.proposers = hooks.proposers();
    this.firstPositionOnly = hooks.has(ClientHooks.Plant.UNKNOWN_RANGE_FIRST_ONLY);
    this.deadlineAbortsSent = hooks.has(ClientHooks.Plant.DEADLINE_ABORTS_SENT);
    this.homeDc = homeDc;
    this.dcs = List.copyOf(dcs);
    this.config = config;
    this.driver = driver;
    this.leaderSubmit = leaderSubmit;
    this.random = random;
  }

  /**
   * Runs the commit protocol for {@code entry} at {@code entry.readPosition() + 1}; the future
   * completes with the result of a committed entry, or fails with {@link
   * TransactionAbortedException} (certainly not in the log), {@link UnavailableException} (no
   * majority answered before the entry was sent for acceptance) or {@link
   * OutcomeUnknownException} (it may or may not be in the log).
   *
   * <p>At {@code deadline} the commit stops (no further step, no promotion) and ends with what
   * it can prove: {@link DeadlineExceededException} with an ABORTED result when its proposer
   * never sent the entry at the position it reached (every earlier one went to other values),
   * else {@link OutcomeUnknownException} for that position (or, in leader combination, the
   * range the submit allowed).
   */
  CompletableFuture<CommitResult> commit(String group, LogEntry entry, ProposerId proposerId,
      OptionalInt leader, Deadline deadline, boolean capped) {
    long position = entry.readPosition() + 1;
    int bound = LeaderSubmit.boundFor(config.maxPromotions());
    ProposerConfig config = capped && this.config.maxPromotions() < 0
        ? this.config.withMaxPromotions(handleCap()) : this.config;
    if (deadline.passed(scheduler)) {
      return Futures.failed(new DeadlineExceededException(new CommitResult(
          CommitResult.Status.ABORTED, group, entry.txnId(), position, 0, false, "the "
              + deadline.what() + " passed before the entry was sent"), homeDc));
    }
    Proposer proposer;
    CompletableFuture<Outcome> f;
    try {
      if (config.protocol() == Protocol.LEADER) {
        proposer = null;
        f = leaderSubmit.commit(group, entry,
            LeaderSubmit.submitTarget(dcs, leader, entry.readPosition(), homeDc), bound);
      } else {
        SplittableRandom proposerRandom;
        synchronized (random) {
          proposerRandom = new SplittableRandom(random.nextLong());
        }
        proposer = proposers.create(config, group, proposerId, entry, position, leader,
            proposerRandom);
        f = driver.run(proposer);
      }
    } catch (RejectedExecutionException e) {
      return Futures.failed(unknown(group, entry, null, null, position, bound,
          "client closed while committing", e));
    }
    follow(entry.txnId(), f);
    Proposer p = proposer;
    Scheduler.Cancellable timer = deadline.isNone() ? null : scheduler.schedule(
        Math.max(1, deadline.atMicros() - scheduler.nowMicros()),
        () -> f.completeExceptionally(new DeadlinePassed(deadline.what())));
    return f.handle((outcome, t) -> {
      if (timer != null) {
        timer.cancel();
      }
      unfollow(entry.txnId(), f);
      if (p != null) {
        int backoffs;
        synchronized (p) {
          backoffs = p.overloadBackoffs();
        }
        if (backoffs > 0) {
          overloadBackoffs.increment(backoffs);
        }
      }
      if (t != null) {
        Throwable c = Futures.unwrap(t);
        if (c instanceof DeadlinePassed && p != null) {
          synchronized (p) {
            // The proposer takes no step after its future failed; one in progress is done.
            if (!p.entrySentHere() || deadlineAbortsSent) {
              throw new DeadlineExceededException(new CommitResult(CommitResult.Status.ABORTED,
                  group, entry.txnId(), p.position(), p.promotions(), false, c.getMessage()
                      + " before the entry was sent at position " + p.position() + " (every "
                      + "earlier position went to other values)"), homeDc);
            }
          }
        }
        String why = c instanceof CancellationException ? c.getMessage()
            : "the commit protocol failed: " + c;
        throw unknown(group, entry, p, f, position, bound, why, c);
      }
      return toResult(group, entry, outcome);
    });
  }

  /**
   * The promotions a Paxos-CP commit may make when an {@link OutcomeHandle} was taken before
   * it: the configured cap, or {@link LeaderSubmit#DEFAULT_BOUND} when promotions are unlimited
   * (the handle must name a last position).
   */
  int handleCap() {
    return config.maxPromotions() >= 0 ? config.maxPromotions() : LeaderSubmit.DEFAULT_BOUND;
  }

  /**
   * The last position where a commit of an entry read at {@code readPosition} can be chosen,
   * its promotions capped as {@link #handleCap}: the next position in basic Paxos; after the
   * cap's promotions in Paxos-CP; the submit's bound in leader combination.
   */
  long lastReachable(long readPosition) {
    long first = readPosition + 1;
    return switch (config.protocol()) {
      case BASIC -> first;
      case CP -> first + handleCap();
      case LEADER -> first + LeaderSubmit.boundFor(config.maxPromotions());
    };
  }

  /** Keeps {@code f} among the commits {@link #close} and {@link #stop} end. */
  private void follow(String txnId, CompletableFuture<Outcome> f) {
    inFlight.add(f);
    byTxn.computeIfAbsent(txnId, k -> ConcurrentHashMap.newKeySet()).add(f);
    if (closed) {
      f.completeExceptionally(new CancellationException("client closed while committing"));
    }
  }

  /**
   * Stops following the commit or settle of {@code txnId} (its caller was interrupted): it
   * ends as an unknown outcome at once. Nothing when none is running.
   */
  void stop(String txnId, String why) {
    for (CompletableFuture<Outcome> f : byTxn.getOrDefault(txnId, Set.of())) {
      f.completeExceptionally(new CancellationException(why));
    }
  }

  private void unfollow(String txnId, CompletableFuture<Outcome> f) {
    inFlight.remove(f);
    byTxn.computeIfPresent(txnId, (k, fs) -> {
      fs.remove(f);
      return fs.isEmpty() ? null : fs;
    });
  }

  /**
   * Settles an unknown outcome of {@code entry}: decides the positions where it can still be
   * chosen, {@code from ... through}, in turn ({@link LeaderSubmit#settle(String, LogEntry, long,
   * long)}). The future completes with the result of a committed entry, or fails with {@link
   * TransactionAbortedException} (certainly not in the log: safe to re-run) or {@link
   * OutcomeUnknownException} (a position could not be decided; the new range is within the old
   * one).
   */
  CompletableFuture<CommitResult> settle(String group, LogEntry entry, long from, long through) {
    CompletableFuture<Outcome> f = leaderSubmit.settle(group, entry, from, through);
    follow(entry.txnId(), f);
    return f.handle((outcome, t) -> {
      unfollow(entry.txnId(), f);
      if (t != null) {
        Throwable c = Futures.unwrap(t);
        throw unknownAgain(group, entry, from, through, c instanceof CancellationException
            ? c.getMessage() : "settling failed: " + c, c);
      }
      return toResult(group, entry, outcome);
    });
  }

  private OutcomeUnknownException unknownAgain(String group, LogEntry entry, long from,
      long through, String why, Throwable cause) {
    return new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN, group,
        entry.txnId(), through, 0, false, why, from), homeDc, cause, entry);
  }

  /** The result of a finished commit or settle; throws for anything but COMMITTED. */
  private CommitResult toResult(String group, LogEntry entry, Outcome outcome) {
    CommitResult result = new CommitResult(switch (outcome.status()) {
      case COMMITTED -> CommitResult.Status.COMMITTED;
      case ABORTED -> CommitResult.Status.ABORTED;
      case UNKNOWN -> CommitResult.Status.UNKNOWN;
      case LEARNED -> throw new IllegalStateException("a proposer with an entry learned: "
          + outcome);
    }, group, entry.txnId(), outcome.position(), outcome.promotions(), outcome.combined(),
        outcome.reason() == null ? "" : outcome.reason(), outcome.firstPosition());
    switch (result.status()) {
      case COMMITTED -> {
        return result;
      }
      case ABORTED -> {
        if (outcome.chosen() == null && outcome.overloaded()) {
          // DCs refused it OVERLOADED before its entry went out at its last position (every
          // earlier one decided without it): certainly not in the log, and why is typed.
          throw new TransactionAbortedException(result, homeDc, 0, true);
        }
        if (outcome.chosen() == null && !outcome.contended()) {
          // The proposer gave up for lack of a quorum (DCs silent) before any ACCEPT carried the
          // entry at its last position, every earlier one being decided without it: not in the
          // log. Giving up against competing proposers is an abort (retryable) instead.
          throw new UnavailableException("commit of " + entry.txnId() + " found no majority: "
              + result.reason(), group, result.position(), homeDc);
        }
        throw new TransactionAbortedException(result, homeDc,
            outcome.chosen() != null ? result.position() : 0);
      }
      default -> throw new OutcomeUnknownException(reported(result, entry), homeDc, null,
          entry);
    }
  }

  /**
   * The unknown result as the application is told it: as it is, or, with the planted bug, as
   * if the entry could be chosen only where it was first sent.
   */
  private CommitResult reported(CommitResult r, LogEntry entry) {
    if (!firstPositionOnly) {
      return r;
    }
    long first = entry.readPosition() + 1;
    return new CommitResult(r.status(), r.group(), r.txnId(), first, r.promotions(),
        r.combined(), r.reason(), first);
  }

  /** Ends every running commit as an unknown outcome; later commits end so at once. */
  void close() {
    closed = true;
    for (CompletableFuture<Outcome> f : inFlight) {
      f.completeExceptionally(new CancellationException("client closed"));
    }
  }

  /**
   * The unknown outcome of a commit the client stopped following. A proposer is stopped first
   * (its future failed, it takes no further step), so the position it reached is the only one
   * its entry can be chosen at: every earlier one was learned without it. In leader combination
   * ({@code proposer} null) the entry may be placed anywhere in {@code position ... position +
   * bound}.
   */
  private OutcomeUnknownException unknown(String group, LogEntry entry, Proposer proposer,
      CompletableFuture<Outcome> f, long position, int bound, String why, Throwable cause) {
    if (f != null) {
      f.completeExceptionally(new CancellationException(why));
    }
    long first = position;
    long last = position + bound;
    int promotions = 0;
    if (proposer != null) {
      // A step in progress finishes under this lock; none starts after the future failed.
      synchronized (proposer) {
        first = proposer.position();
        last = first;
        promotions = proposer.promotions();
      }
    }
    CommitResult r = new CommitResult(CommitResult.Status.UNKNOWN, group, entry.txnId(), last,
        promotions, false, why, first);
    return new OutcomeUnknownException(reported(r, entry), homeDc, cause, entry);
  }
}
