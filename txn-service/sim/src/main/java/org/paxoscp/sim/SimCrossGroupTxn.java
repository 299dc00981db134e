package org.paxoscp.sim;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.Updates;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * One simulated transaction over 2 to 5 entity groups (ARCHITECTURE section 10,
 * docs/cross-group.md), driven by the simulation's events like a {@link SimClient}'s one-group
 * transactions and with the same rules as the client library: joins each group on first touch,
 * checks the lock rule, PREPAREs in parallel, DECIDEs in the coordinator, RESOLVEs afterwards (or
 * VALIDATEs when read-only), and may crash between the steps when the fault mix says so. A share
 * of its reads are range reads ({@link SimConfig#scanShare}, {@link SimClient#drawScan}), made in
 * the group they read at its read position; its PREPARE, DECIDE or VALIDATE there carries the
 * ranges as far as they were read, and the entries found join the versions it observed. A share
 * of its writes are commutative updates ({@link SimConfig#updateShare}, {@link SimUpdates});
 * their keys are read, and before its steps each update becomes a put of the value it makes of
 * the value read, as the client library's {@code MultiTransaction} does.
 */
final class SimCrossGroupTxn {
  private final SimClient client;
  private final Simulator sim;
  private final String txnId;
  private final List<String> groups;
  private final Map<String, Message.BeginReply> begun = new TreeMap<>();
  private final Map<String, List<String>> readKeys = new TreeMap<>();
  /** Per group, the range reads drawn, and those made (in the order made). */
  private final Map<String, List<SimClient.ScanSpec>> scanSpecs = new TreeMap<>();
  private final Map<String, List<SimClient.Scanned>> scanned = new TreeMap<>();
  private final Map<String, TreeMap<String, Mutation>> writes = new TreeMap<>();
  /** Per group, the values of the keys read there (a key without a value is absent). */
  private final Map<String, Map<String, byte[]>> values = new TreeMap<>();
  /** Per group, per key read, the position that wrote the version read. */
  private final Map<String, Map<String, Long>> versions = new TreeMap<>();
  /** The client's incarnation: callbacks after a crash of it are ignored. */
  private final int e;
  private String servingName;
  private long started;

  SimCrossGroupTxn(SimClient client, String txnId) {
    this.client = client;
    this.sim = client.sim;
    this.txnId = txnId;
    this.e = client.epoch;
    List<String> all = new ArrayList<>(sim.groups());
    int n = 2 + client.rng.nextInt(Math.min(5, all.size()) - 1);
    TreeSet<String> chosen = new TreeSet<>();
    while (chosen.size() < n) {
      chosen.add(all.get(client.rng.nextInt(all.size())));
    }
    this.groups = List.copyOf(chosen);
  }

  private boolean alive() {
    return e == client.epoch;
  }

  void start() {
    started = sim.events.now();
    int serving = client.servingDc();
    if (serving < 0) {
      done(TxnRecord.Status.ABORTED);
      return;
    }
    servingName = sim.cfg.dcs().get(serving);
    operations();
    stage(0);
  }

  /**
   * One write in every group (a transfer's shape), the other operations anywhere; a fifth of
   * the transactions only read.
   */
  private void operations() {
    for (String g : groups) {
      readKeys.put(g, new ArrayList<>());
      scanSpecs.put(g, new ArrayList<>());
      scanned.put(g, List.of());
      writes.put(g, new TreeMap<>());
    }
    int ops = Math.max(sim.cfg.opsPerTxn(), groups.size());
    boolean readOnlyTxn = client.rng.nextDouble() < 0.2;
    for (int op = 0; op < ops; op++) {
      String g = op < groups.size() ? groups.get(op) : groups.get(client.rng.nextInt(groups.size()));
      String key = client.drawKey();
      boolean read = readOnlyTxn
          || (op >= groups.size() && client.rng.nextDouble() < sim.cfg.readFraction());
      if (read && client.scanNext()) {
        scanSpecs.get(g).add(client.drawScan(key));
      } else if (read || op < groups.size() && client.rng.nextBoolean()) {
        if (read && client.updateNext()) {
          key = SimUpdates.drawRead(client.rng, writes.get(g));
          sim.updates.reads++;
        }
        Mutation own = writes.get(g).get(key);
        if ((own == null || own.isUpdate()) && !readKeys.get(g).contains(key)) {
          readKeys.get(g).add(key);
        }
      }
      if (!read && client.updateNext()) {
        SimUpdates.buffer(writes.get(g), SimUpdates.draw(client.rng, txnId));
      } else if (!read) {
        writes.get(g).put(key, Mutation.put((txnId + "/" + g + "/" + key)
            .getBytes(StandardCharsets.UTF_8)));
      }
    }
    // The keys of the updates are read too, at the group's read position: the commit turns
    // each update into a put of the value it makes of the value read (materialize).
    for (String g : groups) {
      writes.get(g).forEach((k, m) -> {
        if (m.isUpdate() && !readKeys.get(g).contains(k)) {
          readKeys.get(g).add(k);
        }
      });
    }
  }

  /**
   * Turns every buffered update into a put (or delete) of the value it makes of the value read
   * at the group's read position, as the client library's {@code MultiTransaction.commit} does
   * before its steps ({@code Transaction.materializeUpdates}): a step carries no update, since
   * a refusal where one step applies could not be atomic across groups.
   *
   * @return false when an update cannot apply to the value read: the transaction aborts, no
   *     step sent
   */
  private boolean materializeUpdates() {
    for (String g : groups) {
      for (var w : List.copyOf(writes.get(g).entrySet())) {
        if (!w.getValue().isUpdate()) {
          continue;
        }
        Updates.Result r = Updates.apply(
            Optional.ofNullable(values.getOrDefault(g, Map.of()).get(w.getKey())), w.getValue());
        if (r.refused()) {
          return false;
        }
        writes.get(g).put(w.getKey(), r.value().map(Mutation::put).orElse(Mutation.delete()));
        sim.updates.materialized++;
      }
    }
    return true;
  }

  /** Does the transaction read anything in {@code g}: a key, or a range? */
  private boolean readsIn(String g) {
    return !readKeys.get(g).isEmpty() || !scanSpecs.get(g).isEmpty();
  }

  /**
   * Joins group {@code i} the way the client library does, on first touch: begins there,
   * works for a while, reads its keys and scans its ranges; then the next group. Groups are
   * visited in their sorted order.
   */
  private void stage(int i) {
    if (i == groups.size()) {
      commit();
      return;
    }
    String g = groups.get(i);
    client.beginIn(servingName, g).thenAccept(b -> {
      if (!alive()) {
        return;
      }
      if (b == null) {
        done(TxnRecord.Status.ABORTED);
        return;
      }
      begun.put(g, b);
      int ops = 1 + readKeys.get(g).size() + scanSpecs.get(g).size() + writes.get(g).size();
      sim.events.after(ops * sim.cfg.opMicros(), () -> {
        if (!alive()) {
          return;
        }
        if (!readsIn(g)) {
          stage(i + 1);
          return;
        }
        CompletableFuture<Message.ReadReply> read = readKeys.get(g).isEmpty()
            ? CompletableFuture.completedFuture(
                new Message.ReadReply(g, b.position(), Map.of(), Map.of()))
            : client.readIn(servingName, g, b.position(), readKeys.get(g));
        read.thenAccept(r -> {
          if (!alive()) {
            return;
          }
          if (r == null) {
            done(TxnRecord.Status.ABORTED);
            return;
          }
          values.put(g, r.values());
          Map<String, Long> vs = new TreeMap<>();
          for (String k : readKeys.get(g)) {
            vs.put(k, r.versions().getOrDefault(k, 0L));
          }
          client.scanAll(servingName, g, b.position(), scanSpecs.get(g)).thenAccept(sc -> {
            if (!alive()) {
              return;
            }
            if (sc == null) {
              done(TxnRecord.Status.ABORTED);
              return;
            }
            scanned.put(g, sc);
            // What a scan found is a read of that version (the keys it found nothing at are
            // judged in the group's own check, against the ranges its entry carries).
            for (SimClient.Scanned s : sc) {
              vs.putAll(s.versions());
            }
            versions.put(g, vs);
            stage(i + 1);
          });
        });
      });
    });
  }

  private LogEntry entryFor(String g, XgStep step) {
    TreeSet<String> rs = new TreeSet<>(readKeys.get(g));
    TreeMap<String, Mutation> ws = new TreeMap<>(writes.get(g));
    if (step.kind() == XgStep.Kind.DECIDE) {
      String dk = XgStep.decisionKey(txnId);
      rs.add(dk);
      ws.put(dk, Mutation.put(XgStep.COMMIT_VALUE));
    }
    return new LogEntry(g.equals(groups.get(0)) ? txnId : txnId + "@" + g,
        sim.cfg.dcs().get(client.home), begun.get(g).position(), rs,
        client.entryRanges(scanned.get(g)), ws, step);
  }

  private void commit() {
    if (!materializeUpdates()) {
      done(TxnRecord.Status.ABORTED);
      return;
    }
    boolean readOnlyTxn = writes.values().stream().allMatch(Map::isEmpty);
    // The lock rule against every group's locks at its read position.
    for (String g : groups) {
      LogEntry probe = new LogEntry(txnId, sim.cfg.dcs().get(client.home),
          begun.get(g).position(), new TreeSet<>(readKeys.get(g)),
          client.entryRanges(scanned.get(g)), writes.get(g));
      Optional<XgLocks.Lock> lock = begun.get(g).locks().blocking(probe);
      if (lock.isPresent() && sim.plant != Simulator.XgPlant.IGNORE_LOCKS) {
        client.meetLock(g, lock.get());
        done(TxnRecord.Status.ABORTED);
        return;
      }
    }
    if (readOnlyTxn) {
      validate();
      return;
    }
    long deadline = client.nowMillis() + sim.lockTimeoutMicros / 1000;
    String c = groups.get(0);
    List<String> others = groups.subList(1, groups.size());
    List<CompletableFuture<Outcome>> fs = new ArrayList<>();
    for (String g : others) {
      fs.add(client.propose(g, entryFor(g, XgStep.prepare(txnId, groups, deadline)), servingName,
          client.leaderOf(begun.get(g))));
    }
    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).handle((v, t) -> null)
        .thenRun(() -> {
          if (!alive()) {
            return;
          }
          boolean all = true;
          for (int i = 0; i < fs.size(); i++) {
            Outcome o = fs.get(i).isCompletedExceptionally() ? null : fs.get(i).join();
            if (o != null && o.status() == Outcome.Status.COMMITTED) {
              client.noteCommit(others.get(i), o.position());
            } else {
              all = false;
            }
          }
          if (!all && sim.plant != Simulator.XgPlant.DECIDE_WITHOUT_EVERY_PREPARE) {
            done(TxnRecord.Status.ABORTED);
            release();
            return;
          }
          if (maybeCrash()) {
            return; // Between PREPARE and DECIDE: the locks wait for a reader.
          }
          decide(c);
        });
  }

  private void decide(String c) {
    client.propose(c, entryFor(c, XgStep.decide(txnId, groups, true)), servingName,
        client.leaderOf(begun.get(c))).handle((o, t) -> o).thenAccept(o -> {
          if (!alive()) {
            return;
          }
          Outcome.Status st = o == null ? Outcome.Status.UNKNOWN : o.status();
          if (st == Outcome.Status.COMMITTED) {
            client.noteCommit(c, o.position());
            committedNow();
          } else if (st == Outcome.Status.ABORTED) {
            done(TxnRecord.Status.ABORTED);
            release();
          } else {
            client.settle(servingName, txnId, groups, 3).thenAccept(d -> {
              if (!alive()) {
                return;
              }
              if (d == null) {
                done(TxnRecord.Status.UNKNOWN);
              } else if (d.get()) {
                committedNow();
              } else {
                done(TxnRecord.Status.ABORTED);
                release();
              }
            });
          }
        });
  }

  private void committedNow() {
    sim.latency.recordValue(Math.max(0, sim.events.now() - started));
    done(TxnRecord.Status.COMMITTED);
    if (sim.cfg.faults().crashes() && client.rng.nextDouble() < 0.1) {
      // The client dies between DECIDE and RESOLVE (its next transaction is another life):
      // the first reader that meets the locks resolves them.
      sim.xg.crashed++;
      return;
    }
    for (String g : groups.subList(1, groups.size())) {
      client.resolve(servingName, g, XgStep.resolve(txnId, groups, true), true, writes.get(g), 3);
    }
  }

  /** T will never commit: decide ABORT, then release every PREPARE that may be in. */
  private void release() {
    client.settle(servingName, txnId, groups, 3).thenAccept(d -> {
      if (d != null && d.isPresent() && !d.get()) {
        for (String g : groups.subList(1, groups.size())) {
          client.resolve(servingName, g, XgStep.resolve(txnId, groups, false), false,
              new TreeMap<>(), 3);
        }
      }
    });
  }

  /** With client crashes on, dies here now and then (and comes back a second later). */
  private boolean maybeCrash() {
    if (!sim.cfg.faults().crashes() || client.rng.nextDouble() >= 0.1) {
      return false;
    }
    client.epoch++;
    sim.xg.crashed++;
    sim.crashed++;
    record(TxnRecord.Status.CRASHED, false);
    int now = client.epoch;
    sim.events.after(1_000_000, () -> {
      if (now == client.epoch) {
        client.scheduleNext();
      }
    });
    return true;
  }

  /** Read-only: a VALIDATE (its reads, no writes) chosen in every group it read. */
  private void validate() {
    List<CompletableFuture<Outcome>> fs = new ArrayList<>();
    List<String> read = new ArrayList<>();
    for (String g : groups) {
      if (!readsIn(g)) {
        continue;
      }
      read.add(g);
      LogEntry v = new LogEntry(txnId + "@" + g, sim.cfg.dcs().get(client.home),
          begun.get(g).position(), new TreeSet<>(readKeys.get(g)),
          client.entryRanges(scanned.get(g)), new TreeMap<>(), XgStep.validate(txnId, groups));
      fs.add(sim.plant == Simulator.XgPlant.SKIP_READ_ONLY_VALIDATION
          ? CompletableFuture.completedFuture(null)
          : client.propose(g, v, servingName, client.leaderOf(begun.get(g))).handle((o, t) -> o));
    }
    CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).thenRun(() -> {
      if (!alive()) {
        return;
      }
      boolean ok = true;
      for (int i = 0; i < fs.size(); i++) {
        Outcome o = fs.get(i).join();
        if (o != null && o.status() == Outcome.Status.COMMITTED) {
          client.noteCommit(read.get(i), o.position());
        } else if (sim.plant != Simulator.XgPlant.SKIP_READ_ONLY_VALIDATION) {
          ok = false;
        }
      }
      sim.xg.readOnly += ok ? 1 : 0;
      done(ok ? TxnRecord.Status.COMMITTED : TxnRecord.Status.ABORTED);
    });
  }

  private void done(TxnRecord.Status status) {
    switch (status) {
      case COMMITTED -> sim.xg.committed++;
      case ABORTED -> sim.xg.aborted++;
      default -> sim.xg.unknown++;
    }
    record(status, writes.values().stream().allMatch(Map::isEmpty));
    client.scheduleNext();
  }

  private void record(TxnRecord.Status status, boolean readOnlyTxn) {
    sim.observations.add(new CrossGroupChecker.Observation(txnId, status,
        new TreeSet<>(groups), new TreeMap<>(versions), readOnlyTxn));
  }
}
