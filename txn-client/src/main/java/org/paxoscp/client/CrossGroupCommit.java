package org.paxoscp.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeoutException;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's side of cross-group transactions (docs/architecture.md section 10,
 * docs/cross-group.md):
 * two-phase commit through the groups' logs, and resolving a PREPARE that a read or a commit met.
 * Every step is an ordinary log entry committed through the client's commit protocol (basic,
 * Paxos-CP or leader combination); nothing here keeps replicated state.
 *
 * <p>The outcome of a cross-group transaction T is the first DECIDE for T in its coordinator
 * group's log, which the decision key makes the only one (a DECIDE reads and writes it, so the
 * placement rule refuses a second). Only T's own client ever proposes DECIDE(COMMIT), once, and
 * only after every PREPARE was chosen; anyone may propose DECIDE(ABORT). So:
 *
 * <ul>
 *   <li>a PREPARE that certainly failed, or whose fate is unknown, means T can never commit: the
 *       client reports ABORTED (true whatever happens next) and releases the locks in the
 *       background (DECIDE(ABORT), then RESOLVE(ABORT));
 *   <li>a DECIDE(COMMIT) that certainly failed: ABORTED likewise;
 *   <li>a DECIDE(COMMIT) whose fate is unknown is settled by racing a DECIDE(ABORT) against it:
 *       whichever the log holds first is the outcome, which the client then reads.
 * </ul>
 *
 * <p>Asynchronous: every step returns a future and none blocks a thread; the steps in the
 * background (releasing and resolving) are tracked per group. Thread-safe.
 */
final class CrossGroupCommit {
  private static final Logger LOG = LoggerFactory.getLogger(CrossGroupCommit.class);
  /** Attempts at one step (DECIDE(ABORT), RESOLVE) before giving up on it for now. */
  private static final int STEP_ATTEMPTS = 3;

  private final TxnClient client;
  private final ClientHooks hooks;
  private final Scheduler scheduler;
  private final Duration lockTimeout;
  private final Duration waitForResolve;
  /**
   * The most bytes a group's lock table (keys only, as a begin carries it) may hold with this
   * client's PREPARE added: a quarter of a datagram, so that a begin's reply always has room.
   */
  private final int lockTableBudget;
  /** Per group, this client's RESOLVEs in flight there: its next begin there waits for them. */
  private final Map<String, CompletableFuture<Void>> resolving = new ConcurrentHashMap<>();

  CrossGroupCommit(TxnClient client, ClientHooks hooks, Scheduler scheduler,
      Duration lockTimeout, Duration waitForResolve, int lockTableBudget) {
    this.client = client;
    this.hooks = hooks;
    this.lockTableBudget = lockTableBudget;
    this.scheduler = scheduler;
    this.lockTimeout = lockTimeout;
    this.waitForResolve = waitForResolve;
  }

  /**
   * Completes when this client's RESOLVE in flight in {@code group}, if any, finished, or after
   * a bounded wait (a read that meets the lock resolves it then); never fails.
   */
  CompletableFuture<Void> awaitResolve(String group) {
    CompletableFuture<Void> f = resolving.get(group);
    if (f == null) {
      return CompletableFuture.completedFuture(null);
    }
    return scheduler.within(f, waitForResolve, () -> new IllegalStateException("timed out"))
        .handle((v, t) -> null);
  }

