package org.paxoscp.service;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.Learn;
import org.paxoscp.paxos.PaxosMessage.LearnReply;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.paxos.RebuildGuard;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.wal.LogValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Learning and catch-up of one DC (docs/architecture.md section 5.4): brings the DC's applied
 * watermark of a group up to a target position by learning every missing position in order. To
 * learn position p it first asks every peer DC's service for p's chosen value ({@code Learn(p)})
 * and takes the first one that knows it; if none does, it runs a learner {@link Proposer} for p,
 * which re-proposes the highest-ballot vote it finds or decides a no-op when no DC has voted. The
 * value is then recorded in this DC's WAL ({@link Acceptor#apply}) and applied to the data table.
 *
 * <p><b>Positions are never invented.</b> A learner decides a no-op at an empty position, so it
 * must only run for positions known to exist: the caller passes a target that a request proved
 * (a client's commit position in {@code BeginRequest}, a read position someone was given, an
 * APPLY for a later position). This class never looks beyond the target it was given. (A
 * leader-mode client that settles an unanswered submit decides one position past the log end,
 * with its entry's withdrawal, not a no-op: {@code LeaderSubmit}, docs/leader-combination.md.)
 *
 * <p><b>Bounds.</b> One catch-up runs per group at a time; concurrent requests for the same group
 * join it (its target becomes the highest requested). A run learns at most
 * {@link Settings#maxPositionsPerRun} positions; waiters still behind then fail with
 * {@link CatchUpFailedException} and a later request continues. Each peer request and each
 * learner instance has its own deadline.
 *
 * <p><b>Learner ballots.</b> Every learner instance takes a fresh {@link ProposerId} of 128 bits
 * from the {@link Scheduler#random} source (a {@link SecureRandom} outside the simulator), as
 * client proposers do (see {@link ProposerId} for why its
 * uniqueness is a safety rule).
 *
 * <p>Thread-safe. {@link #catchUpTo} never blocks and nothing here waits for a message: each
 * step runs on the {@link Scheduler}'s workers and the next one is chained on the replies, so the
 * same code runs on threads and in the simulator's virtual time. Stateless with respect to
 * safety: everything it learns is in the store.
 */
public final class CatchUp implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CatchUp.class);

  /**
   * @param learnTimeout how long a {@code Learn} request to a peer, and each phase of a learner
   *     instance, waits for replies
   * @param learnerTimeout how long one learner instance may take before the run fails
   * @param maxPositionsPerRun the most positions one run learns before it stops
   */
  public record Settings(Duration learnTimeout, Duration learnerTimeout, int maxPositionsPerRun) {
    public Settings {
      Objects.requireNonNull(learnTimeout);
      Objects.requireNonNull(learnerTimeout);
      if (learnTimeout.isNegative() || learnTimeout.isZero() || learnerTimeout.isNegative()
          || learnerTimeout.isZero()) {
        throw new IllegalArgumentException("catch-up timeouts must be positive");
      }
      if (maxPositionsPerRun < 1) {
        throw new IllegalArgumentException("maxPositionsPerRun must be >= 1");
      }
    }

    /** Learn requests wait one request timeout, a learner four, runs learn up to 256 positions. */
    public static Settings defaults(Duration requestTimeout) {
      return new Settings(requestTimeout, requestTimeout.multipliedBy(4), 256);
    }
  }

  private final String localDc;
  private final List<String> dcs;
  private final RebuildGuard guard;
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final Transport transport;
  private final Settings settings;
  private final ProposerConfig learnerConfig;
  private final ProposerDriver driver;
  private final Scheduler scheduler;
  private final ConcurrentHashMap<String, GroupRun> runs = new ConcurrentHashMap<>();
  private final AtomicLong conflicts = new AtomicLong();
  private final AtomicLong learnedFromPeers = new AtomicLong();
  private final AtomicLong learnedByInstance = new AtomicLong();
  private final java.util.concurrent.atomic.LongAdder recordedPositions =
      new java.util.concurrent.atomic.LongAdder();
  private final java.util.concurrent.atomic.LongAdder recordedEntries =
      new java.util.concurrent.atomic.LongAdder();
  private final AtomicBoolean closed = new AtomicBoolean();
  /** Set in the constructor: where the entries this DC records come from. */
  private final OriginShares originShares;

  /**
   * @param localDc this DC's name; must be in {@code dcs}
   * @param dcs the cluster's DCs in proposer index order ({@code ClusterConfig.dcNames()})
   * @param store this DC's store
   * @param transport speaks for {@code localDc}; used for peer requests and learner instances
   * @param scheduler runs the store work (on its workers) and the deadlines; owned by the caller
   */
  public CatchUp(String localDc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler) {
    this(localDc, dcs, store, transport, settings, scheduler, LogApplier.DEFAULT_MAX_GROUPS);
  }

  /**
   * As above; the applier (shared with the service) caches at most {@code maxGroups} groups'
   * state. A group's run is kept only while it runs or has waiters.
   */
  public CatchUp(String localDc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler, int maxGroups) {
    this(localDc, dcs, store, transport, settings, scheduler, maxGroups,
        new RebuildGuard(store), LogApplier.Rules.SHIPPED);
  }

  /**
   * As above, answering through {@code guard}, the process's one for {@code store} (the service
   * uses it too: {@link #guard}); {@code applierRules} other than
   * {@link LogApplier.Rules#SHIPPED} only to plant a bug in a test.
   */
  public CatchUp(String localDc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler, int maxGroups, RebuildGuard guard,
      LogApplier.Rules applierRules) {
    this.guard = Objects.requireNonNull(guard);
    this.localDc = Objects.requireNonNull(localDc);
    this.dcs = List.copyOf(dcs);
    if (!this.dcs.contains(localDc)) {
      throw new IllegalArgumentException("DC " + localDc + " is not in " + dcs);
    }
    this.originShares = new OriginShares(this.dcs);
    this.acceptor = new Acceptor(store, guard);
    this.applier = new LogApplier(store, maxGroups, guard, applierRules);
    this.transport = Objects.requireNonNull(transport);
    this.settings = Objects.requireNonNull(settings);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.learnerConfig = ProposerConfig.defaults(Protocol.BASIC, this.dcs)
        .withPhaseTimeoutMicros(Math.max(1, settings.learnTimeout().toNanos() / 1000));
    this.driver = new ProposerDriver(transport, this.dcs, scheduler, settings.learnTimeout());
  }

  /**
   * Brings the applied watermark of {@code group} to at least {@code target}, which the caller
   * must know to exist (see the class comment). Never blocks.
   *
   * @return completes with the applied watermark (at least {@code target}) once reached; fails
   *     with {@link CatchUpFailedException} when a position cannot be learned or the run's bound
   *     is reached, or with {@link StoreUnavailableException} when this DC's store fails
   */
  public CompletableFuture<Long> catchUpTo(String group, long target) {
    CompletableFuture<Long> f = new CompletableFuture<>();
    if (closed.get()) {
      f.completeExceptionally(new CatchUpFailedException("catch-up of DC " + localDc + " closed"));
      return f;
    }
    GroupRun run;
    boolean start;
    while (true) {
      run = runs.computeIfAbsent(group, g -> new GroupRun());
      synchronized (run) {
        if (run.retired) {
          // Ended and being removed from the map; the next lookup makes a fresh run.
          Thread.onSpinWait();
          continue;
        }
        run.target = Math.max(run.target, target);
        run.waiters.add(new Waiter(target, f));
        start = !run.running;
        run.running = true;
        if (start) {
          run.learned = 0;
        }
      }
      break;
    }
    GroupRun started = run;
    if (start) {
      scheduler.execute(() -> step(group, started));
    }
    return f;
  }

  /** Groups with a catch-up run or waiters now (runs are removed when they end). */
  public int activeRuns() {
    return runs.size();
  }

  /**
   * Removes {@code run} from the map if it has ended and nobody waits on it: a run is kept only
   * while it is live (docs/architecture.md section 9). A run that is retired is never used again.
   */
  private void retireIfIdle(String group, GroupRun run) {
    synchronized (run) {
      if (run.running || !run.waiters.isEmpty() || run.retired) {
        return;
      }
      run.retired = true;
    }
    runs.remove(group, run);
  }

  /**
   * Records {@code value} as the chosen value of {@code position} in this DC's WAL (idempotent)
   * and applies every known position to the data table. A different value already recorded
   * there means agreement was broken somewhere: it is logged as an error, counted in
   * {@link #conflicts()}, and the first value is kept. Blocks on the store.
   *
   * @return the acceptor's result
   * @throws StoreUnavailableException when this DC's store fails
   */
  public Acceptor.ApplyResult record(String group, long position, LogValue value) {
    Acceptor.ApplyResult r = acceptor.apply(new Apply(group, position, value));
    if (r == Acceptor.ApplyResult.APPLIED) {
      recordedPositions.increment();
      recordedEntries.add(value.entries().size());
      for (var e : value.entries()) {
        originShares.record(e.originDc());
      }
    }
    if (r == Acceptor.ApplyResult.CONFLICT) {
      conflicts.incrementAndGet();
      LOG.error("SAFETY VIOLATION: DC {} was told two different chosen values for group {} "
          + "position {}: kept {}, refused {}", localDc, group, position,
          acceptor.chosen(group, position).map(Object::toString).orElse("?"), value);
    }
    long applied = r == Acceptor.ApplyResult.CONFLICT ? applier.applyKnown(group)
        : applier.applyKnown(group, position, value);
    completeWaiters(group, applied);
    return r;
  }

  /** The applier this catch-up applies with (shared by the service over the same store). */
  /** The process's guard of this DC's store (docs/architecture.md section 12). */
  public RebuildGuard guard() {
    return guard;
  }

  LogApplier applier() {
    return applier;
  }

  /** Whether {@link #close} was called (the service instance is stopping). */
  boolean isClosed() {
    return closed.get();
  }

  /** The transport speaking for this DC. */
  Transport transport() {
    return transport;
  }

  /** The driver that runs this DC's learner instances (and its leader's combined lists). */
  ProposerDriver driver() {
    return driver;
  }

  /** Basic Paxos with the learn timeout as phase timeout: the learners' (and lists') settings. */
  ProposerConfig proposerConfig() {
    return learnerConfig;
  }

  /** How many times {@link #record} met a different value already chosen (should stay 0). */
  public long conflicts() {
    return conflicts.get();
  }

  /**
   * Positions whose chosen value this instance recorded in the DC's WAL first (from an APPLY or
   * by catch-up); an APPLY of a position already recorded (every proposer that learns a value
   * sends one) is not counted again. Over a DC's instances, it sums to the positions the DC
   * recorded.
   */
  /** Where the entries this DC recorded came from, recent ones most (batcher placement). */
  OriginShares originShares() {
    return originShares;
  }

  public long recordedPositions() {
    return recordedPositions.sum();
  }

  /** The entries of the positions {@link #recordedPositions} counts: committed transactions. */
  public long recordedEntries() {
    return recordedEntries.sum();
  }

  /** Positions learned from a peer's chosen cell. */
  public long learnedFromPeers() {
    return learnedFromPeers.get();
  }

  /** Positions learned by running a learner instance. */
  public long learnedByInstance() {
    return learnedByInstance.get();
  }

  /** Pending catch-ups fail; later ones fail at once. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    for (GroupRun run : runs.values()) {
      stop(run, new CatchUpFailedException("catch-up of DC " + localDc + " closed"));
    }
  }

  // ---- one group's run -------------------------------------------------------------------

  private record Waiter(long target, CompletableFuture<Long> future) {}

  /** The catch-up state of one group; guarded by its own monitor. */
  private static final class GroupRun {
    long target;
    boolean running;
    /** Positions learned by the current run. */
    int learned;
    final List<Waiter> waiters = new ArrayList<>();
    /** Ended and removed from the map (see {@link #retireIfIdle}). */
    boolean retired;
  }

  /**
   * One step of a group's run, on a worker: applies what is known, completes the waiters it
   * reached, and learns the next missing position; the next step follows when that completes.
   */
  private void step(String group, GroupRun run) {
    long applied;
    try {
      applied = applier.applyKnown(group);
      boolean ended = false;
      synchronized (run) {
        completeReached(run, applied);
        if (applied >= run.target) {
          run.running = false;
          run.target = 0;
          ended = true;
        }
      }
      if (ended) {
        retireIfIdle(group, run);
        return;
      }
      synchronized (run) {
        if (run.learned >= settings.maxPositionsPerRun()) {
          throw new CatchUpFailedException("DC " + localDc + " learned " + run.learned
              + " positions of group " + group + " in one run and is still at " + applied
              + "; a later request continues");
        }
        run.learned++;
      }
      if (closed.get()) {
        throw new CatchUpFailedException("catch-up of DC " + localDc + " closed");
      }
    } catch (RuntimeException e) {
      fail(group, run, e);
      return;
    }
    long position = applied + 1;
    CompletableFuture<LogValue> learned;
    try {
      learned = learn(group, position);
    } catch (RuntimeException e) {
      // This DC's store failed (or the position was collected) before any message went out.
      fail(group, run, e);
      return;
    }
    learned.whenComplete((value, t) -> scheduler.execute(() -> {
      try {
        if (t != null) {
          throw t instanceof CompletionException && t.getCause() instanceof RuntimeException r
              ? r : t instanceof RuntimeException r2 ? r2 : new CatchUpFailedException(
                  "DC " + localDc + ": learning position " + position + " failed: " + t, t);
        }
        record(group, position, value);
      } catch (RuntimeException e) {
        fail(group, run, e);
        return;
      }
      step(group, run);
    }));
  }

  private void fail(String group, GroupRun run, RuntimeException failure) {
    LOG.warn("catch-up of group {} at DC {} stopped: {}", group, localDc, failure.toString());
    stop(run, failure);
    retireIfIdle(group, run);
  }

  /**
   * Completes every waiter of {@code group} that {@code applied} reached, whoever applied it: a
   * request waiting for a position that an APPLY delivers while the run is still asking peers
   * for it need not wait for that answer. The run itself goes on and ends at its next step.
   */
  private void completeWaiters(String group, long applied) {
    GroupRun run = runs.get(group);
    if (run == null) {
      return;
    }
    List<Waiter> reached = new ArrayList<>();
    synchronized (run) {
      for (Iterator<Waiter> it = run.waiters.iterator(); it.hasNext(); ) {
        Waiter w = it.next();
        if (w.target() <= applied) {
          reached.add(w);
          it.remove();
        }
      }
    }
    for (Waiter w : reached) {
      w.future().complete(applied);
    }
  }

  private static void completeReached(GroupRun run, long applied) {
    for (Iterator<Waiter> it = run.waiters.iterator(); it.hasNext(); ) {
      Waiter w = it.next();
      if (w.target() <= applied) {
        w.future().complete(applied);
        it.remove();
      }
    }
  }

  private static void stop(GroupRun run, RuntimeException failure) {
    List<Waiter> failed;
    synchronized (run) {
      failed = new ArrayList<>(run.waiters);
      run.waiters.clear();
      run.running = false;
      run.target = 0;
    }
    for (Waiter w : failed) {
      w.future().completeExceptionally(failure);
    }
  }

  /** Learns {@code position}: from this DC's WAL, else from a peer, else by a learner. */
  private CompletableFuture<LogValue> learn(String group, long position) {
    Optional<LogValue> known = acceptor.chosen(group, position);
    if (known.isPresent()) {
      return CompletableFuture.completedFuture(known.get());
    }
    return askPeers(group, position).thenCompose(value -> {
      if (value != null) {
        learnedFromPeers.incrementAndGet();
        return CompletableFuture.completedFuture(value);
      }
      return runLearner(group, position).thenApply(v -> {
        learnedByInstance.incrementAndGet();
        return v;
      });
    });
  }

  /** The first chosen value a peer reports for the position, or null if none knows it in time. */
  private CompletableFuture<LogValue> askPeers(String group, long position) {
    List<String> peers = dcs.stream().filter(d -> !d.equals(localDc)).toList();
    CompletableFuture<LogValue> first = new CompletableFuture<>();
    if (peers.isEmpty()) {
      first.complete(null);
      return first;
    }
    AtomicInteger pending = new AtomicInteger(peers.size());
    Message learn = new Message.Paxos(new Learn(group, position));
    for (String peer : peers) {
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(peer, learn, settings.learnTimeout());
      } catch (TransportException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply.whenComplete((r, t) -> {
        if (r instanceof Message.Paxos p && p.message() instanceof LearnReply lr
            && lr.chosen() != null && lr.position() == position && group.equals(lr.group())) {
          first.complete(lr.chosen());
        } else if (pending.decrementAndGet() == 0) {
          first.complete(null);
        }
      });
    }
    // Each request has its own deadline; this one only guards against a transport that never
    // completes a request.
    return scheduler.within(first, settings.learnTimeout().plusMillis(100),
        () -> new CatchUpFailedException("DC " + localDc + ": Learn(" + position
            + ") got no answer in " + settings.learnTimeout().plusMillis(100).toMillis() + " ms"));
  }

  /** Runs a learner instance for the position; its APPLY reaches every DC, this one included. */
  private CompletableFuture<LogValue> runLearner(String group, long position) {
    ProposerId proposerId = ProposerId.random(scheduler.random());
    LOG.info("DC {}: no peer knows group {} position {}; running a learner instance", localDc,
        group, position);
    Proposer learner = Proposer.learner(learnerConfig, group, proposerId, position,
        new SplittableRandom(scheduler.random().nextLong()));
    return scheduler.within(driver.run(learner), settings.learnerTimeout(),
        () -> new CatchUpFailedException("DC " + localDc + ": the learner for position "
            + position + " took longer than " + settings.learnerTimeout().toMillis() + " ms"))
        .thenApply(o -> {
          if (o == null || o.status() != Outcome.Status.LEARNED || o.chosen() == null) {
            throw new CatchUpFailedException("DC " + localDc + " could not learn group " + group
                + " position " + position + (o == null ? "" : ": " + o.reason()));
          }
          return o.chosen();
        });
  }
}
