package org.paxoscp.sim;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.random.RandomGenerator;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.ClientHooks;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.DeadlineExceededException;
import org.paxoscp.client.HistoryRecorder;
import org.paxoscp.client.InvalidArgumentException;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeHandle;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionTooLargeException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.TxnOptions;
import org.paxoscp.client.UpdateRefusedException;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.Mutation;

/**
 * One simulated client of a {@link Simulator} run: an application process that runs the client
 * library ({@link TxnClient}) on the simulator's scheduler and network, so that what runs under
 * the faults is what applications run — sessions, fail-over across DCs, reads and scans with
 * their lock checks, the three commit protocols, settling unknown outcomes, counters and sets,
 * and transactions across groups ({@link MultiTransaction}). The simulator decides only the
 * workload (below) and the faults; the history the checker judges is what the library records
 * ({@link HistoryRecorder#to}).
 *
 * <p><b>Workload.</b> Transactions arrive in a Poisson stream per client. A share
 * ({@link Simulator#withCrossGroup}) spans 2 to 5 groups; the rest run in one group of the
 * paper's shape: {@link SimConfig#opsPerTxn} operations on attribute keys, each a read with
 * probability {@link SimConfig#readFraction} (a range read with probability
 * {@link SimConfig#scanShare}, a read of a counter or set with {@link SimConfig#updateShare}) and
 * otherwise a put (an add or set update with {@link SimConfig#updateShare}), after a think time
 * of {@link SimConfig#opMicros} per operation; in the share of them that
 * {@link Simulator#withOneGroupReadOnly} makes read-only, every operation is a read. Half of the
 * clients read ranges in pages of 1-4 entries, so that the small ranges of the simulation still
 * take several pages.
 *
 * <p><b>Crashes.</b> With crashes in the fault mix, a tenth of the writing transactions kill
 * their client's process in mid-commit: its scheduler runs nothing more and its transport drops
 * every reply, so the commit protocol stops wherever it was; what the history holds of the
 * commits it had in flight is the record the library handed over before sending (status
 * CRASHED). A new process of the client starts a second later, with a new library client (its
 * sessions are gone, as a restarted process's are). A crash during a transaction across groups
 * may land before, between or after its steps, RESOLVEs in the background included.
 *
 * <p><b>Unknown outcomes.</b> Half of them are settled a while later — with
 * {@link TxnClient#settleAsync}, or with {@link TxnClient#outcomeAsync} and the handle taken
 * before the commit or the exception's — and the history then holds what the settle answered
 * instead.
 *
 * <p><b>The rest of the API.</b> A third of the reads of single keys read two more keys with
 * them ({@link Transaction#getAllAsync}); a share of the transactions ({@link
 * Simulator#withDeadlines}) begin with a deadline that passes in some reads and some commits
 * (a commit ended at it is ABORTED: the checker judges that it is not in the log); half of the
 * writing transactions take an {@link OutcomeHandle} before committing, and when their process
 * dies during the commit the next process of the client settles it with that handle (the
 * history then holds what it answered instead of CRASHED).
 */
final class SimClient {
  final Simulator sim;
  final int id;
  final int home;
  final SplittableRandom rng;
  int remaining;
  long nextArrival;
  /** Incremented on a crash: an arrival scheduled by the dead process is ignored. */
  private int epoch;
  /** An arrival is scheduled and has not begun yet. */
  private boolean arrivalPending;
  /** The workload is done (a crash then restarts nothing). */
  private boolean finished;
  /** The client's live process. */
  private Process process;
  /**
   * Commits a dead process had in flight with a handle taken: the next process settles each
   * ({@link TxnClient#outcomeAsync}); at the end of the run, what is left stays CRASHED.
   */
  private final Map<String, Orphan> orphans = new LinkedHashMap<>();

  /** A commit whose process died, its record as it stood, and its handle. */
  private record Orphan(String group, TxnRecord crashed, OutcomeHandle handle) {}

  SimClient(Simulator sim, int id, int home, int txns, SplittableRandom rng) {
    sim.simClients.add(this);
    this.sim = sim;
    this.id = id;
    this.home = home;
    this.remaining = txns;
    this.rng = rng;
    // Staggered starts within the first inter-arrival period.
    this.nextArrival = (long) (rng.nextDouble() * 1_000_000 / sim.cfg.ratePerClient());
    this.process = new Process();
  }

