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
import org.HdrHistogram.Histogram;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.ProposerFactory;
import org.paxoscp.client.ClientHooks;
import org.paxoscp.transport.ClusterConfig;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.wal.LogValue;

/**
 * Deterministic simulation of a multi-DC deployment (docs/architecture.md section 8): D DCs, each
 * served by the shipped Transaction Service (its begin, reads at a read position, acceptor, grants,
 * APPLY, catch-up from peers and learner instances) over its own in-memory store; C clients
 * ({@link SimClient}) running transactions of the paper's shape against one entity group through
 * the shipped {@code ProposerDriver} — or, with {@link #withCrossGroup}, against several groups,
 * some transactions spanning them (on the client library's {@code MultiTransaction}); a faulty
 * WAN; all driven by one
 * seeded RNG in virtual time on the calling thread. The same {@link SimConfig} (including its
 * seed) and settings replay the same run exactly.
 *
 * <p>A client begins at its home DC (or any reachable DC while home is down) with the position
 * of its last commit as the minimum read position, runs its operations, reads its keys at the
 * read position with one read request, scans its ranges there ({@link SimConfig#scanShare}),
 * and commits; a share of its writes are counter and set updates, and of its reads reads of
 * them ({@link SimConfig#updateShare}, {@link SimUpdates}).
 *
 * <p>When the workload is done the network is healed and every DC's service catches up to the
 * highest position any message named (peers first, then learner instances, which decide a no-op
 * where nothing was chosen); with counters and sets in the workload every DC then reads every
 * key back ({@code readBack}); and the {@link SerializabilityChecker} judges every DC's log
 * against every client's history (the {@link CrossGroupChecker} every group's, with several
 * groups).
 */
public final class Simulator {
  static final String GROUP = "sim-group";
  private static final long MAX_VIRTUAL_MICROS = 48L * 3600 * 1_000_000;
  private static final long MAX_EVENTS = 200_000_000L;

  final SimConfig cfg;
  final ProposerFactory proposers;
  final EventQueue events = new EventQueue();
  private final SplittableRandom random;
  final SimNetwork network;
  SimCluster cluster;
  /** Per group, the one-group transactions' records. */
  private final Map<String, List<TxnRecord>> history = new TreeMap<>();
  /** What the clients observed of their cross-group transactions. */
  final List<CrossGroupChecker.Observation> observations = new ArrayList<>();
  /** Groups the workload uses: 1 is the paper's single group; more enable cross-group load. */
  int groupCount = 1;
  double xgFraction;
  long lockTimeoutMicros = 2_000_000;
  final XgCounts xg = new XgCounts();
  final SortedMap<Integer, Integer> commitsByRound = new TreeMap<>();
  final Histogram latency = new Histogram(3_600_000_000L, 3);
  final Zipf zipf;
  final Duration phaseTimeout;
  int readOnly;
  int aborted;
  int unknown;
  int crashed;
  int clientsActive;
  private Consumer<String> trace;
  /** Log and version GC (section 7), or null when off. */
  private SimGc gc;
  private LeaderCombiner.Rules leaderRules = LeaderCombiner.Rules.SHIPPED;
  private Rtts rtts = Rtts.MODEL;
  private Duration rttProbe;
  /** The DC every partition isolates (index), or -1: a random one each time. */
  private int partitionedDc = -1;
  /** DC indexes clients are homed at, in turn; null: every DC in turn. */
  private int[] clientHomes;
  /** The message type the run's targeted faults hit, or null. */
  private String target;
  private boolean forceEviction;
  int tooOldReads;
  /** Store loss (section 12): off, rebuilt as shipped, or the planted bug (voting as if new). */
  private StoreLoss storeLoss = StoreLoss.OFF;
  private final StoreLossCounts lost = new StoreLossCounts();

  /** Whether a DC loses its store in mid-run, and what happens then. */
  public enum StoreLoss {
    OFF,
    /**
     * It is rebuilt from its peers with the shipped rebuild while the workload goes on; its
     * service instances are left running through the loss in three runs of four (a loss does
     * not ask), killed first and restarted in the fourth.
     */
    REBUILT,
    /**
     * Planted bug: its empty store is taken for a new DC's (marked serving) and nothing is
     * rebuilt, so it promises and votes as if it had never promised or voted anything.
     */
    PLANTED_VOTES_AS_IF_EMPTY
  }

  /** What the run's store loss did, for asserting that it was exercised. */
  public static final class StoreLossCounts {
    /** The DC that lost its store ("" if none did). */
    public String dc = "";
    /** Its service instances were left running through the loss (else killed first). */
    public boolean servicesRunning;
    /** Times a running instance saw its store's marker change (lost, rebuilding, rebuilt). */
    public long storeChanges;
    /** Groups rebuilt there, and rebuild requests that failed and were tried again. */
    public int rebuilt;
    public int retried;
    /** The store was declared rebuilt (every group rebuilt). */
    public boolean complete;
    /** Requests answered REBUILDING (a group not rebuilt yet, or a vote at or below a fence). */
    public long refused;

