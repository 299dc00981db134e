package org.paxoscp.client;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Metrics;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.service.CuratorDiscovery;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.VersionProbe;
import org.paxoscp.transport.WanTransport;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.version.VersionNotActiveException;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Transaction Client (docs/architecture.md section 4): begins transactions on entity groups,
 * serves
 * their reads with fail-over across DCs, and commits them with basic Paxos or Paxos-CP.
 *
 * <p>Build one with {@link #builder}; one client per application process and home DC is the
 * intended use. The client keeps a session per entity group: every transaction it begins reads at
 * a position at least as high as the client's last commit and last read position in that group
 * (read-your-writes and monotonic reads), even after a fail-over to another DC, and at least as
 * high as a position an aborted commit learned taken by another transaction. Sessions take bounded
 * memory: the last {@code paxoscp.client.session.groups} groups' positions are cached, and a group
 * whose entry was evicted still reads its own writes (see {@code Sessions}: its begin asks a
 * majority of DCs first, one extra round).
 *
 * <p>Thread-safe: any number of threads may begin and run transactions at once (each
 * {@link Transaction} runs one operation at a time). {@link #begin}, reads and commits block the
 * calling thread; each request to a DC waits at most the cluster's request timeout, and a commit
 * waits for the commit protocol to finish (bounded by its own phase timeouts and attempts).
 *
 * <p><b>Asynchronous API.</b> Underneath, every step is asynchronous: {@link #beginAsync},
 * {@link Transaction#getAsync}, {@link Transaction#scanAsync}, {@link Transaction#commitAsync},
 * {@link #settleAsync}, {@link #runInTransactionAsync} and their {@link MultiTransaction}
 * counterparts return futures and block no thread, so one application thread can keep thousands
 * of transactions in flight; the blocking methods wait for the same futures and throw what they
 * fail with. The futures complete on the client's worker threads (a cached pool, never a
 * transport or timer thread), where continuations may block, though they then hold a thread
 * each.
 */
public final class TxnClient implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TxnClient.class);

  /**
   * Bytes of a datagram kept free for the message around a log value (envelope, ballot, group,
   * position, authentication tag); the group name's length is subtracted on top.
   */
  static final int ENVELOPE_MARGIN_BYTES = 512;
  /**
   * In leader combination, how many phase timeouts a submit waits for the leader's answer (its
   * catch-up and a few rounds) before the client settles the outcome itself.
   */
  static final int SUBMIT_TIMEOUT_PHASES = 3;

  private final ClusterConfig cluster;
  private final String homeDc;
  private final CommitProtocol protocol;
  /** Where transaction attempts are recorded, or null. */
  private final HistoryRecorder history;
  /** This client's name in recorded histories. */
  private final String clientId;
  /** The client's own timer thread, or null when it runs on a scheduler it was given. */
  private final ScheduledExecutorService timers;
  /**
   * The client's own worker threads (the public futures complete on them), or null when it runs
   * on a scheduler it was given.
   */
  private final ExecutorService workers;
  /** The clock, timers and deferred work of the asynchronous core. */
  private final Scheduler scheduler;
  /** Where the public asynchronous methods' futures complete. */
  private final java.util.concurrent.Executor callbacks;
  private final ExecutorService storeExecutor;
  /** The direct home-DC store path, or null. */
  private final DirectPath direct;
  private final Failover failover;
  private final ClientMetrics metrics;
  private final CommitDriver commits;
  private final int maxAttempts;
  private final Duration backoffBase;
  private final Duration backoffMax;
  private final RandomGenerator random;
  private final IdSource ids;
  private final Sessions sessions;
  private final CrossGroupCommit crossGroup;
  /** The planted bugs of the simulator and tests; {@link ClientHooks#SHIPPED} otherwise. */
  private final ClientHooks hooks;
  private final AtomicBoolean closed = new AtomicBoolean();
  /** The default timeouts of a transaction and of each of its calls; null for none. */
  private final Duration transactionTimeout;
  private final Duration callTimeout;
  /** Transactions of {@link #runInTransactionAsync} waiting out a back-off before a re-run. */
  private final java.util.Set<CompletableFuture<?>> backingOff =
      java.util.concurrent.ConcurrentHashMap.newKeySet();
  /** What the client opened itself (transport, discovery) and closes with it; may be empty. */
  private final List<AutoCloseable> owned;
  /** The cluster's version as this client follows it; null on a transport it was given. */
  private final VersionProbe.Follower versions;
  /** The cluster version assumed when {@link #versions} is null (a transport was given). */
  private final int givenVersion;

  private TxnClient(Builder b) {
    this.cluster = b.cluster;
    this.homeDc = b.homeDc;
    this.protocol = b.protocol;
    this.history = b.history;
    this.maxAttempts = b.maxAttempts;
    this.backoffBase = b.backoffBase;
    this.backoffMax = b.backoffMax;
    this.transactionTimeout = b.transactionTimeout;
    this.callTimeout = b.callTimeout;
    this.random = b.random;
    this.owned = b.owned;
    this.versions = b.versions;
    this.givenVersion = b.givenVersion;
    this.hooks = b.hooks;
    if (b.scheduler != null) {
      this.timers = null;
      this.workers = null;
      this.scheduler = b.scheduler;
      this.callbacks = scheduler.executor();
    } else {
      this.timers = new ScheduledThreadPoolExecutor(1, named("paxoscp-client-timers-" + homeDc));
      // The applications' continuations of the public futures run here, never on a transport
      // thread: they may block.
      this.workers = Executors.newCachedThreadPool(named("paxoscp-client-callbacks-" + homeDc));
      this.scheduler = Scheduler.of(timers);
      this.callbacks = workers;
    }
    this.ids = new IdSource(scheduler.random());
    this.clientId = homeDc + "-" + ids.next();
    if (b.versions != null) {
      long poll = cluster.versionPoll().toMillis();
      timers.scheduleWithFixedDelay(b.versions::refresh, poll, poll, TimeUnit.MILLISECONDS);
    }
    Transport transport = b.transport;
    if (b.directStore != null) {
      this.storeExecutor = Executors.newCachedThreadPool(named("paxoscp-client-store-" + homeDc));
      this.direct = new DirectPath(cluster, homeDc, b.directStore, b.transport, scheduler,
          storeExecutor);
      transport = direct.transport();
    } else {
      this.storeExecutor = null;
      this.direct = null;
    }
    this.metrics = new ClientMetrics(b.registry, homeDc, protocol);
    this.failover = new Failover(cluster, homeDc, transport, scheduler, metrics.failovers(),
        hooks.dcHealth(), metrics.requestBackoffs());
    this.sessions = new Sessions(cluster, transport, scheduler, cluster.clientSessionGroups());
    ProposerConfig pc = b.proposer != null ? b.proposer : cluster.proposer(switch (protocol) {
      case BASIC -> Protocol.BASIC;
      case CP -> Protocol.CP;
      case LEADER -> Protocol.LEADER;
    }).withMaxValueBytes(cluster.maxDatagramBytes() - ENVELOPE_MARGIN_BYTES);
    ProposerConfig proposer = b.maxPromotions >= 0 ? pc.withMaxPromotions(b.maxPromotions) : pc;
    Duration phase = b.proposer != null ? Duration.ofNanos(b.proposer.phaseTimeoutMicros() * 1000)
        : cluster.phaseTimeout();
    ProposerDriver proposerDriver = new ProposerDriver(transport, cluster.dcNames(), scheduler,
        phase);
    LeaderSubmit leaderSubmit = new LeaderSubmit(transport, cluster.dcNames(), proposerDriver,
        proposer, scheduler, phase.multipliedBy(SUBMIT_TIMEOUT_PHASES),
        b.leaderCosts != null ? b.leaderCosts : cluster.leaderCosts());
    this.commits = new CommitDriver(homeDc, cluster.dcNames(), proposer, proposerDriver,
        leaderSubmit, random, hooks, scheduler, metrics.commitBackoffs());
    this.crossGroup = new CrossGroupCommit(this, hooks, scheduler,
        cluster.crossGroup().lockTimeout(), cluster.requestTimeout().multipliedBy(2),
        cluster.maxDatagramBytes() / 4);
    LOG.info("TxnClient home={} protocol={} dcs={} requestTimeout={} maxDatagramBytes={} "
            + "maxPromotions={} directStore={} maxAttempts={} backoff={}..{} hooks={}", homeDc,
        protocol, cluster.dcNames(), cluster.requestTimeout(), cluster.maxDatagramBytes(),
        proposer.maxPromotions() < 0 ? "unbounded" : proposer.maxPromotions(),
        b.directStore != null, maxAttempts, backoffBase, backoffMax, hooks);
  }

  /**
   * Starts building a client.
   *
   * @param cluster the cluster's configuration (DCs, timeouts, datagram limit)
   * @param homeDc the client's own DC: first choice for begin and reads, and the origin DC of its
   *     transactions
   * @param protocol the commit protocol for every transaction of the client
   */
  public static Builder builder(ClusterConfig cluster, String homeDc, CommitProtocol protocol) {
    return new Builder(cluster, homeDc, protocol);
  }

  /**
   * Begins a transaction on {@code group}: asks the home DC (then the others in cluster order,
   * on a timeout or an unavailable store) for a read position at least this client's session
   * position in the group; that DC catches up first if it is behind.
   *
   * <p>Blocks for at most one request timeout per DC tried.
   *
   * @throws InvalidArgumentException if {@code group} is empty, longer than 256 UTF-8 bytes or
   *     contains NUL
   * @throws UnavailableException if no DC answered
   * @throws IllegalStateException if the client is closed
   */
  public Transaction begin(String group) {
    return begin(group, TxnOptions.DEFAULTS);
  }

  /**
   * {@link #begin(String)} with {@code options} overriding the client's timeouts for this
   * transaction ({@link TxnOptions}).
   *
   * @throws DeadlineExceededException if the call's or the transaction's deadline passed first
   * @throws TransactionInterruptedException if the calling thread was interrupted
   */
  public Transaction begin(String group, TxnOptions options) {
    return Futures.joinInterruptibly(begin(group, true, timing(options)), group, null);
  }

  /**
   * {@link #begin(String)} without blocking: the future completes with the transaction, or fails
   * with the exceptions {@link #begin(String)} throws. It completes on one of the client's
   * worker threads, never on a transport thread, so its continuations may block.
   */
  public CompletableFuture<Transaction> beginAsync(String group) {
    return beginAsync(group, TxnOptions.DEFAULTS);
  }

  /** {@link #begin(String, TxnOptions)} without blocking, as {@link #beginAsync(String)}. */
  public CompletableFuture<Transaction> beginAsync(String group, TxnOptions options) {
    return Futures.handOff(begin(group, true, timing(options)), callbacks);
  }

  /** The timeouts of a transaction begun now with {@code options}. */
  Timing timing(TxnOptions options) {
    Objects.requireNonNull(options, "options");
    return new Timing(Deadline.after(scheduler, options.timeout().orElse(transactionTimeout),
        "transaction timeout"), options.callTimeout().orElse(callTimeout));
  }

  /**
   * A transaction's deadline and its calls' timeout (null for none), shared by a transaction
   * across groups and its parts, and by the attempts of {@link #runInTransaction}.
   */
  record Timing(Deadline transaction, Duration callTimeout) {
    static final Timing NONE = new Timing(Deadline.NONE, null);

    /** The deadline of a call starting now: the transaction's, or sooner. */
    Deadline call(Scheduler scheduler) {
      return transaction.min(Deadline.after(scheduler, callTimeout, "call timeout"));
    }
  }

  /**
   * The asynchronous core of {@link #begin(String)}; {@code awaitResolve} false for the client's
   * own cross-group steps, which must not wait for the RESOLVEs they are themselves proposing.
   * Completes on whatever thread delivered the deciding reply.
   */
  CompletableFuture<Transaction> begin(String group, boolean awaitResolve, Timing timing) {
    return Futures.guard(() -> {
      ensureOpen();
      validateGroup(group);
      Deadline deadline = timing.call(scheduler);
      CompletableFuture<Void> resolved = awaitResolve ? crossGroup.awaitResolve(group)
          : CompletableFuture.completedFuture(null);
      return resolved.thenCompose(v -> sessionFloor(group)).thenCompose(min -> {
        long started = System.nanoTime();
        return failover.request(group, "", min, new Message.BeginRequest(group, min),
            m -> m instanceof Message.BeginReply r && r.group().equals(group)
                && r.position() >= min ? r : null, deadline).handle((reply, t) -> {
                  if (t != null) {
                    if (Futures.unwrap(t) instanceof UnavailableException) {
                      metrics.begun(started, false);
                    }
                    throw Futures.rethrow(t);
                  }
                  metrics.begun(started, true);
                  return begun(group, reply, timing);
                });
      });
    });
  }

  /**
   * The least read position a begin in {@code group} may take: the session position when the
   * client knows it; when it may have dropped it, the highest applied position of a majority
   * (one round to the DCs); 0 otherwise.
   */
  private CompletableFuture<Long> sessionFloor(String group) {
    java.util.OptionalLong known = sessions.known(group);
    if (known.isPresent()) {
      return CompletableFuture.completedFuture(known.getAsLong());
    }
    if (sessions.mayHaveDropped() && !hooks.skipFloorQuery()) {
      return sessions.majorityFloor(group);
    }
    return CompletableFuture.completedFuture(0L);
  }

  private Transaction begun(String group, Message.BeginReply reply, Timing timing) {
    noteSession(group, reply.position());
    OptionalInt leader = OptionalInt.empty();
    int idx = cluster.dcNames().indexOf(reply.leaderDc());
    if (idx >= 0) {
      leader = OptionalInt.of(idx);
    }
    ProposerId id = ids.next();
    return new Transaction(this, group, homeDc + "-" + id, id,
        reply.position(), leader, maxEntryBytes(group), reply.locks(), reply.locksCut(), timing);
  }

  /**
   * Begins a transaction that may span entity groups ({@link MultiTransaction};
   * docs/architecture.md
   * section 10). Nothing is sent until it first touches a group.
   *
   * @throws IllegalStateException if the client is closed
   */
  public MultiTransaction beginMulti() {
    return beginMulti(TxnOptions.DEFAULTS);
  }

  /**
   * {@link #beginMulti()} with {@code options} overriding the client's timeouts: the deadlines
   * bound the begins in its groups and its reads; its commit (PREPAREs, DECIDE, RESOLVEs) runs
   * to its outcome whatever the deadline, since stopping one group's PREPARE alone would leave
   * the others to be settled.
   */
  public MultiTransaction beginMulti(TxnOptions options) {
    ensureOpen();
    return beginMulti(timing(options));
  }

  private MultiTransaction beginMulti(Timing timing) {
    return new MultiTransaction(this, homeDc + "-" + ids.next(),
        cluster.crossGroup().maxGroups(), timing);
  }

  /**
   * {@link #runInTransaction} for a transaction over any number of groups: runs {@code fn} in a
   * new {@link MultiTransaction} and commits it, re-running both on an abort with the same
   * attempts and back-off.
   */
  public <T> T runInMultiTransaction(MultiTxnFunction<T> fn) {
    return runInMultiTransaction(TxnOptions.DEFAULTS, fn);
  }

  /** {@link #runInMultiTransaction(MultiTxnFunction)} with {@code options} for all attempts. */
  public <T> T runInMultiTransaction(TxnOptions options, MultiTxnFunction<T> fn) {
    Objects.requireNonNull(fn);
    ensureOpen();
    Timing timing = timing(options);
    List<TransactionAbortedException> aborts = new ArrayList<>();
    for (int attempt = 1; ; attempt++) {
      MultiTransaction txn = beginMulti(timing);
      try {
        T value = applied(() -> fn.apply(txn));
        if (txn.isActive()) {
          txn.commit();
        }
        return value;
      } catch (TransactionAbortedException e) {
        txn.abort();
        if (attempt >= maxAttempts) {
          aborts.forEach(e::addSuppressed);
          throw e;
        }
        aborts.add(e);
      } catch (RuntimeException | Error e) {
        if (txn.isActive()) {
          txn.abort();
        }
        throw e;
      }
      if (!backOff(attempt, timing.transaction())) {
        TransactionAbortedException last = aborts.remove(aborts.size() - 1);
        aborts.forEach(last::addSuppressed);
        throw last;
      }
    }
  }

  /**
   * Settles an unknown outcome now (one transaction in one group, thrown by a commit of this
   * client): decides, one after another, the positions where the transaction can still be
   * chosen ({@link OutcomeUnknownException#firstPosition()} ...
   * {@link OutcomeUnknownException#lastPosition()}), proposing at the first one nobody voted at
   * a withdrawal of it, which the placement rule keeps it from following
   * (docs/leader-combination.md). Needs a majority of DCs.
   *
   * @return the result if the transaction committed
   * @throws TransactionAbortedException it is certainly not in the log and never will be: safe
   *     to re-run
   * @throws OutcomeUnknownException still no majority; the range it names is within the old one
   * @throws IllegalArgumentException for an outcome this client cannot settle (a transaction
   *     across groups: use {@link #crossGroupOutcome})
   */
  public CommitResult settle(OutcomeUnknownException unknown) {
    LogEntry entry = unknown.entry().orElse(null);
    CompletableFuture<CommitResult> f = settleAsyncCore(unknown);
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      if (entry != null) {
        commits.stop(entry.txnId(), "interrupted while settling");
      }
      return Futures.join(f);
    } catch (java.util.concurrent.ExecutionException e) {
      throw Futures.rethrow(e);
    }
  }

  /**
   * {@link #settle} without blocking: the future completes with the result, or fails with the
   * exceptions {@link #settle} throws; on one of the client's worker threads.
   */
  public CompletableFuture<CommitResult> settleAsync(OutcomeUnknownException unknown) {
    return Futures.handOff(settleAsyncCore(unknown), callbacks);
  }

  private CompletableFuture<CommitResult> settleAsyncCore(OutcomeUnknownException unknown) {
    return Futures.guard(() -> {
      LogEntry entry = unknown.entry().orElseThrow(() -> new InvalidArgumentException(
          unknown.group(),
          "outcome of " + unknown.result().txnId() + " cannot be settled by this client; for a "
              + "transaction across groups use crossGroupOutcome"));
      ensureOpen();
      String group = unknown.result().group();
      CompletableFuture<CommitResult> settled;
      if (hooks.has(ClientHooks.Plant.RETRY_UNKNOWN_ELSEWHERE)) {
        // The planted bug: the entry is sent again, through the next DC, while the first try
        // may still be chosen where it was.
        int next = (cluster.dcNames().indexOf(homeDc) + 1) % cluster.dcNames().size();
        settled = commits.commit(group, entry, ids.next(), OptionalInt.of(next), Deadline.NONE,
            false);
      } else {
        settled = commits.settle(group, entry, unknown.firstPosition(), unknown.lastPosition());
      }
      return settled
          .handle((r, t) -> {
            if (t != null) {
              if (Futures.unwrap(t) instanceof TransactionAbortedException e) {
                // The settle decided up to here: a later begin reads at least there.
                noteSession(group, e.decidedPosition());
              }
              throw Futures.rethrow(t);
            }
            noteSession(group, r.position());
            return r;
          })
          .thenCompose(r -> checkUpdatesApplied(group, entry, r).thenApply(v -> r));
    });
  }

  /**
   * The outcome of a one-group transaction known only by its handle
   * ({@link OutcomeUnknownException#handle()}, {@link Transaction#outcomeHandle()}), from any
   * client — after a restart of the one that committed it too. Decides the handle's positions in
   * turn as {@link #settle} does, each at a withdrawal of the transaction (a value that makes
   * every proposer and batcher still holding it give up), until one holds the transaction
   * (COMMITTED) or its withdrawal, or the range ends (ABORTED: it is certainly not in the log
   * and never will be). Without the entry it cannot stop early at a conflicting position, so it
   * may decide more positions than {@code settle} (all but at most one of them are normally
   * decided already). For a transaction with counter or set updates it asks, once committed,
   * whether they applied. Needs a majority of DCs.
   *
   * <p>The handle's range must be the transaction's (as the two methods above give it):
   * settling a narrower one may report ABORTED for a transaction that commits later. A range
   * the group's log was collected past cannot be decided any more: UNKNOWN each time.
   *
   * @return the result if the transaction committed
   * @throws TransactionAbortedException it is certainly not in the log and never will be
   * @throws OutcomeUnknownException still no majority; its handle names the rest of the range
   * @throws UpdateRefusedException it is in the log, but an update could not apply there
   */
  public CommitResult outcome(OutcomeHandle handle) {
    return Futures.join(outcomeCore(handle));
  }

  /** {@link #outcome(OutcomeHandle)} without blocking, as {@link #settleAsync}. */
  public CompletableFuture<CommitResult> outcomeAsync(OutcomeHandle handle) {
    return Futures.handOff(outcomeCore(handle), callbacks);
  }

  /** {@link #outcome(OutcomeHandle)} of the handle with these fields. */
  public CommitResult outcome(String group, String txnId, long firstPosition, long lastPosition) {
    return outcome(new OutcomeHandle(group, txnId, firstPosition, lastPosition));
  }

  private CompletableFuture<CommitResult> outcomeCore(OutcomeHandle h) {
    return Futures.guard(() -> {
      ensureOpen();
      validateGroup(h.group());
      // A stand-in for the entry: its id and a read position just below the range. Nothing
      // else of it is needed to decide the positions at its withdrawal and to recognize it.
      LogEntry standIn = new LogEntry(h.txnId(), homeDc, h.firstPosition() - 1,
          new java.util.TreeSet<>(), new java.util.TreeMap<>());
      return commits.settle(h.group(), standIn, h.firstPosition(), h.lastPosition())
          .handle((r, t) -> {
            if (t != null) {
              if (Futures.unwrap(t) instanceof TransactionAbortedException e) {
                noteSession(h.group(), e.decidedPosition());
              }
              throw Futures.rethrow(t);
            }
            noteSession(h.group(), r.position());
            return r;
          })
          .thenCompose(r -> checkUpdatesApplied(h.group(), standIn, r).thenApply(v -> r));
    });
  }

  /** The commit driver (for a transaction's {@link Transaction#outcomeHandle}). */
  CommitDriver commits() {
    return commits;
  }

  /**
   * The outcome of cross-group transaction {@code txnId} over {@code groups} (for an
   * {@link OutcomeUnknownException} of {@link MultiTransaction#commit}): read from the decision
   * in the coordinator group, the first of the sorted groups.
   *
   * @return COMMITTED or ABORTED once decided; UNKNOWN while undecided (its PREPAREs may still
   *     hold keys until their deadline, after which any reader that meets them decides it:
   *     from cluster version 6, COMMIT if every PREPARE is chosen, which it may be already)
   */
  public CommitResult.Status crossGroupOutcome(String txnId, java.util.Collection<String> groups) {
    ensureOpen();
    String coordinator = new java.util.TreeSet<>(groups).first();
    return Futures.join(crossGroup.readDecision(coordinator, txnId))
        .map(c -> c ? CommitResult.Status.COMMITTED : CommitResult.Status.ABORTED)
        .orElse(CommitResult.Status.UNKNOWN);
  }

  /**
   * Runs {@code fn} in a new transaction on {@code group} and commits it, re-running both on
   * {@link TransactionAbortedException} (from a read or the commit) up to the configured number
   * of attempts with jittered exponential back-off between them (full jitter: a uniform delay up
   * to base * 2^(attempt-1), capped). A hand-written loop: the policy is five lines and the
   * decision of what to retry is protocol-specific, which a general retry library would not
   * make clearer.
   *
   * <p>Never re-runs on {@link OutcomeUnknownException} (the transaction may be in the log) or
   * {@link UnavailableException}; both propagate, as does anything {@code fn} throws (the
   * transaction is then aborted). If {@code fn} aborts the transaction itself, its result is
   * returned without committing.
   *
   * <p>Blocks, including during back-off.
   *
   * @return what {@code fn} returned in the attempt that committed
   * @throws TransactionAbortedException the last abort, when every attempt aborted (earlier
   *     ones are attached as suppressed)
   */
  public <T> T runInTransaction(String group, TxnFunction<T> fn) {
    return runInTransaction(group, TxnOptions.DEFAULTS, fn);
  }

  /**
   * {@link #runInTransaction(String, TxnFunction)} with {@code options}: the transaction timeout
   * bounds all the attempts together, back-offs included; a back-off that would end past it is
   * not waited, and the last abort is thrown.
   */
  public <T> T runInTransaction(String group, TxnOptions options, TxnFunction<T> fn) {
    Objects.requireNonNull(fn);
    Timing timing = timing(options);
    List<TransactionAbortedException> aborts = new ArrayList<>();
    for (int attempt = 1; ; attempt++) {
      Transaction txn = Futures.joinInterruptibly(begin(group, true, timing), group, null);
      try {
        T value = applied(() -> fn.apply(txn));
        if (txn.isActive()) {
          txn.commit();
        }
        return value;
      } catch (TransactionAbortedException e) {
        txn.abort();
        if (attempt >= maxAttempts) {
          aborts.forEach(e::addSuppressed);
          throw e;
        }
        aborts.add(e);
      } catch (RuntimeException | Error e) {
        txn.abort();
        throw e;
      }
      if (!backOff(attempt, timing.transaction())) {
        TransactionAbortedException last = aborts.remove(aborts.size() - 1);
        aborts.forEach(last::addSuppressed);
        throw last;
      }
    }
  }

  /**
   * {@link #runInTransaction} without blocking a thread: runs {@code fn} in a new transaction
   * on {@code group} and, when the future it returns completes and the transaction is still
   * active, commits it; re-runs both on {@link TransactionAbortedException} (from a read, from
   * {@code fn}'s future or from the commit) with the same attempts and back-off, the back-off
   * waited on the client's timer. The future completes with what {@code fn}'s future gave in
   * the attempt that committed, or fails as {@link #runInTransaction} throws; on one of the
   * client's worker threads. {@code fn} itself is called on such a thread too, and must not
   * block if the client runs many transactions this way (that is what the futures are for).
   */
  public <T> CompletableFuture<T> runInTransactionAsync(String group, AsyncTxnFunction<T> fn) {
    return runInTransactionAsync(group, TxnOptions.DEFAULTS, fn);
  }

  /** {@link #runInTransactionAsync(String, AsyncTxnFunction)} with {@code options}. */
  public <T> CompletableFuture<T> runInTransactionAsync(String group, TxnOptions options,
      AsyncTxnFunction<T> fn) {
    Objects.requireNonNull(fn);
    Timing timing = timing(options);
    CompletableFuture<T> out = new CompletableFuture<>();
    attempt(group, fn, timing, 1, new ArrayList<>(), out);
    return Futures.handOff(out, callbacks);
  }

  /**
   * Attempt {@code attempt} of {@link #runInTransactionAsync}; completes {@code out} at the end.
   */
  private <T> void attempt(String group, AsyncTxnFunction<T> fn, Timing timing, int attempt,
      List<TransactionAbortedException> aborts, CompletableFuture<T> out) {
    Transaction[] txn = new Transaction[1];
    begin(group, true, timing)
        .thenComposeAsync(t -> {
          txn[0] = t;
          CompletionStage<T> body = fn.apply(t);
          if (body == null) {
            throw new NullPointerException("the transaction function returned no future");
          }
          return body;
        }, callbacks)
        .thenCompose(value -> txn[0].isActive()
            ? txn[0].commitCore().thenApply(r -> value)
            : CompletableFuture.completedFuture(value))
        .whenComplete((value, t) -> {
          if (t == null) {
            out.complete(value);
            return;
          }
          Throwable c = Futures.unwrap(t);
          if (txn[0] != null && txn[0].isActive()) {
            txn[0].abort();
          }
          if (!(c instanceof TransactionAbortedException e)) {
            out.completeExceptionally(c);
            return;
          }
          long backOff = backOffMicros(attempt);
          Deadline deadline = timing.transaction();
          if (attempt >= maxAttempts || (!deadline.isNone()
              && scheduler.nowMicros() + backOff >= deadline.atMicros())) {
            aborts.forEach(e::addSuppressed);
            out.completeExceptionally(e);
            return;
          }
          aborts.add(e);
          // A retry waiting when the client closes fails then (close() fails what waits).
          backingOff.add(out);
          scheduler.schedule(backOff, () -> {
            if (backingOff.remove(out)) {
              attempt(group, fn, timing, attempt + 1, aborts, out);
            }
          });
          if (closed.get() && backingOff.remove(out)) {
            out.completeExceptionally(new IllegalStateException("TxnClient of " + homeDc
                + " closed while a transaction waited to be re-run"));
          }
        });
  }

  /** Runs a transaction function, wrapping a checked exception it throws. */
  private static <T> T applied(java.util.concurrent.Callable<T> body) {
    try {
      return body.call();
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Exception e) {
      throw new TxnFunctionException(e);
    }
  }

  /** A uniform random delay, in microseconds, before attempt {@code attempt + 1}. */
  private long backOffMicros(int attempt) {
    long bound = Math.min(backoffMax.toNanos(),
        backoffBase.toNanos() << Math.min(30, attempt - 1));
    synchronized (random) {
      return random.nextLong(bound + 1) / 1000;
    }
  }

  /**
   * Sleeps before attempt {@code attempt + 1}; false if interrupted (the flag is restored) or if
   * the back-off would end past {@code deadline}.
   */
  private boolean backOff(int attempt, Deadline deadline) {
    long micros = backOffMicros(attempt);
    if (!deadline.isNone() && scheduler.nowMicros() + micros >= deadline.atMicros()) {
      return false;
    }
    try {
      TimeUnit.MICROSECONDS.sleep(micros);
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  /**
   * Closes the client: later calls throw {@link IllegalStateException}, commits still running end
   * with {@link OutcomeUnknownException}, and the client's threads are stopped (waiting at most a
   * few seconds). Does not close a transport or direct store the caller supplied; closes the
   * transport it opened itself.
   * Idempotent.
   */
  @Override
  public void close() {
    if (closed.get()) {
      return;
    }
    // Let the steps across groups in the background finish (bounded) while the client is still
    // open: they begin, read and commit like any request (a one-round commit's DECIDE is among
    // them: until it is chosen, a reader that meets the transaction's locks waits for their
    // deadline). On a scheduler the client was given (the simulator's) nothing may wait.
    if (timers != null) {
      crossGroup.awaitBackground(cluster.requestTimeout().multipliedBy(4));
    }
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    commits.close();
    sessions.close();
    failover.close();
    for (CompletableFuture<?> f : backingOff) {
      if (backingOff.remove(f)) {
        f.completeExceptionally(new IllegalStateException("TxnClient of " + homeDc
            + " closed while a transaction waited to be re-run"));
      }
    }
    if (storeExecutor != null) {
      // Let store work already handed over (the last commit's APPLY at the home DC) finish.
      storeExecutor.shutdown();
      try {
        storeExecutor.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (direct != null) {
      direct.close();
    }
    if (storeExecutor != null) {
      shutdown(storeExecutor);
    }
    if (timers != null) {
      shutdown(timers);
      // Continuations of the public futures still running finish undisturbed (close() may be
      // called from one of them).
      workers.shutdown();
    }
    for (AutoCloseable c : owned) {
      try {
        c.close();
      } catch (Exception e) {
        LOG.warn("closing {} failed: {}", c, e.toString());
      }
    }
  }

  private static void shutdown(ExecutorService executor) {
    executor.shutdownNow();
    try {
      if (!executor.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.warn("client threads did not stop within 5 s");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The DCs this client's begins and reads ask last, because a request to them timed out and
   * no answer came since (a probe asks each again, see docs/client.md "Fail-over").
   */
  public java.util.Set<String> silentDcs() {
    return failover.silentDcs();
  }

  /** The client's scheduler (clock and timers). */
  Scheduler scheduler() {
    return scheduler;
  }

  /** The client's home DC. */
  public String homeDc() {
    return homeDc;
  }

  /** The commit protocol of the client's transactions. */
  public CommitProtocol protocol() {
    return protocol;
  }

  /**
   * The client's session position in {@code group}: the highest position it committed at, read
   * at, or lost to another transaction there (learned decided), 0 if none. New transactions
   * read at this position or later.
   */
  public long sessionPosition(String group) {
    return sessions.known(group).orElse(0L);
  }

  /**
   * The client's session cache (for tests and reports): groups cached, evicted entries waiting
   * until a majority of DCs applied their position, entries dropped after that, and begins that
   * had to ask the DCs for a floor because their group's entry was dropped.
   */
  public record SessionStats(long cached, int settling, long dropped, long floorQueries) {}

  /** See {@link SessionStats}. */
  public SessionStats sessionStats() {
    return new SessionStats(sessions.cached(), sessions.settlingCount(),
        sessions.droppedCount(), sessions.floorQueryCount());
  }

  // ---- called by Transaction ----------------------------------------------------------------

  /** The cross-group commit of this client's {@link MultiTransaction}s. */
  CrossGroupCommit crossGroup() {
    return crossGroup;
  }

  /** A read or commit met a cross-group lock: helps resolve it; says what happened. */
  CompletableFuture<String> meetLock(String group, org.paxoscp.wal.XgLocks.Lock lock) {
    return crossGroup.meetLock(group, lock);
  }

  /** The clock of PREPARE deadlines and recorded histories: the scheduler's wall clock. */
  long wallMillis() {
    return scheduler.wallMillis();
  }

  /** The planted bugs of the simulator and tests ({@link ClientHooks#SHIPPED} otherwise). */
  ClientHooks hooks() {
    return hooks;
  }

  /** Where the public asynchronous methods' futures complete. */
  java.util.concurrent.Executor callbacks() {
    return callbacks;
  }

  /** Stops following the commit of {@code txnId}: its caller was interrupted. */
  void stopCommit(String txnId) {
    commits.stop(txnId, "interrupted while committing");
  }

  /** A commit of {@code t} is about to send its entry: the history learns what is at stake. */
  void recordCommitting(Transaction t) {
    if (history != null) {
      history.committing(attempt(t, CommitResult.Status.UNKNOWN, -1, 0, t.startMs(), -1, -1));
    }
  }

  /** A cross-group commit of {@code parts} is about to send its steps. */
  void recordCommittingAcrossGroups(String xg, java.util.Collection<Transaction> parts,
      long startMs) {
    if (history != null) {
      history.committing(new HistoryRecorder.CrossGroupAttempt(xg, clientId, homeDc,
          List.copyOf(parts), CommitResult.Status.UNKNOWN, -1,
          protocol.name().toLowerCase(java.util.Locale.ROOT), startMs, wallMillis()));
    }
  }

  /** Records a finished attempt when the client records its history. */
  void recordAttempt(Transaction t, CommitResult.Status outcome, long commitPos, int promotions,
      long startMs) {
    recordAttempt(t, outcome, commitPos, promotions, startMs, -1, -1);
  }

  /** Records an UNKNOWN outcome with the positions its entry can still be chosen at. */
  void recordUnknown(Transaction t, CommitResult r, long startMs) {
    recordAttempt(t, CommitResult.Status.UNKNOWN, -1, r.promotions(), startMs, r.firstPosition(),
        r.position());
  }

  private void recordAttempt(Transaction t, CommitResult.Status outcome, long commitPos,
      int promotions, long startMs, long unknownFrom, long unknownThrough) {
    if (history != null) {
      history.record(attempt(t, outcome, commitPos, promotions, startMs, unknownFrom,
          unknownThrough));
    }
  }

  private HistoryRecorder.Attempt attempt(Transaction t, CommitResult.Status outcome,
      long commitPos, int promotions, long startMs, long unknownFrom, long unknownThrough) {
    return new HistoryRecorder.Attempt(t.txnId(), clientId, homeDc, t.group(),
        t.readPosition(), t.reads(), t.readVersions(), t.scans(), t.writes(), outcome,
        commitPos, promotions, protocol.name().toLowerCase(java.util.Locale.ROOT), startMs,
        wallMillis(), unknownFrom, unknownThrough);
  }

  /** Records a transaction across groups that reached its commit, if history is recorded. */
  void recordCrossGroup(String xg, java.util.Collection<Transaction> parts,
      CommitResult.Status outcome, long decidePos, long startMs) {
    if (history != null) {
      history.record(new HistoryRecorder.CrossGroupAttempt(xg, clientId, homeDc,
          List.copyOf(parts), outcome, decidePos,
          protocol.name().toLowerCase(java.util.Locale.ROOT),
          startMs, wallMillis()));
    }
  }

  /**
   * The most keys one read request names: the services' default
   * {@code paxoscp.service.read.max.keys}, which a cluster must not set lower.
   */
  static final int MAX_READ_KEYS = 1000;

  /**
   * Reads {@code key} at {@code position}, with the position that wrote the version read: from
   * the direct store when it is caught up.
   */
  CompletableFuture<LogApplier.VersionedRead> read(String group, String txnId, long position,
      String key) {
    return readAll(group, txnId, position, List.of(key), Deadline.NONE)
        .thenApply(m -> m.get(key));
  }

  /**
   * Reads {@code keys} (distinct) at {@code position}, each with the position that wrote the
   * version read: from the direct store when it is caught up, else through the services, as few
   * requests as the services' key limit and one datagram allow, sent together (each with its own
   * fail-over). A request whose reply would not fit in a datagram is split in two and sent again.
   */
  CompletableFuture<Map<String, LogApplier.VersionedRead>> readAll(String group, String txnId,
      long position, List<String> keys, Deadline deadline) {
    return Futures.guard(() -> {
      ensureOpen();
      if (direct == null) {
        return readThroughService(group, txnId, position, keys, deadline);
      }
      // The store may block: its work runs on the client's store threads.
      return CompletableFuture.supplyAsync(() -> {
        Map<String, LogApplier.VersionedRead> found = new java.util.HashMap<>();
        for (String k : keys) {
          Optional<LogApplier.VersionedRead> v = direct.read(group, txnId, position, k);
          if (v.isEmpty()) {
            break; // Not caught up (or not serving): the services read the rest.
          }
          found.put(k, v.get());
        }
        return found;
      }, storeExecutor).thenCompose(found -> {
        if (found.size() == keys.size()) {
          return CompletableFuture.completedFuture(found);
        }
        List<String> rest = keys.stream().filter(k -> !found.containsKey(k)).toList();
        return readThroughService(group, txnId, position, rest, deadline).thenApply(more -> {
          found.putAll(more);
          return found;
        });
      });
    });
  }

  private CompletableFuture<Map<String, LogApplier.VersionedRead>> readThroughService(
      String group, String txnId, long position, List<String> keys, Deadline deadline) {
    List<CompletableFuture<Map<String, LogApplier.VersionedRead>>> parts = new ArrayList<>();
    int budget = maxEntryBytes(group);
    int from = 0;
    while (from < keys.size()) {
      int to = from;
      int bytes = 0;
      while (to < keys.size() && to - from < MAX_READ_KEYS
          && (to == from || bytes + EntrySize.string(keys.get(to)) <= budget)) {
        bytes += EntrySize.string(keys.get(to));
        to++;
      }
      parts.add(readRequest(group, txnId, position, keys.subList(from, to), deadline));
      from = to;
    }
    return CompletableFuture.allOf(parts.toArray(CompletableFuture[]::new)).thenApply(v -> {
      Map<String, LogApplier.VersionedRead> all = new java.util.HashMap<>();
      parts.forEach(p -> all.putAll(p.join()));
      return all;
    });
  }

  /**
   * One read request for {@code keys}; split in two when a DC refuses it (its reply would not
   * fit, or it names more keys than the service takes). A single key refused fails as it is.
   */
  private CompletableFuture<Map<String, LogApplier.VersionedRead>> readRequest(String group,
      String txnId, long position, List<String> keys, Deadline deadline) {
    return failover.request(group, txnId, position,
        new Message.ReadRequest(group, position, List.copyOf(keys)),
        m -> {
          if (!(m instanceof Message.ReadReply r && r.group().equals(group)
              && r.position() == position)) {
            return null;
          }
          Map<String, LogApplier.VersionedRead> out = new java.util.HashMap<>();
          for (String k : keys) {
            out.put(k, new LogApplier.VersionedRead(
                Optional.ofNullable(r.values().get(k)).map(byte[]::clone),
                r.versions().getOrDefault(k, 0L)));
          }
          return out;
        }, deadline).exceptionallyCompose(t -> {
          // A reply too large, or more keys than a service takes: fewer at once will do.
          if (keys.size() > 1 && Futures.unwrap(t) instanceof RefusedException) {
            int half = keys.size() / 2;
            var a = readRequest(group, txnId, position, keys.subList(0, half), deadline);
            var b = readRequest(group, txnId, position, keys.subList(half, keys.size()),
                deadline);
            return a.thenCombine(b, (x, y) -> {
              x.putAll(y);
              return x;
            });
          }
          return Futures.failed(Futures.unwrap(t));
        });
  }

  /**
   * One page of a range read at {@code position} (docs/client.md, "Range reads"), from the home
   * DC's service or, failing that, another DC's; never from the direct store.
   */
  CompletableFuture<Message.ScanReply> scan(String group, String txnId, long position,
      KeyRange range, int limit, boolean reversed, Deadline deadline) {
    if (closed.get()) {
      return Futures.failed(new IllegalStateException("TxnClient of " + homeDc + " is closed"));
    }
    return failover.request(group, txnId, position,
        new Message.ScanRequest(group, position, range, limit, reversed),
        m -> m instanceof Message.ScanReply r && r.group().equals(group)
            && r.position() == position && answers(r, range, reversed) ? r : null, deadline);
  }

  /**
   * Is {@code r} a page of a scan of {@code range}: every entry and the last key inside it, in
   * the scan's order? The transaction records what it read from the last key, so a page from
   * anything else (a faulty or mismatched service) is no answer.
   */
  private static boolean answers(Message.ScanReply r, KeyRange range, boolean reversed) {
    if (!r.complete() && !range.contains(r.lastKey())) {
      return false;
    }
    String prev = null;
    for (Message.ScanItem i : r.items()) {
      if (!range.contains(i.key()) || (prev != null
          && Integer.signum(KeyRange.compare(prev, i.key())) != (reversed ? 1 : -1))) {
        return false;
      }
      prev = i.key();
    }
    return prev == null || r.complete() || KeyRange.compare(prev, r.lastKey()) == 0
        || Integer.signum(KeyRange.compare(prev, r.lastKey())) == (reversed ? 1 : -1);
  }

  /**
   * Throws unless the cluster runs at {@code needed} or above: a client that follows the
   * cluster's version checks the version it last learned; one built on a transport it was given
   * assumes the newest.
   *
   * @throws VersionNotActiveException naming {@code what} and both versions
   */
  boolean clusterVersionAtLeast(int version) {
    return activeClusterVersion() >= version;
  }

  /** The version this client speaks: followed, or fixed on a given transport. */
  private int activeClusterVersion() {
    return versions == null ? givenVersion : versions.active();
  }

  void requireClusterVersion(int needed, String what) {
    int active = activeClusterVersion();
    if (active < needed) {
      throw new VersionNotActiveException(what, needed, active);
    }
  }

  /**
   * Runs the commit protocol for {@code entry}; for an entry with a commutative update, asks
   * whether its updates applied where it landed. Fails with the commit's typed exceptions.
   */
  CompletableFuture<CommitResult> commit(String group, LogEntry entry, ProposerId proposerId,
      OptionalInt leader, Deadline deadline, boolean capped) {
    return Futures.guard(() -> {
      ensureOpen();
      long started = System.nanoTime();
      String kind = ClientMetrics.kind(entry);
      return commits.commit(group, entry, proposerId, leader, deadline, capped)
          .handle((r, t) -> {
            if (t != null) {
              Throwable c = Futures.unwrap(t);
              if (c instanceof DeadlineExceededException e) {
                metrics.aborted(kind, ClientMetrics.AbortReason.DEADLINE, started);
                LOG.debug("txn {} group {}: deadline passed, not in the log: {}", entry.txnId(),
                    group, e.getMessage());
              } else if (c instanceof TransactionAbortedException e) {
                metrics.aborted(kind, e.overloaded() ? ClientMetrics.AbortReason.OVERLOADED
                    : ClientMetrics.AbortReason.CONFLICT, started);
                LOG.debug("txn {} group {}: ABORTED at position {}: {}", entry.txnId(), group,
                    e.result().position(), e.result().reason());
                // A position learned taken: beginning below it would only lose it again.
                noteSession(group, e.decidedPosition());
              } else if (c instanceof OutcomeUnknownException e) {
                metrics.unknown(kind, started);
                LOG.info("txn {} group {}: outcome UNKNOWN, in the log at one of positions "
                    + "{}..{} or nowhere: {}", entry.txnId(), group, e.result().firstPosition(),
                    e.result().position(), e.result().reason());
              } else if (c instanceof UnavailableException e) {
                metrics.unavailable(kind, started);
                LOG.debug("txn {} group {}: UNAVAILABLE, not in the log: {}", entry.txnId(),
                    group, e.getMessage());
              }
              throw Futures.rethrow(c);
            }
            noteSession(group, r.position());
            return r;
          })
          .thenCompose(r -> checkUpdatesApplied(group, entry, r).handle((v, t) -> {
            if (t != null) {
              Throwable c = Futures.unwrap(t);
              if (c instanceof UpdateRefusedException e) {
                metrics.aborted(kind, ClientMetrics.AbortReason.REFUSED, started);
                LOG.debug("txn {} group {}: in the log at position {} but refused: {}",
                    entry.txnId(), group, r.position(), e.detail());
              } else if (c instanceof OutcomeUnknownException) {
                metrics.unknown(kind, started);
              }
              throw Futures.rethrow(c);
            }
            metrics.committed(kind, started);
            LOG.debug("txn {} group {}: COMMITTED at position {} ({} promotions{})",
                entry.txnId(), group, r.position(), r.promotions(),
                r.combined() ? ", combined" : "");
            return r;
          }));
    });
  }

  /**
   * For an entry with a commutative update, committed at {@code r.position()}: asks a DC whether
   * its updates applied there ({@link Message.UpdatesRequest}). Fails with {@link
   * UpdateRefusedException} when the entry was refused (the transaction has no effect), with
   * {@link OutcomeUnknownException} when no DC answered (the entry is in the log; whether it took
   * effect is unknown, and {@link #settle} asks again). An entry without writes is the stand-in
   * of {@link #outcome(OutcomeHandle)} (a transaction's own entry always writes): whether the
   * transaction had updates is unknown, so it asks too once the cluster runs them.
   */
  private CompletableFuture<Void> checkUpdatesApplied(String group, LogEntry entry,
      CommitResult r) {
    boolean standIn = entry.writes().isEmpty() && entry.xg() == null;
    if (!entry.hasUpdates() && !(standIn
        && activeClusterVersion() >= ClusterVersion.COMMUTATIVE_UPDATES)) {
      return CompletableFuture.completedFuture(null);
    }
    long position = r.position();
    return failover.request(group, entry.txnId(), position,
        new Message.UpdatesRequest(group, position, entry.txnId()),
        m -> m instanceof Message.UpdatesReply u && u.group().equals(group)
            && u.position() == position && u.txnId().equals(entry.txnId()) ? u : null, true,
        Deadline.NONE)
        .handle((reply, t) -> {
          if (t != null) {
            Throwable c = Futures.unwrap(t);
            if (!(c instanceof TransactionException)) {
              throw Futures.rethrow(c);
            }
            throw new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN,
                group, entry.txnId(), position, r.promotions(), r.combined(), "committed at "
                    + "position " + position + ", but no DC said whether its updates applied: "
                    + c.getMessage()), homeDc, c, entry, true);
          }
          if (!reply.found()) {
            // The commit learned the entry chosen there; a DC that says otherwise is faulty.
            throw new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN,
                group, entry.txnId(), position, r.promotions(), r.combined(), "committed at "
                    + "position " + position + ", but a DC finds no entry of it there"), homeDc,
                null, entry, true);
          }
          if (!reply.refused().isEmpty()) {
            throw new UpdateRefusedException(group, position, entry.txnId(), reply.refused(),
                homeDc);
          }
          return null;
        });
  }

  /** A transaction of this client aborted before its entry was sent (a lock, TOO_OLD). */
  void abortedBeforeCommit(ClientMetrics.AbortReason reason) {
    metrics.aborted("txn", reason, System.nanoTime());
  }

  // ---- internals ----------------------------------------------------------------------------

  private void noteSession(String group, long position) {
    sessions.note(group, position);
  }

  private int maxEntryBytes(String group) {
    return cluster.maxDatagramBytes() - ENVELOPE_MARGIN_BYTES
        - group.getBytes(StandardCharsets.UTF_8).length;
  }

  private void ensureOpen() {
    if (closed.get()) {
      throw new IllegalStateException("TxnClient of " + homeDc + " is closed");
    }
  }

  static void validateGroup(String group) {
    try {
      WalLayout.validateGroup(group);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(group, e.getMessage());
    }
  }

  static void validateKey(String group, String key) {
    try {
      WalLayout.validateKey(key);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(group, e.getMessage());
    }
  }

  private static ThreadFactory named(String name) {
    return new ThreadFactoryBuilder().setNameFormat(name + "-%d").setDaemon(true).build();
  }

  /**
   * Builds a {@link TxnClient}. Not thread-safe; {@link #build} may be called once per set of
   * settings (each call builds an independent client).
   */
  public static final class Builder {
    private final ClusterConfig cluster;
    private final String homeDc;
    private final CommitProtocol protocol;
    private Transport transport;
    private KvStore directStore;
    private int maxPromotions = -1;
    private int maxAttempts = 5;
    private Duration transactionTimeout;
    private Duration callTimeout;
    private Duration backoffBase = Duration.ofMillis(10);
    private Duration backoffMax = Duration.ofSeconds(1);
    private RandomGenerator random;
    private List<AutoCloseable> owned = List.of();
    /** Set when the client opened its own transport: it follows the cluster's version. */
    private VersionProbe.Follower versions;
    private int givenVersion = ClusterVersion.LATEST;
    private HistoryRecorder history;
    private ClientHooks hooks = ClientHooks.SHIPPED;
    private Scheduler scheduler;
    private ProposerConfig proposer;
    private java.util.Map<String, Long> leaderCosts;
    private MeterRegistry registry = Metrics.globalRegistry;

    private Builder(ClusterConfig cluster, String homeDc, CommitProtocol protocol) {
      this.cluster = Objects.requireNonNull(cluster, "cluster");
      this.homeDc = Objects.requireNonNull(homeDc, "homeDc");
      this.protocol = Objects.requireNonNull(protocol, "protocol");
    }

    /**
     * Records every transaction attempt of the client (see {@link HistoryRecorder}) so that the
     * history can be checked later. The caller keeps ownership of the recorder.
     */
    public Builder recordHistory(HistoryRecorder recorder) {
      this.history = Objects.requireNonNull(recorder);
      return this;
    }

    /**
     * The transport to the DCs' services. It must speak for the home DC. The caller keeps
     * ownership: closing the client does not close it. When none is set, the client opens its
     * own UDP transport on an ephemeral port (of the address {@code UdpTransport.Builder#bind}
     * describes), finding the services through ZooKeeper when the cluster config names one and
     * through the static endpoints otherwise, and closes it with the client.
     */
    public Builder transport(Transport transport) {
      this.transport = Objects.requireNonNull(transport);
      return this;
    }

    /**
     * The cluster version a client on a {@link #transport given transport} speaks (default: the
     * newest this build knows); a client that opens its own transport follows the cluster's
     * instead. For the simulator and tests that run a cluster held at an earlier version.
     */
    public Builder clusterVersion(int version) {
      ClusterVersion.of(version);
      this.givenVersion = version;
      return this;
    }

    /**
     * Direct access to the home DC's store, as in the paper's prototype: reads are served from it
     * when it has applied the log up to the read position (else through a service), and the
     * commit protocol's messages to the home DC are handled by an acceptor on it instead of a
     * round trip to a service. Optional; the caller keeps ownership of the store.
     */
    public Builder directStore(KvStore store) {
      this.directStore = Objects.requireNonNull(store);
      return this;
    }

    /**
     * Where the client's meters go (commits by mode, outcome and reason, begins, fail-overs;
     * docs/client.md, "Metrics"); default Micrometer's global registry, which keeps nothing until
     * the application adds a registry to it.
     */
    public Builder meterRegistry(MeterRegistry registry) {
      this.registry = Objects.requireNonNull(registry);
      return this;
    }

    /** Paxos-CP only: how many times a commit may be promoted before it aborts; default no cap. */
    public Builder maxPromotions(int cap) {
      if (cap < 0) {
        throw new IllegalArgumentException("maxPromotions must be >= 0, was " + cap);
      }
      this.maxPromotions = cap;
      return this;
    }

    /**
     * Planted bugs, for the simulator and tests that show the checker catches them; never for
     * applications (the default is the client as released).
     */
    public Builder hooks(ClientHooks hooks) {
      this.hooks = Objects.requireNonNull(hooks);
      return this;
    }

    /**
     * The commit protocol's settings (phase timeout, attempts, promotions, value size) instead of
     * those the cluster's configuration gives: the simulator's. Its protocol must be the
     * client's.
     */
    public Builder proposer(ProposerConfig config) {
      this.proposer = Objects.requireNonNull(config);
      return this;
    }

    /**
     * What leading costs each DC in round-trip microseconds (leader combination's placement),
     * instead of what the cluster's WAN settings give: the simulator's.
     */
    public Builder leaderCosts(java.util.Map<String, Long> costs) {
      this.leaderCosts = java.util.Map.copyOf(costs);
      return this;
    }

    /**
     * The clock, timers and deferred work the client runs on, instead of its own threads: the
     * simulator's virtual time. The client then starts no thread, its public futures complete
     * through {@link Scheduler#execute} (a task the scheduler drops leaves its future
     * incomplete), and {@link TxnClient#close} waits for nothing. Transaction and proposer ids
     * are drawn from {@link Scheduler#random}, which must then give ids unique across every
     * client of the cluster: a {@link java.security.SecureRandom}, or the simulator's one seeded
     * generator shared by all its clients. Needs a {@link #transport} and no {@link
     * #directStore}.
     */
    public Builder scheduler(Scheduler scheduler) {
      this.scheduler = Objects.requireNonNull(scheduler);
      return this;
    }

    /**
     * Bounds every transaction, from its begin to its commit's outcome (for
     * {@link TxnClient#runInTransaction}: all its attempts); default none. A transaction can
     * override it ({@link TxnOptions#timeout}); what a transaction past its deadline does:
     * {@link TxnOptions}.
     */
    public Builder transactionTimeout(Duration timeout) {
      this.transactionTimeout = TxnOptions.positive(timeout, "transactionTimeout");
      return this;
    }

    /**
     * Bounds each call of a transaction (a begin, a read, a scan, a commit); default none (a
     * begin or read then waits at most one request timeout per DC it asks). A transaction can
     * override it ({@link TxnOptions#callTimeout}).
     */
    public Builder callTimeout(Duration timeout) {
      this.callTimeout = TxnOptions.positive(timeout, "callTimeout");
      return this;
    }

    /** Attempts {@link TxnClient#runInTransaction} makes in all (default 5). */
    public Builder maxAttempts(int attempts) {
      if (attempts < 1) {
        throw new IllegalArgumentException("maxAttempts must be >= 1, was " + attempts);
      }
      this.maxAttempts = attempts;
      return this;
    }

    /**
     * Back-off of {@link TxnClient#runInTransaction} between attempts: a uniform random delay up
     * to {@code base * 2^(attempt-1)}, capped at {@code max} (defaults 10 ms and 1 s).
     */
    public Builder retryBackoff(Duration base, Duration max) {
      if (base.isNegative() || base.isZero() || max.compareTo(base) < 0) {
        throw new IllegalArgumentException("need 0 < base <= max, was " + base + ", " + max);
      }
      this.backoffBase = base;
      this.backoffMax = max;
      return this;
    }

    /**
     * The source of back-off jitter (retries and the commit protocol's own), for reproducible
     * tests; default a fresh {@link SplittableRandom}. Proposer and transaction ids never come
     * from it (see the ids' uniqueness argument), so clients built with one seed still differ.
     * The client synchronizes on it when drawing.
     */
    public Builder random(RandomGenerator random) {
      this.random = Objects.requireNonNull(random);
      return this;
    }

    /**
     * Builds the client.
     *
     * @throws IllegalArgumentException if the home DC is not in the cluster, or the transport
     *     speaks for another DC
     * @throws UnavailableException if the client had to open its own transport and the
     *     discovery service could not be reached
     */
    public TxnClient build() {
      if (!cluster.dcNames().contains(homeDc)) {
        throw new IllegalArgumentException("home DC " + homeDc + " is not in the cluster "
            + cluster.dcNames());
      }
      if (scheduler != null && (transport == null || directStore != null)) {
        throw new IllegalArgumentException("a client on a given scheduler needs a given "
            + "transport and no direct store");
      }
      if (transport == null) {
        openOwnTransport();
      }
      if (!transport.localDc().equals(homeDc)) {
        throw new IllegalArgumentException("the transport speaks for DC " + transport.localDc()
            + ", not the home DC " + homeDc);
      }
      if (random == null) {
        random = new SplittableRandom();
      }
      return new TxnClient(this);
    }

    private void openOwnTransport() {
      List<AutoCloseable> opened = new ArrayList<>();
      try {
        Endpoints endpoints = Endpoints.fromConfig(cluster);
        if (cluster.discoveryZk().isPresent()) {
          CuratorDiscovery discovery = CuratorDiscovery.start(cluster.discoveryZk().get(),
              cluster.discoveryPath(), cluster.discoveryConnectTimeout());
          opened.add(discovery);
          endpoints = discovery.endpoints(cluster.dcNames());
          opened.add(endpoints);
        }
        WanTransport wan = new WanTransport(
            UdpTransport.builder(cluster, homeDc).endpoints(endpoints).build(), cluster);
        opened.add(0, wan);
        // The cluster's version before the first request (docs/upgrading.md); the home DC
        // first, each DC asked once.
        List<String> dcs = new ArrayList<>(cluster.dcNames());
        dcs.remove(homeDc);
        dcs.add(0, homeDc);
        int at = VersionProbe.follow(wan, cluster.versionRange(), dcs, cluster.requestTimeout());
        versions = new VersionProbe.Follower(wan, cluster.versionRange(), dcs,
            cluster.requestTimeout(), at);
        transport = wan;
        owned = List.copyOf(opened);
      } catch (RuntimeException e) {
        for (AutoCloseable c : opened) {
          try {
            c.close();
          } catch (Exception suppressed) {
            e.addSuppressed(suppressed);
          }
        }
        if (e instanceof org.paxoscp.version.UnsupportedClusterVersionException) {
          throw e;
        }
        UnavailableException u = new UnavailableException(
            "could not open the client's transport: " + e.getMessage(), null, -1, homeDc);
        u.addSuppressed(e);
        throw u;
      }
    }
  }
}