  void scheduleNext() {
    if (remaining == 0) {
      finished = true;
      if (--sim.clientsActive == 0) {
        sim.cluster.stopProbes();
      }
      // The process ends once what it does in the background (RESOLVEs, settles, its session
      // cache's settling) had time to finish; its timers then stop, and the run can end.
      Process last = process;
      sim.events.after(CLOSE_AFTER_MICROS, () -> last.client.close());
      return;
    }
    remaining--;
    long start = Math.max(sim.events.now(), nextArrival);
    nextArrival = start + (long) (-Math.log(1 - rng.nextDouble()) * 1_000_000
        / sim.cfg.ratePerClient());
    int e = epoch;
    arrivalPending = true;
    sim.events.at(start, () -> {
      if (e == epoch) {
        arrivalPending = false;
        begin();
      }
    });
  }

  /** The key an operation touches: one of the attribute keys, uniform or zipfian. */
  String drawKey() {
    return "attr" + (sim.zipf != null ? sim.zipf.next(rng) : rng.nextInt(sim.cfg.attributes()));
  }

  /** A range read as drawn: the range, the most entries it returns, and the direction. */
  record ScanSpec(KeyRange range, int limit, boolean reversed) {}

  /** How long a client's process lives on after its last transaction. */
  private static final long CLOSE_AFTER_MICROS = 30_000_000;

  /** No limit a scan of the simulated attribute keys can reach. */
  static final int NO_LIMIT = Transaction.MAX_SCAN_LIMIT;

  /** Is a read operation a scan rather than a read of one key? Draws only with scans on. */
  boolean scanNext() {
    return sim.cfg.scanShare() > 0 && rng.nextDouble() < sim.cfg.scanShare();
  }

  /**
   * Is an operation one on the counters and counting sets ({@link SimUpdates})? Draws only with
   * them on ({@link SimConfig#updateShare} above 0).
   */
  boolean updateNext() {
    return sim.cfg.updateShare() > 0 && rng.nextDouble() < sim.cfg.updateShare();
  }

  /**
   * A scan around {@code key}, the attribute key its operation drew: a third of them the keys
   * with {@code key} as their prefix ({@code attr1}: attr1, attr10-attr19, ...), a third between
   * {@code key} and another drawn key (the higher one included or not), a third from {@code key}
   * to the group's end or from the group's start through {@code key}; half of them with a limit
   * of 1-3 entries (the part read then stops at the last key returned), half reversed.
   */
  ScanSpec drawScan(String key) {
    KeyRange range = switch (rng.nextInt(3)) {
      case 0 -> KeyRange.prefix(key);
      case 1 -> {
        String other = drawKey();
        int c = KeyRange.compare(key, other);
        String lo = c <= 0 ? key : other;
        String hi = c <= 0 ? other : key;
        yield c != 0 && rng.nextBoolean() ? new KeyRange(lo, hi) : new KeyRange(lo, hi + '\0');
      }
      default -> rng.nextBoolean() ? new KeyRange(key, null) : new KeyRange("", key + '\0');
    };
    int limit = rng.nextBoolean() ? 1 + rng.nextInt(3) : NO_LIMIT;
    return new ScanSpec(range, limit, rng.nextBoolean());
  }

  private void begin() {
    if (sim.groupCount > 1 && rng.nextDouble() < sim.xgFraction) {
      new CrossGroup(process).start();
      return;
    }
    String group = sim.groupCount == 1 ? Simulator.GROUP
        : sim.groups().get(rng.nextInt(sim.groupCount));
    // (Drawn only with the share on, so that runs without it replay as they did.)
    boolean readOnly = sim.oneGroupReadOnlyShare > 0
        && rng.nextDouble() < sim.oneGroupReadOnlyShare;
    new OneGroup(process, group, readOnly).start();
  }

  /** The end of a transaction that ended before its commit (nothing of it is in the log). */
  private void abandoned(Process p) {
    if (p.alive()) {
      sim.aborted++;
      scheduleNext();
    }
  }

