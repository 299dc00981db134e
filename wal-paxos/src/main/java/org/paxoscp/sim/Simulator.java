package org.paxoscp.sim;

import java.nio.charset.StandardCharsets;
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
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Deterministic simulation of a multi-DC deployment (ARCHITECTURE section 8): D DCs, each an
 * acceptor and log applier over its own in-memory store, C clients running transactions of the
 * paper's shape against one entity group, and a faulty WAN, all driven by one seeded RNG in
 * virtual time on the calling thread. The same {@link SimConfig} (including its seed) replays the
 * same run exactly.
 *
 * <p>When the workload is done the network is healed and every position up to the highest one
 * touched is learned at every DC (a learner re-proposes the highest-ballot vote or a no-op), and
 * the {@link SerializabilityChecker} judges every DC's log against every client's history.
 */
public final class Simulator {
  static final String GROUP = "sim-group";
  private static final long MAX_VIRTUAL_MICROS = 48L * 3600 * 1_000_000;
  private static final long MAX_EVENTS = 200_000_000L;

  private final SimConfig cfg;
  private final ProposerFactory proposers;
  private final EventQueue events = new EventQueue();
  private final SplittableRandom random;
  private final SimNetwork network;
  private final List<SimDc> dcs = new ArrayList<>();
  private final List<String> applyConflicts = new ArrayList<>();
  private final List<TxnRecord> history = new ArrayList<>();
  private final SortedMap<Integer, Integer> commitsByRound = new TreeMap<>();
  private final Histogram latency = new Histogram(3_600_000_000L, 3);
  private final Zipf zipf;
  private int readOnly;
  private int aborted;
  private int unknown;
  private int crashed;
  private int clientsActive;
  private long nextProposerId = 1;
  private long maxPosition;
  private java.util.function.Consumer<String> trace;
  /** Log and version GC (section 7), or null when off. */
  private SimGc gc;
  /** Per DC: the chosen values its collector removed, kept for the checker. */
  private final List<SortedMap<Long, LogValue>> collectedLogs = new ArrayList<>();
  private long collectedPositions;
  private int tooOldReads;

  public Simulator(SimConfig cfg) {
    this(cfg, ProposerFactory.STANDARD);
  }

  public Simulator(SimConfig cfg, ProposerFactory proposers) {
    this.cfg = cfg;
    this.proposers = proposers;
    cfg.latency().validate(cfg.dcs());
    this.random = new SplittableRandom(cfg.seed());
    this.network = new SimNetwork(events, random.split(), cfg.dcs(), cfg.latency(), cfg.jitter(),
        cfg.faults());
    this.zipf = cfg.zipfian() ? new Zipf(cfg.attributes(), 0.99) : null;
    for (int i = 0; i < cfg.dcs().size(); i++) {
      SimDc dc = new SimDc(i, cfg.dcs().get(i), GROUP, applyConflicts);
      dc.connect(this::dcToDc);
      dcs.add(dc);
      collectedLogs.add(new TreeMap<>());
    }
  }

  /** Prints every protocol message and reply to {@code sink} (for replaying a failing seed). */
  public Simulator trace(java.util.function.Consumer<String> sink) {
    this.trace = sink;
    return this;
  }

  private void trace(String fmt, Object... args) {
    if (trace != null) {
      trace.accept(String.format("%10.3fms ", events.now() / 1000.0) + String.format(fmt, args));
    }
  }

  /** Runs log and version GC concurrently with the workload (see {@link SimGc}). */
  public Simulator withGc(SimGc gc) {
    this.gc = gc;
    return this;
  }

  /** Positions removed from WAL tables, summed over DCs (0 without GC). */
  public long collectedPositions() {
    return collectedPositions;
  }

  /** Reads refused with TOO_OLD (each aborts its transaction retryably). */
  public int tooOldReads() {
    return tooOldReads;
  }

  /** Paxos requests refused with TOO_OLD, summed over DCs. */
  public long tooOldRequests() {
    return dcs.stream().mapToLong(d -> d.tooOld).sum();
  }

  /** The lowest GC watermark over the DCs. */
  public long minGcWatermark() {
    return dcs.stream().mapToLong(d -> LogCollector.gcWatermark(d.store, GROUP)).min().orElse(0);
  }

  private void scheduleGc() {
    events.after(gc.intervalMicros(), () -> {
      collectRound();
      if (clientsActive > 0) {
        scheduleGc();
      }
    });
  }

