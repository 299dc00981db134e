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
import org.paxoscp.check.CrossGroupChecker;
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
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

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
  /** Per group, the one-group transactions' records. */
  private final Map<String, List<TxnRecord>> history = new TreeMap<>();
  /** What the clients observed of their cross-group transactions. */
  private final List<CrossGroupChecker.Observation> observations = new ArrayList<>();
  /** Groups the workload uses: 1 is the paper's single group; more enable cross-group load. */
  private int groupCount = 1;
  private double xgFraction;
  private long lockTimeoutMicros = 2_000_000;
  private final XgCounts xg = new XgCounts();
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

  /**
   * Spreads the workload over {@code groups} entity groups and makes a share {@code fraction} of
   * the transactions cross-group ones over 2 to 5 of them (ARCHITECTURE section 10), with PREPAREs
   * that others may abort after {@code lockTimeoutMicros} of virtual time. One group and fraction
   * 0 is the paper's workload, unchanged.
   */
  public Simulator withCrossGroup(int groups, double fraction, long lockTimeoutMicros) {
    if (groups < 1 || fraction < 0 || fraction > 1 || (fraction > 0 && groups < 2)
        || lockTimeoutMicros < 1) {
      throw new IllegalArgumentException("need groups >= 1, fraction in [0, 1] (> 0 only with "
          + "two groups or more), lock timeout >= 1");
    }
    this.groupCount = groups;
    this.xgFraction = fraction;
    this.lockTimeoutMicros = lockTimeoutMicros;
    return this;
  }

  /** A bug planted in the simulated clients' cross-group rules, for the checker's tests. */
  public enum XgPlant {
    /** The shipped rules. */
    NONE,
    /** Entries are committed without the lock rule against the locks at the read position. */
    IGNORE_LOCKS,
    /** DECIDE(COMMIT) goes out even when a PREPARE was not chosen. */
    DECIDE_WITHOUT_EVERY_PREPARE,
    /** A read-only transaction over several groups commits without its VALIDATEs. */
    SKIP_READ_ONLY_VALIDATION
  }

  private XgPlant plant = XgPlant.NONE;

  /** Plants {@code bug} in the clients (never outside the checker's tests). */
  public Simulator withXgPlant(XgPlant bug) {
    this.plant = bug;
    return this;
  }

  /** Cross-group transactions by outcome, and the steps taken for them. */
  public static final class XgCounts {
    public int committed;
    public int aborted;
    public int unknown;
    public int crashed;
    public int readOnly;
    public int locksMet;
    public int resolves;
    public int abortDecides;

    @Override
    public String toString() {
      return "xg committed=" + committed + " aborted=" + aborted + " unknown=" + unknown
          + " crashed=" + crashed + " readOnly=" + readOnly + " locksMet=" + locksMet
          + " resolves=" + resolves + " abortDecides=" + abortDecides;
    }
  }

  /** The cross-group transactions of the last run, by outcome. */
  public XgCounts crossGroupCounts() {
    return xg;
  }

  private List<String> groups() {
    List<String> g = new ArrayList<>();
    for (int i = 0; i < groupCount; i++) {
      g.add(i == 0 ? GROUP : GROUP + "-" + i);
    }
    return g;
  }

  private List<TxnRecord> historyOf(String group) {
    return history.computeIfAbsent(group, g -> new ArrayList<>());
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
    Map<String, Map<String, SortedMap<Long, LogValue>>> logsByGroup = new TreeMap<>();
    for (String group : groups()) {
      Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
      long max = cluster.maxPosition(group);
      for (SimCluster.Dc dc : cluster.dcs()) {
        SortedMap<Long, LogValue> log = new TreeMap<>();
        for (long p = 1; p <= max; p++) {
          Optional<LogValue> v = known(dc, group, p);
          if (v.isPresent()) {
            log.put(p, v.get());
          }
        }
        logs.put(dc.name, log);
      }
      logsByGroup.put(group, logs);
    }
    CheckResult check = groupCount == 1
        ? SerializabilityChecker.check(logsByGroup.get(GROUP), historyOf(GROUP))
        : CrossGroupChecker.check(logsByGroup, history, observations).combined();
    int combinedPositions = 0;
    int combinedTxns = 0;
    int noops = 0;
    for (var logs : logsByGroup.values()) {
      for (LogValue v : logs.get(cfg.dcs().get(0)).values()) {
        if (v.entries().size() > 1) {
          combinedPositions++;
          combinedTxns += v.entries().size();
        }
        noops += v.isNoop() ? 1 : 0;
      }
    }
    return new SimResult(cfg, commitsByRound, readOnly, aborted, unknown, crashed,
        combinedPositions, combinedTxns, noops, maxPosition, latency, check,
        cluster.conflicts(), finished, events.now(), network.sent(), cluster.exercised());
  }

  /** The chosen value of a position at a DC, from its WAL or from what its collector removed. */
  private Optional<LogValue> known(SimCluster.Dc dc, String group, long position) {
    LogValue archived = group.equals(GROUP) ? dc.collected.get(position) : null;
    if (archived != null) {
      return Optional.of(archived);
    }
    try {
      return dc.acceptor.chosen(group, position);
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
    for (String group : groups()) {
      long target = cluster.maxPosition(group);
      for (SimCluster.Dc dc : cluster.dcs()) {
        long before = -1;
        while (true) {
          long applied = dc.applier.applyKnown(group);
          if (applied >= target) {
            break;
          }
          if (applied == before) {
            return false;
          }
          before = applied;
          CompletableFuture<Long> f = dc.live.get(0).catchUp.catchUpTo(group, target);
          if (!events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS) || !f.isDone()) {
            return false;
          }
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

    private void abort(String group, String txnId, long readPos) {
      aborted++;
      historyOf(group).add(new TxnRecord(txnId, "c" + id, TxnRecord.Status.ABORTED, readPos,
          Map.of(), new TreeMap<>(), -1));
      scheduleNext();
    }

    private long sessionOf(String group) {
      return session.getOrDefault(group, 0L);
    }

    private void noteCommit(String group, long position) {
      session.merge(group, position, Math::max);
    }

    void begin() {
      String txnId = "c" + id + "-t" + (txnSeq++);
      if (groupCount > 1 && rng.nextDouble() < xgFraction) {
        new CrossGroupTxn(txnId).start();
        return;
      }
      String group = groupCount == 1 ? GROUP : groups().get(rng.nextInt(groupCount));
      int serving = servingDc();
      if (serving < 0) {
        abort(group, txnId, 0);
        return;
      }
      String servingName = cfg.dcs().get(serving);
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

    private OptionalInt leaderOf(Message.BeginReply b) {
      return b.leaderDc().isEmpty() ? OptionalInt.empty()
          : OptionalInt.of(cfg.dcs().indexOf(b.leaderDc()));
    }

    /** The transaction's operations, then one read request for the keys it read. */
    private void body(String group, String txnId, String servingName, Message.BeginReply begun,
        OptionalInt leader) {
      long readPos = begun.position();
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
                  tooOldReads++;
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
      if (!begun.locks().isEmpty() && plant != XgPlant.IGNORE_LOCKS) {
        // The lock rule (ARCHITECTURE 10) against the locks at the read position.
        LogEntry probe = new LogEntry(txnId, cfg.dcs().get(home), readPos,
            new TreeSet<>(reads.keySet()), writes);
        Optional<XgLocks.Lock> lock = begun.locks().blocking(probe);
        if (lock.isPresent()) {
          meetLock(group, lock.get());
          abort(group, txnId, readPos);
          return;
        }
      }
      if (writes.isEmpty()) {
        readOnly++;
        historyOf(group).add(new TxnRecord(txnId, client, TxnRecord.Status.COMMITTED, readPos,
            reads, writes, -1));
        scheduleNext();
        return;
      }
      LogEntry entry = new LogEntry(txnId, cfg.dcs().get(home), readPos,
          new TreeSet<>(reads.keySet()), writes);
      long started = events.now();
      pending = new TxnRecord(txnId, client, TxnRecord.Status.CRASHED, readPos, reads, writes, -1);
      pendingGroup = group;
      CompletableFuture<Outcome> run = propose(group, entry, servingName, leader);
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
          finished(group, o, started, readPos, reads, writes, txnId);
        }
      });
    }

    /** Runs the client's commit protocol for {@code entry} at its read position + 1. */
    private CompletableFuture<Outcome> propose(String group, LogEntry entry, String servingName,
        OptionalInt leader) {
      long readPos = entry.readPosition();
      if (cfg.protocol() == Protocol.LEADER) {
        // The leader of readPos + 1, else the DC that served the begin.
        return leaderSubmit.commit(group, entry,
            LeaderSubmit.submitTarget(cfg.dcs(), leader, readPos, servingName),
            LeaderSubmit.boundFor(cfg.proposer().maxPromotions()));
      }
      Proposer proposer = proposers.create(cfg.proposer(), group,
          ProposerId.random(cluster.scheduler().random()), entry, readPos + 1, leader,
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
      historyOf(group).add(new TxnRecord(txnId, "c" + id, status, readPos, reads, writes,
          commitPos));
      scheduleNext();
    }

    // ---- cross-group transactions (ARCHITECTURE section 10, docs/cross-group.md) ----------

    /** Virtual time in milliseconds: the clock of PREPARE deadlines. */
    private long nowMillis() {
      return events.now() / 1000;
    }

    /** A begin in {@code group} at the serving DC: the reply, or null. */
    private CompletableFuture<Message.BeginReply> beginIn(String servingName, String group) {
      return transport.request(servingName, new Message.BeginRequest(group, sessionOf(group)),
          requestTimeout()).handle((reply, failure) ->
              reply instanceof Message.BeginReply b ? b : null);
    }

    /** A read of {@code keys} of {@code group} at {@code position}: the reply, or null. */
    private CompletableFuture<Message.ReadReply> readIn(String servingName, String group,
        long position, List<String> keys) {
      return transport.request(servingName, new Message.ReadRequest(group, position, keys),
          requestTimeout()).handle((reply, failure) ->
              reply instanceof Message.ReadReply r ? r : null);
    }

    /** A fresh entry id for a step proposed by this client on behalf of any transaction. */
    private String stepId() {
      return "c" + id + "-s" + (txnSeq++);
    }

    /**
     * Meets a lock: reads the transaction's decision in its coordinator; decided, resolves it
     * here; undecided past the deadline, decides ABORT first. Runs in the background (the caller
     * aborts retryably); a crash of this client does not stop it, as with a resolver elsewhere.
     */
    void meetLock(String group, XgLocks.Lock lock) {
      xg.locksMet++;
      XgStep step = lock.prepare().xg();
      int serving = servingDc();
      if (serving < 0) {
        return;
      }
      String servingName = cfg.dcs().get(serving);
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

    /** The decision of {@code txn}: present (true COMMIT), empty while undecided, null unknown. */
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
    private CompletableFuture<Optional<Boolean>> settle(String servingName, String txn,
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
          xg.abortDecides++;
          LogEntry abort = new LogEntry(stepId(), cfg.dcs().get(home), b.position(),
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
    private void resolve(String servingName, String group, XgStep step, boolean commit,
        java.util.SortedMap<String, Mutation> writes, int attempts) {
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
        xg.resolves++;
        LogEntry e = new LogEntry(stepId(), cfg.dcs().get(home), b.position(), new TreeSet<>(),
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

    /** One transaction over 2 to 5 groups, driven by events like the one-group ones. */
    private final class CrossGroupTxn {
      final String txnId;
      final List<String> groups;
      final Map<String, Message.BeginReply> begun = new TreeMap<>();
      final Map<String, List<String>> readKeys = new TreeMap<>();
      final Map<String, TreeMap<String, Mutation>> writes = new TreeMap<>();
      final Map<String, Map<String, Long>> versions = new TreeMap<>();
      String servingName;
      long started;
      final int e = epoch;

      CrossGroupTxn(String txnId) {
        this.txnId = txnId;
        List<String> all = new ArrayList<>(groups());
        int n = 2 + rng.nextInt(Math.min(5, all.size()) - 1);
        java.util.TreeSet<String> chosen = new java.util.TreeSet<>();
        while (chosen.size() < n) {
          chosen.add(all.get(rng.nextInt(all.size())));
        }
        this.groups = List.copyOf(chosen);
      }

      private boolean alive() {
        return e == epoch;
      }

      void start() {
        started = events.now();
        int serving = servingDc();
        if (serving < 0) {
          done(TxnRecord.Status.ABORTED);
          return;
        }
        servingName = cfg.dcs().get(serving);
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
          writes.put(g, new TreeMap<>());
        }
        int ops = Math.max(cfg.opsPerTxn(), groups.size());
        boolean readOnlyTxn = rng.nextDouble() < 0.2;
        for (int op = 0; op < ops; op++) {
          String g = op < groups.size() ? groups.get(op) : groups.get(rng.nextInt(groups.size()));
          String key = "attr" + (zipf != null ? zipf.next(rng) : rng.nextInt(cfg.attributes()));
          boolean read = readOnlyTxn
              || (op >= groups.size() && rng.nextDouble() < cfg.readFraction());
          if (read || op < groups.size() && rng.nextBoolean()) {
            if (!writes.get(g).containsKey(key) && !readKeys.get(g).contains(key)) {
              readKeys.get(g).add(key);
            }
          }
          if (!read) {
            writes.get(g).put(key, Mutation.put((txnId + "/" + g + "/" + key)
                .getBytes(StandardCharsets.UTF_8)));
          }
        }
      }

      /**
       * Joins group {@code i} the way the client library does, on first touch: begins there,
       * works for a while, reads its keys; then the next group. Groups are visited in their
       * sorted order.
       */
      private void stage(int i) {
        if (i == groups.size()) {
          commit();
          return;
        }
        String g = groups.get(i);
        beginIn(servingName, g).thenAccept(b -> {
          if (!alive()) {
            return;
          }
          if (b == null) {
            done(TxnRecord.Status.ABORTED);
            return;
          }
          begun.put(g, b);
          int ops = 1 + readKeys.get(g).size() + writes.get(g).size();
          events.after(ops * cfg.opMicros(), () -> {
            if (!alive()) {
              return;
            }
            if (readKeys.get(g).isEmpty()) {
              stage(i + 1);
              return;
            }
            readIn(servingName, g, b.position(), readKeys.get(g)).thenAccept(r -> {
              if (!alive()) {
                return;
              }
              if (r == null) {
                done(TxnRecord.Status.ABORTED);
                return;
              }
              Map<String, Long> vs = new TreeMap<>();
              for (String k : readKeys.get(g)) {
                vs.put(k, r.versions().getOrDefault(k, 0L));
              }
              versions.put(g, vs);
              stage(i + 1);
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
            cfg.dcs().get(home), begun.get(g).position(), rs, ws, step);
      }

      private void commit() {
        boolean readOnlyTxn = writes.values().stream().allMatch(Map::isEmpty);
        // The lock rule against every group's locks at its read position.
        for (String g : groups) {
          LogEntry probe = new LogEntry(txnId, cfg.dcs().get(home), begun.get(g).position(),
              new TreeSet<>(readKeys.get(g)), writes.get(g));
          Optional<XgLocks.Lock> lock = begun.get(g).locks().blocking(probe);
          if (lock.isPresent() && plant != XgPlant.IGNORE_LOCKS) {
            meetLock(g, lock.get());
            done(TxnRecord.Status.ABORTED);
            return;
          }
        }
        if (readOnlyTxn) {
          validate();
          return;
        }
        long deadline = nowMillis() + lockTimeoutMicros / 1000;
        String c = groups.get(0);
        List<String> others = groups.subList(1, groups.size());
        List<CompletableFuture<Outcome>> fs = new ArrayList<>();
        for (String g : others) {
          fs.add(propose(g, entryFor(g, XgStep.prepare(txnId, groups, deadline)), servingName,
              leaderOf(begun.get(g))));
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
                  noteCommit(others.get(i), o.position());
                } else {
                  all = false;
                }
              }
              if (!all && plant != XgPlant.DECIDE_WITHOUT_EVERY_PREPARE) {
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
        propose(c, entryFor(c, XgStep.decide(txnId, groups, true)), servingName,
            leaderOf(begun.get(c))).handle((o, t) -> o).thenAccept(o -> {
              if (!alive()) {
                return;
              }
              Outcome.Status st = o == null ? Outcome.Status.UNKNOWN : o.status();
              if (st == Outcome.Status.COMMITTED) {
                noteCommit(c, o.position());
                committedNow();
              } else if (st == Outcome.Status.ABORTED) {
                done(TxnRecord.Status.ABORTED);
                release();
              } else {
                settle(servingName, txnId, groups, 3).thenAccept(d -> {
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
        latency.recordValue(Math.max(0, events.now() - started));
        done(TxnRecord.Status.COMMITTED);
        if (cfg.faults().crashes() && rng.nextDouble() < 0.1) {
          // The client dies between DECIDE and RESOLVE (its next transaction is another life):
          // the first reader that meets the locks resolves them.
          xg.crashed++;
          return;
        }
        for (String g : groups.subList(1, groups.size())) {
          resolve(servingName, g, XgStep.resolve(txnId, groups, true), true, writes.get(g), 3);
        }
      }

      /** T will never commit: decide ABORT, then release every PREPARE that may be in. */
      private void release() {
        settle(servingName, txnId, groups, 3).thenAccept(d -> {
          if (d != null && d.isPresent() && !d.get()) {
            for (String g : groups.subList(1, groups.size())) {
              resolve(servingName, g, XgStep.resolve(txnId, groups, false), false,
                  new TreeMap<>(), 3);
            }
          }
        });
      }

      /** With client crashes on, dies here now and then (and comes back a second later). */
      private boolean maybeCrash() {
        if (!cfg.faults().crashes() || rng.nextDouble() >= 0.1) {
          return false;
        }
        epoch++;
        xg.crashed++;
        crashed++;
        record(TxnRecord.Status.CRASHED, false);
        int now = epoch;
        events.after(1_000_000, () -> {
          if (now == epoch) {
            scheduleNext();
          }
        });
        return true;
      }

      /** Read-only: a VALIDATE (its reads, no writes) chosen in every group it read. */
      private void validate() {
        List<CompletableFuture<Outcome>> fs = new ArrayList<>();
        List<String> read = new ArrayList<>();
        for (String g : groups) {
          if (readKeys.get(g).isEmpty()) {
            continue;
          }
          read.add(g);
          LogEntry v = new LogEntry(txnId + "@" + g, cfg.dcs().get(home),
              begun.get(g).position(), new TreeSet<>(readKeys.get(g)), new TreeMap<>(),
              XgStep.validate(txnId, groups));
          fs.add(plant == XgPlant.SKIP_READ_ONLY_VALIDATION
              ? CompletableFuture.completedFuture(null)
              : propose(g, v, servingName, leaderOf(begun.get(g))).handle((o, t) -> o));
        }
        CompletableFuture.allOf(fs.toArray(CompletableFuture[]::new)).thenRun(() -> {
          if (!alive()) {
            return;
          }
          boolean ok = true;
          for (int i = 0; i < fs.size(); i++) {
            Outcome o = fs.get(i).join();
            if (o != null && o.status() == Outcome.Status.COMMITTED) {
              noteCommit(read.get(i), o.position());
            } else if (plant != XgPlant.SKIP_READ_ONLY_VALIDATION) {
              ok = false;
            }
          }
          xg.readOnly += ok ? 1 : 0;
          done(ok ? TxnRecord.Status.COMMITTED : TxnRecord.Status.ABORTED);
        });
      }

      private void done(TxnRecord.Status status) {
        switch (status) {
          case COMMITTED -> xg.committed++;
          case ABORTED -> xg.aborted++;
          default -> xg.unknown++;
        }
        record(status, writes.values().stream().allMatch(Map::isEmpty));
        scheduleNext();
      }

      private void record(TxnRecord.Status status, boolean readOnlyTxn) {
        observations.add(new CrossGroupChecker.Observation(txnId, status,
            new java.util.TreeSet<>(groups), new TreeMap<>(versions), readOnlyTxn));
      }
    }

    /** The client dies in mid-commit: its proposer stops; it comes back a second later. */
    private void crash() {
      epoch++;
      inFlight.cancel(false);
      inFlight = null;
      if (pending != null) {
        historyOf(pendingGroup).add(pending);
      }
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
