package org.paxoscp.sim;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.RebuildGuard;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.paxos.Vote;
import org.paxoscp.service.CatchUp;
import org.paxoscp.service.GroupCollector;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.service.TransactionService;
import org.paxoscp.transport.NearestMajority;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.Admission;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogValue;

/**
 * The simulated DCs: each an {@link InMemoryKvStore} served by one or more instances of the
 * shipped {@link TransactionService} with its {@link CatchUp}, on the {@link VirtualScheduler},
 * talking over {@link SimTransport}. An instance can be killed (its memory and in-flight work
 * are lost, the store is kept) and a fresh one started, as a restarted service process would be;
 * a DC can be served by two instances at once, each request going to either.
 *
 * <p>Counts what the run exercised: messages by type, positions learned from peers and by
 * learner instances, restarts, so that a run cannot pass while exercising nothing.
 */
final class SimCluster {
  private final SimConfig cfg;
  private final EventQueue events;
  private final SimNetwork network;
  private final VirtualScheduler scheduler;
  private final SplittableRandom random;
  private final List<Dc> dcs = new ArrayList<>();
  private final List<Instance> everyInstance = new ArrayList<>();
  private final SortedMap<String, Long> messagesByType = new TreeMap<>();
  private final CatchUp.Settings catchUpSettings;
  private final TransactionService.Limits limits;
  /** The cluster version every service instance runs at (the newest, unless held earlier). */
  private final int clusterVersion;
  /** The collectors' settings, or null when the run has no GC. */
  private final GroupCollector.Settings gcSettings;
  private final LeaderCombiner.Rules leaderRules;
  /** The rules every applier of every DC applies by (a planted bug in a test, else shipped). */
  private final LogApplier.Rules applierRules;
  /** Nearest-majority RTT per DC, as a service gets it from an emulated WAN. */
  private final Map<String, Long> leaderCosts;
  /** How often services probe each other with {@link Simulator.Rtts#MEASURED}. */
  private final Duration rttProbe;
  /** How services know the RTTs between DCs; with MEASURED they probe each other. */
  private final Simulator.Rtts rtts;
  /** Set once the workload ended: no instance probes any more (so the run can end). */
  private boolean probesStopped;
  private long maxPosition;
  /** Per group, the highest log position any message named. */
  private final Map<String, Long> maxPositions = new TreeMap<>();
  private long restarts;
  /** Restarts that killed an instance while it had a leader round in flight. */
  private long restartsMidRound;
  /** Submits served while two instances of the DC had leader rounds in flight at once. */
  private long concurrentLeaderRounds;
  private long tooOldRequests;
  private long rebuildingRefusals;
  private Consumer<String> trace;
  /** Every vote cast, judged as it happens. */
  final ChosenOracle oracle;
  /** Empty every per-group cache of the serving instance after each request it handles. */
  private boolean forceEviction;
  private long forcedEvictions;
  /**
   * Each DC's service capacity ({@link #serviceCapacity}): workers per DC, each busy for
   * {@code serviceMicros} per request, and the service's admission control; 0 workers: no
   * bound (every request is served {@code serviceMicros} after it arrives, as many at once as
   * arrive).
   */
  private int workers;
  private Admission admission = Admission.DEFAULT;
  /** Requests refused OVERLOADED by admission control, by {@link Admission#kind}. */
  private final Map<String, Long> overloadRefusals = new TreeMap<>();
  /** A planted bug: a refused ACCEPT is answered as if the acceptor had voted for it. */
  private boolean refusalAsVote;

  /** One DC: its store and the service instances serving it. */
  final class Dc {
    final int index;
    final String name;
    final InMemoryKvStore store = new InMemoryKvStore();
    /** What the services use: the store, or a faulty or planted-bug view of it. */
    final KvStore serviceStore;
    /** The services' view when the run has store faults, else null. */
    final FaultyStore faulty;
    final Acceptor acceptor;
    final LogApplier applier;
    final List<Instance> live = new ArrayList<>();
    /** Requests waiting for a worker ({@link #serviceCapacity}), oldest first. */
    final java.util.ArrayDeque<Waiting> queue = new java.util.ArrayDeque<>();
    /** Workers busy now. */
    int busy;
    /** Per group, the chosen values this DC's collectors removed, kept for the checker. */
    final Map<String, SortedMap<Long, LogValue>> collected = new TreeMap<>();
    /** What the collectors write through: it archives each WAL row before deleting it. */
    final KvStore collectorStore;
    /** Reads this DC's applied lock tables, for the counts of what was collected. */
    private final LogApplier lockReader;

