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
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * One simulated client of a {@link Simulator} run: begins its transactions at its home DC (or
 * any reachable DC while home is down) with its session positions as minimum read positions,
 * runs their operations, reads at the read position with one read request per group and scans
 * its ranges there in pages ({@link SimConfig#scanShare}), and commits through the shipped
 * {@link ProposerDriver} or {@link LeaderSubmit}; a share of its transactions span several
 * groups ({@link SimCrossGroupTxn}). Crashes in mid-commit when the fault mix says so. Runs on
 * the simulation's thread, driven by its events.
 *
 * <p><b>Range reads.</b> A read operation is a scan with probability {@code scanShare} (drawn
 * only when it is above 0, so that runs without scans replay as before): a range over the
 * attribute keys around the key the operation drew ({@link #drawScan}), sometimes stopped by a
 * small limit and sometimes reversed, asked in pages of a random size. What was read — the
 * range to its end, or through the last key the limit stopped at — joins the entry's
 * {@link LogEntry#readRanges} and the history's {@link TxnRecord#scans}, as the client
 * library's {@code Transaction.scan} does. Own writes are not merged into what a scan returns:
 * a simulated transaction never looks at what it read, and the history records only what the
 * store served, as the client library's history does.
 *
 * <p><b>Counters and counting sets.</b> With {@link SimConfig#updateShare} above 0 (drawn only
 * then), a share of its writes are adds and set updates, buffered as the client library's
 * {@code Transaction} buffers them ({@link SimUpdates#buffer}), and as large a share of its
 * reads read a counter or a set: a key the transaction only updated is read from the store and
 * joins the read set, as {@code Transaction.get} reads it. After a commit of an entry with an
 * update it asks a service whether the updates applied ({@link SimUpdates#ask}, as
 * {@code TxnClient.checkUpdatesApplied}) and records the transaction COMMITTED, ABORTED at its
 * position (refused there: in the log with no effect), or UNKNOWN at its position (no DC said).
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

  /** The key an operation touches: one of the attribute keys, uniform or zipfian. */
  String drawKey() {
    return "attr" + (sim.zipf != null ? sim.zipf.next(rng) : rng.nextInt(sim.cfg.attributes()));
  }

  /**
   * A range read as drawn: the range, the most entries it returns ({@code limit}), the entries
   * asked per page, and the direction.
   */
  record ScanSpec(KeyRange range, int limit, int pageSize, boolean reversed) {}

  /** A range read as served: what the history records of it, and each entry's version. */
  record Scanned(TxnRecord.ScanRead read, Map<String, Long> versions) {}

  /** No limit a scan of the simulated attribute keys can reach. */
  static final int NO_LIMIT = 10_000;

  /** Is a read operation a scan rather than a read of one key? Draws only with scans on. */
  boolean scanNext() {
    return sim.cfg.scanShare() > 0 && rng.nextDouble() < sim.cfg.scanShare();
  }

  /**
   * A scan around {@code key}, the attribute key its operation drew: a third of them the keys
   * with {@code key} as their prefix ({@code attr1}: attr1, attr10-attr19, ...), a third between
   * {@code key} and another drawn key (the higher one included or not), a third from {@code key}
   * to the group's end or from the group's start through {@code key}; half of them with a
   * limit of 1-3 entries (the part read then stops at the last key returned), half reversed,
   * asked in pages of 1-4 entries half of the time.
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
    int pageSize = rng.nextBoolean() ? 1 + rng.nextInt(4) : NO_LIMIT;
    return new ScanSpec(range, limit, pageSize, rng.nextBoolean());
  }

  /**
   * The ranges an entry carries for {@code scans}: every range as far as it was read, merged;
   * none with the planted bug {@link Simulator.RangePlant#DROP_RANGES_FROM_ENTRIES}.
   */
  List<KeyRange> entryRanges(List<Scanned> scans) {
    if (sim.rangePlant == Simulator.RangePlant.DROP_RANGES_FROM_ENTRIES) {
      return List.of();
    }
    return KeyRange.normalize(scans.stream().map(sc -> sc.read().range()).toList());
  }

  static List<TxnRecord.ScanRead> reads(List<Scanned> scans) {
    return scans.stream().map(Scanned::read).toList();
  }

  /** The values of {@code keys} at {@code position}, or null if the read failed. */
  CompletableFuture<Map<String, Optional<byte[]>>> readKeys(String servingName, String group,
      long position, List<String> keys) {
    if (keys.isEmpty()) {
      return CompletableFuture.completedFuture(new LinkedHashMap<>());
    }
    return transport.request(servingName, new Message.ReadRequest(group, position, keys),
        requestTimeout()).handle((reply, failure) -> {
          if (reply instanceof Message.ReadReply r) {
            Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
            for (String k : keys) {
              reads.put(k, Optional.ofNullable(r.values().get(k)));
            }
            return reads;
          }
          noteFailedRead(reply);
          return null;
        });
  }

  private void noteFailedRead(Message reply) {
    if (reply instanceof Message.ErrorReply err && err.code() == Message.ErrorCode.TOO_OLD) {
      // The GC watermark passed the read position: a retryable abort.
      sim.tooOldReads++;
    }
  }

  /** Runs {@code specs} one after the other: the scans, or null if one failed. */
  CompletableFuture<List<Scanned>> scanAll(String servingName, String group, long position,
      List<ScanSpec> specs) {
    CompletableFuture<List<Scanned>> all = CompletableFuture.completedFuture(new ArrayList<>());
    for (ScanSpec spec : specs) {
      all = all.thenCompose(done -> done == null ? CompletableFuture.completedFuture(null)
          : scan(servingName, group, position, spec).thenApply(sc -> {
            if (sc == null) {
              return null;
            }
            done.add(sc);
            return done;
          }));
    }
    return all;
  }

  /**
   * One range read at {@code position}, page by page as the client library reads: each page
   * asks for the rest of the range not read yet; an incomplete page names the last key it
   * examined, after which (before which, reversed) the next page goes on. Completes with the
   * scan — the range as far as it was read and the entries found there — or null if a page
   * failed.
   */
  CompletableFuture<Scanned> scan(String servingName, String group, long position,
      ScanSpec spec) {
    CompletableFuture<Scanned> done = new CompletableFuture<>();
    page(servingName, group, position, spec, spec.range(), new TreeMap<>(KeyRange.ORDER),
        new TreeMap<>(KeyRange.ORDER), done);
    return done;
  }

  private void page(String servingName, String group, long position, ScanSpec spec,
      KeyRange unread, TreeMap<String, byte[]> served, TreeMap<String, Long> versions,
      CompletableFuture<Scanned> done) {
    int ask = Math.min(spec.pageSize(), spec.limit() - served.size());
    transport.request(servingName,
        new Message.ScanRequest(group, position, unread, ask, spec.reversed()), requestTimeout())
        .whenComplete((reply, failure) -> {
          if (!(reply instanceof Message.ScanReply page)) {
            noteFailedRead(reply);
            done.complete(null);
            return;
          }
          for (Message.ScanItem i : page.items()) {
            if (unread.contains(i.key())) {
              served.put(i.key(), i.value());
              versions.put(i.key(), i.version());
            }
          }
          KeyRange part = spec.range();
          if (!page.complete()) {
            String last = page.lastKey();
            Optional<KeyRange> next = spec.reversed() ? unread.before(last) : unread.after(last);
            if (next.isPresent() && served.size() < spec.limit()) {
              page(servingName, group, position, spec, next.get(), served, versions, done);
              return;
            }
            if (next.isPresent()) {
              // The limit stopped the scan: it read up to the last key returned.
              part = spec.reversed() ? spec.range().startingAt(last)
                  : spec.range().through(last);
            }
          }
          KeyRange read = part;
          served.keySet().removeIf(k -> !read.contains(k));
          versions.keySet().removeIf(k -> !read.contains(k));
          sim.scans++;
          done.complete(new Scanned(new TxnRecord.ScanRead(read, served), versions));
        });
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

  /**
   * The transaction's operations, then one read request for the keys it read and its scans,
   * one after the other.
   */
  private void body(String group, String txnId, String servingName, Message.BeginReply begun,
      OptionalInt leader) {
    long readPos = begun.position();
    List<String> readKeys = new ArrayList<>();
    // The keys of readKeys the entry carries: all of them, but with the planted bug.
    TreeSet<String> readSet = new TreeSet<>();
    List<ScanSpec> scanSpecs = new ArrayList<>();
    TreeMap<String, Mutation> writes = new TreeMap<>();
    for (int op = 0; op < sim.cfg.opsPerTxn(); op++) {
      String key = drawKey();
      if (rng.nextDouble() < sim.cfg.readFraction()) {
        if (scanNext()) {
          scanSpecs.add(drawScan(key));
          continue;
        }
        if (updateNext()) {
          key = SimUpdates.drawRead(rng, writes);
          sim.updates.reads++;
        }
        Mutation own = writes.get(key);
        // A key this transaction put or deleted is read from its buffer; one it only updated
        // is read from the store, its own update applied (Transaction.get): it joins the read
        // set, as any key read from the store.
        if ((own == null || own.isUpdate()) && !readKeys.contains(key)) {
          readKeys.add(key);
          if (own == null || !sim.updatedReadPlant) {
            readSet.add(key);
          }
        }
      } else if (updateNext()) {
        SimUpdates.buffer(writes, SimUpdates.draw(rng, txnId));
      } else {
        writes.put(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
      }
    }
    int e = epoch;
    sim.events.after(sim.cfg.opsPerTxn() * sim.cfg.opMicros(), () -> {
      if (e != epoch) {
        return;
      }
      readKeys(servingName, group, readPos, readKeys).thenAccept(reads -> {
        if (e != epoch) {
          return;
        }
        if (reads == null) {
          abort(group, txnId, readPos);
          return;
        }
        scanAll(servingName, group, readPos, scanSpecs).thenAccept(scans -> {
          if (e != epoch) {
            return;
          }
          if (scans == null) {
            abort(group, txnId, readPos);
            return;
          }
          commit(group, txnId, servingName, begun, reads, readSet, scans, writes, leader);
        });
      });
    });
  }

  /**
   * Is an operation one on the counters and counting sets ({@link SimUpdates})? Draws only
   * with them on ({@link SimConfig#updateShare} above 0), so that runs without them replay as
   * before.
   */
  boolean updateNext() {
    return sim.cfg.updateShare() > 0 && rng.nextDouble() < sim.cfg.updateShare();
  }

  void commit(String group, String txnId, String servingName, Message.BeginReply begun,
      Map<String, Optional<byte[]>> reads, TreeSet<String> readSet, List<Scanned> scanned,
      TreeMap<String, Mutation> writes, OptionalInt leader) {
    String client = "c" + id;
    long readPos = begun.position();
    List<TxnRecord.ScanRead> scans = reads(scanned);
    List<KeyRange> ranges = entryRanges(scanned);
    if (!begun.locks().isEmpty() && sim.plant != Simulator.XgPlant.IGNORE_LOCKS) {
      // The lock rule (ARCHITECTURE 10) against the locks at the read position, for the keys
      // and the ranges read.
      LogEntry probe = new LogEntry(txnId, sim.cfg.dcs().get(home), readPos, readSet, ranges,
          writes);
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
          reads, writes, -1).withScans(scans));
      scheduleNext();
      return;
    }
    LogEntry entry = new LogEntry(txnId, sim.cfg.dcs().get(home), readPos, readSet, ranges,
        writes);
    long started = sim.events.now();
    pending = new TxnRecord(txnId, client, TxnRecord.Status.CRASHED, readPos, reads, writes, -1)
        .withScans(scans);
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
        finished(group, o, started, entry, reads, scans);
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

  private void finished(String group, Outcome o, long started, LogEntry entry,
      Map<String, Optional<byte[]>> reads, List<TxnRecord.ScanRead> scans) {
    long readPos = entry.readPosition();
    SortedMap<String, Mutation> writes = entry.writes();
    String txnId = entry.txnId();
    inFlight = null;
    pending = null;
    Outcome.Status s = o == null ? Outcome.Status.UNKNOWN : o.status();
    switch (s) {
      case COMMITTED -> {
        noteCommit(group, o.position());
        int e = epoch;
        updatesApplied(group, entry, o.position()).thenAccept(status -> {
          if (e != epoch) {
            return;
          }
          if (status == TxnRecord.Status.COMMITTED) {
            sim.commitsByRound.merge(o.promotions(), 1, Integer::sum);
            sim.latency.recordValue(Math.max(0, sim.events.now() - started));
          } else if (status == TxnRecord.Status.UNKNOWN) {
            sim.unknown++;
          }
          sim.historyOf(group).add(outcomeAt(entry, reads, status, o.position())
              .withScans(scans));
          scheduleNext();
        });
        return;
      }
      case ABORTED -> {
        sim.aborted++;
        sim.historyOf(group).add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED,
            readPos, reads, writes, -1).withScans(scans));
        scheduleNext();
        return;
      }
      default -> sim.unknown++;
    }
    if (o != null) {
      // The positions the client is told the entry can still be chosen at; the planted bug
      // reports only the first position it was submitted for, as leader mode once did.
      long from = sim.unknownPlant ? readPos + 1 : o.firstPosition();
      long through = sim.unknownPlant ? readPos + 1 : o.position();
      if (!sim.unknownPlant && rng.nextBoolean()) {
        // Half the unknown outcomes are settled later, as TxnClient.settle does; the history
        // then holds the settled outcome, which the checker holds against the log.
        sim.events.after(2 * sim.phaseTimeout.toNanos() / 1000, () -> settleLater(group, entry,
            reads, scans, from, through));
      } else {
        sim.historyOf(group).add(TxnRecord.unknownAt(txnId, "c" + id, readPos, reads, writes,
            from, through).withScans(scans));
      }
    } else {
      sim.historyOf(group).add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.UNKNOWN, readPos,
          reads, writes, -1).withScans(scans));
    }
    scheduleNext();
  }

  /**
   * For {@code entry}, committed at {@code position}: COMMITTED when it holds no update;
   * otherwise what a service says of its updates ({@link SimUpdates#ask}, as
   * {@code TxnClient.checkUpdatesApplied}): COMMITTED when they applied, ABORTED when the entry
   * was refused (in the log at its position, with no effect), UNKNOWN when no DC said.
   */
  private CompletableFuture<TxnRecord.Status> updatesApplied(String group, LogEntry entry,
      long position) {
    if (!entry.hasUpdates()) {
      return CompletableFuture.completedFuture(TxnRecord.Status.COMMITTED);
    }
    int first = servingDc() < 0 ? home : servingDc();
    return SimUpdates.ask(this, first, group, position, entry.txnId()).thenApply(reply -> {
      if (reply.isEmpty() || !reply.get().found()) {
        // In the log at its position (the commit learned it chosen there), its effect unknown;
        // a DC that finds no entry of it there is faulty, which the checker judges.
        sim.updates.unknown++;
        return TxnRecord.Status.UNKNOWN;
      }
      if (!reply.get().refused().isEmpty()) {
        sim.updates.refused++;
        return TxnRecord.Status.ABORTED;
      }
      sim.updates.entries++;
      sim.updates.ops += SimUpdates.count(entry.writes());
      return TxnRecord.Status.COMMITTED;
    });
  }

  /**
   * The record of {@code entry} in the log at {@code position} with {@code status}
   * ({@link #updatesApplied}): COMMITTED there; ABORTED there (refused); UNKNOWN at exactly that
   * position.
   */
  private TxnRecord outcomeAt(LogEntry entry, Map<String, Optional<byte[]>> reads,
      TxnRecord.Status status, long position) {
    String client = "c" + id;
    return switch (status) {
      case COMMITTED, ABORTED -> new TxnRecord(entry.txnId(), client, status,
          entry.readPosition(), reads, entry.writes(), position);
      default -> TxnRecord.unknownAt(entry.txnId(), client, entry.readPosition(), reads,
          entry.writes(), position, position);
    };
  }

  /** Settles an unknown outcome and records what the settle says instead of UNKNOWN. */
  private void settleLater(String group, LogEntry entry, Map<String, Optional<byte[]>> reads,
      List<TxnRecord.ScanRead> scans, long from, long through) {
    leaderSubmit.settle(group, entry, from, through).whenComplete((o, t) -> {
      String client = "c" + id;
      if (o != null && o.status() == Outcome.Status.COMMITTED) {
        sim.settled.committed++;
        // TxnClient.settle asks whether the updates applied, as a commit does.
        updatesApplied(group, entry, o.position()).thenAccept(status -> sim.historyOf(group)
            .add(outcomeAt(entry, reads, status, o.position()).withScans(scans)));
        return;
      }
      TxnRecord r;
      if (o != null && o.status() == Outcome.Status.ABORTED) {
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
      sim.historyOf(group).add(r.withScans(scans));
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