  /**
   * May kill the process while the commit of {@code txnId} runs: with crashes in the fault mix,
   * one writing transaction in ten, at a random time within {@code window} microseconds. A
   * one-group commit is killed only if still in flight then; a cross-group one in any case (its
   * RESOLVEs may still run in the background).
   */
  private void maybeCrash(Process p, String txnId, long window, boolean acrossGroups) {
    if (!sim.cfg.faults().crashes() || rng.nextDouble() >= 0.1) {
      return;
    }
    sim.events.after(rng.nextLong(window), () -> {
      if (p.alive() && (acrossGroups || p.committing.containsKey(txnId))) {
        crash(p);
      }
    });
  }

  /** The time a commit takes at most without faults: three round trips and service times. */
  private long commitWindow() {
    return 3 * sim.network.maxRttMicros() + 2 * sim.cfg.serviceMicros() + 1;
  }

  /**
   * At the end of the run: what the live process still holds goes into the history as it
   * stands (a commit whose outcome never came, CRASHED; an unknown outcome whose settle never
   * finished, UNKNOWN), so that no record is lost. Returns how many there were.
   */
  int flush() {
    int n = process.committing.size() + process.held.size() + process.settling.size()
        + orphans.size();
    process.die();
    orphans.values().forEach(o -> sim.historyOf(o.group()).add(o.crashed()));
    orphans.clear();
    return n;
  }

  /** The process dies: its commits in flight stay CRASHED; a new one starts a second later. */
  private void crash(Process p) {
    p.die();
    sim.crashed++;
    epoch++;
    if (arrivalPending) {
      // The dead process's next arrival never begins: the new process takes it over.
      arrivalPending = false;
      remaining++;
    }
    if (finished) {
      return;
    }
    int e = epoch;
    sim.events.after(1_000_000, () -> {
      if (e == epoch) {
        process = new Process();
        process.settleOrphans();
        scheduleNext();
      }
    });
  }

  /**
   * The workload of one transaction in one group, run on the library's {@link Transaction}: the
   * operations one after another, then the commit.
   */
  private final class OneGroup {
    private final Process p;
    private final String group;
    /** Every operation a read ({@link Simulator#withOneGroupReadOnly}). */
    private final boolean readOnly;
    private Transaction txn;
    /** The keys this transaction updated (a read of one of them reads the sum). */
    private final Map<String, Mutation> updated = new TreeMap<>();
    private int updateOps;
    private boolean wrote;
    /** The handle taken before committing, or null. */
    private OutcomeHandle handle;

    OneGroup(Process p, String group, boolean readOnly) {
      this.p = p;
      this.group = group;
      this.readOnly = readOnly;
    }

    void start() {
      long floor = p.sessionFloor(group);
      TxnOptions options = TxnOptions.DEFAULTS;
      if (rng.nextDouble() < sim.deadlineShare) {
        long micros = sim.cfg.opsPerTxn() * sim.cfg.opMicros()
            + (long) (rng.nextDouble() * 2 * commitWindow()) + 1;
        options = options.timeout(Duration.ofNanos(micros * 1000));
        sim.api.withDeadline++;
      }
      p.client.beginAsync(group, options).whenComplete((t, failure) -> {
        if (failure != null) {
          abandoned(p);
          return;
        }
        txn = t;
        p.began(group, t.txnId(), t.readPosition(), floor);
        sim.events.after(sim.cfg.opsPerTxn() * sim.cfg.opMicros(), () -> {
          if (p.alive()) {
            operation(0);
          }
        });
      });
    }

    /** Runs operation {@code op}, then the next one; the commit after the last. */
    private void operation(int op) {
      if (op == sim.cfg.opsPerTxn()) {
        commit();
        return;
      }
      String key = drawKey();
      CompletionStage<?> done;
      if (readOnly || rng.nextDouble() < sim.cfg.readFraction()) {
        if (scanNext()) {
          ScanSpec spec = drawScan(key);
          done = txn.scanAsync(spec.range(), spec.limit(), spec.reversed())
              .thenRun(() -> sim.scans++);
        } else {
          if (updateNext()) {
            key = SimUpdates.drawRead(rng, updated);
            sim.updates.reads++;
            done = txn.getAsync(key);
          } else if (rng.nextInt(3) == 0) {
            done = txn.getAllAsync(List.of(key, drawKey(), drawKey()))
                .thenRun(() -> sim.api.batchReads++);
          } else {
            done = txn.getAsync(key);
          }
        }
      } else {
        write(key);
        done = CompletableFuture.completedFuture(null);
      }
      done.whenComplete((v, failure) -> {
        if (!p.alive()) {
          return;
        }
        if (failure == null || failure instanceof InvalidArgumentException
            || failure.getCause() instanceof InvalidArgumentException) {
          // (An own update that cannot apply to the value read: the read is refused, the
          // transaction goes on.)
          operation(op + 1);
          return;
        }
        // Aborted (a lock met, the read position collected), or no DC answered.
        if (readOnly && lockRefusal(failure)) {
          sim.xg.readOnlyRefused++;
        }
        txn.abort();
        abandoned(p);
      });
    }