  /**
   * One round at every DC that can hear from every other DC: the watermark waits for all DCs.
   * Reading the applied watermarks directly gives their current values, never older ones, so
   * this is at least as aggressive as asking over the network.
   */
  private void collectRound() {
    for (SimDc dc : dcs) {
      boolean all = !network.isDown(dc.index);
      for (SimDc other : dcs) {
        all &= !network.isDown(other.index) && network.connected(dc.index, other.index);
      }
      if (!all) {
        continue;
      }
      long minApplied = dcs.stream().mapToLong(SimDc::readPosition).min().orElse(0);
      LogCollector collector = new LogCollector(dc.store);
      collector.advance(GROUP, LogCollector.candidate(minApplied, gc.retention()));
      SortedMap<Long, LogValue> archive = collectedLogs.get(dc.index);
      LogCollector.Collected c = collector.collect(GROUP, Integer.MAX_VALUE, archive::put);
      collectedPositions += c.positions();
    }
  }

  /** The chosen value of a position at a DC, from its WAL or from what its collector removed. */
  private Optional<LogValue> known(SimDc dc, long position) {
    LogValue archived = collectedLogs.get(dc.index).get(position);
    if (archived != null) {
      return Optional.of(archived);
    }
    try {
      return dc.acceptor.chosen(GROUP, position);
    } catch (TooOldException e) {
      throw new IllegalStateException("DC " + dc.name + " collected position " + position
          + " without recording it", e);
    }
  }