    @Override
    public String toString() {
      return dc.isEmpty() ? "none" : "dc=" + dc + (servicesRunning ? " (services running)" : "")
          + " rebuilt=" + rebuilt + " retried=" + retried + " complete=" + complete + " refused="
          + refused + " storeChanges=" + storeChanges;
    }
  }

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

  /**
   * Runs log and version GC concurrently with the workload (see {@link SimGc}), in every group
   * at every DC; what the collectors remove is archived per group and position
   * ({@code ArchivingStore}), so the checker judges every group's whole log.
   */
  public Simulator withGc(SimGc gc) {
    this.gc = gc;
    return this;
  }

  /**
   * Every service instance empties its per-group caches after each request it handles, and
   * every client keeps the session position of one group only (docs/architecture.md section 9: a
   * service must stay correct whenever its caches are evicted; a client that dropped a group's
   * session position asks a majority of DCs for a floor before it begins there).
   */
  public Simulator withForcedEviction() {
    this.forceEviction = true;
    return this;
  }

  /**
   * A random DC loses its store once, 0.5-3 s into the run: every row of its store is gone,
   * under its running service instances (which notice it from the store alone), or after they
   * were killed (a fresh instance starts then), see {@link StoreLoss}; 0.1-0.5 s later its
   * groups are rebuilt through the shipped rebuild requests (docs/architecture.md section 12),
   * retried while peers do not answer; with {@link StoreLoss#PLANTED_VOTES_AS_IF_EMPTY} they are
   * not, and the DC votes as if new.
   */
  public Simulator withStoreLoss(StoreLoss mode) {
    this.storeLoss = mode;
    return this;
  }

  /** What the run's store loss did. */
  public StoreLossCounts storeLossCounts() {
    if (cluster != null) {
      lost.refused = cluster.rebuildingRefusals();
      lost.storeChanges = cluster.storeChanges();
    }
    return lost;
  }

  /** How many times a service's caches were emptied by {@link #withForcedEviction} (0 without). */
  public long forcedEvictions() {
    return cluster == null ? 0 : cluster.forcedEvictions();
  }

  /**
   * Spreads the workload over {@code groups} entity groups and makes a share {@code fraction} of
   * the transactions cross-group ones over 2 to 5 of them (docs/architecture.md section 10), with
   * PREPAREs that others may abort after {@code lockTimeoutMicros} of virtual time. One group and
   * fraction 0 is the paper's workload, unchanged.
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

  /** The share of one-group transactions that only read (0: reads and writes as drawn). */
  double oneGroupReadOnlyShare;

  /**
   * Makes a share {@code share} of the one-group transactions read-only: every operation a read
   * (of keys, ranges, counters and sets), none a write. Beside transactions across groups, their
   * reads meet PREPAREs' locks at their read position, and the client refuses them (it helps
   * resolve the lock and aborts retryably); {@link XgCounts#readOnlyRefused} counts them.
   */
  public Simulator withOneGroupReadOnly(double share) {
    if (!(share >= 0 && share <= 1)) {
      throw new IllegalArgumentException("a share is in [0, 1], was " + share);
    }
    this.oneGroupReadOnlyShare = share;
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
    SKIP_READ_ONLY_VALIDATION,
    /** A one-round PREPARE does not read its close key (it may follow a CLOSE of its group). */
    PREPARE_IGNORES_CLOSE
  }

  XgPlant plant = XgPlant.NONE;

  /**
   * A bug planted in range reads, for the checker's tests ({@code RangePlantedBugSimulationTest}).
   */
  public enum RangePlant {
    /** The shipped rules. */
    NONE,
    /**
     * The clients build their entries without the ranges they scanned (the history still
     * records the scans): no placement rule can see what a scan read.
     */
    DROP_RANGES_FROM_ENTRIES,
    /**
     * Every DC's store answers scans with its newest versions whatever the read position asked
     * ({@link ScanAtLatestStore}): a scan sees writes ordered after its read position.
     */
    SCAN_AT_LATEST
  }

  RangePlant rangePlant = RangePlant.NONE;

  /** Plants {@code bug} in range reads (never outside the checker's tests). */
  public Simulator withRangePlant(RangePlant bug) {
    this.rangePlant = bug;
    return this;
  }

  /** The logs the last run's checker judged: per group, per DC, position to chosen value. */
  private Map<String, Map<String, SortedMap<Long, LogValue>>> logs = Map.of();

  /** The logs the last run's checker judged (for tests that judge them again). */
  Map<String, Map<String, SortedMap<Long, LogValue>>> logs() {
    return logs;
  }

  /** Range reads the clients completed (every page served). */
  int scans;

  /** Range reads the clients of the last run completed. */
  public int scans() {
    return scans;
  }

  /** Plants {@code bug} in the clients (never outside the checker's tests). */
  public Simulator withXgPlant(XgPlant bug) {
    this.plant = bug;
    return this;
  }

  /** Bugs planted in the client library the simulated clients run, beside the others. */
  private final java.util.EnumSet<ClientHooks.Plant> clientPlants =
      java.util.EnumSet.noneOf(ClientHooks.Plant.class);