    Dc(int index, String name, boolean watermarkBlind, boolean scanAtLatest,
        SplittableRandom faultRandom) {
      this.index = index;
      this.name = name;
      KvStore view = watermarkBlind ? new WatermarkBlindStore(store) : store;
      view = scanAtLatest ? new ScanAtLatestStore(view) : view;
      this.faulty = cfg.faults().storeFaults() > 0
          ? new FaultyStore(view, faultRandom, cfg.faults().storeFaults()) : null;
      this.serviceStore = faulty != null ? faulty : view;
      this.acceptor = new Acceptor(store);
      this.applier = new LogApplier(store, LogApplier.DEFAULT_MAX_GROUPS, new RebuildGuard(store),
          applierRules);
      this.collectorStore = new ArchivingStore(store, this::archive);
      this.lockReader = new LogApplier(store);
    }

    /**
     * A collector of this DC removed {@code position} of {@code group}: kept for the checker,
     * and counted (a PREPARE whose lock this DC still holds, a DECIDE).
     */
    private void archive(String group, long position, LogValue value) {
      collected.computeIfAbsent(group, g -> new TreeMap<>()).put(position, value);
      for (var e : value.entries()) {
        if (e.isPrepare() && lockReader.appliedState(group).locks().locks().stream()
            .anyMatch(l -> l.position() == position && l.txn().equals(e.xg().txn()))) {
          collectedLockedPrepares++;
        }
        if (e.xg() != null && e.xg().kind() == org.paxoscp.wal.XgStep.Kind.DECIDE) {
          collectedDecides++;
        }
      }
    }
  }

  /** One service process of a DC: the shipped service over the DC's store. */
  final class Instance {
    final Dc dc;
    final SimTransport transport;
    final CatchUp catchUp;
    /** The shipped log collector, or null when the run has no GC. */
    final GroupCollector collector;
    final TransactionService service;

    Instance(Dc dc) {
      this.dc = dc;
      this.transport = new SimTransport(SimCluster.this, dc.index, true);
      this.catchUp = new CatchUp(dc.name, cfg.dcs(), dc.serviceStore, transport, catchUpSettings,
          scheduler, LogApplier.DEFAULT_MAX_GROUPS, new RebuildGuard(dc.serviceStore),
          applierRules);
      // The collector writes the watermark to the real store, whatever view the service reads,
      // through the view that archives what it deletes (by group and position).
      this.collector = gcSettings == null ? null : new GroupCollector(dc.name, cfg.dcs(),
          dc.collectorStore, transport, gcSettings, scheduler);
      this.service = new TransactionService(dc.name, cfg.dcs(), dc.serviceStore, catchUp, limits,
          scheduler, collector, new LeaderCombiner.Options(leaderCosts, leaderRules,
              LeaderCombiner.Options.DEFAULT_HOLD_SHARE, cfg.latency(),
              rtts == Simulator.Rtts.MEASURED ? rttProbe : null));
      service.followClusterVersion(() -> clusterVersion);
      if (probesStopped) {
        service.combiner().stopProbes();
      }
    }
  }