  /** Runs the workload, the recovery phase and the checker. */
  public SimResult run() {
    int perClient = cfg.txns() / cfg.clients();
    int extra = cfg.txns() % cfg.clients();
    for (int c = 0; c < cfg.clients(); c++) {
      int n = perClient + (c < extra ? 1 : 0);
      if (n > 0) {
        Client client = new Client(c, c % dcs.size(), n, random.split());
        clientsActive++;
        client.scheduleNext();
      }
    }
    if (cfg.faults().partitions()) {
      schedulePartition();
    }
    if (cfg.faults().outages()) {
      scheduleOutage();
    }
    if (gc != null) {
      scheduleGc();
    }
    boolean finished = events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS);
    if (finished) {
      network.healAll();
      finished = recover();
    }
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (SimDc dc : dcs) {
      SortedMap<Long, LogValue> log = new TreeMap<>();
      for (long p = 1; p <= maxPosition; p++) {
        Optional<LogValue> v = known(dc, p);
        if (v.isPresent()) {
          log.put(p, v.get());
        }
      }
      logs.put(dc.name, log);
    }
    CheckResult check = SerializabilityChecker.check(logs, history);
    int combinedPositions = 0;
    int combinedTxns = 0;
    int noops = 0;
    for (LogValue v : logs.get(dcs.get(0).name).values()) {
      if (v.entries().size() > 1) {
        combinedPositions++;
        combinedTxns += v.entries().size();
      }
      noops += v.isNoop() ? 1 : 0;
    }
    return new SimResult(cfg, commitsByRound, readOnly, aborted, unknown, crashed,
        combinedPositions, combinedTxns, noops, maxPosition, latency, check,
        List.copyOf(applyConflicts), finished, events.now(), network.sent());
  }

  // ---- recovery -------------------------------------------------------------------------

  /** Learns every position up to the highest one touched at every DC, on a healed network. */
  private boolean recover() {
    for (long p = 1; p <= maxPosition; p++) {
      final long position = p;
      boolean everywhere = dcs.stream().allMatch(d -> known(d, position).isPresent());
      if (everywhere) {
        continue;
      }
      Proposer learner = Proposer.learner(cfg.proposer(), GROUP, ProposerId.of(nextProposerId++), p,
          random.split());
      Runner r = new Runner(0, learner, () -> { });
      r.handle(learner.start(events.now()));
      if (!events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS) || !learner.isDone()
          || learner.outcome().status() != Outcome.Status.LEARNED) {
        return false;
      }
    }
    for (SimDc dc : dcs) {
      dc.readPosition();
    }
    return true;
  }

  // ---- network plumbing -------------------------------------------------------------------

  private void dcToDc(int from, int to, PaxosMessage m) {
    network.send(from, to, true, () -> dcs.get(to).handle(from, m,
        reply -> network.send(to, from, true,
            () -> dcs.get(from).handle(to, reply, ignored -> { }, dcs.size())), dcs.size()));
  }

  /** Drives one proposer: its messages go out from {@code location}, its replies come back. */
  private final class Runner {
    final int location;
    final Proposer proposer;
    final Runnable onDone;
    boolean cancelled;

    Runner(int location, Proposer proposer, Runnable onDone) {
      this.location = location;
      this.proposer = proposer;
      this.onDone = onDone;
    }

    void handle(List<Proposer.Output> outputs) {
      if (cancelled) {
        return;
      }
      for (Proposer.Output o : outputs) {
        if (o instanceof Proposer.Output.Send s) {
          maxPosition = Math.max(maxPosition, s.message().position());
          int dc = s.dc();
          trace("p%d@%d -> %s: %s", proposer.hashCode() % 1000, location, cfg.dcs().get(dc),
              s.message());
          network.send(location, dc, true, () -> events.after(cfg.serviceMicros(),
              () -> dcs.get(dc).handle(location, s.message(),
                  reply -> network.send(dc, location, false, () -> {
                    trace("p%d@%d <- %s: %s", proposer.hashCode() % 1000, location,
                        cfg.dcs().get(dc), reply);
                    if (!cancelled && !proposer.isDone()) {
                      handle(proposer.onReply(dc, reply, events.now()));
                    }
                  }), dcs.size())));
        } else if (o instanceof Proposer.Output.StartTimer t) {
          events.after(t.delayMicros(), () -> {
            if (!cancelled && !proposer.isDone()) {
              handle(proposer.onTimer(t.timerId(), events.now()));
            }
          });
        }
      }
      if (proposer.isDone() && !cancelled) {
        cancelled = true;
        onDone.run();
      }
    }
  }

  // ---- faults -----------------------------------------------------------------------------

  private void schedulePartition() {
    events.after(500_000 + random.nextLong(2_500_000), () -> {
      if (clientsActive == 0) {
        return;
      }
      network.setIsolated(random.nextInt(dcs.size()));
      events.after(200_000 + random.nextLong(1_800_000), () -> {
        network.setIsolated(-1);
        schedulePartition();
      });
    });
  }

  private void scheduleOutage() {
    events.after(500_000 + random.nextLong(3_000_000), () -> {
      if (clientsActive == 0) {
        return;
      }
      int dc = random.nextInt(dcs.size());
      network.setDown(dc, true);
      events.after(200_000 + random.nextLong(1_800_000), () -> {
        network.setDown(dc, false);
        scheduleOutage();
      });
    });
  }

  // ---- clients ----------------------------------------------------------------------------

  private final class Client {
    final int id;
    final int home;
    final SplittableRandom rng;
    int remaining;
    int txnSeq;
    long nextArrival;
    /** Incremented on a crash: callbacks of the crashed incarnation are ignored. */
    int epoch;
    Runner inFlight;
    TxnRecord pending;

    Client(int id, int home, int txns, SplittableRandom rng) {
      this.id = id;
      this.home = home;
      this.remaining = txns;
      this.rng = rng;
      // Staggered starts within the first inter-arrival period.
      this.nextArrival = (long) (rng.nextDouble() * 1_000_000 / cfg.ratePerClient());
    }

    void scheduleNext() {
      if (remaining == 0) {
        clientsActive--;
        return;
      }
      remaining--;
      long start = Math.max(events.now(), nextArrival);
      nextArrival = start + (long) (-Math.log(1 - rng.nextDouble()) * 1_000_000
          / cfg.ratePerClient());
      int e = epoch;
      events.at(start, () -> {
        if (e == epoch) {
          begin();
        }
      });
    }

    /** Picks the DC that serves this transaction's begin and reads: home, else any reachable. */
    private int servingDc() {
      if (!network.isDown(home)) {
        return home;
      }
      for (int i = 0; i < dcs.size(); i++) {
        if (!network.isDown(i) && network.connected(home, i)) {
          return i;
        }
      }
      return -1;
    }

    void begin() {
      String txnId = "c" + id + "-t" + (txnSeq++);
      int serving = servingDc();
      if (serving < 0) {
        aborted++;
        history.add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED, 0, Map.of(),
            new TreeMap<>(), -1));
        scheduleNext();
        return;
      }
      SimDc dc = dcs.get(serving);
      long readPos = dc.readPosition();
      Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
      TreeMap<String, Mutation> writes = new TreeMap<>();
      for (int op = 0; op < cfg.opsPerTxn(); op++) {
        String key = "attr" + (zipf != null ? zipf.next(rng) : rng.nextInt(cfg.attributes()));
        if (rng.nextDouble() < cfg.readFraction()) {
          if (!writes.containsKey(key) && !reads.containsKey(key)) {
            // With GC the reads happen at commit time (readLate), so collection can overtake them.
            reads.put(key, gc == null ? dc.applier.read(GROUP, key, readPos) : Optional.empty());
          }
        } else {
          writes.put(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
        }
      }
      OptionalInt leader = readPos == 0 ? OptionalInt.empty()
          : dc.acceptor.chosen(GROUP, readPos).map(v -> Proposer.leaderAfter(cfg.dcs(), v)).orElse(OptionalInt.empty());
      // The begin round trip to the serving DC, then the operations.
      long bodyMicros = cfg.latency().rttMicros(cfg.dcs().get(home), cfg.dcs().get(serving))
          + cfg.opsPerTxn() * cfg.opMicros();
      int e = epoch;
      events.after(bodyMicros, () -> {
        if (e == epoch) {
          if (gc != null && !readLate(dc, txnId, readPos, reads)) {
            return;
          }
          commit(txnId, readPos, reads, writes, leader);
        }
      });
    }

    /**
     * Performs the reads at the end of the transaction's body. A read at a position the GC
     * watermark has reached is refused with TOO_OLD: the transaction aborts (retryably).
     */
    private boolean readLate(SimDc dc, String txnId, long readPos,
        Map<String, Optional<byte[]>> reads) {
      LogApplier reader = gc.plantedReadBelowWatermark()
          ? new LogApplier(new WatermarkBlindStore(dc.store)) : dc.applier;
      try {
        for (String key : List.copyOf(reads.keySet())) {
          reads.put(key, reader.read(GROUP, key, readPos));
        }
        return true;
      } catch (TooOldException ex) {
        tooOldReads++;
        aborted++;
        history.add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED, readPos, Map.of(),
            new TreeMap<>(), -1));
        scheduleNext();
        return false;
      }
    }

    void commit(String txnId, long readPos, Map<String, Optional<byte[]>> reads,
        TreeMap<String, Mutation> writes, OptionalInt leader) {
      String client = "c" + id;
      if (writes.isEmpty()) {
        readOnly++;
        history.add(new TxnRecord(txnId, client, TxnRecord.Status.COMMITTED, readPos, reads,
            writes, -1));
        scheduleNext();
        return;
      }
      LogEntry entry = new LogEntry(txnId, cfg.dcs().get(home), readPos,
          new TreeSet<>(reads.keySet()), writes);
      Proposer proposer = proposers.create(cfg.proposer(), GROUP, ProposerId.of(nextProposerId++), entry,
          readPos + 1, leader, rng.split());
      long started = events.now();
      pending = new TxnRecord(txnId, client, TxnRecord.Status.CRASHED, readPos, reads, writes, -1);
      Runner runner = new Runner(home, proposer, () -> finished(proposer, started, readPos, reads,
          writes, txnId));
      inFlight = runner;
      if (cfg.faults().crashes() && rng.nextDouble() < 0.1) {
        long window = 3 * network.maxRttMicros() + 2 * cfg.serviceMicros() + 1;
        int e = epoch;
        events.after(rng.nextLong(window), () -> {
          if (e == epoch && inFlight == runner) {
            crash();
          }
        });
      }
      runner.handle(proposer.start(started));
    }

    private void finished(Proposer p, long started, long readPos,
        Map<String, Optional<byte[]>> reads, TreeMap<String, Mutation> writes, String txnId) {
      Outcome o = p.outcome();
      inFlight = null;
      pending = null;
      TxnRecord.Status status;
      long commitPos = -1;
      switch (o.status()) {
        case COMMITTED -> {
          status = TxnRecord.Status.COMMITTED;
          commitPos = o.position();
          commitsByRound.merge(o.promotions(), 1, Integer::sum);
          latency.recordValue(Math.max(0, events.now() - started));
        }
        case ABORTED -> {
          status = TxnRecord.Status.ABORTED;
          aborted++;
        }
        default -> {
          status = TxnRecord.Status.UNKNOWN;
          unknown++;
        }
      }
      history.add(new TxnRecord(txnId, "c" + id, status, readPos, reads, writes, commitPos));
      scheduleNext();
    }

    /** The client dies in mid-commit: its proposer stops; it comes back a second later. */
    private void crash() {
      epoch++;
      inFlight.cancelled = true;
      inFlight = null;
      history.add(pending);
      pending = null;
      crashed++;
      int e = epoch;
      events.after(1_000_000, () -> {
        if (e == epoch) {
          scheduleNext();
        }
      });
    }
  }
}