    /** A put of the attribute key, or with counters and sets on, an operation on them. */
    private void write(String key) {
      if (updateNext()) {
        SimUpdates.Op u = SimUpdates.draw(rng, txn.txnId());
        if (apply(txn, u)) {
          wrote = true;
          if (u.mutation().isUpdate()) {
            updateOps++;
            updated.put(u.key(), u.mutation());
          } else {
            updated.remove(u.key());
          }
        }
        return;
      }
      try {
        txn.put(key, (txn.txnId() + "/" + key).getBytes(StandardCharsets.UTF_8));
        wrote = true;
        updated.remove(key);
      } catch (TransactionTooLargeException e) {
        // Not buffered; the transaction goes on without it.
      }
    }

    private void commit() {
      String txnId = txn.txnId();
      if (wrote) {
        maybeCrash(p, txnId, commitWindow(), false);
        if (!sim.unknownPlant && rng.nextBoolean()) {
          p.settleIfUnknown.add(txnId);
        }
        if (rng.nextBoolean()) {
          handle = txn.outcomeHandle();
          p.handles.put(txnId, handle);
          sim.api.handles++;
        }
      }
      long started = sim.events.now();
      txn.commitAsync().whenComplete((r, failure) -> {
        if (failure == null) {
          if (!wrote) {
            sim.readOnly++;
          } else {
            p.committed(group, r.position());
            sim.commitsByRound.merge(r.promotions(), 1, Integer::sum);
            sim.latency.recordValue(Math.max(0, sim.events.now() - started));
            if (updateOps > 0) {
              sim.updates.entries++;
              sim.updates.ops += updateOps;
            }
          }
        } else if (failure instanceof UpdateRefusedException) {
          sim.updates.refused++;
        } else if (failure instanceof OutcomeUnknownException e) {
          sim.unknown++;
          if (e.entryChosen()) {
            sim.updates.unknown++;
          }
          if (p.held.containsKey(txnId)) {
            p.settleLater(e, handle);
          }
        } else if (failure instanceof DeadlineExceededException) {
          sim.api.deadlineAborts++;
          sim.aborted++;
        } else if (failure instanceof TransactionAbortedException e && e.overloaded()) {
          sim.overloadAborts++;
          sim.aborted++;
        } else {
          if (txn.isActive()) {
            txn.abort(); // (Too large to commit: nothing was sent.)
          }
          sim.aborted++;
        }
        p.handles.remove(txnId);
        scheduleNext();
      });
    }
  }

  /**
   * Whether a read or scan failed because the client refused it for a cross-group lock at the
   * read position (a lock on a key it reads, or a begin reply that listed only the first
   * locks) rather than for TOO_OLD (both abort retryably). The library tells them apart only in
   * the abort's reason, which for a lock names the cross-group transaction(s) holding it.
   */
  static boolean lockRefusal(Throwable failure) {
    Throwable t = failure instanceof java.util.concurrent.CompletionException
        && failure.getCause() != null ? failure.getCause() : failure;
    return t instanceof TransactionAbortedException e
        && e.result().reason().contains("cross-group transaction");
  }