  /** The most bytes a service's reply holds (its begin replies list the locks within half). */
  private int maxReplyBytes = 1 << 20;
  private int clusterVersion = org.paxoscp.version.ClusterVersion.LATEST;

  /**
   * Services reply in at most {@code bytes} (default 1 MiB): small, a begin reply lists only
   * the first of a group's cross-group locks (in id order) once they are many (the table is cut,
   * and the client refuses every read and commit there until they are resolved), and scans take
   * more pages.
   */
  public Simulator withReplyLimit(int bytes) {
    this.maxReplyBytes = bytes;
    return this;
  }

  /**
   * Holds the cluster at {@code version}: every service instance and every simulated client
   * runs at it (for example 5, where commits across groups take two rounds); default the newest.
   */
  public Simulator withClusterVersion(int version) {
    org.paxoscp.version.ClusterVersion.of(version);
    this.clusterVersion = version;
    return this;
  }

  /** The cluster version of this run. */
  int clusterVersion() {
    return clusterVersion;
  }

  /** Plants {@code bug} in the client library (never outside the checker's tests). */
  public Simulator withClientPlant(ClientHooks.Plant bug) {
    clientPlants.add(bug);
    return this;
  }

  /**
   * Sessions broken as they happened: a transaction that began below a position its own client
   * process committed or began at in that group (reported with the oracle's violations).
   */
  final List<String> sessionViolations = new ArrayList<>();

  /**
   * Commits (and settles) the clients still had under way when the run ended: recorded as they
   * stood (CRASHED, UNKNOWN). A run that drained its events leaves none.
   */
  int unfinishedAtEnd;

  /** The run's simulated clients. */
  final List<SimClient> simClients = new ArrayList<>();

  /** Every library client the simulated clients' processes ran. */
  final List<org.paxoscp.client.TxnClient> libraryClients = new ArrayList<>();

  /**
   * The clients' session caches over the run, summed: session positions dropped after a
   * majority applied them, and begins that asked a majority for a floor because of it.
   */
  public org.paxoscp.client.TxnClient.SessionStats clientSessions() {
    long cached = 0;
    int settling = 0;
    long dropped = 0;
    long floors = 0;
    for (org.paxoscp.client.TxnClient c : libraryClients) {
      org.paxoscp.client.TxnClient.SessionStats s = c.sessionStats();
      cached += s.cached();
      settling += s.settling();
      dropped += s.dropped();
      floors += s.floorQueries();
    }
    return new org.paxoscp.client.TxnClient.SessionStats(cached, settling, dropped, floors);
  }

  /** Takes back every {@link #withClientPlant}: the library as shipped. */
  public Simulator withoutClientPlants() {
    clientPlants.clear();
    return this;
  }

  /** Where the simulated clients' library records its meters (aborts by reason, ...). */
  final MeterRegistry meters = countingOnly(new SimpleMeterRegistry());

  /**
   * {@code registry} keeping counts and totals only: the library's commit timers publish
   * percentiles and histograms, which the simulator does not read and which would cost a good
   * share of its time.
   */
  private static MeterRegistry countingOnly(MeterRegistry registry) {
    registry.config().meterFilter(new io.micrometer.core.instrument.config.MeterFilter() {
      @Override
      public io.micrometer.core.instrument.distribution.DistributionStatisticConfig configure(
          io.micrometer.core.instrument.Meter.Id id,
          io.micrometer.core.instrument.distribution.DistributionStatisticConfig config) {
        return io.micrometer.core.instrument.distribution.DistributionStatisticConfig.builder()
            .percentiles().percentilesHistogram(false).serviceLevelObjectives().build()
            .merge(config);
      }
    });
    return registry;
  }

  /** The hooks of the simulated clients' library: the planted bugs of this run. */
  ClientHooks clientHooks() {
    java.util.EnumSet<ClientHooks.Plant> p = java.util.EnumSet.copyOf(clientPlants);
    switch (plant) {
      case IGNORE_LOCKS -> p.add(ClientHooks.Plant.IGNORE_LOCKS);
      case DECIDE_WITHOUT_EVERY_PREPARE -> p.add(ClientHooks.Plant.DECIDE_WITHOUT_EVERY_PREPARE);
      case SKIP_READ_ONLY_VALIDATION -> p.add(ClientHooks.Plant.READ_ONLY_UNVALIDATED);
      case PREPARE_IGNORES_CLOSE -> p.add(ClientHooks.Plant.PREPARE_IGNORES_CLOSE);
      case NONE -> { }
    }
    if (rangePlant == RangePlant.DROP_RANGES_FROM_ENTRIES) {
      p.add(ClientHooks.Plant.DROP_SCANNED_RANGES);
    }
    if (updatedReadPlant) {
      p.add(ClientHooks.Plant.UPDATED_READ_LEFT_OUT);
    }
    if (unknownPlant) {
      p.add(ClientHooks.Plant.UNKNOWN_RANGE_FIRST_ONLY);
    }
    return ClientHooks.planting(p.toArray(ClientHooks.Plant[]::new)).withProposers(proposers);
  }

