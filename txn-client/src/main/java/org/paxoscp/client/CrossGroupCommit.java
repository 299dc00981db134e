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
import java.util.Set;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The client's side of cross-group transactions (docs/architecture.md section 10,
 * docs/cross-group.md): commit through the groups' logs, and resolving a PREPARE that a read or
 * a commit met.
 * Every step is an ordinary log entry committed through the client's commit protocol (basic,
 * Paxos-CP or leader combination); nothing here keeps replicated state.
 *
 * <p>From cluster version 6 ({@link ClusterVersion#XG_ONE_ROUND}) a commit takes one round: a
 * PREPARE in every group, the coordinator's too, committed exactly when every one is chosen; the
 * DECIDE (which also releases the coordinator's locks) and the RESOLVEs follow in the
 * background, and a settler proves a missing PREPARE absent by closing its group before it may
 * decide ABORT ({@link #prepareEverywhere}, {@link #settleClosing}; docs/cross-group.md, "One
 * round"). Below that version, two rounds, as follows.
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
  /**
   * Attempts at a one-round DECIDE, 25, 50, 75... ms apart: until it is chosen, readers that
   * meet the transaction's locks wait for their deadline, and a begin at a DC that has not
   * applied the latest positions (basic Paxos cannot move past them) would fail again at once.
   */
  private static final int DECIDE_ATTEMPTS = 6;
  private static final long DECIDE_RETRY_MILLIS = 25;

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
    boolean oneRound = client.clusterVersionAtLeast(ClusterVersion.XG_ONE_ROUND);
    Map<String, LogEntry> entries = new LinkedHashMap<>();
    for (var p : parts.entrySet()) {
      XgStep step = p.getKey().equals(coordinator) && !oneRound
          ? XgStep.decide(txnId, groups, true) : XgStep.prepare(txnId, groups, deadline);
      LogEntry e = p.getValue().stepEntry(step, oneRound);
      p.getValue().checkSize(e);
      entries.put(p.getKey(), e);
    }
    // The lock rule before anything is sent: a blocked part finishes itself and fails.
    CompletableFuture<Void> checked = CompletableFuture.completedFuture(null);
    for (var p : parts.entrySet()) {
      checked = checked.thenCompose(v -> p.getValue().checkLocks(entries.get(p.getKey())));
      if (oneRound || !p.getKey().equals(coordinator)) {
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
      return oneRound ? prepareEverywhere(txnId, groups, parts, entries)
          : prepare(txnId, groups, parts, entries);
    });
  }

  /**
   * One round (cluster version {@link ClusterVersion#XG_ONE_ROUND}): a PREPARE in every group,
   * the coordinator's too, all at once. The transaction is committed exactly when every PREPARE
   * is chosen (a settler decides ABORT only after a CLOSE proved one absent, and a CLOSE cannot
   * be chosen where the PREPARE holds its locks, nor a PREPARE after a CLOSE), so the client
   * reports COMMITTED then; DECIDE and the RESOLVEs follow in the background.
   */
  private CompletableFuture<CommitResult> prepareEverywhere(String txnId, List<String> groups,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> entries) {
    String coordinator = groups.get(0);
    return sendPrepares(groups, parts, entries).thenCompose(sent -> {
          Set<String> prepared = sent.chosen();
          List<String> maybe = sent.maybe();
          String failure = sent.failure();
          boolean neverCommits = sent.neverCommits();
          CommitResult first = sent.results().get(coordinator).getNow(null);
          if (failure == null || hooks.has(ClientHooks.Plant.DECIDE_WITHOUT_EVERY_PREPARE)) {
            decideInBackground(txnId, groups, entries, Set.copyOf(groups), true);
            return CompletableFuture.completedFuture(first != null
                ? new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId,
                    first.position(), first.promotions(), first.combined(), "")
                : new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId, -1, 0,
                    false, "one PREPARE not known chosen (planted)"));
          }
          List<String> held = new ArrayList<>(prepared);
          held.addAll(maybe);
          if (neverCommits) {
            // (RESOLVE(ABORT) where a PREPARE is in doubt too: void if it never landed.)
            decideInBackground(txnId, groups, entries, Set.copyOf(held), false);
            return Futures.failed(aborted(coordinator, txnId, failure));
          }
          // Every PREPARE chosen or in doubt: close the groups in doubt, then decide.
          String why = failure;
          return settleClosing(txnId, groups, prepared, false).thenApply(outcome -> {
            if (outcome.isEmpty()) {
              throw new OutcomeUnknownException(new CommitResult(CommitResult.Status.UNKNOWN,
                  coordinator, txnId, -1, 0, false, "a PREPARE's fate is unknown (" + why
                  + ") and closing its group did not finish; TxnClient.crossGroupOutcome("
                  + txnId + ", " + groups + ") reads it later"), client.homeDc(),
                  new IllegalStateException(why));
            }
            resolveEverywhere(txnId, groups, entries, held, outcome.get());
            if (!outcome.get()) {
              throw aborted(coordinator, txnId, why + "; its group was closed before it");
            }
            return new CommitResult(CommitResult.Status.COMMITTED, coordinator, txnId, -1, 0,
                false, "every PREPARE was chosen, one learned by closing its group");
          });
        });
  }

  /**
   * After a one-round commit's outcome is known: DECIDE it in the coordinator (so readers that
   * meet the locks learn it in one read; the DECIDE also releases the coordinator's locks), then
   * RESOLVE in the other groups of {@code held}, where a PREPARE may hold locks. A RESOLVE is
   * proposed only after the decision is chosen, which is what lets a settler that finds no lock
   * where a CLOSE was chosen conclude that no PREPARE is there, or that the transaction is
   * decided already (docs/cross-group.md).
   */
  private void decideInBackground(String txnId, List<String> groups,
      Map<String, LogEntry> prepares, Set<String> held, boolean commit) {
    CompletableFuture<Optional<Boolean>> decided = Futures.guard(
        () -> decideOneRound(txnId, groups, commit, DECIDE_ATTEMPTS));
    // The DECIDE releases the coordinator's locks itself (any DECIDE of the transaction).
    track(groups.get(0), () -> decided.thenApply(Optional::isPresent));
    for (String g : held) {
      if (g.equals(groups.get(0))) {
        continue;
      }
      SortedMap<String, Mutation> writes = prepares.get(g).writes();
      track(g, () -> decided.thenCompose(d -> {
        if (d.isEmpty()) {
          return CompletableFuture.completedFuture(false); // Left to the readers.
        }
        if (d.get() != commit) {
          LOG.error("cross-group transaction {} was decided {} while its client knew it {}",
              txnId, d.get() ? "COMMIT" : "ABORT", commit ? "committed" : "aborted");
        }
        return resolve(g, txnId, groups, d.get(), d.get() ? writes : new TreeMap<>(),
            STEP_ATTEMPTS);
      }));
    }
  }

  /**
   * The RESOLVEs of a one-round commit settled by closing, in {@code held} but the coordinator
   * (its DECIDE, chosen already, released the coordinator's locks).
   */
  private void resolveEverywhere(String txnId, List<String> groups,
      Map<String, LogEntry> prepares, List<String> held, boolean commit) {
    for (String g : held) {
      if (g.equals(groups.get(0))) {
        continue; // The DECIDE released the coordinator's locks.
      }
      SortedMap<String, Mutation> writes = commit ? prepares.get(g).writes() : new TreeMap<>();
      track(g, () -> resolve(g, txnId, groups, commit, writes, STEP_ATTEMPTS));
    }
  }

  /**
   * Proposes DECIDE({@code commit}) for a transaction whose outcome is known to be {@code
   * commit}: reads the decision key at a fresh read position and, while it is absent, proposes
   * a DECIDE that reads it there (so at most one DECIDE enters the log).
   *
   * @return the decision in the log (which must equal {@code commit}), or empty if no attempt
   *     finished; never fails
   */
  private CompletableFuture<Optional<Boolean>> decideOneRound(String txnId, List<String> groups,
      boolean commit, int attempts) {
    if (attempts == 0) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    String coordinator = groups.get(0);
    String dk = XgStep.decisionKey(txnId);
    return client.begin(coordinator, false, TxnClient.Timing.NONE).thenCompose(t -> {
      t.markFinished();
      return client.read(coordinator, t.txnId(), t.readPosition(), dk).thenCompose(r -> {
        if (r.value().isPresent()) {
          return CompletableFuture.completedFuture(
              Optional.of(r.value().get()[0] == XgStep.COMMIT_VALUE[0]));
        }
        return t.commitUnrecorded(decideEntry(t, txnId, groups, commit))
            .thenApply(c -> Optional.of(commit));
      });
    }).handle((d, t) -> retried(d, t, txnId, "deciding",
        () -> after(DECIDE_RETRY_MILLIS * (DECIDE_ATTEMPTS - attempts + 1),
            () -> decideOneRound(txnId, groups, commit, attempts - 1)))).thenCompose(f -> f);
  }

  /** Runs {@code step} after {@code millis} (on the client's scheduler; never blocks). */
  private <T> CompletableFuture<T> after(long millis,
      java.util.function.Supplier<CompletableFuture<T>> step) {
    CompletableFuture<Void> timer = new CompletableFuture<>();
    scheduler.schedule(millis * 1000, () -> timer.complete(null));
    return timer.thenCompose(v -> step.get());
  }

  /** A DECIDE that reads the decision key at {@code at}'s read position and writes it. */
  private LogEntry decideEntry(Transaction at, String txnId, List<String> groups,
      boolean commit) {
    String dk = XgStep.decisionKey(txnId);
    return new LogEntry(at.txnId(), client.homeDc(), at.readPosition(),
        hooks.has(ClientHooks.Plant.DECIDE_BLIND) ? new TreeSet<>() : new TreeSet<>(List.of(dk)),
        new TreeMap<>(Map.of(dk, Mutation.put(commit ? XgStep.COMMIT_VALUE
            : XgStep.ABORT_VALUE))), XgStep.decide(txnId, groups, commit));
  }

  /**
   * {@code d} if the step succeeded; else another attempt ({@code again}) after an abort or an
   * unknown outcome (someone's DECIDE came first, the position was lost, a DC was silent), or
   * empty after an error that another attempt cannot help.
   */
  private static <T> CompletableFuture<Optional<T>> retried(Optional<T> d, Throwable t,
      String txnId, String what,
      java.util.function.Supplier<CompletableFuture<Optional<T>>> again) {
    if (t == null) {
      return CompletableFuture.completedFuture(d);
    }
    Throwable c = Futures.unwrap(t);
    if (!(c instanceof TransactionAbortedException)) {
      LOG.debug("{} {}: {}", what, txnId, c.toString());
    }
    if (!(c instanceof TransactionException) || c instanceof InvalidArgumentException) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    return again.get();
  }

  /**
   * Settles a one-round transaction (docs/cross-group.md, "One round"): learns in every group
   * not in {@code prepared} whether its PREPARE is there (its lock is listed) or closes the
   * group (a CLOSE, which the lock rule keeps out where the PREPARE holds locks and which keeps
   * every later PREPARE out), then reads the decision at a fresh read position and, while there
   * is none, proposes the DECIDE the groups prove: COMMIT if every PREPARE is in, else ABORT.
   * The DECIDE reads the decision key where it was read absent, so it is refused if anyone
   * decided since; a group found without the lock because the transaction was decided and
   * resolved there already is such a case (a RESOLVE follows the DECIDE).
   *
   * @param prepared groups known to hold the transaction's PREPARE
   * @param knownAbort a PREPARE is known never to be chosen: decide ABORT without closing
   * @return the outcome (true: COMMIT), or empty if no attempt finished; never fails
   */
  CompletableFuture<Optional<Boolean>> settleClosing(String txnId, List<String> groups,
      Set<String> prepared, boolean knownAbort) {
    return settleClosing(txnId, groups, prepared, knownAbort, STEP_ATTEMPTS, helpedSet());
  }

  /** A set of transaction ids for one settle and every settle it helps (each helped once). */
  private static Set<String> helpedSet() {
    return ConcurrentHashMap.newKeySet();
  }

  /**
   * {@code helped}: the transactions this settle, and the settles it helps, helped already (a
   * help goes to a lesser id each time, so the chain ends; the set keeps it from fanning out).
   */
  private CompletableFuture<Optional<Boolean>> settleClosing(String txnId, List<String> groups,
      Set<String> prepared, boolean knownAbort, int attempts, Set<String> helped) {
    if (attempts == 0) {
      return CompletableFuture.completedFuture(Optional.empty());
    }
    helped.add(txnId);
    CompletableFuture<Boolean> allIn = knownAbort ? CompletableFuture.completedFuture(false)
        : Futures.guard(() -> everyPrepareIn(txnId, groups, prepared, helped));
    // (A cut table's unknown is not retried here: LockListCut is no TransactionException.)
    return allIn.thenCompose(commit -> decideOneRound(txnId, groups, commit, DECIDE_ATTEMPTS))
        .handle((d, t) -> retried(d, t, txnId, "settling",
            () -> settleClosing(txnId, groups, prepared, knownAbort, attempts - 1, helped)))
        .thenCompose(f -> f);
  }

  /**
   * True if every group holds the PREPARE (known, or its lock listed at a fresh begin); false as
   * soon as a CLOSE is chosen in a group whose lock table proved the PREPARE absent, even while
   * other groups are unknown (that PREPARE can never be chosen). Fails otherwise when a group's
   * begin listed only the first locks and they stop before this transaction's id ({@link
   * LockListCut}), or a CLOSE's fate is unknown.
   */
  private CompletableFuture<Boolean> everyPrepareIn(String txnId, List<String> groups,
      Set<String> prepared, Set<String> helped) {
    List<CompletableFuture<Boolean>> in = new ArrayList<>();
    for (String g : groups) {
      if (!prepared.contains(g)) {
        in.add(prepareIn(g, txnId, groups, STEP_ATTEMPTS, helped));
      }
    }
    return CompletableFuture.allOf(in.stream().map(f -> f.handle((r, t) -> null))
        .toArray(CompletableFuture[]::new)).thenApply(v -> {
          Throwable failed = null;
          for (CompletableFuture<Boolean> f : in) {
            Throwable c = failureOf(f);
            if (c == null && !f.join()) {
              return false; // Closed there: never all prepared.
            }
            failed = failed == null ? c : failed;
          }
          if (failed != null) {
            throw failed instanceof RuntimeException r ? r : new IllegalStateException(failed);
          }
          return true;
        });
  }

  /**
   * A group's begin listed only the first locks in id order, and the list stops before the
   * transaction being settled: whether it holds a lock there is unknown for now. Not a
   * TransactionException, so the settle reports unknown at once instead of trying again.
   */
  private static final class LockListCut extends RuntimeException {
    LockListCut(String message) {
      super(message, null, false, false);
    }
  }

  /** Is the PREPARE in {@code group}? Its lock listed: yes; else closes the group: no. */
  private CompletableFuture<Boolean> prepareIn(String group, String txnId, List<String> groups,
      int attempts, Set<String> helped) {
    return client.begin(group, false, TxnClient.Timing.NONE).thenCompose(t -> {
      t.markFinished();
      if (t.locks().lockOf(txnId).isPresent()) {
        return CompletableFuture.completedFuture(true);
      }
      if (t.locksCut() && !t.locks().cutListsIfHeld(txnId)) {
        // Not listed may mean cut off: closing now could be placed past the PREPARE's lock.
        // A cut table lists a prefix in id order, so the least id holding locks anywhere is
        // listed wherever it holds one and can always be settled: help settle this group's
        // first (a lesser id than ours, so the chain of helps ends; each helped once), then
        // report unknown for now; the group's list moves on.
        XgLocks.Lock first = t.locks().first().orElseThrow();
        CompletableFuture<String> help = helped.add(first.txn())
            ? meetLock(group, first, helped) : CompletableFuture.completedFuture("helped");
        return help.thenApply(m -> {
          throw new LockListCut("group " + group + " holds more locks than a begin lists, and "
              + "its list stops before " + txnId + "; helped " + first.txn() + ": " + m);
        });
      }
      String ck = XgStep.closeKey(txnId);
      return t.commitUnrecorded(new LogEntry(t.txnId(), client.homeDc(), t.readPosition(),
          new TreeSet<>(), new TreeMap<>(Map.of(ck, Mutation.put(XgStep.CLOSED_VALUE))),
          XgStep.close(txnId, groups))).thenApply(c -> false);
    }).handle((in, t) -> {
      if (t == null) {
        return CompletableFuture.completedFuture(in);
      }
      Throwable c = Futures.unwrap(t);
      if (c instanceof TransactionAbortedException && attempts > 1) {
        // The PREPARE may have been placed meanwhile (it keeps the CLOSE out), or the position
        // was lost: look again.
        return prepareIn(group, txnId, groups, attempts - 1, helped);
      }
      return Futures.<Boolean>failed(c);
    }).thenCompose(f -> f);
  }

  /** Phase 1, PREPARE everywhere but the coordinator, in parallel; then phase 2. */
  private CompletableFuture<CommitResult> prepare(String txnId, List<String> groups,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> entries) {
    String coordinator = groups.get(0);
    return sendPrepares(groups.subList(1, groups.size()), parts, entries).thenCompose(sent -> {
          List<String> prepared = new ArrayList<>(sent.chosen());
          List<String> maybe = sent.maybe();
          String failure = sent.failure();
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

  /**
   * The PREPAREs sent to {@code groups} at once, once every one is settled: the groups where it
   * was chosen, those where it is in doubt, the first failure, and whether one certainly failed
   * (aborted or unavailable: not in the log, and never will be).
   */
  private record Sent(Map<String, CompletableFuture<CommitResult>> results, Set<String> chosen,
      List<String> maybe, String failure, boolean neverCommits) {}

  private static CompletableFuture<Sent> sendPrepares(List<String> groups,
      SortedMap<String, Transaction> parts, Map<String, LogEntry> entries) {
    Map<String, CompletableFuture<CommitResult>> results = new LinkedHashMap<>();
    for (String g : groups) {
      results.put(g, parts.get(g).commitUnrecorded(entries.get(g)));
    }
    return CompletableFuture.allOf(results.values().stream().map(f -> f.handle((r, t) -> null))
        .toArray(CompletableFuture[]::new)).thenApply(v -> {
          Set<String> chosen = new TreeSet<>();
          List<String> maybe = new ArrayList<>();
          String failure = null;
          boolean neverCommits = false;
          for (var f : results.entrySet()) {
            Throwable c = failureOf(f.getValue());
            if (c == null) {
              chosen.add(f.getKey());
              continue;
            }
            if (c instanceof TransactionAbortedException || c instanceof UnavailableException) {
              neverCommits = true;
            } else {
              maybe.add(f.getKey());
            }
            if (failure == null) {
              failure = "PREPARE in " + f.getKey() + ": " + c.getMessage();
            }
          }
          return new Sent(results, chosen, maybe, failure, neverCommits);
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
   * helps resolve the first lock there (in id order) first.
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
        : meetLock(group, table.first().orElseThrow()).thenApply(m -> "; " + m);
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
   * is none and the PREPARE's deadline passed, settles it ({@link #settleClosing} for a
   * one-round transaction, and for any from cluster version 6; else DECIDE(ABORT)); then
   * proposes the RESOLVE. Takes a
   * few rounds at most; never fails.
   *
   * @return what happened, for the caller's error message
   */
  CompletableFuture<String> meetLock(String group, XgLocks.Lock lock) {
    return meetLock(group, lock, helpedSet());
  }

  private CompletableFuture<String> meetLock(String group, XgLocks.Lock lock,
      Set<String> helped) {
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
        // A one-round transaction may have committed without a DECIDE: only closing the groups
        // where its PREPARE is not seen may prove it aborted. Chosen by the transaction met,
        // not by this client's version (which may not have learned a raise yet): a one-round
        // PREPARE proves the cluster at version 6. From 6 on, two-round ones settle so too.
        decided = oneRound(lock.prepare(), group)
            || client.clusterVersionAtLeast(ClusterVersion.XG_ONE_ROUND)
            ? settleClosing(s.txn(), s.groups(), Set.of(group), false, STEP_ATTEMPTS, helped)
            : settle(s.txn(), s.groups(), false);
      }
      return decided.thenCompose(d -> {
        if (d.isEmpty()) {
          return CompletableFuture.completedFuture(
              "past its deadline, and settling it did not finish");
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
   * Is {@code prepare} (chosen in {@code group}) a one-round commit's? It reads its close key, or
   * it is in its coordinator, where two-round commits place no PREPARE.
   */
  private static boolean oneRound(LogEntry prepare, String group) {
    XgStep s = prepare.xg();
    return prepare.readSet().contains(XgStep.closeKey(s.txn())) || s.coordinator().equals(group);
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
