package org.paxoscp.service;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
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
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.wal.LogValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Learning and catch-up of one DC (ARCHITECTURE section 5.4): brings the DC's applied watermark of
 * a group up to a target position by learning every missing position in order. To learn position
 * p it first asks every peer DC's service for p's chosen value ({@code Learn(p)}) and takes the
 * first one that knows it; if none does, it runs a learner {@link Proposer} for p, which
 * re-proposes the highest-ballot vote it finds or decides a no-op when no DC has voted. The value
 * is then recorded in this DC's WAL ({@link Acceptor#apply}) and applied to the data table.
 *
 * <p><b>Positions are never invented.</b> A learner decides a no-op at an empty position, so it
 * must only run for positions known to exist: the caller passes a target that a request proved
 * (a client's commit position in {@code BeginRequest}, a read position someone was given, an
 * APPLY for a later position). This class never looks beyond the target it was given.
 *
 * <p><b>Bounds.</b> One catch-up runs per group at a time; concurrent requests for the same group
 * join it (its target becomes the highest requested). A run learns at most
 * {@link Settings#maxPositionsPerRun} positions; waiters still behind then fail with
 * {@link CatchUpFailedException} and a later request continues. Each peer request and each
 * learner instance has its own deadline.
 *
 * <p><b>Learner ballots.</b> Every learner instance takes a fresh {@link ProposerId} of 128 bits
 * from a {@link SecureRandom}, as client proposers do (see {@link ProposerId} for why its
 * uniqueness is a safety rule).
 *
 * <p>Thread-safe. {@link #catchUpTo} never blocks; the work runs on this object's own named
 * threads. Stateless with respect to safety: everything it learns is in the store.
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
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final Transport transport;
  private final Settings settings;
  private final ProposerConfig learnerConfig;
  private final ProposerDriver driver;
  private final ScheduledExecutorService timers;
  private final ExecutorService workers;
  private final SecureRandom ids = new SecureRandom();
  private final ConcurrentHashMap<String, GroupRun> runs = new ConcurrentHashMap<>();
  private final AtomicLong conflicts = new AtomicLong();
  private final AtomicLong learnedFromPeers = new AtomicLong();
  private final AtomicLong learnedByInstance = new AtomicLong();
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * @param localDc this DC's name; must be in {@code dcs}
   * @param dcs the cluster's DCs in proposer index order ({@code ClusterConfig.dcNames()})
   * @param store this DC's store
   * @param transport speaks for {@code localDc}; used for peer requests and learner instances
   */
  public CatchUp(String localDc, List<String> dcs, KvStore store, Transport transport,
      Settings settings) {
    this.localDc = Objects.requireNonNull(localDc);
    this.dcs = List.copyOf(dcs);
    if (!this.dcs.contains(localDc)) {
      throw new IllegalArgumentException("DC " + localDc + " is not in " + dcs);
    }
    this.acceptor = new Acceptor(store);
    this.applier = new LogApplier(store);
    this.transport = Objects.requireNonNull(transport);
    this.settings = Objects.requireNonNull(settings);
    this.learnerConfig = ProposerConfig.defaults(Protocol.BASIC, this.dcs)
        .withPhaseTimeoutMicros(Math.max(1, settings.learnTimeout().toNanos() / 1000));
    this.timers = Executors.newSingleThreadScheduledExecutor(named("catchup-timers-" + localDc));
    this.workers = Executors.newFixedThreadPool(4, named("catchup-" + localDc));
    this.driver = new ProposerDriver(transport, this.dcs, timers, settings.learnTimeout());
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
    GroupRun run = runs.computeIfAbsent(group, g -> new GroupRun());
    boolean start;
    synchronized (run) {
      run.target = Math.max(run.target, target);
      run.waiters.add(new Waiter(target, f));
      start = !run.running;
      run.running = true;
    }
    if (start) {
      try {
        workers.execute(() -> runLoop(group, run));
      } catch (RejectedExecutionException e) {
        stop(run, new CatchUpFailedException("catch-up of DC " + localDc + " closed", e));
      }
    }
    return f;
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
    if (r == Acceptor.ApplyResult.CONFLICT) {
      conflicts.incrementAndGet();
      LOG.error("SAFETY VIOLATION: DC {} was told two different chosen values for group {} "
          + "position {}: kept {}, refused {}", localDc, group, position,
          acceptor.chosen(group, position).map(Object::toString).orElse("?"), value);
    }
    applier.applyKnown(group);
    return r;
  }

  /** How many times {@link #record} met a different value already chosen (should stay 0). */
  public long conflicts() {
    return conflicts.get();
  }

  /** Positions learned from a peer's chosen cell. */
  public long learnedFromPeers() {
    return learnedFromPeers.get();
  }

  /** Positions learned by running a learner instance. */
  public long learnedByInstance() {
    return learnedByInstance.get();
  }

  /** Stops the threads (bounded wait); pending catch-ups fail. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    workers.shutdownNow();
    timers.shutdownNow();
    try {
      if (!workers.awaitTermination(5, TimeUnit.SECONDS)
          || !timers.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.warn("catch-up threads of DC {} did not stop within 5 s", localDc);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
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
    final List<Waiter> waiters = new ArrayList<>();
  }

  private void runLoop(String group, GroupRun run) {
    int learned = 0;
    RuntimeException failure;
    try {
      while (true) {
        long applied = applier.applyKnown(group);
        synchronized (run) {
          completeReached(run, applied);
          if (applied >= run.target) {
            run.running = false;
            run.target = 0;
            return;
          }
        }
        if (learned >= settings.maxPositionsPerRun()) {
          failure = new CatchUpFailedException("DC " + localDc + " learned " + learned
              + " positions of group " + group + " in one run and is still at " + applied
              + "; a later request continues");
          break;
        }
        if (closed.get()) {
          failure = new CatchUpFailedException("catch-up of DC " + localDc + " closed");
          break;
        }
        learnAndRecord(group, applied + 1);
        learned++;
      }
    } catch (RuntimeException e) {
      failure = e;
    }
    LOG.warn("catch-up of group {} at DC {} stopped: {}", group, localDc, failure.toString());
    stop(run, failure);
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

  /** Learns {@code position} (peers first, then a learner instance) and records it here. */
  private void learnAndRecord(String group, long position) {
    Optional<LogValue> known = acceptor.chosen(group, position);
    LogValue value;
    if (known.isPresent()) {
      value = known.get();
    } else {
      value = askPeers(group, position);
      if (value != null) {
        learnedFromPeers.incrementAndGet();
      } else {
        value = runLearner(group, position);
        learnedByInstance.incrementAndGet();
      }
    }
    record(group, position, value);
  }

  /** The first chosen value a peer reports for the position, or null if none knows it in time. */
  private LogValue askPeers(String group, long position) {
    List<String> peers = dcs.stream().filter(d -> !d.equals(localDc)).toList();
    if (peers.isEmpty()) {
      return null;
    }
    CompletableFuture<LogValue> first = new CompletableFuture<>();
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
    return await(first, settings.learnTimeout().plusMillis(100), "Learn(" + position + ")");
  }

  /** Runs a learner instance for the position; its APPLY reaches every DC, this one included. */
  private LogValue runLearner(String group, long position) {
    ProposerId proposerId = ProposerId.random(ids);
    LOG.info("DC {}: no peer knows group {} position {}; running a learner instance", localDc,
        group, position);
    Proposer learner = Proposer.learner(learnerConfig, group, proposerId, position,
        new SplittableRandom(ids.nextLong()));
    Outcome o = await(driver.run(learner), settings.learnerTimeout(),
        "learner for position " + position);
    if (o == null || o.status() != Outcome.Status.LEARNED || o.chosen() == null) {
      throw new CatchUpFailedException("DC " + localDc + " could not learn group " + group
          + " position " + position + (o == null ? "" : ": " + o.reason()));
    }
    return o.chosen();
  }

  private <T> T await(CompletableFuture<T> f, Duration timeout, String what) {
    try {
      return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      throw new CatchUpFailedException("DC " + localDc + ": " + what + " took longer than "
          + timeout.toMillis() + " ms", e);
    } catch (ExecutionException e) {
      throw new CatchUpFailedException("DC " + localDc + ": " + what + " failed: " + e.getCause(),
          e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CatchUpFailedException("DC " + localDc + ": interrupted during " + what, e);
    }
  }

  private static ThreadFactory named(String name) {
    return new ThreadFactoryBuilder().setNameFormat(name + "-%d").setDaemon(true).build();
  }
}
