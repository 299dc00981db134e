package org.paxoscp.client;

import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.wal.LogEntry;

/**
 * A client's commit: runs a {@link Proposer} for an entry through the {@link ProposerDriver}
 * (basic Paxos, Paxos-CP) or submits it to the leader DC's service ({@link LeaderSubmit}, leader
 * combination), blocks for its outcome and turns it into a {@link CommitResult} or the typed
 * exception. Commits still running when the client closes end as unknown outcomes.
 */
final class CommitDriver {
  private final String homeDc;
  private final List<String> dcs;
  private final ProposerConfig config;
  private final ProposerDriver driver;
  private final LeaderSubmit leaderSubmit;
  private final RandomGenerator random;
  private final Set<CompletableFuture<Outcome>> inFlight = ConcurrentHashMap.newKeySet();
  private volatile boolean closed;

  /** {@code random} seeds each proposer's back-off; guarded by its own monitor. */
  CommitDriver(String homeDc, List<String> dcs, ProposerConfig config, ProposerDriver driver,
      LeaderSubmit leaderSubmit, RandomGenerator random) {
    this.homeDc = homeDc;
    this.dcs = List.copyOf(dcs);
    this.config = config;
    this.driver = driver;
    this.leaderSubmit = leaderSubmit;
    this.random = random;
  }

  /**
   * Runs the commit protocol for {@code entry} at {@code entry.readPosition() + 1} and blocks
   * for its outcome.
   *
   * @return the result of a committed entry
   * @throws TransactionAbortedException certainly not in the log
   * @throws UnavailableException no majority answered before the entry was sent for acceptance
   * @throws OutcomeUnknownException it may or may not be in the log
   */
  CommitResult commit(String group, LogEntry entry, ProposerId proposerId, OptionalInt leader) {
    long position = entry.readPosition() + 1;
    int bound = LeaderSubmit.boundFor(config.maxPromotions());
    Proposer proposer = null;
    CompletableFuture<Outcome> f = null;
    Outcome outcome;
    try {
      if (config.protocol() == Protocol.LEADER) {
        f = leaderSubmit.commit(group, entry,
            LeaderSubmit.submitTarget(dcs, leader, entry.readPosition(), homeDc), bound);
      } else {
        SplittableRandom proposerRandom;
        synchronized (random) {
          proposerRandom = new SplittableRandom(random.nextLong());
        }
        proposer = new Proposer(config, group, proposerId, entry, position, leader,
            proposerRandom);
        f = driver.run(proposer);
      }
      inFlight.add(f);
      try {
        if (closed) {
          f.completeExceptionally(new CancellationException("client closed"));
        }
        outcome = f.get();
      } finally {
        inFlight.remove(f);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unknown(group, entry, proposer, f, position, bound, "interrupted while committing",
          e);
    } catch (ExecutionException e) {
      throw unknown(group, entry, proposer, f, position, bound,
          "the commit protocol failed: " + e.getCause(), e);
    } catch (CancellationException | RejectedExecutionException e) {
      throw unknown(group, entry, proposer, f, position, bound,
          "client closed while committing", e);
    }
    return toResult(group, entry, outcome);
  }

  /**
   * Settles an unknown outcome of {@code entry} now: decides the positions where it can still be
   * chosen, {@code from ... through}, in turn ({@link LeaderSubmit#settle(String, LogEntry, long,
   * long)}), and blocks for the answer.
   *
   * @return the result of a committed entry
   * @throws TransactionAbortedException certainly not in the log (safe to re-run)
   * @throws OutcomeUnknownException a position could not be decided (no majority); the new
   *     range is within the old one
   */
  CommitResult settle(String group, LogEntry entry, long from, long through) {
    CompletableFuture<Outcome> f = leaderSubmit.settle(group, entry, from, through);
    Outcome outcome;
    inFlight.add(f);
    try {
      if (closed) {
        f.completeExceptionally(new CancellationException("client closed"));
      }
      outcome = f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw unknownAgain(group, entry, from, through, "interrupted while settling", e);
    } catch (ExecutionException | CancellationException e) {
      throw unknownAgain(group, entry, from, through, "settling failed: " + e, e);
    } finally {
      inFlight.remove(f);
    }
    return toResult(group, entry, outcome);
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
      default -> throw new OutcomeUnknownException(result, homeDc, null, entry);
    }
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
    return new OutcomeUnknownException(r, homeDc, cause, entry);
  }
}