  /**
   * The cluster as the simulated clients' library sees it: the DCs, a request timeout of six
   * phase timeouts (begins and reads wait for a catch-up), the run's lock timeout, and a session
   * cache of one group with forced eviction (every other begin then asks a majority for its
   * floor), else the default.
   */
  ClusterConfig clientCluster() {
    if (clientCluster == null) {
      clientCluster = SimClient.clusterConfig(cfg.dcs(), phaseTimeout.multipliedBy(6),
          Duration.ofNanos(lockTimeoutMicros * 1000),
          forceEviction ? 1 : ClusterConfig.CLIENT_SESSION_GROUPS.defaultValue(),
          ClusterConfig.MAX_UDP_PAYLOAD);
    }
    return clientCluster;
  }

  private ClusterConfig clientCluster;

  /**
   * The library's calls beyond begin, get and commit that the workload makes: batch reads,
   * deadlines and outcome handles (docs/client.md).
   */
  public static final class ApiCounts {
    /** {@code getAll} reads completed. */
    public int batchReads;
    /** Transactions begun with a deadline. */
    public int withDeadline;
    /** Commits that ended at their deadline, certainly not in the log. */
    public int deadlineAborts;
    /** Commits that took an outcome handle before they were sent. */
    public int handles;
    /** Outcomes learned with a handle: after a crash, or for an unknown outcome. */
    public int handleSettles;

    @Override
    public String toString() {
      return "api: getAll=" + batchReads + " deadlines=" + withDeadline + " (aborted at it "
          + deadlineAborts + ") handles=" + handles + " (settled with one " + handleSettles
          + ")";
    }
  }

  final ApiCounts api = new ApiCounts();

  /** The last run's batch reads, deadlines and outcome handles. */
  public ApiCounts apiCounts() {
    return api;
  }

  /** The share of one-group transactions begun with a deadline (default a tenth). */
  double deadlineShare = 0.1;

  /**
   * Begins a share {@code share} of the one-group transactions with a deadline, drawn between
   * their think time and twice a commit's time on top: some pass in a read, some in the commit.
   */
  public Simulator withDeadlines(double share) {
    if (share < 0 || share > 1) {
      throw new IllegalArgumentException("a share is in [0, 1], was " + share);
    }
    this.deadlineShare = share;
    return this;
  }

  /** Unknown outcomes settled later by their clients, by what the settle answered. */
  public static final class SettledCounts {
    public int committed;
    public int aborted;
    public int unknown;

    @Override
    public String toString() {
      return "settled later: committed=" + committed + " aborted=" + aborted + " still unknown="
          + unknown;
    }
  }

  final SettledCounts settled = new SettledCounts();

  /** The last run's unknown outcomes that their clients settled later. */
  public SettledCounts settledCounts() {
    return settled;
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
    /** CLOSE steps chosen: settlers proving a one-round PREPARE absent. */
    public int closes;
    /**
     * One-group read-only transactions ({@link #withOneGroupReadOnly}) whose read or scan the
     * client refused for a lock at the read position (each aborted retryably).
     */
    public int readOnlyRefused;

    @Override
    public String toString() {
      return "xg committed=" + committed + " aborted=" + aborted + " unknown=" + unknown
          + " crashed=" + crashed + " readOnly=" + readOnly + " locksMet=" + locksMet
          + " resolves=" + resolves + " abortDecides=" + abortDecides + " closes=" + closes
          + " readOnlyRefused=" + readOnlyRefused;
    }
  }

  /** The cross-group transactions of the last run, by outcome. */
  public XgCounts crossGroupCounts() {
    return xg;
  }

  List<String> groups() {
    List<String> g = new ArrayList<>();
    for (int i = 0; i < groupCount; i++) {
      g.add(i == 0 ? GROUP : GROUP + "-" + i);
    }
    return g;
  }

  List<TxnRecord> historyOf(String group) {
    return history.computeIfAbsent(group, g -> new ArrayList<>());
  }

  boolean unknownPlant;

  /** What the clients' counters and counting sets did ({@link SimConfig#updateShare}). */
  static final class UpdateCounts {
    long ops;
    long entries;
    long refused;
    long unknown;
    long reads;
    long materialized;
    long finalReads;

    SimResult.Updates result() {
      return new SimResult.Updates(ops, entries, refused, unknown, reads, materialized,
          finalReads);
    }
  }

  final UpdateCounts updates = new UpdateCounts();

  /**
   * Planted bug in the clients: a read of a key the transaction updated is not put in its
   * entry's read set (the history still records it).
   */
  boolean updatedReadPlant;

  /**
   * Plants a bug in the clients: a transaction that reads a counter or set it updated reads it
   * from the store, but leaves it out of its entry's read set, as if an update's read were no
   * read (the checker's tests; the history still records the read).
   */
  public Simulator withUpdatedKeyReadsOutsideTheReadSet() {
    this.updatedReadPlant = true;
    return this;
  }

