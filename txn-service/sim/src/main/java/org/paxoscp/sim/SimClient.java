package org.paxoscp.sim;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * One simulated client of a {@link Simulator} run: begins its transactions at its home DC (or
 * any reachable DC while home is down) with its session positions as minimum read positions,
 * runs their operations, reads at the read position with one read request per group, and
 * commits through the shipped {@link ProposerDriver} or {@link LeaderSubmit}; a share of its
 * transactions span several groups ({@link SimCrossGroupTxn}). Crashes in mid-commit when the
 * fault mix says so. Runs on the simulation's thread, driven by its events.
 */
final class SimClient {
  final Simulator sim;
  final int id;
  final int home;
  final SplittableRandom rng;
  final SimTransport transport;
  final ProposerDriver driver;
  final LeaderSubmit leaderSubmit;
  int remaining;
  int txnSeq;
  long nextArrival;
  /**
   * Per group, the position of this client's last commit there: its minimum read position
   * (a session).
   */
  final Map<String, Long> session = new TreeMap<>();
  /** Incremented on a crash: callbacks of the crashed incarnation are ignored. */
  int epoch;
  CompletableFuture<Outcome> inFlight;
  TxnRecord pending;
  String pendingGroup;

  SimClient(Simulator sim, int id, int home, int txns, SplittableRandom rng) {
    this.sim = sim;
    this.id = id;
    this.home = home;
    this.remaining = txns;
    this.rng = rng;
    this.transport = new SimTransport(sim.cluster, home, false);
    this.driver = new ProposerDriver(transport, sim.cfg.dcs(), sim.cluster.scheduler(),
        sim.phaseTimeout);
    this.leaderSubmit = new LeaderSubmit(transport, sim.cfg.dcs(), driver, sim.cfg.proposer(),
        sim.cluster.scheduler(), sim.phaseTimeout.multipliedBy(3), sim.cluster.leaderCosts());
    // Staggered starts within the first inter-arrival period.
    this.nextArrival = (long) (rng.nextDouble() * 1_000_000 / sim.cfg.ratePerClient());
  }

  void scheduleNext() {
    if (remaining == 0) {
      if (--sim.clientsActive == 0) {
        sim.cluster.stopProbes();
      }
      return;
    }
    remaining--;
    long start = Math.max(sim.events.now(), nextArrival);
    nextArrival = start + (long) (-Math.log(1 - rng.nextDouble()) * 1_000_000
        / sim.cfg.ratePerClient());
    int e = epoch;
    sim.events.at(start, () -> {
      if (e == epoch) {
        begin();
      }
    });
  }

  /** Picks the DC that serves this transaction's begin and reads: home, else any reachable. */
  int servingDc() {
    if (!sim.network.isDown(home)) {
      return home;
    }
    for (int i = 0; i < sim.cfg.dcs().size(); i++) {
      if (!sim.network.isDown(i) && sim.network.connected(home, i)) {
        return i;
      }
    }
    return -1;
  }

  /** Begin and read requests wait for catch-up at the service; allow for it. */
  Duration requestTimeout() {
    return sim.phaseTimeout.multipliedBy(6);
  }

