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
import java.util.function.Consumer;
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Deterministic simulation of a multi-DC deployment (ARCHITECTURE section 8): D DCs, each served
 * by the shipped Transaction Service (its begin, reads at a read position, acceptor, grants,
 * APPLY, catch-up from peers and learner instances) over its own in-memory store; C clients
 * running transactions of the paper's shape against one entity group through the shipped
 * {@link ProposerDriver}; a faulty WAN; all driven by one seeded RNG in virtual time on the
 * calling thread. The same {@link SimConfig} (including its seed) replays the same run exactly.
 *
 * <p>A client begins at its home DC (or any reachable DC while home is down) with the position
 * of its last commit as the minimum read position, runs its operations, reads its keys at the
 * read position with one read request, and commits.
 *
 * <p>When the workload is done the network is healed and every DC's service catches up to the
 * highest position any message named (peers first, then learner instances, which decide a no-op
 * where nothing was chosen), and the {@link SerializabilityChecker} judges every DC's log against
 * every client's history.
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
  private SimCluster cluster;
  private final List<TxnRecord> history = new ArrayList<>();
  private final SortedMap<Integer, Integer> commitsByRound = new TreeMap<>();
  private final Histogram latency = new Histogram(3_600_000_000L, 3);
  private final Zipf zipf;
  private final Duration phaseTimeout;
  private int readOnly;
  private int aborted;
  private int unknown;
  private int crashed;
  private int clientsActive;
  private Consumer<String> trace;
  /** Log and version GC (section 7), or null when off. */
  private SimGc gc;
  private LeaderCombiner.Rules leaderRules = LeaderCombiner.Rules.SHIPPED;
  private boolean forceEviction;
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
    this.phaseTimeout = Duration.ofNanos(cfg.proposer().phaseTimeoutMicros() * 1000);
  }

  /** Prints every message and reply to {@code sink} (for replaying a failing seed). */
  public Simulator trace(Consumer<String> sink) {
    this.trace = sink;
    return this;
  }

  /** Runs log and version GC concurrently with the workload (see {@link SimGc}). */
  public Simulator withGc(SimGc gc) {
    this.gc = gc;
    return this;
  }

  /**
   * Every service instance empties its per-group caches after each request it handles
   * (ARCHITECTURE section 9: a service must stay correct whenever its caches are evicted).
   */
  public Simulator withForcedEviction() {
    this.forceEviction = true;
    return this;
  }

  /** How many times a service's caches were emptied by {@link #withForcedEviction} (0 without). */
  public long forcedEvictions() {
    return cluster == null ? 0 : cluster.forcedEvictions();
  }

  /** Services run leader combination with {@code rules} (tests plant bugs with it). */
  public Simulator withLeaderRules(LeaderCombiner.Rules rules) {
    this.leaderRules = rules;
    return this;
  }

  /** Positions removed from WAL tables, summed over DCs (0 without GC). */
  public long collectedPositions() {
    return cluster == null ? 0 : cluster.collectedPositions();
  }

  /** Reads refused with TOO_OLD (each aborts its transaction retryably). */
  public int tooOldReads() {
    return tooOldReads;
  }

  /** Paxos requests refused with TOO_OLD, summed over DCs. */
  public long tooOldRequests() {
    return cluster == null ? 0 : cluster.tooOldRequests();
  }

  /** The lowest GC watermark over the DCs. */
  public long minGcWatermark() {
    return cluster == null ? 0 : cluster.dcs().stream()
        .mapToLong(d -> LogCollector.gcWatermark(d.store, GROUP)).min().orElse(0);
  }

  // ---- the run ----------------------------------------------------------------------------

  /** Runs the workload, the recovery phase and the checker. */
  public SimResult run() {
    cluster = new SimCluster(cfg, events, network, random.split(), gc, leaderRules);
    if (forceEviction) {
      cluster.forceEviction();
    }
    if (trace != null) {
      cluster.trace(trace);
    }
    if (cfg.faults().twoInstances()) {
      cluster.start(cluster.dc(random.nextInt(cfg.dcs().size())));
    }
    int perClient = cfg.txns() / cfg.clients();
    int extra = cfg.txns() % cfg.clients();
    for (int c = 0; c < cfg.clients(); c++) {
      int n = perClient + (c < extra ? 1 : 0);
      if (n > 0) {
        Client client = new Client(c, c % cfg.dcs().size(), n, random.split());
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
    if (cfg.faults().restarts()) {
      scheduleRestart();
    }
    boolean finished = events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS);
    if (finished) {
      network.healAll();
      finished = recover();
    }
    long maxPosition = cluster.maxPosition();
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (SimCluster.Dc dc : cluster.dcs()) {
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
    for (LogValue v : logs.get(cfg.dcs().get(0)).values()) {
      if (v.entries().size() > 1) {
        combinedPositions++;
        combinedTxns += v.entries().size();
      }
      noops += v.isNoop() ? 1 : 0;
    }
    return new SimResult(cfg, commitsByRound, readOnly, aborted, unknown, crashed,
        combinedPositions, combinedTxns, noops, maxPosition, latency, check,
        cluster.conflicts(), finished, events.now(), network.sent(), cluster.exercised());
  }

  /** The chosen value of a position at a DC, from its WAL or from what its collector removed. */
  private Optional<LogValue> known(SimCluster.Dc dc, long position) {
    LogValue archived = dc.collected.get(position);
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

  // ---- recovery -------------------------------------------------------------------------

  /**
   * On the healed network, every DC's service catches up to the highest position any message
   * named, through the shipped catch-up: from peers where one knows the value, else by a learner
   * instance. A run learns at most a bounded number of positions, so it is repeated while it
   * makes progress.
   */
  private boolean recover() {
    cluster.ensureServed();
    long target = cluster.maxPosition();
    for (SimCluster.Dc dc : cluster.dcs()) {
      long before = -1;
      while (true) {
        long applied = dc.applier.applyKnown(GROUP);
        if (applied >= target) {
          break;
        }
        if (applied == before) {
          return false;
        }
        before = applied;
        CompletableFuture<Long> f = dc.live.get(0).catchUp.catchUpTo(GROUP, target);
        if (!events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS) || !f.isDone()) {
          return false;
        }
      }
    }
    return true;
  }

  // ---- faults -----------------------------------------------------------------------------

  private void schedulePartition() {
    events.after(500_000 + random.nextLong(2_500_000), () -> {
      if (clientsActive == 0) {
        return;
      }
      network.setIsolated(random.nextInt(cfg.dcs().size()));
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
      int dc = random.nextInt(cfg.dcs().size());
      network.setDown(dc, true);
      events.after(200_000 + random.nextLong(1_800_000), () -> {
        network.setDown(dc, false);
        scheduleOutage();
      });
    });
  }

  /** Now and then (every 0.5-3 s) a service instance dies; a fresh one starts 10-500 ms later. */
  private void scheduleRestart() {
    events.after(500_000 + random.nextLong(2_500_000), () -> {
      if (clientsActive == 0) {
        return;
      }
      cluster.restartOne(10_000 + random.nextLong(490_000));
      scheduleRestart();
    });
  }

  // ---- clients ----------------------------------------------------------------------------

  private final class Client {
    final int id;
    final int home;
    final SplittableRandom rng;
    final SimTransport transport;
    final ProposerDriver driver;
    final LeaderSubmit leaderSubmit;
    int remaining;
    int txnSeq;
    long nextArrival;
    /** The position of this client's last commit: its minimum read position (a session). */
    long lastCommit;
    /** Incremented on a crash: callbacks of the crashed incarnation are ignored. */
    int epoch;
    CompletableFuture<Outcome> inFlight;
    TxnRecord pending;

    Client(int id, int home, int txns, SplittableRandom rng) {
      this.id = id;
      this.home = home;
      this.remaining = txns;
      this.rng = rng;
      this.transport = new SimTransport(cluster, home, false);
      this.driver = new ProposerDriver(transport, cfg.dcs(), cluster.scheduler(), phaseTimeout);
      this.leaderSubmit = new LeaderSubmit(transport, cfg.dcs(), driver, cfg.proposer(),
          cluster.scheduler(), phaseTimeout.multipliedBy(3), cluster.leaderCosts());
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
      for (int i = 0; i < cfg.dcs().size(); i++) {
        if (!network.isDown(i) && network.connected(home, i)) {
          return i;
        }
      }
      return -1;
    }

    /** Begin and read requests wait for catch-up at the service; allow for it. */
    private Duration requestTimeout() {
      return phaseTimeout.multipliedBy(6);
    }

    private void abort(String txnId, long readPos) {
      aborted++;
      history.add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED, readPos, Map.of(),
          new TreeMap<>(), -1));
      scheduleNext();
    }

    void begin() {
      String txnId = "c" + id + "-t" + (txnSeq++);
      int serving = servingDc();
      if (serving < 0) {
        abort(txnId, 0);
        return;
      }
      String servingName = cfg.dcs().get(serving);
      int e = epoch;
      transport.request(servingName, new Message.BeginRequest(GROUP, lastCommit),
          requestTimeout()).whenComplete((reply, failure) -> {
            if (e != epoch) {
              return;
            }
            if (reply instanceof Message.BeginReply b) {
              OptionalInt leader = b.leaderDc().isEmpty() ? OptionalInt.empty()
                  : OptionalInt.of(cfg.dcs().indexOf(b.leaderDc()));
              body(txnId, servingName, b.position(), leader);
            } else {
              abort(txnId, 0);
            }
          });
    }

    /** The transaction's operations, then one read request for the keys it read. */
    private void body(String txnId, String servingName, long readPos, OptionalInt leader) {
      List<String> readKeys = new ArrayList<>();
      TreeMap<String, Mutation> writes = new TreeMap<>();
      for (int op = 0; op < cfg.opsPerTxn(); op++) {
        String key = "attr" + (zipf != null ? zipf.next(rng) : rng.nextInt(cfg.attributes()));
        if (rng.nextDouble() < cfg.readFraction()) {
          if (!writes.containsKey(key) && !readKeys.contains(key)) {
            readKeys.add(key);
          }
        } else {
          writes.put(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
        }
      }
      int e = epoch;
      events.after(cfg.opsPerTxn() * cfg.opMicros(), () -> {
        if (e != epoch) {
          return;
        }
        if (readKeys.isEmpty()) {
          commit(txnId, servingName, readPos, new LinkedHashMap<>(), writes, leader);
          return;
        }
        transport.request(servingName, new Message.ReadRequest(GROUP, readPos, readKeys),
            requestTimeout()).whenComplete((reply, failure) -> {
              if (e != epoch) {
                return;
              }
              if (reply instanceof Message.ReadReply r) {
                Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
                for (String k : readKeys) {
                  reads.put(k, Optional.ofNullable(r.values().get(k)));
                }
                commit(txnId, servingName, readPos, reads, writes, leader);
              } else {
                if (reply instanceof Message.ErrorReply err
                    && err.code() == Message.ErrorCode.TOO_OLD) {
                  // The GC watermark passed the read position: a retryable abort.
                  tooOldReads++;
                }
                abort(txnId, readPos);
              }
            });
      });
    }

    void commit(String txnId, String servingName, long readPos,
        Map<String, Optional<byte[]>> reads,
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
      long started = events.now();
      pending = new TxnRecord(txnId, client, TxnRecord.Status.CRASHED, readPos, reads, writes, -1);
      CompletableFuture<Outcome> run;
      if (cfg.protocol() == Protocol.LEADER) {
        // The leader of readPos + 1, else the DC that served the begin.
        run = leaderSubmit.commit(GROUP, entry,
            LeaderSubmit.submitTarget(cfg.dcs(), leader, readPos, servingName),
            LeaderSubmit.boundFor(cfg.proposer().maxPromotions()));
      } else {
        Proposer proposer = proposers.create(cfg.proposer(), GROUP,
            ProposerId.random(cluster.scheduler().random()), entry, readPos + 1, leader,
            rng.split());
        run = driver.run(proposer);
      }
      inFlight = run;
      int e = epoch;
      if (cfg.faults().crashes() && rng.nextDouble() < 0.1) {
        long window = 3 * network.maxRttMicros() + 2 * cfg.serviceMicros() + 1;
        events.after(rng.nextLong(window), () -> {
          if (e == epoch && inFlight == run && !run.isDone()) {
            crash();
          }
        });
      }
      run.whenComplete((o, failure) -> {
        if (e == epoch) {
          finished(o, started, readPos, reads, writes, txnId);
        }
      });
    }

    private void finished(Outcome o, long started, long readPos,
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
          lastCommit = Math.max(lastCommit, commitPos);
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
      inFlight.cancel(false);
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