  private org.paxoscp.paxos.LogApplier.Rules applierRules =
      org.paxoscp.paxos.LogApplier.Rules.SHIPPED;

  /**
   * Every DC's appliers (its services' and the one that finishes the run) apply with
   * {@code rules} (tests plant bugs with it).
   */
  public Simulator withApplierRules(org.paxoscp.paxos.LogApplier.Rules rules) {
    this.applierRules = rules;
    return this;
  }

  /** Workers per DC with a bounded service ({@link #withServiceCapacity}); 0: unbounded. */
  private int serviceWorkers;
  private org.paxoscp.transport.Admission admission =
      org.paxoscp.transport.Admission.DEFAULT;
  private boolean refusalAsVote;

  /**
   * Gives every DC a service of bounded capacity, so that clients beyond it overload it: at most
   * {@code workers} requests in service at once, each for {@code serviceMicros} of the config,
   * the rest waiting in one queue under {@code admission} (refused OVERLOADED beyond its
   * bounds, before any service handles them; docs/simulator.md, "Overload"). Without it a DC
   * serves every request {@code serviceMicros} after it arrives, however many arrive.
   */
  public Simulator withServiceCapacity(int workers, org.paxoscp.transport.Admission admission) {
    if (workers < 1) {
      throw new IllegalArgumentException("workers must be >= 1, was " + workers);
    }
    this.serviceWorkers = workers;
    this.admission = java.util.Objects.requireNonNull(admission);
    return this;
  }

  /**
   * Plants a bug in admission control: a refused ACCEPT is answered as a vote for it (the
   * checker's and the overload test's test; needs {@link #withServiceCapacity}).
   */
  public Simulator withRefusalsCountedAsVotes() {
    this.refusalAsVote = true;
    return this;
  }

  /**
   * Requests the DCs refused OVERLOADED in the last run, by kind ({@code Admission.kind}:
   * prepare, accept, grant, begin, read, ...); empty without {@link #withServiceCapacity}.
   */
  public java.util.Map<String, Long> overloadRefusals() {
    return cluster == null ? java.util.Map.of() : cluster.overloadRefusals();
  }

  /** Commits of the last run that aborted because DCs refused them OVERLOADED (certain). */
  int overloadAborts;

  /** Commits of the last run that ended ABORTED because the DCs refused them OVERLOADED. */
  public int overloadAborts() {
    return overloadAborts;
  }

  /**
   * Back-offs the clients' library took in the last run after OVERLOADED refusals ({@code
   * paxoscp.client.overload.backoffs}), commits' and other requests' together.
   */
  public long clientOverloadBackoffs() {
    double n = 0;
    for (var c : meters.find("paxoscp.client.overload.backoffs").counters()) {
      n += c.count();
    }
    return (long) n;
  }

  /**
   * Plants a bug in what clients report: an UNKNOWN outcome names only the position after its
   * read position, whatever range the commit protocol gave (the checker's tests).
   */
  public Simulator withUnknownNamingOnlyTheFirstPosition() {
    this.unknownPlant = true;
    return this;
  }

  /**
   * Leader combination as it runs in production without WAN emulation and with round-trip
   * probes off: services and clients know no leading costs ({@code ClusterConfig.leaderCosts()}
   * is empty), so services pass the entries their clients submit on to the leader of the next
   * position as far as they know, and several DCs may batch one group at once. By default the
   * simulator gives them its latency model's nearest-majority RTTs, and one DC batches.
   */
  public Simulator withoutLeaderCosts() {
    this.rtts = Rtts.NONE;
    return this;
  }

  /**
   * Leader combination with round trips measured, as in production without WAN emulation:
   * services and clients are given no leading costs; each service probes the others every
   * second ({@code RoundTrips}) and places batchers by the table they agree on once every pair
   * was measured (the rule without costs before).
   */
  public Simulator withMeasuredRtts() {
    return withMeasuredRtts(Duration.ofSeconds(1));
  }

  /** As {@link #withMeasuredRtts()}, probing every {@code probe} (short runs probe faster). */
  public Simulator withMeasuredRtts(Duration probe) {
    this.rtts = Rtts.MEASURED;
    this.rttProbe = probe;
    return this;
  }

  /** Homes the clients at {@code dcs} only, in turn (by default: every DC in turn). */
  public Simulator withClientHomes(List<String> dcs) {
    int[] homes = new int[dcs.size()];
    for (int i = 0; i < homes.length; i++) {
      homes[i] = cfg.dcs().indexOf(dcs.get(i));
      if (homes[i] < 0) {
        throw new IllegalArgumentException("DC " + dcs.get(i) + " is not in " + cfg.dcs());
      }
    }
    if (homes.length == 0) {
      throw new IllegalArgumentException("no DC to home clients at");
    }
    this.clientHomes = homes;
    return this;
  }

  /**
   * Every partition ({@code Faults#partitions}) isolates {@code dc} rather than a random DC:
   * to see what isolating one DC costs (the batcher's, a far one's).
   */
  public Simulator withPartitionsOf(String dc) {
    int i = cfg.dcs().indexOf(dc);
    if (i < 0) {
      throw new IllegalArgumentException("DC " + dc + " is not in " + cfg.dcs());
    }
    this.partitionedDc = i;
    return this;
  }