  private void abort(String group, String txnId, long readPos) {
    sim.aborted++;
    sim.historyOf(group).add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED, readPos,
        Map.of(), new TreeMap<>(), -1));
    scheduleNext();
  }

  long sessionOf(String group) {
    return session.getOrDefault(group, 0L);
  }

  void noteCommit(String group, long position) {
    session.merge(group, position, Math::max);
  }

  void begin() {
    String txnId = "c" + id + "-t" + (txnSeq++);
    if (sim.groupCount > 1 && rng.nextDouble() < sim.xgFraction) {
      new SimCrossGroupTxn(this, txnId).start();
      return;
    }
    String group = sim.groupCount == 1 ? sim.GROUP : sim.groups().get(rng.nextInt(sim.groupCount));
    int serving = servingDc();
    if (serving < 0) {
      abort(group, txnId, 0);
      return;
    }
    String servingName = sim.cfg.dcs().get(serving);
    int e = epoch;
    transport.request(servingName, new Message.BeginRequest(group, sessionOf(group)),
        requestTimeout()).whenComplete((reply, failure) -> {
          if (e != epoch) {
            return;
          }
          if (reply instanceof Message.BeginReply b) {
            body(group, txnId, servingName, b, leaderOf(b));
          } else {
            abort(group, txnId, 0);
          }
        });
  }

  OptionalInt leaderOf(Message.BeginReply b) {
    return b.leaderDc().isEmpty() ? OptionalInt.empty()
        : OptionalInt.of(sim.cfg.dcs().indexOf(b.leaderDc()));
  }

  /** The transaction's operations, then one read request for the keys it read. */
  private void body(String group, String txnId, String servingName, Message.BeginReply begun,
      OptionalInt leader) {
    long readPos = begun.position();
    List<String> readKeys = new ArrayList<>();
    TreeMap<String, Mutation> writes = new TreeMap<>();
    for (int op = 0; op < sim.cfg.opsPerTxn(); op++) {
      String key = "attr" + (sim.zipf != null ? sim.zipf.next(rng) : rng.nextInt(sim.cfg.attributes()));
      if (rng.nextDouble() < sim.cfg.readFraction()) {
        if (!writes.containsKey(key) && !readKeys.contains(key)) {
          readKeys.add(key);
        }
      } else {
        writes.put(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
      }
    }
    int e = epoch;
    sim.events.after(sim.cfg.opsPerTxn() * sim.cfg.opMicros(), () -> {
      if (e != epoch) {
        return;
      }
      if (readKeys.isEmpty()) {
        commit(group, txnId, servingName, begun, new LinkedHashMap<>(), writes, leader);
        return;
      }
      transport.request(servingName, new Message.ReadRequest(group, readPos, readKeys),
          requestTimeout()).whenComplete((reply, failure) -> {
            if (e != epoch) {
              return;
            }
            if (reply instanceof Message.ReadReply r) {
              Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
              for (String k : readKeys) {
                reads.put(k, Optional.ofNullable(r.values().get(k)));
              }
              commit(group, txnId, servingName, begun, reads, writes, leader);
            } else {
              if (reply instanceof Message.ErrorReply err
                  && err.code() == Message.ErrorCode.TOO_OLD) {
                // The GC watermark passed the read position: a retryable abort.
                sim.tooOldReads++;
              }
              abort(group, txnId, readPos);
            }
          });
    });
  }

  void commit(String group, String txnId, String servingName, Message.BeginReply begun,
      Map<String, Optional<byte[]>> reads,
      TreeMap<String, Mutation> writes, OptionalInt leader) {
    String client = "c" + id;
    long readPos = begun.position();
    if (!begun.locks().isEmpty() && sim.plant != Simulator.XgPlant.IGNORE_LOCKS) {
      // The lock rule (ARCHITECTURE 10) against the locks at the read position.
      LogEntry probe = new LogEntry(txnId, sim.cfg.dcs().get(home), readPos,
          new TreeSet<>(reads.keySet()), writes);
      Optional<XgLocks.Lock> lock = begun.locks().blocking(probe);
      if (lock.isPresent()) {
        meetLock(group, lock.get());
        abort(group, txnId, readPos);
        return;
      }
    }
    if (writes.isEmpty()) {
      sim.readOnly++;
      sim.historyOf(group).add(new TxnRecord(txnId, client, TxnRecord.Status.COMMITTED, readPos,
          reads, writes, -1));
      scheduleNext();
      return;
    }
    LogEntry entry = new LogEntry(txnId, sim.cfg.dcs().get(home), readPos,
        new TreeSet<>(reads.keySet()), writes);
    long started = sim.events.now();
    pending = new TxnRecord(txnId, client, TxnRecord.Status.CRASHED, readPos, reads, writes, -1);
    pendingGroup = group;
    CompletableFuture<Outcome> run = propose(group, entry, servingName, leader);
    inFlight = run;
    int e = epoch;
    if (sim.cfg.faults().crashes() && rng.nextDouble() < 0.1) {
      long window = 3 * sim.network.maxRttMicros() + 2 * sim.cfg.serviceMicros() + 1;
      sim.events.after(rng.nextLong(window), () -> {
        if (e == epoch && inFlight == run && !run.isDone()) {
          crash();
        }
      });
    }
    run.whenComplete((o, failure) -> {
      if (e == epoch) {
        finished(group, o, started, readPos, reads, writes, txnId);
      }
    });
  }

  /** Runs the client's commit protocol for {@code entry} at its read position + 1. */
  CompletableFuture<Outcome> propose(String group, LogEntry entry, String servingName,
      OptionalInt leader) {
    long readPos = entry.readPosition();
    if (sim.cfg.protocol() == Protocol.LEADER) {
      // The leader of readPos + 1, else the DC that served the begin.
      return leaderSubmit.commit(group, entry,
          LeaderSubmit.submitTarget(sim.cfg.dcs(), leader, readPos, servingName),
          LeaderSubmit.boundFor(sim.cfg.proposer().maxPromotions()));
    }
    Proposer proposer = sim.proposers.create(sim.cfg.proposer(), group,
        ProposerId.random(sim.cluster.scheduler().random()), entry, readPos + 1, leader,
        rng.split());
    return driver.run(proposer);
  }

  private void finished(String group, Outcome o, long started, long readPos,
      Map<String, Optional<byte[]>> reads, TreeMap<String, Mutation> writes, String txnId) {
    inFlight = null;
    pending = null;
    TxnRecord.Status status;
    long commitPos = -1;
    Outcome.Status s = o == null ? Outcome.Status.UNKNOWN : o.status();
    switch (s) {
      case COMMITTED -> {
        status = TxnRecord.Status.COMMITTED;
        commitPos = o.position();
        noteCommit(group, commitPos);
        sim.commitsByRound.merge(o.promotions(), 1, Integer::sum);
        sim.latency.recordValue(Math.max(0, sim.events.now() - started));
      }
      case ABORTED -> {
        status = TxnRecord.Status.ABORTED;
        sim.aborted++;
      }
      default -> {
        status = TxnRecord.Status.UNKNOWN;
        sim.unknown++;
      }
    }
    if (status == TxnRecord.Status.UNKNOWN && o != null) {
      // The positions the client is told the entry can still be chosen at; the planted bug
      // reports only the first position it was submitted for, as leader mode once did.
      long from = sim.unknownPlant ? readPos + 1 : o.firstPosition();
      long through = sim.unknownPlant ? readPos + 1 : o.position();
      if (!sim.unknownPlant && rng.nextBoolean()) {
        // Half the unknown outcomes are settled later, as TxnClient.settle does; the history
        // then holds the settled outcome, which the checker holds against the log.
        LogEntry entry = new LogEntry(txnId, sim.cfg.dcs().get(home), readPos,
            new TreeSet<>(reads.keySet()), writes);
        sim.events.after(2 * sim.phaseTimeout.toNanos() / 1000, () -> settleLater(group, entry,
            reads, from, through));
      } else {
        sim.historyOf(group).add(TxnRecord.unknownAt(txnId, "c" + id, readPos, reads, writes,
            from, through));
      }
    } else {
      sim.historyOf(group).add(new TxnRecord(txnId, "c" + id, status, readPos, reads, writes,
          commitPos));
    }
    scheduleNext();
  }

  /** Settles an unknown outcome and records what the settle says instead of UNKNOWN. */
  private void settleLater(String group, LogEntry entry, Map<String, Optional<byte[]>> reads,
      long from, long through) {
    leaderSubmit.settle(group, entry, from, through).whenComplete((o, t) -> {
      String client = "c" + id;
      TxnRecord r;
      if (o != null && o.status() == Outcome.Status.COMMITTED) {
        sim.settled.committed++;
        r = new TxnRecord(entry.txnId(), client, TxnRecord.Status.COMMITTED,
            entry.readPosition(), reads, entry.writes(), o.position());
      } else if (o != null && o.status() == Outcome.Status.ABORTED) {
        sim.settled.aborted++;
        r = new TxnRecord(entry.txnId(), client, TxnRecord.Status.ABORTED, entry.readPosition(),
            reads, entry.writes(), -1);
      } else {
        sim.settled.unknown++;
        r = o == null ? TxnRecord.unknownAt(entry.txnId(), client, entry.readPosition(), reads,
            entry.writes(), from, through)
            : TxnRecord.unknownAt(entry.txnId(), client, entry.readPosition(), reads,
                entry.writes(), o.firstPosition(), o.position());
      }
      sim.historyOf(group).add(r);
    });
  }

  // ---- cross-group transactions (ARCHITECTURE section 10, docs/cross-group.md) ----------

  /** Virtual time in milliseconds: the clock of PREPARE deadlines. */
  long nowMillis() {
    return sim.events.now() / 1000;
  }

  /** A begin in {@code group} at the serving DC: the reply, or null. */
  CompletableFuture<Message.BeginReply> beginIn(String servingName, String group) {
    return transport.request(servingName, new Message.BeginRequest(group, sessionOf(group)),
        requestTimeout()).handle((reply, failure) ->
            reply instanceof Message.BeginReply b ? b : null);
  }

  /** A read of {@code keys} of {@code group} at {@code position}: the reply, or null. */
  CompletableFuture<Message.ReadReply> readIn(String servingName, String group,
      long position, List<String> keys) {
    return transport.request(servingName, new Message.ReadRequest(group, position, keys),
        requestTimeout()).handle((reply, failure) ->
            reply instanceof Message.ReadReply r ? r : null);
  }

  /** A fresh entry id for a step proposed by this client on behalf of any transaction. */
  String stepId() {
    return "c" + id + "-s" + (txnSeq++);
  }

  /**
   * Meets a lock: reads the transaction's decision in its coordinator; decided, resolves it
   * here; undecided past the deadline, decides ABORT first. Runs in the background (the caller
   * aborts retryably); a crash of this client does not stop it, as with a resolver elsewhere.
   */
  void meetLock(String group, XgLocks.Lock lock) {
    sim.xg.locksMet++;
    XgStep step = lock.prepare().xg();
    int serving = servingDc();
    if (serving < 0) {
      return;
    }
    String servingName = sim.cfg.dcs().get(serving);
    decision(servingName, step.coordinator(), step.txn()).thenAccept(d -> {
      if (d == null) {
        return;
      }
      if (d.isPresent()) {
        resolve(servingName, group, step, d.get(), lock.prepare().writes(), 3);
      } else if (nowMillis() >= step.deadlineMillis()) {
        settle(servingName, step.txn(), step.groups(), 3).thenAccept(s -> {
          if (s != null && s.isPresent()) {
            resolve(servingName, group, step, s.get(), lock.prepare().writes(), 3);
          }
        });
      }
    });
  }

  /** The decision of {@code txn}: present (true COMMIT), empty while undecided, null if unknown. */
  private CompletableFuture<Optional<Boolean>> decision(String servingName, String coordinator,
      String txn) {
    String dk = XgStep.decisionKey(txn);
    return beginIn(servingName, coordinator).thenCompose(b -> b == null
        ? CompletableFuture.completedFuture(null)
        : readIn(servingName, coordinator, b.position(), List.of(dk)).thenApply(r -> r == null
            ? null : Optional.ofNullable(r.values().get(dk))
                .map(v -> v[0] == XgStep.COMMIT_VALUE[0])));
  }

  /**
   * Makes the outcome definite: while the decision key is absent, proposes DECIDE(ABORT); at
   * most {@code attempts} tries. Completes with the outcome, or null if none finished.
   */
  CompletableFuture<Optional<Boolean>> settle(String servingName, String txn,
      List<String> groups, int attempts) {
    if (attempts == 0) {
      return CompletableFuture.completedFuture(null);
    }
    String c = groups.get(0);
    String dk = XgStep.decisionKey(txn);
    return beginIn(servingName, c).thenCompose(b -> {
      if (b == null) {
        return settle(servingName, txn, groups, attempts - 1);
      }
      return readIn(servingName, c, b.position(), List.of(dk)).thenCompose(r -> {
        if (r == null) {
          return settle(servingName, txn, groups, attempts - 1);
        }
        byte[] v = r.values().get(dk);
        if (v != null) {
          return CompletableFuture.completedFuture(Optional.of(v[0] == XgStep.COMMIT_VALUE[0]));
        }
        sim.xg.abortDecides++;
        LogEntry abort = new LogEntry(stepId(), sim.cfg.dcs().get(home), b.position(),
            new TreeSet<>(List.of(dk)),
            new TreeMap<>(Map.of(dk, Mutation.put(XgStep.ABORT_VALUE))),
            XgStep.decide(txn, groups, false));
        return propose(c, abort, servingName, leaderOf(b)).handle((o, t) -> o)
            .thenCompose(o -> {
              if (o != null && o.status() == Outcome.Status.COMMITTED) {
                noteCommit(c, o.position());
                return CompletableFuture.completedFuture(Optional.of(false));
              }
              return settle(servingName, txn, groups, attempts - 1);
            });
      });
    });
  }

  /** Proposes RESOLVE(step.txn(), commit) in {@code group} while it holds a lock there. */
  void resolve(String servingName, String group, XgStep step, boolean commit,
      SortedMap<String, Mutation> writes, int attempts) {
    if (attempts == 0) {
      return;
    }
    beginIn(servingName, group).thenAccept(b -> {
      if (b == null) {
        resolve(servingName, group, step, commit, writes, attempts - 1);
        return;
      }
      if (b.locks().lockOf(step.txn()).isEmpty()) {
        return; // Resolved already, or its PREPARE never got in.
      }
      sim.xg.resolves++;
      LogEntry e = new LogEntry(stepId(), sim.cfg.dcs().get(home), b.position(), new TreeSet<>(),
          commit ? new TreeMap<>(writes) : new TreeMap<>(),
          XgStep.resolve(step.txn(), step.groups(), commit));
      propose(group, e, servingName, leaderOf(b)).handle((o, t) -> o).thenAccept(o -> {
        if (o != null && o.status() == Outcome.Status.COMMITTED) {
          noteCommit(group, o.position());
        } else {
          resolve(servingName, group, step, commit, writes, attempts - 1);
        }
      });
    });
  }

  /** The client dies in mid-commit: its proposer stops; it comes back a second later. */
  private void crash() {
    epoch++;
    inFlight.cancel(false);
    inFlight = null;
    if (pending != null) {
      sim.historyOf(pendingGroup).add(pending);
    }
    pending = null;
    sim.crashed++;
    int e = epoch;
    sim.events.after(1_000_000, () -> {
      if (e == epoch) {
        scheduleNext();
      }
    });
  }
}