  /** Waits (at most {@code bound}) for the steps in the background: a closing client's. */
  void awaitBackground(Duration bound) {
    try {
      CompletableFuture.allOf(resolving.values().toArray(CompletableFuture[]::new))
          .get(bound.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
      // Left to the readers that meet the locks.
    }
  }

  /**
   * Commits a transaction that joined two groups or more ({@code startMs}: when it began, for
   * its history).
   */
  CompletableFuture<CommitResult> commit(String txnId, SortedMap<String, Transaction> parts,
      long startMs) {
    List<String> groups = List.copyOf(parts.keySet());
    String coordinator = groups.get(0);
    if (parts.values().stream().allMatch(t -> t.writes().isEmpty())) {
      return validateReadOnly(txnId, parts, startMs);
    }
    long deadline = client.wallMillis() + lockTimeout.toMillis();
    Map<String, LogEntry> entries = new LinkedHashMap<>();
    for (var p : parts.entrySet()) {
      XgStep step = p.getKey().equals(coordinator) ? XgStep.decide(txnId, groups, true)
          : XgStep.prepare(txnId, groups, deadline);
      LogEntry e = p.getValue().stepEntry(step);
      p.getValue().checkSize(e);
      entries.put(p.getKey(), e);
    }
    // The lock rule before anything is sent: a blocked part finishes itself and fails.
    CompletableFuture<Void> checked = CompletableFuture.completedFuture(null);
    for (var p : parts.entrySet()) {
      checked = checked.thenCompose(v -> p.getValue().checkLocks(entries.get(p.getKey())));
      if (!p.getKey().equals(coordinator)) {
        checked = checked.thenCompose(v -> checkBudget(txnId, coordinator, p.getKey(),
            p.getValue(), entries.get(p.getKey())));
      }
    }
    return checked.whenComplete((v, t) -> {
      if (t != null) {
        parts.values().forEach(Transaction::abort);
      }
    }).thenCompose(v -> {
      parts.values().forEach(Transaction::markFinished);
      client.recordCommittingAcrossGroups(txnId, parts.values(), startMs);
      return prepare(txnId, groups, parts, entries);
    });
  }

  /** Phase 1, PREPARE everywhere but the coordinator, in parallel; then phase 2. */
  private CompletableFuture<CommitResult> prepare(String txnId, List<String> groups,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> entries) {
    String coordinator = groups.get(0);
    Map<String, CompletableFuture<CommitResult>> prepares = new LinkedHashMap<>();
    for (String g : groups.subList(1, groups.size())) {
      prepares.put(g, parts.get(g).commitUnrecorded(entries.get(g)));
    }
    return CompletableFuture.allOf(prepares.values().stream().map(f -> f.handle((r, t) -> null))
        .toArray(CompletableFuture[]::new)).thenCompose(v -> {
          List<String> prepared = new ArrayList<>();
          List<String> maybe = new ArrayList<>();
          String failure = null;
          for (var f : prepares.entrySet()) {
            Throwable c = failureOf(f.getValue());
            if (c == null) {
              prepared.add(f.getKey());
              continue;
            }
            if (!(c instanceof TransactionAbortedException
                || c instanceof UnavailableException)) {
              maybe.add(f.getKey());
            }
            if (failure == null) {
              failure = "PREPARE in " + f.getKey() + ": " + c.getMessage();
            }
          }
          if (failure != null && !hooks.has(ClientHooks.Plant.DECIDE_WITHOUT_EVERY_PREPARE)) {
            // T can never commit: only this client proposes DECIDE(COMMIT), and it will not.
            List<String> release = new ArrayList<>(prepared);
            release.addAll(maybe);
            releaseInBackground(txnId, groups, release);
            return Futures.failed(aborted(coordinator, txnId, failure));
          }
          return decide(txnId, groups, parts, entries, prepared);
        });
  }

  /** What {@code f}, complete, failed with; null if it succeeded. */
  private static Throwable failureOf(CompletableFuture<?> f) {
    try {
      f.join();
      return null;
    } catch (RuntimeException e) {
      return Futures.unwrap(e);
    }
  }

  /** Phase 2: DECIDE(COMMIT) in the coordinator; its fate is the transaction's. */
  private CompletableFuture<CommitResult> decide(String txnId, List<String> groups,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> entries,
      List<String> prepared) {
    String coordinator = groups.get(0);
    return parts.get(coordinator).commitUnrecorded(entries.get(coordinator))
        .handle((decided, t) -> {
      if (t == null) {
        resolveInBackground(txnId, groups, entries, true);
        return CompletableFuture.completedFuture(new CommitResult(
            CommitResult.Status.COMMITTED, coordinator, txnId, decided.position(),
            decided.promotions(), decided.combined(), ""));
      }
      Throwable c = Futures.unwrap(t);
      if (c instanceof TransactionAbortedException || c instanceof UnavailableException) {
        releaseInBackground(txnId, groups, prepared);
        return Futures.<CommitResult>failed(aborted(coordinator, txnId, "DECIDE in "
            + coordinator + ": " + c.getMessage()));
      }
      if (!(c instanceof OutcomeUnknownException e)) {
        return Futures.<CommitResult>failed(c);
      }
      return settle(txnId, groups, true).thenApply(outcome -> {
        if (outcome.isEmpty()) {
          throw new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN,
              coordinator, txnId, -1, 0, false, "the DECIDE's fate is unknown: "
              + e.getMessage() + "; TxnClient.crossGroupOutcome(" + txnId + ", " + groups
              + ") reads it later"), client.homeDc(), e);
        }
        if (!outcome.get()) {
          releaseInBackground(txnId, groups, prepared);
          throw aborted(coordinator, txnId,
              "decided ABORT while the DECIDE(COMMIT) was in doubt");
        }
        resolveInBackground(txnId, groups, entries, true);
        return new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId, -1, 0, false,
            "decision read after an unknown DECIDE");
      });
    }).thenCompose(f -> f);
  }

  /**
   * Refuses a PREPARE that would grow {@code group}'s lock table past the budget (at the read
   * position; concurrent PREPAREs can add more, which the quarter-datagram margin absorbs), and
   * helps resolve the oldest lock there first.
   */
  private CompletableFuture<Void> checkBudget(String txnId, String coordinator, String group,
      Transaction part, LogEntry prepare) {
    XgLocks table = part.locks();
    int bytes = table.encode().length
        + XgLocks.EMPTY.apply(1, LogValue.of(prepare)).locks().withoutValues()
            .encode().length;
    if (bytes <= lockTableBudget) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<String> met = table.locks().isEmpty()
        ? CompletableFuture.completedFuture("")
        : meetLock(group, table.locks().stream()
            .min(java.util.Comparator.comparingLong(XgLocks.Lock::position)).orElseThrow())
            .thenApply(m -> "; " + m);
    return met.thenApply(m -> {
      throw aborted(coordinator, txnId, "group " + group + " holds " + table.size()
          + " unresolved cross-group transactions (" + bytes + " bytes of locked keys with this "
          + "one, over " + lockTableBudget + ")" + m + "; retry when they are resolved");
    });
  }

  private TransactionAbortedException aborted(String coordinator, String txnId, String why) {
    return new TransactionAbortedException(new CommitResult(CommitResult.Status.ABORTED,
        coordinator, txnId, -1, 0, false, why), client.homeDc());
  }

  /**
   * A read-only transaction over several groups: valid if a VALIDATE entry (its reads, no
   * writes) is chosen in every group it read, under the placement and lock rules; then its reads
   * were all current at a moment after the last of them returned (docs/cross-group.md). Each
   * VALIDATE is proposed at the group's read position + 1, in parallel: one round.
   */
  private CompletableFuture<CommitResult> validateReadOnly(String txnId,
      SortedMap<String, Transaction> parts, long startMs) {
    if (hooks.has(ClientHooks.Plant.READ_ONLY_UNVALIDATED)) {
      parts.values().forEach(Transaction::markFinished);
      return CompletableFuture.completedFuture(new CommitResult(CommitResult.Status.COMMITTED,
          parts.firstKey(), txnId, 0, 0, false, "read-only, not validated"));
    }
    List<String> groups = List.copyOf(parts.keySet());
    Map<String, LogEntry> validations = new LinkedHashMap<>();
    for (var p : parts.entrySet()) {
      Transaction t = p.getValue();
      if (t.readVersions().isEmpty() && t.scannedRanges().isEmpty()) {
        continue;
      }
      LogEntry v = new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
          new TreeSet<>(t.readVersions().keySet()), t.entryRanges(), new TreeMap<>(),
          XgStep.validate(txnId, groups));
      t.checkSize(v);
      validations.put(p.getKey(), v);
    }
    return validate(txnId, parts, validations, startMs);
  }

  /**
   * Sends the VALIDATEs, in parallel; committed when every one is chosen. (No lock check here:
   * a part whose begin listed every lock checked each read against them, and one whose table
   * was cut refused every read, so has no VALIDATE.)
   */
  private CompletableFuture<CommitResult> validate(String txnId,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> validations, long startMs) {
    parts.values().forEach(Transaction::markFinished); // Nothing was too large: send.
    client.recordCommittingAcrossGroups(txnId, parts.values(), startMs);
    Map<String, CompletableFuture<CommitResult>> checks = new LinkedHashMap<>();
    for (var v : validations.entrySet()) {
      checks.put(v.getKey(), parts.get(v.getKey()).commitUnrecorded(v.getValue()));
    }
    return CompletableFuture.allOf(checks.values().stream().map(f -> f.handle((r, t) -> null))
        .toArray(CompletableFuture[]::new)).thenApply(v -> {
          String failure = null;
          for (var f : checks.entrySet()) {
            Throwable c = failureOf(f.getValue());
            if (c != null && failure == null) {
              failure = "VALIDATE in " + f.getKey() + ": " + c.getMessage();
            }
          }
          if (failure != null) {
            // Nothing of a read-only transaction is ever applied: not committed is aborted.
            throw aborted(parts.firstKey(), txnId, "read-only validation: " + failure);
          }
          return new CommitResult(CommitResult.Status.COMMITTED, parts.firstKey(), txnId, 0, 0,
              false, "read-only, validated in " + checks.keySet());
        });
  }

  /**
   * Helps resolve a PREPARE that {@code group}'s lock table holds: reads the decision; if there
   * is none and the PREPARE's deadline passed, decides ABORT; then proposes the RESOLVE. Takes a
   * few rounds at most; never fails.
   *
   * @return what happened, for the caller's error message
   */
  CompletableFuture<String> meetLock(String group, XgLocks.Lock lock) {
    XgStep s = lock.prepare().xg();
    return Futures.guard(() -> readDecision(s.coordinator(), s.txn()).thenCompose(read -> {
      CompletableFuture<Optional<Boolean>> decided;
      if (read.isPresent()) {
        decided = CompletableFuture.completedFuture(read);
      } else {
        long left = s.deadlineMillis() - client.wallMillis();
        if (left > 0) {
          return CompletableFuture.completedFuture("undecided; its client has " + left
              + " ms left before others may abort it");
        }
        decided = settle(s.txn(), s.groups(), false);
      }
      return decided.thenCompose(d -> {
        if (d.isEmpty()) {
          return CompletableFuture.completedFuture(
              "past its deadline, and deciding ABORT did not finish");
        }
        return resolve(group, s.txn(), s.groups(), d.get(),
            d.get() ? lock.prepare().writes() : new TreeMap<>(), STEP_ATTEMPTS)
            .thenApply(done -> "decided " + (d.get() ? "COMMIT" : "ABORT")
                + (done ? ", resolved here" : ", resolving here did not finish"));
      });
    })).handle((m, t) -> t == null ? m : "resolving it failed: " + Futures.unwrap(t)
        .getMessage());
  }

  /**
   * The outcome of cross-group transaction {@code txnId}: its decision in the coordinator group
   * (the first of {@code groups}), or empty while undecided.
   */
  CompletableFuture<Optional<Boolean>> readDecision(String coordinator, String txnId) {
    return client.begin(coordinator, false, TxnClient.Timing.NONE).thenCompose(t -> {
      t.markFinished();
      return client.read(coordinator, t.txnId(), t.readPosition(), XgStep.decisionKey(txnId));
    }).thenApply(r -> r.value().map(b -> b.length == 1 && b[0] == XgStep.COMMIT_VALUE[0]));
  }

  /**
   * Makes T's outcome definite: reads the decision and, while there is none, proposes
   * DECIDE(ABORT) (a DECIDE(COMMIT) still in flight and this one cannot both enter the log).
   *
   * @param own whether this is T's own client settling its in-doubt DECIDE(COMMIT)
   * @return the outcome (true: COMMIT), or empty if no attempt finished; never fails
   */
  CompletableFuture<Optional<Boolean>> settle(String txnId, List<String> groups, boolean own) {
    return settle(txnId, groups, own, STEP_ATTEMPTS);
  }

  private CompletableFuture<Optional<Boolean>> settle(String txnId, List<String> groups,
      boolean own, int attempts) {
    if (attempts == 0) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String coordinator = groups.get(0);
    String dk = XgStep.decisionKey(txnId);
    return client.begin(coordinator, false, TxnClient.Timing.NONE).thenCompose(t -> {
      t.markFinished();
      return client.read(coordinator, t.txnId(), t.readPosition(), dk).thenCompose(r -> {
        Optional<byte[]> v = r.value();
        if (v.isPresent()) {
          return CompletableFuture.completedFuture(
              Optional.of(v.get()[0] == XgStep.COMMIT_VALUE[0]));
        }
        LogEntry abort = new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
            hooks.has(ClientHooks.Plant.DECIDE_BLIND) ? new TreeSet<>()
                : new TreeSet<>(List.of(dk)),
            new TreeMap<>(Map.of(dk, Mutation.put(XgStep.ABORT_VALUE))),
            XgStep.decide(txnId, groups, false));
        return t.commitUnrecorded(abort).thenApply(c -> Optional.of(false));
      });
    }).handle((d, t) -> {
      if (t == null) {
        return CompletableFuture.completedFuture(d);
      }
      Throwable c = Futures.unwrap(t);
      if (!(c instanceof TransactionAbortedException)) {
        // (An abort: someone's DECIDE came first, or the position was lost: read again.)
        LOG.debug("deciding ABORT for {} ({}): {}", txnId, own ? "own" : "met", c.toString());
      }
      if (!(c instanceof TransactionException) || c instanceof InvalidArgumentException) {
        return CompletableFuture.completedFuture(Optional.<Boolean>empty());
      }
      return settle(txnId, groups, own, attempts - 1);
    }).thenCompose(f -> f);
  }

  /** Proposes RESOLVE(T, outcome) in {@code group}; true once one is committed there. */
  private CompletableFuture<Boolean> resolve(String group, String txnId, List<String> groups,
      boolean commit, SortedMap<String, Mutation> writes, int attempts) {
    if (attempts == 0) {
      return CompletableFuture.completedFuture(false);
    }
    return client.begin(group, false, TxnClient.Timing.NONE).thenCompose(t -> {
      t.markFinished();
      if (!t.locksCut() && t.locks().lockOf(txnId).isEmpty()) {
        // Resolved already (or its PREPARE never got in): nothing to release. (A cut table
        // may just not list it; a RESOLVE of a transaction holding no lock is void.)
        return CompletableFuture.completedFuture(true);
      }
      return t.commitUnrecorded(new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
          new TreeSet<>(), commit ? writes : new TreeMap<>(),
          XgStep.resolve(txnId, groups, commit))).thenApply(r -> true);
    }).handle((done, t) -> {
      if (t == null) {
        return CompletableFuture.completedFuture(done);
      }
      Throwable c = Futures.unwrap(t);
      LOG.debug("RESOLVE of {} in {}: {}", txnId, group, c.toString());
      if (!(c instanceof TransactionException) || c instanceof InvalidArgumentException) {
        return CompletableFuture.completedFuture(false);
      }
      return resolve(group, txnId, groups, commit, writes, attempts - 1);
    }).thenCompose(f -> f);
  }

  /** RESOLVEs in every group but the coordinator, of the writes their PREPAREs carry. */
  private void resolveInBackground(String txnId, List<String> groups,
      Map<String, LogEntry> prepares, boolean commit) {
    for (String g : groups.subList(1, groups.size())) {
      SortedMap<String, Mutation> writes = prepares.get(g).writes();
      track(g, () -> resolve(g, txnId, groups, commit, writes, STEP_ATTEMPTS));
    }
  }

  /** T will never commit: decide ABORT (so resolvers need not wait) and release {@code held}. */
  private void releaseInBackground(String txnId, List<String> groups, List<String> held) {
    if (held.isEmpty()) {
      return;
    }
    CompletableFuture<Optional<Boolean>> decided = settle(txnId, groups, true);
    for (String g : held) {
      track(g, () -> decided.thenCompose(d -> {
        if (d.isPresent() && !d.get()) {
          return resolve(g, txnId, groups, false, new TreeMap<>(), STEP_ATTEMPTS);
        }
        if (d.isPresent()) {
          LOG.error("cross-group transaction {} was decided COMMIT after its client gave it up",
              txnId);
        }
        return CompletableFuture.completedFuture(true);
      }));
    }
  }

  /** Runs {@code step} in the background; this client's next begin in {@code group} waits. */
  private void track(String group,
      java.util.function.Supplier<CompletableFuture<Boolean>> step) {
    CompletableFuture<Void> f = Futures.guard(step).handle((v, t) -> {
      if (t != null) {
        LOG.debug("cross-group step in {} failed: {}", group, t.toString());
      }
      return null;
    });
    resolving.compute(group, (g, old) -> old == null ? f : CompletableFuture.allOf(old, f));
    f.whenComplete((v, t) -> resolving.computeIfPresent(group, (g, cur) -> cur.isDone() ? null
        : cur));
  }
}