  /** How the services know the round trips between DCs. */
  public enum Rtts {
    /** Given the latency model's RTTs and nearest-majority costs (WAN emulation). */
    MODEL,
    /** Measured by the services' probes. */
    MEASURED,
    /** Neither: the rule without costs. */
    NONE
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

  /**
   * What the collectors removed, summed over DCs (each DC collects every position).
   *
   * @param byGroup positions collected per group (a group none were collected in is absent)
   * @param lockedPrepares positions holding a PREPARE whose lock the DC still held when it
   *     collected them: the watermark passed an unresolved PREPARE there
   * @param decides positions holding a DECIDE
   */
  public record Collected(Map<String, Long> byGroup, long lockedPrepares, long decides) {
    public static final Collected NONE = new Collected(Map.of(), 0, 0);

    public Collected {
      byGroup = Map.copyOf(byGroup);
    }

    public long positions() {
      return byGroup.values().stream().mapToLong(Long::longValue).sum();
    }

    public Collected plus(Collected o) {
      Map<String, Long> sum = new TreeMap<>(byGroup);
      o.byGroup.forEach((g, n) -> sum.merge(g, n, Long::sum));
      return new Collected(sum, lockedPrepares + o.lockedPrepares, decides + o.decides);
    }

    @Override
    public String toString() {
      return "gc: " + positions() + " positions collected in " + byGroup.size() + " groups ("
          + lockedPrepares + " PREPAREs still locking, " + decides + " DECIDEs)";
    }
  }

  /** What the last run's collectors removed ({@link Collected#NONE} without GC). */
  public Collected collected() {
    return cluster == null ? Collected.NONE : cluster.collected();
  }

  private String forcedTarget;

  /**
   * Aims the targeted faults at {@code type} (one of {@link SimConfig.Faults#TARGETS}) instead
   * of a type picked by the seed; the run must have targeted faults.
   */
  public Simulator withTargetedType(String type) {
    if (!SimConfig.Faults.TARGETS.contains(type) || !cfg.faults().targeted()) {
      throw new IllegalArgumentException("a targeted type is one of "
          + SimConfig.Faults.TARGETS + ", for a run with targeted faults; got " + type);
    }
    this.forcedTarget = type;
    return this;
  }

  /** The message type the last run's targeted faults hit, if it had them. */
  public Optional<String> targetedType() {
    return Optional.ofNullable(target);
  }

  /** Messages the last run's targeted faults lost or delayed. */
  public long targetedHits() {
    return network.targetedHits();
  }