  /**
   * Applies a drawn operation on the counters and sets to {@code txn}: false when the library
   * refused it at the call (it cannot combine with the transaction's own write of the key, or
   * the entry would be too large), which leaves the transaction as it was.
   */
  private static boolean apply(Transaction txn, SimUpdates.Op op) {
    try {
      Mutation m = op.mutation();
      switch (m.kind()) {
        case ADD -> txn.add(op.key(), m.delta());
        case SET_UPDATE -> m.elements().forEach((element, delta) -> {
          // (SimUpdates draws one element, one count up or down.)
          if (delta > 0) {
            txn.setAdd(op.key(), element);
          } else {
            txn.setRemove(op.key(), element);
          }
        });
        case PUT -> txn.put(op.key(), m.value().orElseThrow());
        case DELETE -> txn.delete(op.key());
      }
      return true;
    } catch (InvalidArgumentException e) {
      return false;
    }
  }

  /**
   * A transaction over 2 to 5 groups on the library's {@link MultiTransaction}: one write in
   * every group (a transfer's shape), the other operations anywhere; a fifth of them only read.
   * Draws its operations first, then visits its groups in their sorted order as the library's
   * transactions join groups, on first touch: joins the group (a begin there), works for a
   * while (an operation time for the visit and each operation there), runs the group's
   * operations one after another; then the next group, and the commit after the last.
   */
  private final class CrossGroup {
    private final Process p;
    private final List<String> groups;
    private final MultiTransaction txn;
    /** Per group, the operations drawn there, in the order drawn. */
    private final Map<String, List<Runnable>> plan = new TreeMap<>();
    /** Per group, what the operations drawn there update (a read of a counter reads one). */
    private final Map<String, Map<String, Mutation>> updated = new TreeMap<>();
    private long updateOps;
    private long started;

    CrossGroup(Process p) {
      this.p = p;
      List<String> all = new ArrayList<>(sim.groups());
      int n = 2 + rng.nextInt(Math.min(5, all.size()) - 1);
      TreeSet<String> chosen = new TreeSet<>();
      while (chosen.size() < n) {
        chosen.add(all.get(rng.nextInt(all.size())));
      }
      this.groups = List.copyOf(chosen);
      this.txn = p.client.beginMulti();
      groups.forEach(g -> {
        updated.put(g, new TreeMap<>());
        plan.put(g, new ArrayList<>());
      });
      draw();
    }

    /** The operations: the {@code n}-th of the first ones in the {@code n}-th group. */
    private void draw() {
      int ops = Math.max(sim.cfg.opsPerTxn(), groups.size());
      boolean readOnly = rng.nextDouble() < 0.2;
      for (int op = 0; op < ops; op++) {
        String g = op < groups.size() ? groups.get(op) : groups.get(rng.nextInt(groups.size()));
        String key = drawKey();
        boolean read = readOnly
            || (op >= groups.size() && rng.nextDouble() < sim.cfg.readFraction());
        List<Runnable> steps = plan.get(g);
        if (read && scanNext()) {
          ScanSpec spec = drawScan(key);
          steps.add(() -> step(txn.scanAsync(g, spec.range(), spec.limit(), spec.reversed())
              .thenRun(() -> sim.scans++)));
        } else if (read || op < groups.size() && rng.nextBoolean()) {
          if (read && updateNext()) {
            key = SimUpdates.drawRead(rng, updated.get(g));
            sim.updates.reads++;
          }
          String k = key;
          steps.add(() -> step(txn.getAsync(g, k)));
        }
        if (!read) {
          if (updateNext()) {
            SimUpdates.Op u = SimUpdates.draw(rng, txn.txnId());
            if (u.mutation().isUpdate()) {
              updated.get(g).put(u.key(), u.mutation());
            }
            steps.add(() -> step(CompletableFuture.runAsync(() -> update(g, u), Runnable::run)));
          } else {
            String k = key;
            steps.add(() -> step(CompletableFuture.runAsync(() -> put(g, k), Runnable::run)));
          }
        }
      }
    }

    /** The operation running in the group being visited; its end runs the next. */
    private Runnable next;

    private void step(CompletionStage<?> done) {
      done.whenComplete((v, failure) -> {
        if (!p.alive()) {
          return;
        }
        if (failure == null || failure instanceof InvalidArgumentException
            || failure.getCause() instanceof InvalidArgumentException) {
          next.run();
          return;
        }
        txn.abort();
        abandoned(p);
      });
    }

    void start() {
      started = sim.events.now();
      visit(0);
    }

