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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's side of cross-group transactions (ARCHITECTURE section 10, docs/cross-group.md):
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
 * Thread-safe.
 */
final class CrossGroupCommit {
  private static final Logger LOG = LoggerFactory.getLogger(CrossGroupCommit.class);
  /** Attempts at one step (DECIDE(ABORT), RESOLVE) before giving up on it for now. */
  private static final int STEP_ATTEMPTS = 3;

  /**
   * The client's safety-critical cross-group decisions. Production code uses {@link #SHIPPED};
   * tests override one to plant a bug and prove the checker catches it.
   */
  static class Rules {
    static final Rules SHIPPED = new Rules();

    /** DECIDE(COMMIT) only once every PREPARE is chosen. */
    boolean decideNeedsEveryPrepare() {
      return true;
    }

    /** Reads and commits obey the lock table at their read position. */
    boolean obeyLocks() {
      return true;
    }

    /** A DECIDE reads the decision key, so that no second DECIDE can enter the log. */
    boolean decideReadsDecisionKey() {
      return true;
    }

    /** A read-only transaction over several groups validates its reads before committing. */
    boolean validateReadOnly() {
      return true;
    }
  }

  private final TxnClient client;
  private final Rules rules;
  private final ExecutorService executor;
  private final Duration lockTimeout;
  private final Duration waitForResolve;
  /**
   * The most bytes a group's lock table (keys only, as a begin carries it) may hold with this
   * client's PREPARE added: a quarter of a datagram, so that a begin's reply always has room.
   */
  private final int lockTableBudget;
  /** Per group, this client's RESOLVEs in flight there: its next begin there waits for them. */
  private final Map<String, CompletableFuture<Void>> resolving = new ConcurrentHashMap<>();

  CrossGroupCommit(TxnClient client, Rules rules, ExecutorService executor, Duration lockTimeout,
      Duration waitForResolve, int lockTableBudget) {
    this.client = client;
    this.rules = rules;
    this.lockTableBudget = lockTableBudget;
    this.executor = executor;
    this.lockTimeout = lockTimeout;
    this.waitForResolve = waitForResolve;
  }

  Rules rules() {
    return rules;
  }