  SimCluster(SimConfig cfg, EventQueue events, SimNetwork network, SplittableRandom random,
      SimGc gc, LeaderCombiner.Rules leaderRules, Simulator.Rtts rtts, Duration rttProbe,
      boolean scanAtLatest, LogApplier.Rules applierRules, int maxReplyBytes,
      int clusterVersion) {
    this.cfg = cfg;
    this.clusterVersion = clusterVersion;
    this.applierRules = applierRules;
    this.rttProbe = rttProbe;
    this.leaderRules = leaderRules;
    this.rtts = rtts;
    Map<String, Long> costs = new LinkedHashMap<>();
    for (String d : rtts == Simulator.Rtts.MODEL ? cfg.dcs() : List.<String>of()) {
      costs.put(d, NearestMajority.rttMicros(cfg.latency(), cfg.dcs(), d));
    }
    this.leaderCosts = costs;
    this.oracle = new ChosenOracle(cfg.dcs().size());
    this.events = events;
    this.network = network;
    this.random = random;
    this.scheduler = new VirtualScheduler(events, random.split());
    Duration phase = Duration.ofNanos(cfg.proposer().phaseTimeoutMicros() * 1000);
    this.catchUpSettings = new CatchUp.Settings(phase, phase.multipliedBy(4), 256);
    this.limits = new TransactionService.Limits(1024, maxReplyBytes, phase.multipliedBy(4));
    // Waiting for a silent DC for ever (max lag 0), as the simulator checks every DC's log.
    this.gcSettings = gc == null ? null : new GroupCollector.Settings(gc.retention(),
        gc.everyPositions(), Integer.MAX_VALUE, phase, 0);
    for (int i = 0; i < cfg.dcs().size(); i++) {
      Dc dc = new Dc(i, cfg.dcs().get(i), gc != null && gc.plantedReadBelowWatermark(),
          scanAtLatest, cfg.faults().storeFaults() > 0 ? random.split() : null);
      dcs.add(dc);
      start(dc);
    }
  }

  /**
   * Nearest-majority RTT per DC: what leading costs there (leader combination); empty when the
   * run gives services none, as in production without WAN emulation.
   */
  Map<String, Long> leaderCosts() {
    return leaderCosts;
  }

  void trace(Consumer<String> sink) {
    this.trace = sink;
  }

  /** Every instance empties its per-group caches after each request it handles. */
  void forceEviction() {
    this.forceEviction = true;
  }