    /** Visits group {@code i}: joins it, works, runs its operations; then the next group. */
    private void visit(int i) {
      if (i == groups.size()) {
        commit();
        return;
      }
      String g = groups.get(i);
      long floor = p.sessionFloor(g);
      txn.joinAsync(g).whenComplete((v, failure) -> {
        if (failure != null) {
          txn.abort();
          abandoned(p);
          return;
        }
        p.began(g, txn.txnId(), txn.readPosition(g).orElseThrow(), floor);
        List<Runnable> steps = plan.get(g);
        sim.events.after((1 + steps.size()) * sim.cfg.opMicros(), () -> {
          if (p.alive()) {
            run(steps, 0, () -> visit(i + 1));
          }
        });
      });
    }

    private void run(List<Runnable> steps, int k, Runnable then) {
      if (k == steps.size()) {
        then.run();
        return;
      }
      next = () -> run(steps, k + 1, then);
      steps.get(k).run();
    }

    private void update(String g, SimUpdates.Op u) {
      try {
        Mutation m = u.mutation();
        switch (m.kind()) {
          case ADD -> txn.add(g, u.key(), m.delta());
          case SET_UPDATE -> m.elements().forEach((element, delta) -> {
            if (delta > 0) {
              txn.setAdd(g, u.key(), element);
            } else {
              txn.setRemove(g, u.key(), element);
            }
          });
          case PUT -> txn.put(g, u.key(), m.value().orElseThrow());
          case DELETE -> txn.delete(g, u.key());
        }
        updateOps += m.isUpdate() ? 1 : 0;
      } catch (InvalidArgumentException e) {
        // Refused at the call; the transaction goes on without it.
      }
    }

    private void put(String g, String key) {
      try {
        txn.put(g, key, (txn.txnId() + "/" + g + "/" + key).getBytes(StandardCharsets.UTF_8));
      } catch (TransactionTooLargeException e) {
        // Not buffered.
      }
    }

    private void commit() {
      maybeCrash(p, txn.txnId(), 3 * commitWindow(), true);
      txn.commitAsync().whenComplete((r, failure) -> {
        if (failure == null) {
          if (r.position() > 0) {
            p.committed(groups.get(0), r.position()); // its DECIDE in the coordinator
          }
          sim.latency.recordValue(Math.max(0, sim.events.now() - started));
          sim.updates.materialized += updateOps;
        } else if (failure instanceof TransactionTooLargeException) {
          txn.abort();
          sim.aborted++;
        } else if (!(failure instanceof TransactionAbortedException
            || failure instanceof UpdateRefusedException
            || failure instanceof OutcomeUnknownException)) {
          sim.aborted++;
        }
        scheduleNext();
      });
    }
  }

  /**
   * One process of the client: the library's client on a scheduler and transport that die with
   * it, and the history it hands over ({@link HistoryRecorder.Listener}), which goes into the
   * run's history while the process lives.
   */
  private final class Process implements HistoryRecorder.Listener {
    private boolean dead;
    private final SimTransport transport;
    final TxnClient client;
    /** One-group commits in flight: what the history holds of each if the process dies now. */
    final Map<String, Map.Entry<String, TxnRecord>> committing = new LinkedHashMap<>();
    /** Cross-group commits in flight, likewise. */
    private final Map<String, CrossGroupChecker.Observation> committingAcross =
        new LinkedHashMap<>();
    /** Transactions whose unknown outcome this process settles later. */
    final java.util.Set<String> settleIfUnknown = new java.util.HashSet<>();
    /** Unknown outcomes being settled: their record waits for what the settle answers. */
    final Map<String, Map.Entry<String, TxnRecord>> held = new HashMap<>();
    /** The handles the commits in flight took before they were sent. */
    final Map<String, OutcomeHandle> handles = new HashMap<>();
    /** A dead process's commits this one settles with their handles. */
    final Map<String, Orphan> settling = new LinkedHashMap<>();

