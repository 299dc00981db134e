package org.paxoscp.service;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage.GrantReply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.LeaderGroup.Pending;
import org.paxoscp.service.LeaderGroup.Prefetch;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Message.SubmitStatus;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rounds of leader combination at one service instance (docs/architecture.md section 5.5):
 * entries submitted for a group wait in its queue while one <em>round</em> is in flight; a round
 * takes every waiting entry that may be placed at the next position {@code q}
 * ({@link RoundPlanner}), proposes them as one list (fast ballot when {@code q}'s leader DC grants
 * it, else basic Paxos), and when {@code q} is decided answers each entry in it COMMITTED; the
 * others wait for the next round, where they are placed at {@code q + 1} or answered.
 *
 * <p><b>The next position</b> {@code q} is one past the last position this instance saw decided,
 * or past those whose chosen values this DC has applied or holds, if that is higher: every
 * position below {@code q} is decided and its value known here, which is what the planner's
 * judgement needs.
 *
 * <p><b>Holding for returning clients.</b> A closed-loop client of this DC answered COMMITTED
 * submits its next entry a few milliseconds later, just after the next round started, and then
 * waits for that whole round before its own. So when {@code q} is decided with entries of this
 * DC's own clients in it, the next round waits until as many of this DC's clients have
 * submitted again, for at most a share of the round just decided
 * ({@link LeaderCombiner.Options#holdShare}), and starts at once when they have. A lone client
 * is its own returner: its next entry ends the hold, so it never waits. After a hold that ended
 * with none of them back (clients that think between transactions), holds are tried only at
 * every 2nd, 4th, then 8th decision until one is useful again. A hold only postpones when a
 * round starts; what the round does is unchanged, so it has no part in safety.
 *
 * <p><b>The grant asked ahead.</b> When a round proposes its list, the DC of the list's first
 * entry would lead {@code q + 1} if the list is chosen (section 5.3); its grant for {@code q + 1}
 * is asked at once, in parallel with the round, and used by the next round only if the value
 * chosen at {@code q} does make that DC the leader.
 *
 * <p>Thread-safe; never blocks on a message. Store work runs on the calling thread or the
 * {@link Scheduler}'s workers. A group's state is guarded by its monitor.
 */
final class LeaderRounds {
  private static final Logger LOG = LoggerFactory.getLogger(LeaderRounds.class);
  /** After holds that none of the awaited clients came back to: hold at every 2^n-th decision. */
  private static final int MAX_HOLD_BACKOFF = 3;

  private final String dc;
  private final List<String> dcs;
  private final int dcIndex;
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final CatchUp catchUp;
  private final ProposerDriver driver;
  private final Transport transport;
  private final ProposerConfig proposerConfig;
  private final Scheduler scheduler;
  private final LeaderCombiner.Rules rules;
  private final double holdShare;
  private final BatcherPlacement placement;
  private final RoundPlanner planner;
  /** Called when a group may have become idle (it retires it if so). */
  private final Consumer<LeaderGroup> mayBeIdle;
  /** Queues an entry here again (the combiner's submit, which finds the group's live state). */
  private final java.util.function.Function<SubmitRequest, CompletableFuture<Message>> requeue;
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong entriesCommitted = new AtomicLong();
  private final AtomicLong holdsBegun = new AtomicLong();

  LeaderRounds(String dc, List<String> dcs, Acceptor acceptor, LogApplier applier,
      CatchUp catchUp, Scheduler scheduler, LeaderCombiner.Rules rules, double holdShare,
      int maxListBytes, BatcherPlacement placement, Consumer<LeaderGroup> mayBeIdle,
      java.util.function.Function<SubmitRequest, CompletableFuture<Message>> requeue) {
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
    this.rules = Objects.requireNonNull(rules);
    this.holdShare = holdShare;
    this.placement = Objects.requireNonNull(placement);
    this.planner = new RoundPlanner(dc, rules, maxListBytes, placement.firstEntryOrder());
    this.mayBeIdle = Objects.requireNonNull(mayBeIdle);
    this.requeue = Objects.requireNonNull(requeue);
  }

  /** Rounds started (lists proposed). */
  long rounds() {
    return rounds.get();
  }

  /** Entries answered COMMITTED. */
  long entriesCommitted() {
    return entriesCommitted.get();
  }

  /** Holds begun: decisions after which the next round waited for this DC's clients. */
  long holds() {
    return holdsBegun.get();
  }

  /**
   * Queues {@code s} in {@code g} unless it is a duplicate or the group holds {@code maxWaiting}
   * entries already, and starts a round when none is in flight and no hold awaits this DC's
   * clients (or this entry is the last one awaited). Returns the entry's future answer, or null
   * when {@code g} is retired (the caller looks the group up again).
   */
  CompletableFuture<Message> queue(LeaderGroup g, SubmitRequest s, int maxWaiting) {
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

  /** Builds and proposes the next list of {@code g}, or ends the group's rounds. */
  private void startRound(LeaderGroup g) {
    List<Pending> list;
    List<Runnable> answers = new ArrayList<>();
    List<Pending> toForward = new ArrayList<>();
    long q;
    OptionalInt leader;
    Optional<String> passTo;
    try {
      if (catchUp.isClosed()) {
        throw new CatchUpFailedException("the service instance of DC " + dc + " is stopping");
      }
      q = nextPosition(g);
      LogValue previous = q == 1 ? null : chosen(g, q - 1);
      leader = previous == null ? OptionalInt.empty() : Proposer.leaderAfter(dcs, previous);
      passTo = placement.roundPassesOnTo(leader);
      synchronized (g) {
        if (passTo.isPresent()) {
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
        RoundPlanner.Plan plan = planner.plan(g.name, g.queue, q, decidedLog(g));
        for (RoundPlanner.Answer a : plan.answered()) {
          g.queue.remove(a.pending());
          answers.add(answer(g, a.pending(), a.reply()));
        }
        list = plan.list();
        g.queue.removeAll(list);
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
      // An entry the leader leaves unanswered within the move bound runs here after all, as
      // one passed on here (never passed on again): safe, since every instance judges an
      // entry against the decided positions before placing it.
      placement.forward(p.request, passTo.get(), () -> {
        synchronized (g) {
          g.byTxn.remove(p.entry().txnId(), p);
        }
        return requeue.apply(p.request.asForwarded());
      }).whenComplete((m, t) -> {
        synchronized (g) {
          p.answered = true;
          g.byTxn.remove(p.entry().txnId(), p);
        }
        p.reply.complete(m != null ? m : new ErrorReply(g.name, p.request.position(),
            ErrorCode.CATCH_UP_FAILED, "DC " + dc + " could not run the entry here after its "
                + "leader left it unanswered: " + t));
        mayBeIdle.accept(g);
      });
    }
    if (list.isEmpty()) {
      boolean done;
      synchronized (g) {
        done = !g.inFlight;
        g.ownListChosen &= done;
      }
      if (done) {
        mayBeIdle.accept(g);
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
        if (next >= 0 && !placement.isDown(dcs.get(next))) {
          g.prefetch = askGrant(g.name, q + 1, next);
        }
      }
    }
    SplittableRandom random = new SplittableRandom(scheduler.random().nextLong());
    long started = scheduler.nowMicros();
    // No grant is asked of a DC marked down (it left pass-ons unanswered): the round goes
    // straight to PREPARE, which is always safe, instead of waiting out the grant request.
    OptionalInt grantor = leader.isPresent() && placement.isDown(dcs.get(leader.getAsInt()))
        ? OptionalInt.empty() : leader;
    CompletableFuture<Proposer> proposer = rules.fastWithoutGrant()
        ? CompletableFuture.completedFuture(Proposer.forGrantedList(proposerConfig, g.name, id,
            value, q, leader.orElse(dcIndex), random))
        : asked == null
        ? CompletableFuture.completedFuture(Proposer.forList(proposerConfig, g.name, id, value,
            q, grantor, random))
        : asked.handle((granted, t) -> Boolean.TRUE.equals(granted)
            ? Proposer.forGrantedList(proposerConfig, g.name, id, value, q,
                leader.orElse(dcIndex), random)
            : Proposer.forList(proposerConfig, g.name, id, value, q, grantor, random));
    proposer.thenCompose(driver::run).whenComplete((o, t) -> scheduler.execute(
        () -> roundDone(g, position, value, list, o, t, started)));
  }

  /** The decided log below {@code g}'s round as the planner reads it. */
  private RoundPlanner.DecidedLog decidedLog(LeaderGroup g) {
    return new RoundPlanner.DecidedLog() {
      @Override
      public LogValue chosen(long position) {
        return LeaderRounds.this.chosen(g, position);
      }

      @Override
      public long knownApplied() {
        return applier.knownApplied(g.name);
      }
    };
  }

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
      String to = dcs.get(grantor);
      reply.whenComplete((m, t) -> {
        if (m != null) {
          placement.heardFrom(to);
        } else if (t instanceof TransportTimeoutException
            || t.getCause() instanceof TransportTimeoutException) {
          placement.silent(to);
        }
      });
      granted = reply.thenApply(m -> m instanceof Message.Paxos p
          && p.message() instanceof GrantReply r && r.granted()
          && r.requester().equals(holder.toString()) && r.position() == position);
    }
    return new Prefetch(position, grantor, holder, granted.exceptionally(t -> false));
  }

  private void roundDone(LeaderGroup g, long q, LogValue proposed, List<Pending> list,
      Outcome o, Throwable t, long startedMicros) {
    boolean decided = t == null && o != null && o.status() == Outcome.Status.LEARNED
        && o.chosen() != null;
    List<Runnable> answers = new ArrayList<>();
    int returning = 0;
    if (decided) {
      LogValue v = o.chosen();
      // The proposer's APPLY, sent to every DC including this one, records and applies it here;
      // the next round starts at q + 1 at once, judging against the value kept in the cache.
      synchronized (g) {
        g.remember(q, v);
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
          if (++p.undecidedRounds >= LeaderCombiner.MAX_UNDECIDED_ROUNDS) {
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
      mayBeIdle.accept(g);
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
  private void endHold(LeaderGroup g, long hold) {
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
      mayBeIdle.accept(g);
    }
  }

  /**
   * The next position to place entries at: one past this DC's applied watermark or the
   * positions after it whose chosen values the applier holds ({@link LogApplier#knownThrough}),
   * or past the last position a round of this instance saw decided if that is higher (its value
   * is then in the cache and being applied). Every position below is decided and its value
   * known here.
   */
  private long nextPosition(LeaderGroup g) {
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
  OptionalInt leaderOfNext(LeaderGroup g) {
    long last = nextPosition(g) - 1;
    LogValue previous = last == 0 ? null : chosen(g, last);
    return previous == null ? OptionalInt.empty() : Proposer.leaderAfter(dcs, previous);
  }

  /** Marks {@code p} answered (caller holds {@code g}); the returned action completes it. */
  private Runnable answer(LeaderGroup g, Pending p, Message reply) {
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
  private void failAll(LeaderGroup g, RuntimeException e) {
    List<Runnable> answers = new ArrayList<>();
    ErrorCode code = e instanceof StoreUnavailableException ? ErrorCode.STORE_UNAVAILABLE
        : e instanceof TooOldException ? ErrorCode.TOO_OLD
        : e instanceof org.paxoscp.paxos.RebuildingException ? ErrorCode.REBUILDING
        : ErrorCode.CATCH_UP_FAILED;
    if (e instanceof CatchUpFailedException || e instanceof TooOldException
        || e instanceof org.paxoscp.paxos.RebuildingException) {
      // Expected: the DC is behind, the position was collected (the client is told TOO_OLD),
      // or the DC is being rebuilt (section 12).
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
    mayBeIdle.accept(g);
  }

  /**
   * The chosen value of {@code position} as this DC knows it, or null: from the group's cache,
   * the values the applier holds (an APPLY brought them, not yet recorded), or the store.
   */
  private LogValue chosen(LeaderGroup g, long position) {
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
      g.remember(position, v.get());
    }
    return v.get();
  }
}