  /** Waits (bounded) for this client's RESOLVE in flight in {@code group}, if any. */
  void awaitResolve(String group) {
    CompletableFuture<Void> f = resolving.get(group);
    if (f == null) {
      return;
    }
    try {
      f.get(waitForResolve.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException | TimeoutException e) {
      // The begin goes on: a read that meets the lock resolves it then.
    }
  }

  /** Commits a transaction that joined two groups or more. */
  CommitResult commit(String txnId, SortedMap<String, Transaction> parts) {
    List<String> groups = List.copyOf(parts.keySet());
    String coordinator = groups.get(0);
    if (parts.values().stream().allMatch(t -> t.writes().isEmpty())) {
      return validateReadOnly(txnId, parts);
    }
    long deadline = System.currentTimeMillis() + lockTimeout.toMillis();
    Map<String, LogEntry> entries = new LinkedHashMap<>();
    for (var p : parts.entrySet()) {
      XgStep step = p.getKey().equals(coordinator) ? XgStep.decide(txnId, groups, true)
          : XgStep.prepare(txnId, groups, deadline);
      LogEntry e = p.getValue().stepEntry(step);
      p.getValue().checkSize(e);
      entries.put(p.getKey(), e);
    }
    // The lock rule before anything is sent: a blocked part finishes itself and throws.
    try {
      for (var p : parts.entrySet()) {
        p.getValue().checkLocks(entries.get(p.getKey()));
        if (!p.getKey().equals(coordinator)) {
          checkBudget(txnId, coordinator, p.getKey(), p.getValue(), entries.get(p.getKey()));
        }
      }
    } catch (TransactionAbortedException e) {
      parts.values().forEach(Transaction::abort);
      throw e;
    }
    parts.values().forEach(Transaction::markFinished);

    // Phase 1: PREPARE everywhere but the coordinator, in parallel.
    Map<String, Future<CommitResult>> prepares = new LinkedHashMap<>();
    for (String g : groups.subList(1, groups.size())) {
      prepares.put(g, executor.submit(() -> parts.get(g).commitUnrecorded(entries.get(g))));
    }
    List<String> prepared = new ArrayList<>();
    List<String> maybe = new ArrayList<>();
    String failure = null;
    for (var f : prepares.entrySet()) {
      try {
        f.getValue().get();
        prepared.add(f.getKey());
      } catch (ExecutionException e) {
        Throwable c = e.getCause();
        if (!(c instanceof TransactionAbortedException || c instanceof UnavailableException)) {
          maybe.add(f.getKey());
        }
        if (failure == null) {
          failure = "PREPARE in " + f.getKey() + ": " + c.getMessage();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        maybe.add(f.getKey());
        failure = "interrupted while preparing";
      }
    }
    if (failure != null && rules.decideNeedsEveryPrepare()) {
      // T can never commit: only this client proposes DECIDE(COMMIT), and it will not.
      List<String> release = new ArrayList<>(prepared);
      release.addAll(maybe);
      releaseInBackground(txnId, groups, release);
      throw aborted(coordinator, txnId, failure);
    }

    // Phase 2: DECIDE(COMMIT) in the coordinator.
    Transaction c = parts.get(coordinator);
    CommitResult decided;
    try {
      decided = c.commitUnrecorded(entries.get(coordinator));
    } catch (TransactionAbortedException | UnavailableException e) {
      releaseInBackground(txnId, groups, prepared);
      throw aborted(coordinator, txnId, "DECIDE in " + coordinator + ": " + e.getMessage());
    } catch (OutcomeUnknownException e) {
      Optional<Boolean> outcome = settle(txnId, groups, true);
      if (outcome.isEmpty()) {
        throw new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN,
            coordinator, txnId, -1, 0, false, "the DECIDE's fate is unknown: "
            + e.getMessage() + "; TxnClient.crossGroupOutcome(" + txnId + ", " + groups
            + ") reads it later"), client.homeDc(), e);
      }
      if (!outcome.get()) {
        releaseInBackground(txnId, groups, prepared);
        throw aborted(coordinator, txnId, "decided ABORT while the DECIDE(COMMIT) was in doubt");
      }
      resolveInBackground(txnId, groups, parts, true);
      return new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId, -1, 0, false,
          "decision read after an unknown DECIDE");
    }
    resolveInBackground(txnId, groups, parts, true);
    return new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId,
        decided.position(), decided.promotions(), decided.combined(), "");
  }

  /**
   * Refuses a PREPARE that would grow {@code group}'s lock table past the budget (at the read
   * position; concurrent PREPAREs can add more, which the quarter-datagram margin absorbs), and
   * helps resolve the oldest lock there first.
   */
  private void checkBudget(String txnId, String coordinator, String group, Transaction part,
      LogEntry prepare) {
    XgLocks table = part.locks();
    int bytes = table.encode().length
        + XgLocks.EMPTY.apply(1, LogValue.of(prepare)).locks().withoutValues()
            .encode().length;
    if (bytes <= lockTableBudget) {
      return;
    }
    String met = table.locks().isEmpty() ? "" : "; " + meetLock(group,
        table.locks().stream().min(java.util.Comparator.comparingLong(XgLocks.Lock::position))
            .orElseThrow());
    throw aborted(coordinator, txnId, "group " + group + " holds " + table.size()
        + " unresolved cross-group transactions (" + bytes + " bytes of locked keys with this "
        + "one, over " + lockTableBudget + ")" + met + "; retry when they are resolved");
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
  private CommitResult validateReadOnly(String txnId, SortedMap<String, Transaction> parts) {
    if (!rules.validateReadOnly()) {
      parts.values().forEach(Transaction::markFinished);
      return new CommitResult(CommitResult.Status.COMMITTED, parts.firstKey(), txnId, 0, 0,
          false, "read-only, not validated");
    }
    List<String> groups = List.copyOf(parts.keySet());
    Map<String, LogEntry> validations = new LinkedHashMap<>();
    Map<String, Future<CommitResult>> checks = new LinkedHashMap<>();
    for (var p : parts.entrySet()) {
      Transaction t = p.getValue();
      if (t.readVersions().isEmpty() && t.scannedRanges().isEmpty()) {
        continue;
      }
      LogEntry v = new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
          new TreeSet<>(t.readVersions().keySet()), t.scannedRanges(), new TreeMap<>(),
          XgStep.validate(txnId, groups));
      t.checkSize(v);
      validations.put(p.getKey(), v);
    }
    parts.values().forEach(Transaction::markFinished); // Nothing was too large: send.
    for (var v : validations.entrySet()) {
      Transaction t = parts.get(v.getKey());
      checks.put(v.getKey(), executor.submit(() -> t.commitUnrecorded(v.getValue())));
    }
    String failure = null;
    for (var f : checks.entrySet()) {
      try {
        f.getValue().get();
      } catch (ExecutionException e) {
        if (failure == null) {
          failure = "VALIDATE in " + f.getKey() + ": " + e.getCause().getMessage();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        failure = "interrupted while validating";
      }
    }
    if (failure != null) {
      // Nothing of a read-only transaction is ever applied: not committed is aborted.
      throw aborted(parts.firstKey(), txnId, "read-only validation: " + failure);
    }
    return new CommitResult(CommitResult.Status.COMMITTED, parts.firstKey(), txnId, 0, 0, false,
        "read-only, validated in " + checks.keySet());
  }

  /**
   * Helps resolve a PREPARE that {@code group}'s lock table holds: reads the decision; if there
   * is none and the PREPARE's deadline passed, decides ABORT; then proposes the RESOLVE. Blocks
   * for a few rounds at most.
   *
   * @return what happened, for the caller's error message
   */
  String meetLock(String group, XgLocks.Lock lock) {
    XgStep s = lock.prepare().xg();
    try {
      Optional<Boolean> d = readDecision(s.coordinator(), s.txn());
      if (d.isEmpty()) {
        long left = s.deadlineMillis() - System.currentTimeMillis();
        if (left > 0) {
          return "undecided; its client has " + left + " ms left before others may abort it";
        }
        d = settle(s.txn(), s.groups(), false);
        if (d.isEmpty()) {
          return "past its deadline, and deciding ABORT did not finish";
        }
      }
      boolean done = resolve(group, s.txn(), s.groups(), d.get(),
          d.get() ? lock.prepare().writes() : new TreeMap<>());
      return "decided " + (d.get() ? "COMMIT" : "ABORT") + (done ? ", resolved here"
          : ", resolving here did not finish");
    } catch (TransactionException | IllegalStateException e) {
      return "resolving it failed: " + e.getMessage();
    }
  }

  /**
   * The outcome of cross-group transaction {@code txnId}: its decision in the coordinator group
   * (the first of {@code groups}), or empty while undecided.
   */
  Optional<Boolean> readDecision(String coordinator, String txnId) {
    Transaction t = client.begin(coordinator, false);
    t.markFinished();
    Optional<byte[]> v = client.read(coordinator, t.txnId(), t.readPosition(),
        XgStep.decisionKey(txnId)).value();
    return v.map(b -> b.length == 1 && b[0] == XgStep.COMMIT_VALUE[0]);
  }

  /**
   * Makes T's outcome definite: reads the decision and, while there is none, proposes
   * DECIDE(ABORT) (a DECIDE(COMMIT) still in flight and this one cannot both enter the log).
   *
   * @param own whether this is T's own client settling its in-doubt DECIDE(COMMIT)
   * @return the outcome (true: COMMIT), or empty if no attempt finished
   */
  Optional<Boolean> settle(String txnId, List<String> groups, boolean own) {
    String coordinator = groups.get(0);
    for (int i = 0; i < STEP_ATTEMPTS; i++) {
      try {
        Transaction t = client.begin(coordinator, false);
        t.markFinished();
        String dk = XgStep.decisionKey(txnId);
        Optional<byte[]> v = client.read(coordinator, t.txnId(), t.readPosition(), dk).value();
        if (v.isPresent()) {
          return Optional.of(v.get()[0] == XgStep.COMMIT_VALUE[0]);
        }
        LogEntry abort = new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
            rules.decideReadsDecisionKey() ? new TreeSet<>(List.of(dk)) : new TreeSet<>(),
            new TreeMap<>(Map.of(dk, Mutation.put(XgStep.ABORT_VALUE))),
            XgStep.decide(txnId, groups, false));
        t.commitUnrecorded(abort);
        return Optional.of(false);
      } catch (TransactionAbortedException e) {
        // Someone's DECIDE came first, or the position was lost: read again.
      } catch (TransactionException e) {
        LOG.debug("deciding ABORT for {} ({}): {}", txnId, own ? "own" : "met", e.getMessage());
      }
    }
    return Optional.empty();
  }

  /** Proposes RESOLVE(T, outcome) in {@code group}; true once one is committed there. */
  private boolean resolve(String group, String txnId, List<String> groups, boolean commit,
      SortedMap<String, Mutation> writes) {
    for (int i = 0; i < STEP_ATTEMPTS; i++) {
      try {
        Transaction t = client.begin(group, false);
        t.markFinished();
        if (!t.locksCut() && t.locks().lockOf(txnId).isEmpty()) {
          // Resolved already (or its PREPARE never got in): nothing to release. (A cut table
          // may just not list it; a RESOLVE of a transaction holding no lock is void.)
          return true;
        }
        t.commitUnrecorded(new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
            new TreeSet<>(), commit ? writes : new TreeMap<>(),
            XgStep.resolve(txnId, groups, commit)));
        return true;
      } catch (TransactionException e) {
        LOG.debug("RESOLVE of {} in {}: {}", txnId, group, e.getMessage());
      }
    }
    return false;
  }

  private void resolveInBackground(String txnId, List<String> groups,
      SortedMap<String, Transaction> parts, boolean commit) {
    for (String g : groups.subList(1, groups.size())) {
      SortedMap<String, Mutation> writes = parts.get(g).writes();
      track(g, () -> resolve(g, txnId, groups, commit, writes));
    }
  }

  /** T will never commit: decide ABORT (so resolvers need not wait) and release {@code held}. */
  private void releaseInBackground(String txnId, List<String> groups, List<String> held) {
    if (held.isEmpty()) {
      return;
    }
    CompletableFuture<Optional<Boolean>> decided;
    try {
      decided = CompletableFuture.supplyAsync(() -> settle(txnId, groups, true), executor);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      return; // The client is closing: readers that meet the locks abort T after the deadline.
    }
    for (String g : held) {
      track(g, () -> {
        Optional<Boolean> d = decided.join();
        if (d.isPresent() && !d.get()) {
          resolve(g, txnId, groups, false, new TreeMap<>());
        } else if (d.isPresent()) {
          LOG.error("cross-group transaction {} was decided COMMIT after its client gave it up",
              txnId);
        }
        return true;
      });
    }
  }

  private void track(String group, java.util.function.Supplier<Boolean> step) {
    CompletableFuture<Void> f;
    try {
      f = CompletableFuture.runAsync(() -> {
        try {
          step.get();
        } catch (RuntimeException e) {
          LOG.debug("cross-group step in {} failed: {}", group, e.toString());
        }
      }, executor);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // The client is closing: the first reader that meets the locks resolves them.
      return;
    }
    resolving.compute(group, (g, old) -> old == null ? f : CompletableFuture.allOf(old, f));
    f.whenComplete((v, t) -> resolving.computeIfPresent(group, (g, cur) -> cur.isDone() ? null
        : cur));
  }
}