    Process() {
      this.transport = new SimTransport(sim.cluster, home, false, true);
      Scheduler base = sim.cluster.scheduler();
      Scheduler mortal = new Scheduler() {
        @Override
        public long nowMicros() {
          return base.nowMicros();
        }

        @Override
        public long wallMillis() {
          return base.wallMillis();
        }

        @Override
        public Cancellable schedule(long delayMicros, Runnable task) {
          return base.schedule(delayMicros, () -> {
            if (!dead) {
              task.run();
            }
          });
        }

        @Override
        public void execute(Runnable task) {
          base.execute(() -> {
            if (!dead) {
              task.run();
            }
          });
        }

        @Override
        public RandomGenerator random() {
          return base.random();
        }
      };
      this.client = TxnClient.builder(sim.clientCluster(), sim.cfg.dcs().get(home),
              protocol(sim.cfg.protocol()))
          .transport(transport)
          .clusterVersion(sim.clusterVersion())
          .scheduler(mortal)
          .proposer(sim.cfg.proposer())
          .leaderCosts(sim.cluster.leaderCosts())
          .hooks(id % 2 == 0 ? sim.clientHooks() : sim.clientHooks().withScanPageLimit(1 + id % 4))
          .random(rng.split())
          .meterRegistry(sim.meters)
          .recordHistory(HistoryRecorder.to(this))
          .build();
      sim.libraryClients.add(client);
    }

    boolean alive() {
      return !dead;
    }

    /**
     * Per group, the highest position this process committed at or began a transaction at:
     * every later transaction of it there must read at that position or above (its session:
     * read-your-writes and monotonic reads, docs/guarantees.md), which the library keeps even
     * when it evicted the group's session position from its cache.
     */
    private final Map<String, Long> session = new HashMap<>();

    /** The least position a begin in {@code group} issued now may read at. */
    long sessionFloor(String group) {
      return session.getOrDefault(group, 0L);
    }

    /**
     * A transaction began in {@code group} at {@code position}, its begin issued when the
     * session stood at {@code floor} (what this process learned while the begin was under way,
     * an unknown outcome settled in the background, does not bind it): checks the session.
     */
    void began(String group, String txnId, long position, long floor) {
      if (position < floor) {
        sim.sessionViolations.add("client " + id + " began " + txnId + " in " + group
            + " at position " + position + ", below its session position " + floor);
      }
      session.merge(group, position, Math::max);
    }

    /** A transaction of this process committed in {@code group} at {@code position}. */
    void committed(String group, long position) {
      session.merge(group, position, Math::max);
    }

    /**
     * Settles {@code unknown} two phase timeouts from now and records what the settle answers
     * instead of the unknown outcome.
     */
    void settleLater(OutcomeUnknownException unknown, OutcomeHandle before) {
      String txnId = unknown.result().txnId();
      // With the exception (settle), its handle, or the handle taken before the commit: what
      // an application that kept only that would do.
      int how = rng.nextInt(3);
      sim.events.after(2 * sim.phaseTimeout.toNanos() / 1000, () -> {
        if (dead) {
          return;
        }
        CompletableFuture<CommitResult> f;
        if (how == 1 && unknown.handle().isPresent()) {
          sim.api.handleSettles++;
          f = client.outcomeAsync(unknown.handle().get());
        } else if (how == 2 && before != null) {
          sim.api.handleSettles++;
          f = client.outcomeAsync(before);
        } else {
          f = client.settleAsync(unknown);
        }
        f.whenComplete((r, failure) -> {
          Map.Entry<String, TxnRecord> h = held.remove(txnId);
          if (h == null) {
            return;
          }
          if (failure == null) {
            committed(h.getKey(), r.position());
          }
          sim.historyOf(h.getKey()).add(settled(h.getValue(), r, failure));
        });
      });
    }

    /** Settles the dead processes' commits that took a handle, with it. */
    void settleOrphans() {
      List<Orphan> mine = new ArrayList<>(orphans.values());
      orphans.clear();
      for (Orphan o : mine) {
        String txnId = o.crashed().txnId();
        settling.put(txnId, o);
        sim.api.handleSettles++;
        client.outcomeAsync(o.handle()).whenComplete((r, failure) -> {
          Orphan own = settling.remove(txnId);
          if (own != null) {
            sim.historyOf(own.group()).add(settled(own.crashed(), r, failure));
          }
        });
      }
    }