  /**
   * Gives each DC a bounded service: {@code workers} requests in service at once, each for
   * {@code serviceMicros}, the others waiting in one queue under {@code admission}, as the
   * real service's dispatcher does ({@code RequestDispatcher}): a request that finds
   * {@code maxQueued} waiting is refused OVERLOADED at once; one that waited longer than
   * {@code maxWait} is refused when a worker takes it; both before the service handles it.
   */
  void serviceCapacity(int workers, Admission admission) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be >= 1, was " + workers);
    }
    this.workers = workers;
    this.admission = admission;
  }

  /** Plants a bug: a refused ACCEPT is answered "accepted", as if a refusal were a vote. */
  void refusalAsVote() {
    this.refusalAsVote = true;
  }

  /** Requests refused OVERLOADED, by kind ({@link Admission#kind}); empty without capacity. */
  Map<String, Long> overloadRefusals() {
    return Map.copyOf(overloadRefusals);
  }

  /** A request waiting for a worker of its DC. */
  private record Waiting(int from, int to, Message m, CompletableFuture<Message> reply,
      long arrivedMicros) {}

  /** How many times a service's caches were emptied by {@link #forceEviction}. */
  long forcedEvictions() {
    return forcedEvictions;
  }

  EventQueue events() {
    return events;
  }

  SimNetwork network() {
    return network;
  }

  VirtualScheduler scheduler() {
    return scheduler;
  }

  List<Dc> dcs() {
    return dcs;
  }

  Dc dc(int index) {
    return dcs.get(index);
  }

  String dcName(int index) {
    return cfg.dcs().get(index);
  }

  int dcIndex(String name) {
    return cfg.dcs().indexOf(name);
  }

  /** Ends every instance's round-trip probes, now and for instances started later. */
  void stopProbes() {
    probesStopped = true;
    for (Instance i : everyInstance) {
      i.service.combiner().stopProbes();
    }
  }

  // ---- instances ------------------------------------------------------------------------

  /** Starts a fresh service instance for {@code dc} (nothing in memory; the store is kept). */
  Instance start(Dc dc) {
    Instance i = new Instance(dc);
    dc.live.add(i);
    everyInstance.add(i);
    return i;
  }

  /** Kills an instance: its pending work and replies vanish with it. */
  void kill(Instance i) {
    i.dc.live.remove(i);
    i.transport.close();
    i.catchUp.close();
    if (i.collector != null) {
      i.collector.close();
    }
  }

  /**
   * The DC loses its store (section 12): every row of its store is gone, the marker included,
   * under its running instances ({@code servicesRunning}: they notice it from the store alone),
   * or after they died ({@link #ensureServed} starts a fresh instance later).
   */
  void loseStore(Dc dc, boolean servicesRunning) {
    if (!servicesRunning) {
      for (Instance i : List.copyOf(dc.live)) {
        kill(i);
      }
    }
    dc.store.wipe();
  }

  /** Times running instances saw their store's marker change (docs/architecture.md section 12). */
  long storeChanges() {
    long n = 0;
    for (Instance i : everyInstance) {
      n += i.service.storeChanges();
    }
    return n;
  }

  /** Requests answered REBUILDING (a DC not serving a group it lost, or a fenced vote). */
  long rebuildingRefusals() {
    return rebuildingRefusals;
  }

  /** Kills a random instance of a random DC and starts a fresh one after {@code downMicros}. */
  void restartOne(long downMicros) {
    Dc dc = dcs.get(random.nextInt(dcs.size()));
    if (dc.live.isEmpty()) {
      return;
    }
    Instance victim = dc.live.get(random.nextInt(dc.live.size()));
    if (victim.service.combiner().roundsInFlight() > 0) {
      restartsMidRound++;
    }
    kill(victim);
    restarts++;
    events.after(downMicros, () -> start(dc));
  }

  /** Makes sure every DC has a live instance (for the recovery phase). */
  void ensureServed() {
    for (Dc dc : dcs) {
      if (dc.live.isEmpty()) {
        start(dc);
      }
    }
  }

  // ---- message plumbing (called by SimTransport) ----------------------------------------

  /** A message arrived at DC {@code to}: one of its live instances serves it. */
  CompletableFuture<Message> deliver(int from, int to, Message m) {
    CompletableFuture<Message> reply = new CompletableFuture<>();
    if (workers == 0) {
      events.after(cfg.serviceMicros(), () -> serve(from, to, m, reply));
      return reply;
    }
    Dc dc = dcs.get(to);
    Waiting w = new Waiting(from, to, m, reply, events.now());
    if (dc.busy < workers) {
      startService(dc, w);
    } else if (dc.queue.size() >= admission.maxQueued()) {
      refuse(dc, w, admission.maxQueued() + " requests wait for a worker");
    } else {
      dc.queue.add(w);
    }
    return reply;
  }

  /** A worker of {@code dc} serves {@code w} for {@code serviceMicros}, then takes the next. */
  private void startService(Dc dc, Waiting w) {
    dc.busy++;
    events.after(cfg.serviceMicros(), () -> {
      dc.busy--;
      serve(w.from(), w.to(), w.m(), w.reply());
      while (!dc.queue.isEmpty() && dc.busy < workers) {
        Waiting next = dc.queue.poll();
        long waited = events.now() - next.arrivedMicros();
        if (waited > admission.maxWait().toNanos() / 1000) {
          refuse(dc, next, "a request waited " + waited / 1000 + " ms for a worker");
        } else {
          startService(dc, next);
          break;
        }
      }
    });
  }

  /**
   * Admission control refuses {@code w} before any service handles it: OVERLOADED (a one-way
   * message's answer goes nowhere, as its reply would). With the planted bug, a refused ACCEPT
   * is answered as a vote instead.
   */
  private void refuse(Dc dc, Waiting w, String why) {
    if (dc.live.isEmpty()) {
      return;
    }
    overloadRefusals.merge(Admission.kind(w.m()), 1L, Long::sum);
    if (refusalAsVote && w.m() instanceof Message.Paxos p
        && p.message() instanceof PaxosMessage.Accept a) {
      w.reply().complete(new Message.Paxos(new PaxosMessage.AcceptReply(a.group(), a.position(),
          a.ballot(), true, null, null)));
      return;
    }
    w.reply().complete(Admission.refusal(w.m(), dc.name, why));
  }

  /** One of {@code to}'s live instances serves {@code m}; its answer completes {@code reply}. */
  private void serve(int from, int to, Message m, CompletableFuture<Message> reply) {
    Dc dc = dcs.get(to);
    if (dc.live.isEmpty()) {
      return;
    }
    Instance i = dc.live.get(dc.live.size() == 1 ? 0 : random.nextInt(dc.live.size()));
    if (m instanceof Message.SubmitRequest && dc.live.size() > 1 && dc.live.stream()
        .filter(x -> x.service.combiner().roundsInFlight() > 0).count() > 1) {
      concurrentLeaderRounds++;
    }
    CompletableFuture<Message> handled = i.service.handle(dcName(from), m);
    if (forceEviction) {
      // Whatever the request left cached (and what its continuations will look up) is gone.
      i.service.forgetCaches();
      forcedEvictions++;
    }
    handled.whenComplete((r, t) -> {
      if (r instanceof Message.ErrorReply e && e.code() == Message.ErrorCode.TOO_OLD
          && m instanceof Message.Paxos) {
        tooOldRequests++;
      }
      if (r instanceof Message.ErrorReply e && e.code() == Message.ErrorCode.REBUILDING) {
        rebuildingRefusals++;
      }
      if (m instanceof Message.Paxos req && req.message() instanceof PaxosMessage.Accept a) {
        // The vote is in the store whether or not the reply gets anywhere, and even when the
        // store reported the write failed (an ambiguous write): ask the store itself. A vote
        // at or below the DC's GC watermark does not count: a fast ACCEPT's check-and-write
        // can recreate a collected row, and when the store then fails the watermark read that
        // would remove it again, the vote stays; but the acceptor answers nothing for a
        // position without a chosen value before reading the watermark after the row, so no
        // proposer or learner ever sees such a vote (Acceptor, "Collected positions").
        // Likewise a vote written into a store that lost its contents (a fast ACCEPT's
        // check-and-write reads nothing first): the acceptor reads the store's marker after
        // the row and refuses, and the rebuild fences the position, or the vote lies above
        // the fence, where it is the vote of a DC that lost nothing there (as if its reply
        // had been lost). A vote the acceptor answered always counts; one it did not answer
        // counts if the DC's guard would answer for it now.
        boolean answered = r instanceof Message.Paxos rp
            && rp.message() instanceof PaxosMessage.AcceptReply ar && ar.accepted();
        Optional<Vote> vote;
        try {
          vote = a.position() <= LogCollector.gcWatermark(dc.store, a.group())
              || !answered && !votable(dc, a.group(), a.position())
              ? Optional.empty() : dc.acceptor.lastVote(a.group(), a.position());
        } catch (TooOldException collected) {
          vote = Optional.empty();
        }
        vote.filter(v -> v.ballot().equals(a.ballot()) && v.value().equals(a.value()))
            .ifPresent(v -> oracle.accepted(a.group(), a.position(), a.ballot(), a.value(),
                to));
      }
      if (r instanceof Message.Paxos rep && rep.message() instanceof PaxosMessage.LearnReply lr
          && lr.chosen() != null) {
        oracle.applied(lr.group(), lr.position(), lr.chosen(), dcName(to) + " (learn reply)");
      }
      if (r != null && dc.live.contains(i)) {
        reply.complete(r);
      }
    });
  }

  /**
   * Whether {@code dc}'s store, as it is now, lets its acceptor answer for {@code position} of
   * {@code group}: it has a marker, serves the group, and the position is above the group's
   * rebuild fence there (docs/architecture.md section 12).
   */
  private static boolean votable(Dc dc, String group, long position) {
    try {
      org.paxoscp.paxos.RebuildGuard.Bounds b = new org.paxoscp.paxos.RebuildGuard(dc.store)
          .bounds(group, org.paxoscp.store.StoreMarker.read(dc.store).orElse(null));
      return position > b.fence();
    } catch (org.paxoscp.paxos.RebuildingException e) {
      return false;
    }
  }

  void sent(int from, int to, Message m) {
    messagesByType.merge(typeOf(m), 1L, Long::sum);
    if (m instanceof Message.Paxos p && p.message() instanceof PaxosMessage.Apply a) {
      oracle.applied(a.group(), a.position(), a.value(), dcName(from));
    }
    if (m instanceof Message.Paxos p) {
      maxPosition = Math.max(maxPosition, p.position());
      maxPositions.merge(p.group(), p.position(), Math::max);
    }
    if (trace != null) {
      trace.accept(String.format("%10.3fms %s -> %s: %s", events.now() / 1000.0, dcName(from),
          dcName(to), m));
    }
  }

  void replied(int to, int from, Message m) {
    if (trace != null) {
      trace.accept(String.format("%10.3fms %s <- %s: %s", events.now() / 1000.0, dcName(to),
          dcName(from), m));
    }
  }

  /** A message's type as the run counts it: the Paxos message's class, else the message's. */
  static String typeOf(Message m) {
    return m instanceof Message.Paxos p ? p.message().getClass().getSimpleName()
        : m.getClass().getSimpleName();
  }

  // ---- what the run exercised -----------------------------------------------------------

  /** The highest log position any message named. */
  long maxPosition() {
    return maxPosition;
  }

  /** The highest log position of {@code group} any message named (0 if none). */
  long maxPosition(String group) {
    return maxPositions.getOrDefault(group, 0L);
  }

  long tooOldRequests() {
    return tooOldRequests;
  }

  /** Positions the collectors removed from WAL tables, summed over DCs. */
  long collectedPositions() {
    return everyInstance.stream().filter(i -> i.collector != null)
        .mapToLong(i -> i.collector.collectedPositions()).sum();
  }

  /** Positions holding a PREPARE collected while the DC still held the PREPARE's lock. */
  private long collectedLockedPrepares;
  /** Positions holding a DECIDE collected. */
  private long collectedDecides;

  /** What the collectors removed, by group and by what it held, summed over DCs. */
  Simulator.Collected collected() {
    Map<String, Long> byGroup = new TreeMap<>();
    for (Dc dc : dcs) {
      dc.collected.forEach((g, log) -> byGroup.merge(g, (long) log.size(), Long::sum));
    }
    return new Simulator.Collected(byGroup, collectedLockedPrepares, collectedDecides);
  }

  /** Ends the store faults (the recovery phase). */
  void healStores() {
    for (Dc dc : dcs) {
      if (dc.faulty != null) {
        dc.faulty.heal();
      }
    }
  }

  /** Store operations the run's store faults failed: before anything was done, and after. */
  long[] storeFaults() {
    long before = 0;
    long after = 0;
    for (Dc dc : dcs) {
      if (dc.faulty != null) {
        before += dc.faulty.unavailable();
        after += dc.faulty.ambiguous();
      }
    }
    return new long[] {before, after};
  }

  /** Conflicting chosen values the services were told (a broken agreement), by DC. */
  List<String> conflicts() {
    List<String> out = new ArrayList<>();
    for (Dc dc : dcs) {
      long n = everyInstance.stream().filter(i -> i.dc == dc)
          .mapToLong(i -> i.catchUp.conflicts()).sum();
      if (n > 0) {
        out.add("DC " + dc.name + " was told " + n + " value(s) different from the one it had "
            + "recorded as chosen");
      }
    }
    return out;
  }

  SimResult.Exercised exercised() {
    long fromPeers = everyInstance.stream().mapToLong(i -> i.catchUp.learnedFromPeers()).sum();
    long byLearner = everyInstance.stream().mapToLong(i -> i.catchUp.learnedByInstance()).sum();
    return new SimResult.Exercised(new TreeMap<>(messagesByType), fromPeers, byLearner, restarts,
        everyInstance.size(),
        everyInstance.stream().mapToLong(i -> i.service.combiner().rounds()).sum(),
        everyInstance.stream().mapToLong(i -> i.service.combiner().entriesCommitted()).sum(),
        restartsMidRound, concurrentLeaderRounds,
        everyInstance.stream().mapToLong(i -> i.service.combiner().entriesMoved()).sum());
  }
}