  /** Store operations the last run's store faults failed (before or after doing them). */
  public long storeFaults() {
    if (cluster == null) {
      return 0;
    }
    long[] n = cluster.storeFaults();
    return n[0] + n[1];
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
    cluster = new SimCluster(cfg, events, network, random.split(), gc, leaderRules, rtts,
        rttProbe, rangePlant == RangePlant.SCAN_AT_LATEST, applierRules, maxReplyBytes,
        clusterVersion);
    if (forceEviction) {
      cluster.forceEviction();
    }
    if (serviceWorkers > 0) {
      cluster.serviceCapacity(serviceWorkers, admission);
    }
    if (refusalAsVote) {
      cluster.refusalAsVote();
    }
    if (trace != null) {
      cluster.trace(trace);
      network.trace(trace);
    }
    if (cfg.faults().twoInstances()) {
      cluster.start(cluster.dc(random.nextInt(cfg.dcs().size())));
    }
    int perClient = cfg.txns() / cfg.clients();
    int extra = cfg.txns() % cfg.clients();
    for (int c = 0; c < cfg.clients(); c++) {
      int n = perClient + (c < extra ? 1 : 0);
      if (n > 0) {
        int home = clientHomes == null ? c % cfg.dcs().size()
            : clientHomes[c % clientHomes.length];
        SimClient client = new SimClient(this, c, home, n, random.split());
        clientsActive++;
        client.scheduleNext();
      }
    }
    if (cfg.faults().targeted()) {
      String picked =
          SimConfig.Faults.TARGETS.get(random.nextInt(SimConfig.Faults.TARGETS.size()));
      target = forcedTarget != null ? forcedTarget : picked;
      network.setTarget(target);
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
    if (storeLoss != StoreLoss.OFF) {
      scheduleStoreLoss();
    }
    boolean finished = events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS);
    if (finished) {
      network.healAll();
      cluster.healStores();
      finished = recover();
      if (finished && cfg.updateShare() > 0) {
        finished = readBack();
      }
    }
    for (SimClient c : simClients) {
      unfinishedAtEnd += c.flush();
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
    this.logs = logsByGroup;
    countClientSteps(logsByGroup);
    CheckResult check = groupCount == 1
        ? SerializabilityChecker.check(logsByGroup.get(GROUP), historyOf(GROUP))
        : CrossGroupChecker.check(logsByGroup, history, observations).combined();
    int combinedPositions = 0;
    int combinedTxns = 0;
    int noops = 0;
    int withdrawals = 0;
    for (var logs : logsByGroup.values()) {
      for (LogValue v : logs.get(cfg.dcs().get(0)).values()) {
        if (v.entries().size() > 1) {
          combinedPositions++;
          combinedTxns += v.entries().size();
        }
        // A position holding only withdrawals of leader-mode entries carries no transaction.
        boolean none = v.entries().stream().allMatch(Placement::isWithdrawal);
        noops += none ? 1 : 0;
        withdrawals += none && !v.isNoop() ? 1 : 0;
      }
    }
    return new SimResult(cfg, commitsByRound, readOnly, aborted, unknown, crashed,
        combinedPositions, combinedTxns, noops, withdrawals, maxPosition, latency, check,
        cluster.conflicts(), finished, events.now(), network.sent(), cluster.exercised(),
        unknownFates(logsByGroup), violations(), network.replays(),
        updates.result());
  }

  /** What broke as it happened: Paxos's own safety (the oracle), and clients' sessions. */
  private List<String> violations() {
    List<String> all = new ArrayList<>(cluster.oracle.violations());
    all.addAll(sessionViolations);
    return all;
  }

  /**
   * What the clients' library did that the counts read: reads and commits that met a
   * cross-group lock and reads refused TOO_OLD (from its meters); RESOLVEs and DECIDE(ABORT)s
   * chosen (from the first DC's logs).
   */
  private void countClientSteps(Map<String, Map<String, SortedMap<Long, LogValue>>> logs) {
    xg.locksMet = (int) aborts("lock");
    tooOldReads = (int) aborts("too_old");
    xg.resolves = 0;
    xg.abortDecides = 0;
    xg.closes = 0;
    for (var byDc : logs.values()) {
      for (LogValue v : byDc.get(cfg.dcs().get(0)).values()) {
        for (var e : v.entries()) {
          if (e.xg() == null) {
            continue;
          }
          switch (e.xg().kind()) {
            case RESOLVE -> xg.resolves++;
            case DECIDE -> xg.abortDecides += e.xg().commit() ? 0 : 1;
            case CLOSE -> xg.closes++;
            default -> { }
          }
        }
      }
    }
  }

  /** Transactions the clients' library counted aborted for {@code reason}. */
  private long aborts(String reason) {
    return meters.find("paxoscp.client.commit").tag("reason", reason).timers().stream()
        .mapToLong(io.micrometer.core.instrument.Timer::count).sum();
  }

  /** Where the entries of UNKNOWN outcomes told a range ended up, by the first DC's log. */
  private SimResult.UnknownFates unknownFates(
      Map<String, Map<String, SortedMap<Long, LogValue>>> logsByGroup) {
    int reported = 0;
    int inLog = 0;
    int past = 0;
    for (var e : history.entrySet()) {
      Map<String, Long> positionOf = new java.util.HashMap<>();
      logsByGroup.get(e.getKey()).get(cfg.dcs().get(0)).forEach((pos, v) ->
          v.entries().forEach(entry -> positionOf.put(entry.txnId(), pos)));
      for (TxnRecord r : e.getValue()) {
        if (r.status() != TxnRecord.Status.UNKNOWN || r.unknownFrom() < 0) {
          continue;
        }
        reported++;
        Long pos = positionOf.get(r.txnId());
        if (pos != null) {
          inLog++;
          past += pos > r.readPosition() + 1 ? 1 : 0;
        }
      }
    }
    return new SimResult.UnknownFates(reported, inLog, past);
  }

  /**
   * The chosen value of a position at a DC, from its WAL or from what its collector removed;
   * empty at a DC that lost its store for a position it did not learn again (the rebuild copied
   * the data as of a later position).
   */
  private Optional<LogValue> known(SimCluster.Dc dc, String group, long position) {
    SortedMap<Long, LogValue> collected = dc.collected.get(group);
    LogValue archived = collected == null ? null : collected.get(position);
    if (archived != null) {
      return Optional.of(archived);
    }
    try {
      return dc.acceptor.chosen(group, position);
    } catch (TooOldException e) {
      if (dc.name.equals(lost.dc)) {
        return Optional.empty();
      }
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
    if (storeLoss != StoreLoss.PLANTED_VOTES_AS_IF_EMPTY && !lost.dc.isEmpty()) {
      // The rebuild ends on the healed network before catch-up needs the rebuilt DC.
      if (!events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS) || !lost.complete) {
        return false;
      }
    }
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

  /**
   * With counters and sets in the workload: once every DC caught up, every DC's service reads
   * every key the workload writes (the attribute keys, the counters and the sets) at each
   * group's last position, and each answer joins the group's history as a read-only
   * transaction, which the checker holds against the log (A2). A DC whose store diverged from
   * its log (an update applied twice, or lost, or a refused entry's puts written) is caught
   * then even when no client read the key after.
   *
   * @return whether the reads ran to their end (a DC that does not answer is left out)
   */
  private boolean readBack() {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < cfg.attributes(); i++) {
      keys.add("attr" + i);
    }
    for (int i = 0; i < SimUpdates.COUNTERS; i++) {
      keys.add(SimUpdates.counterKey(i));
    }
    for (int i = 0; i < SimUpdates.SETS; i++) {
      keys.add(SimUpdates.setKey(i));
    }
    Duration timeout = phaseTimeout.multipliedBy(6);
    for (String group : groups()) {
      long position = cluster.maxPosition(group);
      if (position == 0) {
        continue;
      }
      for (SimCluster.Dc dc : cluster.dcs()) {
        new SimTransport(cluster, dc.index, false).request(dc.name,
            new org.paxoscp.transport.Message.ReadRequest(group, position, keys), timeout)
            .thenAccept(reply -> {
              if (reply instanceof org.paxoscp.transport.Message.ReadReply r) {
                Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
                for (String k : keys) {
                  reads.put(k, Optional.ofNullable(r.values().get(k)));
                }
                updates.finalReads++;
                historyOf(group).add(new TxnRecord("final-" + dc.name + "-" + group,
                    "final@" + dc.name, TxnRecord.Status.COMMITTED, position, reads,
                    new TreeMap<>(), -1));
              }
            });
      }
    }
    return events.run(MAX_VIRTUAL_MICROS, MAX_EVENTS);
  }

  // ---- faults -----------------------------------------------------------------------------

  private void schedulePartition() {
    events.after(500_000 + random.nextLong(2_500_000), () -> {
      if (clientsActive == 0) {
        return;
      }
      int picked = random.nextInt(cfg.dcs().size());
      network.setIsolated(partitionedDc >= 0 ? partitionedDc : picked);
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

  private void scheduleStoreLoss() {
    events.after(500_000 + random.nextLong(2_500_000), () -> {
      SimCluster.Dc dc = cluster.dc(random.nextInt(cfg.dcs().size()));
      lost.dc = dc.name;
      lost.servicesRunning = switch (storeLoss) {
        case REBUILT -> random.nextInt(4) != 0;
        case PLANTED_VOTES_AS_IF_EMPTY, OFF -> false;
      };
      cluster.loseStore(dc, lost.servicesRunning);
      events.after(100_000 + random.nextLong(400_000), () -> {
        cluster.ensureServed();
        if (storeLoss == StoreLoss.PLANTED_VOTES_AS_IF_EMPTY) {
          org.paxoscp.store.StoreMarker.initialize(dc.store);
        } else {
          // Half the runs name the peer to copy from, as an operator may (dc rebuild --from):
          // it may be behind the lost DC, so the DC comes back at an earlier position than its
          // running service remembers.
          List<String> peers = cfg.dcs().stream().filter(d -> !d.equals(dc.name)).toList();
          copyFrom = random.nextBoolean() ? peers.get(random.nextInt(peers.size())) : "";
          rebuildNext(dc, new java.util.ArrayDeque<>(groups()));
        }
      });
    });
  }

  /** The peer the rebuild copies from when it answers ("": the one that applied the most). */
  private String copyFrom = "";

  /** The id of the rebuild under way (null until begun; again null to begin anew). */
  private String rebuildId;

  /**
   * Rebuilds the lost DC's groups one by one through a live instance, as {@code paxoscp dc
   * rebuild} does, then declares the store rebuilt; a request that fails (peers unreachable, the
   * instance killed) is tried again 200 ms later.
   */
  private void rebuildNext(SimCluster.Dc dc, java.util.Deque<String> left) {
    if (dc.live.isEmpty()) {
      events.after(200_000, () -> rebuildNext(dc, left));
      return;
    }
    String group = left.peekFirst();
    // Begun first, to learn the rebuild's id, which the completion names.
    org.paxoscp.transport.Message request = rebuildId == null
        ? new org.paxoscp.transport.Message.RebuildRequest("", "", dc.name, "", false)
        : group == null
        ? new org.paxoscp.transport.Message.RebuildRequest("", "", dc.name, rebuildId, true)
        : new org.paxoscp.transport.Message.RebuildRequest(group, copyFrom, dc.name, rebuildId,
            false);
    dc.live.get(0).service.handle(dc.name, request).whenComplete((r, t) -> {
      if (r instanceof org.paxoscp.transport.Message.RebuildReply reply) {
        if (rebuildId == null) {
          rebuildId = reply.rebuildId();
          rebuildNext(dc, left);
          return;
        }
        if (group == null) {
          lost.complete = true;
          return;
        }
        // (ALREADY_REBUILT after a retry whose first try was done, its answer lost.)
        lost.rebuilt++;
        left.pollFirst();
        rebuildNext(dc, left);
      } else {
        lost.retried++;
        if (r instanceof org.paxoscp.transport.Message.ErrorReply e
            && e.code() == org.paxoscp.transport.Message.ErrorCode.BAD_REQUEST) {
          rebuildId = null; // another rebuild is under way (the store was lost again): begin anew
        }
        events.after(200_000, () -> rebuildNext(dc, left));
      }
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
}