    /** Dies: nothing of it runs any more; its commits in flight are recorded as they stand. */
    void die() {
      dead = true;
      transport.close();
      committing.forEach((txnId, e) -> {
        OutcomeHandle h = handles.get(txnId);
        if (h != null) {
          orphans.put(txnId, new Orphan(e.getKey(), e.getValue(), h));
        } else {
          sim.historyOf(e.getKey()).add(e.getValue());
        }
      });
      orphans.putAll(settling);
      settling.clear();
      handles.clear();
      held.values().forEach(e -> sim.historyOf(e.getKey()).add(e.getValue()));
      committingAcross.values().forEach(o -> {
        sim.xg.crashed++;
        sim.observations.add(o);
      });
      committing.clear();
      held.clear();
      committingAcross.clear();
    }

    @Override
    public void committing(String group, TxnRecord crashed) {
      if (!dead) {
        committing.put(crashed.txnId(), Map.entry(group, crashed));
      }
    }

    @Override
    public void attempt(String group, TxnRecord record) {
      if (dead) {
        return;
      }
      committing.remove(record.txnId());
      if (record.status() == TxnRecord.Status.UNKNOWN
          && settleIfUnknown.remove(record.txnId())) {
        held.put(record.txnId(), Map.entry(group, record));
        return;
      }
      sim.historyOf(group).add(record);
    }

    @Override
    public void committingAcrossGroups(CrossGroupChecker.Observation crashed) {
      if (!dead) {
        committingAcross.put(crashed.txnId(), crashed);
      }
    }

    @Override
    public void crossGroup(CrossGroupChecker.Observation o) {
      if (dead) {
        return;
      }
      committingAcross.remove(o.txnId());
      sim.observations.add(o);
      switch (o.status()) {
        case COMMITTED -> {
          if (o.readOnly()) {
            sim.xg.readOnly++;
          } else {
            sim.xg.committed++;
          }
        }
        case ABORTED -> sim.xg.aborted++;
        default -> sim.xg.unknown++;
      }
    }
  }

  /**
   * What a settle or an outcome by handle answered, {@code result} or {@code failure}, as the
   * record of {@code before} (the transaction's UNKNOWN or CRASHED record).
   */
  private TxnRecord settled(TxnRecord before, CommitResult result, Throwable failure) {
    if (failure == null) {
      sim.settled.committed++;
      return as(before, TxnRecord.Status.COMMITTED, result.position(), -1, -1);
    } else if (failure instanceof UpdateRefusedException e) {
      // In the log at its position, refused there: no effect.
      sim.settled.committed++;
      return as(before, TxnRecord.Status.ABORTED, e.position().orElse(-1), -1, -1);
    } else if (failure instanceof TransactionAbortedException) {
      sim.settled.aborted++;
      return as(before, TxnRecord.Status.ABORTED, -1, -1, -1);
    } else if (failure instanceof OutcomeUnknownException e) {
      sim.settled.unknown++;
      return as(before, TxnRecord.Status.UNKNOWN, -1, e.firstPosition(), e.lastPosition());
    }
    sim.settled.unknown++;
    return before;
  }

  /** {@code r} with another status and place in the log (what a settle found). */
  private static TxnRecord as(TxnRecord r, TxnRecord.Status status, long commitPosition,
      long unknownFrom, long unknownThrough) {
    return new TxnRecord(r.txnId(), r.client(), status, r.readPosition(), r.reads(), r.writes(),
        commitPosition, unknownFrom, unknownThrough, r.scans());
  }

  static CommitProtocol protocol(org.paxoscp.paxos.Protocol p) {
    return switch (p) {
      case BASIC -> CommitProtocol.BASIC;
      case CP -> CommitProtocol.CP;
      case LEADER -> CommitProtocol.LEADER;
    };
  }

  /** The cluster as the simulated clients' library sees it. */
  static ClusterConfig clusterConfig(List<String> dcs, Duration requestTimeout,
      Duration lockTimeout, int sessionGroups, int maxDatagramBytes) {
    List<ClusterConfig.Dc> list = new ArrayList<>();
    int port = 1;
    for (String dc : dcs) {
      list.add(new ClusterConfig.Dc(dc, List.of(InetSocketAddress.createUnresolved("sim",
          port++)), Map.of()));
    }
    return new ClusterConfig(list, new byte[16], Optional.empty(), "/paxoscp", maxDatagramBytes,
        requestTimeout, ClusterConfig.Wan.off())
        .withClientSessionGroups(sessionGroups)
        .withCrossGroup(new ClusterConfig.CrossGroup(25, lockTimeout));
  }
}
