package org.paxoscp.service;

import java.net.InetSocketAddress;
import java.time.Duration;
import org.paxoscp.transport.Admission;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.paxoscp.config.ConfigKey;
import org.paxoscp.config.ConfigKeys;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.transport.ClusterConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The settings of one Transaction Service process, read from the same {@code key=value} file as
 * the {@link ClusterConfig} (which ignores the {@value #PREFIX} keys): which DC it serves, where
 * it listens, its worker threads, its store, and its request, catch-up and GC limits. Every key
 * is a {@link ConfigKey} in {@link #KEYS}; unknown {@value #PREFIX} keys are rejected.
 *
 * <p><b>Bind address.</b> When {@code paxoscp.service.bind} is not set, the service listens on its
 * DC's first
 * static endpoint (the address the cluster file tells peers and clients to use); a DC with no
 * static endpoints (discovery only) listens on {@code 127.0.0.1} at an ephemeral port, which
 * discovery publishes. Port 0 (ephemeral) is refused when no discovery is configured: nobody
 * could find the service.
 *
 * <p><b>Store.</b> {@code hbase} (the default) opens the DC's HBase store with the DC's
 * {@code paxoscp.dc.<DC>.hbase.*} keys; {@code memory} keeps the DC's data in this process only
 * and must be asked for explicitly (tests, throw-away local clusters).
 *
 * <p>Immutable and thread-safe.
 */
public final class ServiceConfig {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceConfig.class);

  public static final String PREFIX = "paxoscp.service.";

  /** Where the DC's data lives. */
  public enum StoreKind { HBASE, MEMORY }

  public static final ConfigKey<String> DC = ConfigKey.string(PREFIX + "dc", null,
      "the DC this service serves; one of paxoscp.dcs");
  public static final ConfigKey<String> BIND = ConfigKey.optionalString(PREFIX + "bind",
      "host:port to listen on (default: the DC's first static endpoint, else 127.0.0.1:0; "
          + "port 0 needs discovery)");
  public static final ConfigKey<Integer> THREADS = ConfigKey.integer(PREFIX + "threads", 16, 1,
      1024, "worker threads that handle requests");
  public static final ConfigKey<Integer> QUEUE_MAX_REQUESTS = ConfigKey.integer(
      PREFIX + "queue.max.requests", 1024, 1, 1_000_000, "requests that may wait for a worker "
          + "(one queue for all workers); more are refused OVERLOADED at once, before any "
          + "handler or acceptor sees them (docs/operating.md, Overload)");
  public static final ConfigKey<Duration> QUEUE_MAX_WAIT = ConfigKey.millis(
      PREFIX + "queue.max.wait.ms", 500, 1, 600_000, "a request that waited longer than this "
          + "for a worker is refused OVERLOADED by the worker that takes it, before the handler; "
          + "keep it well below paxoscp.proposer.phase.timeout.ms");
  public static final ConfigKey<StoreKind> STORE = ConfigKey.choice(PREFIX + "store",
      StoreKind.class, StoreKind.HBASE, "where the DC's data lives; memory keeps it in this "
          + "process only: one process per DC, and a restarted one is rebuilt from its peers "
          + "(paxoscp.service.memory.new)");
  public static final ConfigKey<Boolean> MEMORY_NEW = ConfigKey.bool(PREFIX + "memory.new",
      false, "with store = memory: this process's store is a new DC's, marked serving; set it only "
          + "when the whole cluster starts new together (paxoscp service --new-cluster sets it "
          + "for one start; paxoscp cluster does). "
          + "false: the store starts without a marker and the DC serves no group until paxoscp dc "
          + "rebuild copies it from its peers, which a restarted memory-store process needs (it "
          + "lost every promise and vote it made)");
  public static final ConfigKey<Integer> READ_MAX_KEYS = ConfigKey.integer(
      PREFIX + "read.max.keys", 1000, 1, 1_000_000, "most keys one read request may name");
  public static final ConfigKey<Integer> CATCHUP_MAX_POSITIONS = ConfigKey.integer(
      PREFIX + "catchup.max.positions", 256, 1, 1_000_000,
      "most log positions one catch-up run learns");
  public static final ConfigKey<Duration> CATCHUP_WAIT = ConfigKey.millis(
      PREFIX + "catchup.wait.ms", 4_000, 1, Integer.MAX_VALUE,
      "how long a begin or read request waits for catch-up before it is answered "
          + "CATCH_UP_FAILED (the catch-up goes on)");
  public static final ConfigKey<Duration> LEARN_TIMEOUT = ConfigKey.millis(
      PREFIX + "learn.timeout.ms", 2_000, 1, Integer.MAX_VALUE,
      "how long catch-up waits for peers to answer a Learn request before it runs a learner");
  public static final ConfigKey<Duration> LEARNER_TIMEOUT = ConfigKey.millis(
      PREFIX + "learner.timeout.ms", 8_000, 1, Integer.MAX_VALUE,
      "how long one learner instance may take before the catch-up run fails");
  public static final ConfigKey<Integer> GC_RETENTION_POSITIONS = ConfigKey.integer(
      PREFIX + "gc.retention.positions", 10_000, 0, Integer.MAX_VALUE,
      "log positions kept below the lowest applied position of all DCs; older WAL rows and "
          + "superseded data versions are collected and requests for them answered TOO_OLD; "
          + "0 turns collection off");
  public static final ConfigKey<Integer> GC_EVERY_POSITIONS = ConfigKey.integer(
      PREFIX + "gc.every.positions", 100, 1, 1_000_000,
      "a GC round starts every this many applied positions of a group");
  public static final ConfigKey<Integer> GC_BATCH_POSITIONS = ConfigKey.integer(
      PREFIX + "gc.batch.positions", 1_000, 1, 1_000_000, "most positions one GC round collects");
  public static final ConfigKey<Integer> GC_MAX_LAG_POSITIONS = ConfigKey.integer(
      PREFIX + "gc.max.lag.positions", 1_000_000, 0, Integer.MAX_VALUE,
      "how far the other DCs may get ahead of a silent DC before GC goes on without it (that "
          + "DC must then be rebuilt); 0 waits for ever");
  public static final ConfigKey<Duration> GC_PEER_TIMEOUT = ConfigKey.millis(
      PREFIX + "gc.peer.timeout.ms", 2_000, 1, Integer.MAX_VALUE,
      "how long a GC round waits for each peer's applied position");

  public static final ConfigKey<Double> LEADER_HOLD_SHARE = ConfigKey.decimal(
      PREFIX + "leader.hold.share", LeaderCombiner.Options.DEFAULT_HOLD_SHARE, 0, 1,
      "leader combination: after a decision, how long the next round may wait for this DC's "
          + "clients answered at it to submit again, as a share of the round just decided; "
          + "0 never waits");

  /** Where leader combination's placement takes the round trips between DCs from. */
  public enum LeaderRtts {
    /** The emulated WAN's table when emulation is on, else measured by probes. */
    AUTO,
    /** Measured by probes, even with WAN emulation on (its table is not used for placement). */
    MEASURED,
    /** Never measured: the emulated WAN's table if on, else the next position's leader batches. */
    OFF
  }

  public static final ConfigKey<LeaderRtts> LEADER_RTTS = ConfigKey.choice(
      PREFIX + "leader.rtts", LeaderRtts.class, LeaderRtts.AUTO,
      "leader combination: where the batcher's placement takes the round trips between DCs "
          + "from; auto: the emulated WAN's table when paxoscp.wan.enabled, else measured by "
          + "probing the other DCs' services (docs/leader-combination.md); measured: probed "
          + "even with WAN emulation; off: never probed (without WAN emulation the next "
          + "position's leader batches)");
  public static final ConfigKey<Duration> RTT_PROBE = ConfigKey.millis(
      PREFIX + "rtt.probe.ms", 1_000, 10, 3_600_000,
      "how often a service that measures round trips probes each other DC (one small datagram "
          + "and its answer per DC)");

  public static final ConfigKey<Integer> CACHE_GROUPS = ConfigKey.integer(
      PREFIX + "cache.groups", org.paxoscp.paxos.LogApplier.DEFAULT_MAX_GROUPS, 1,
      Integer.MAX_VALUE, "most groups whose state each per-group cache of the service keeps "
          + "(evicted by recency, rebuilt from the store on the next touch; live work is "
          + "never evicted); see docs/operating.md, \"Many groups\"");

  public static final ConfigKey<Boolean> METRICS = ConfigKey.bool(PREFIX + "metrics", true,
      "collect metrics (requests, store requests, rounds, catch-up, GC, dropped datagrams, "
          + "the JVM); `paxoscp status` shows some; false: none are kept");
  public static final ConfigKey<Integer> METRICS_PORT = ConfigKey.integer(
      PREFIX + "metrics.port", 0, 0, 65_535,
      "HTTP port that serves GET /metrics in Prometheus' text format; 0: no HTTP server");
  public static final ConfigKey<String> METRICS_BIND = ConfigKey.optionalString(
      PREFIX + "metrics.bind", "host the /metrics server listens on (default: the host of "
          + "paxoscp.service.bind; 0.0.0.0 for every interface)");
  public static final ConfigKey<Boolean> METRICS_JMX = ConfigKey.bool(PREFIX + "metrics.jmx",
      true, "also publish the metrics as JMX MBeans (domain paxoscp)");

  /** Every service key; docs/configuration.md is generated from it. */
  public static final ConfigKeys KEYS = new ConfigKeys("Service (a Transaction Service process)",
      DC, BIND, THREADS, QUEUE_MAX_REQUESTS, QUEUE_MAX_WAIT, STORE, MEMORY_NEW, READ_MAX_KEYS, CATCHUP_MAX_POSITIONS, CATCHUP_WAIT,
      LEARN_TIMEOUT, LEARNER_TIMEOUT, GC_RETENTION_POSITIONS, GC_EVERY_POSITIONS,
      GC_BATCH_POSITIONS, GC_MAX_LAG_POSITIONS, GC_PEER_TIMEOUT, LEADER_HOLD_SHARE,
      LEADER_RTTS, RTT_PROBE, CACHE_GROUPS, METRICS, METRICS_PORT, METRICS_BIND, METRICS_JMX);

  /**
   * What the service does with its metrics.
   *
   * @param enabled whether it keeps any
   * @param http where it serves {@code /metrics}; empty: nowhere
   * @param bindHost the host it would serve {@code /metrics} on
   * @param jmx whether it publishes them over JMX
   */
  public record Metrics(boolean enabled, Optional<InetSocketAddress> http, String bindHost,
      boolean jmx) {}


  private final ClusterConfig cluster;
  private final Metrics metrics;
  private final String dc;
  private final InetSocketAddress bind;
  private final int threads;
  private final Admission admission;
  private final StoreKind store;
  private final Optional<HBaseStoreConfig> hbase;
  private final int readMaxKeys;
  private final int catchUpMaxPositions;
  private final Duration catchUpWait;
  private final Duration learnTimeout;
  private final Duration learnerTimeout;
  private final Duration gcPeerTimeout;
  private final int gcRetention;
  private final int gcMaxLag;
  private final int gcEvery;
  private final int gcBatch;
  private final double leaderHoldShare;
  private final LeaderRtts leaderRtts;
  private final Duration rttProbe;
  private final int cacheGroups;

  private final boolean memoryNew;

  private ServiceConfig(ClusterConfig cluster, String dc, InetSocketAddress bind, int threads,
      Admission admission, StoreKind store, Optional<HBaseStoreConfig> hbase, int readMaxKeys,
      int catchUpMaxPositions, Duration catchUpWait, Duration learnTimeout,
      Duration learnerTimeout, int gcRetention, int gcEvery, int gcBatch, int gcMaxLag,
      Duration gcPeerTimeout, double leaderHoldShare, LeaderRtts leaderRtts, Duration rttProbe,
      int cacheGroups, Metrics metrics, boolean memoryNew) {
    this.memoryNew = memoryNew;
    this.metrics = metrics;
    this.leaderHoldShare = leaderHoldShare;
    this.leaderRtts = leaderRtts;
    this.rttProbe = rttProbe;
    this.cacheGroups = cacheGroups;
    this.learnTimeout = learnTimeout;
    this.learnerTimeout = learnerTimeout;
    this.gcPeerTimeout = gcPeerTimeout;
    this.gcRetention = gcRetention;
    this.gcMaxLag = gcMaxLag;
    this.gcEvery = gcEvery;
    this.gcBatch = gcBatch;
    this.cluster = cluster;
    this.dc = dc;
    this.bind = bind;
    this.threads = threads;
    this.admission = admission;
    this.store = store;
    this.hbase = hbase;
    this.readMaxKeys = readMaxKeys;
    this.catchUpMaxPositions = catchUpMaxPositions;
    this.catchUpWait = catchUpWait;
  }

  /**
   * Parses the service settings and the cluster configuration from one set of properties.
   *
   * @throws IllegalArgumentException naming the key, for a missing, unknown or invalid value
   *     (including the cluster's and the DC's HBase keys)
   */
  public static ServiceConfig fromProperties(Map<String, String> props) {
    ClusterConfig cluster = ClusterConfig.fromProperties(props, KEYS);
    String dc = DC.from(props);
    if (!cluster.dcNames().contains(dc)) {
      throw new IllegalArgumentException(DC.name() + ": DC " + dc + " is not in "
          + cluster.dcNames());
    }
    InetSocketAddress bind = bind(props, cluster, dc);
    StoreKind store = STORE.from(props);
    Optional<HBaseStoreConfig> hbase = Optional.empty();
    if (store == StoreKind.HBASE) {
      try {
        hbase = Optional.of(HBaseStoreConfig.fromProperties(dc, cluster.dc(dc).hbase()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(ClusterConfig.DC_PREFIX + dc + ".hbase.*: "
            + e.getMessage(), e);
      }
    }
    return new ServiceConfig(cluster, dc, bind, THREADS.from(props),
        new Admission(QUEUE_MAX_REQUESTS.from(props), QUEUE_MAX_WAIT.from(props)), store, hbase,
        READ_MAX_KEYS.from(props), CATCHUP_MAX_POSITIONS.from(props), CATCHUP_WAIT.from(props),
        LEARN_TIMEOUT.from(props), LEARNER_TIMEOUT.from(props),
        GC_RETENTION_POSITIONS.from(props), GC_EVERY_POSITIONS.from(props),
        GC_BATCH_POSITIONS.from(props), GC_MAX_LAG_POSITIONS.from(props),
        GC_PEER_TIMEOUT.from(props), LEADER_HOLD_SHARE.from(props), LEADER_RTTS.from(props),
        RTT_PROBE.from(props), CACHE_GROUPS.from(props), metrics(props, bind),
        MEMORY_NEW.from(props));
  }

  private static Metrics metrics(Map<String, String> props, InetSocketAddress bind) {
    boolean enabled = METRICS.from(props);
    int port = METRICS_PORT.from(props);
    String host = METRICS_BIND.optional(props).map(String::trim).orElse(bind.getHostString());
    Optional<InetSocketAddress> http = Optional.empty();
    if (port != 0) {
      if (!enabled) {
        throw new IllegalArgumentException(METRICS_PORT.name() + " is set but " + METRICS.name()
            + " is false: there would be nothing to serve");
      }
      InetSocketAddress a = new InetSocketAddress(host, port);
      if (a.isUnresolved()) {
        throw new IllegalArgumentException(METRICS_BIND.name() + ": cannot resolve host '"
            + host + "'");
      }
      http = Optional.of(a);
    }
    return new Metrics(enabled, http, host, enabled && METRICS_JMX.from(props));
  }

  private static InetSocketAddress bind(Map<String, String> props, ClusterConfig cluster,
      String dc) {
    String v = BIND.optional(props).orElse("");
    String host;
    int port;
    if (v.isEmpty()) {
      var eps = cluster.dc(dc).endpoints();
      if (eps.isEmpty()) {
        host = "127.0.0.1";
        port = 0;
      } else {
        host = eps.get(0).getHostString();
        port = eps.get(0).getPort();
      }
    } else {
      int colon = v.lastIndexOf(':');
      try {
        if (colon <= 0) {
          throw new NumberFormatException();
        }
        host = v.substring(0, colon).trim();
        port = Integer.parseInt(v.substring(colon + 1).trim());
        if (port < 0 || port > 65_535 || host.isEmpty()) {
          throw new NumberFormatException();
        }
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException(BIND.name() + ": '" + v + "' is not host:port");
      }
    }
    if (port == 0 && cluster.discoveryZk().isEmpty()) {
      throw new IllegalArgumentException(BIND.name() + ": port 0 (ephemeral) needs "
          + ClusterConfig.DISCOVERY_ZK.name() + ", or peers and clients cannot find the service");
    }
    InetSocketAddress a = new InetSocketAddress(host, port);
    if (a.isUnresolved()) {
      throw new IllegalArgumentException(BIND.name() + ": cannot resolve host '" + host + "'");
    }
    return a;
  }

  public ClusterConfig cluster() {
    return cluster;
  }

  public String dc() {
    return dc;
  }

  /** The address to listen on; port 0 means ephemeral (discovery publishes the bound port). */
  public InetSocketAddress bind() {
    return bind;
  }

  public int threads() {
    return threads;
  }

  /** The bound on requests waiting for a worker, in number and in time ({@link Admission}). */
  public Admission admission() {
    return admission;
  }

  public StoreKind store() {
    return store;
  }

  /**
   * With {@link StoreKind#MEMORY}: whether this process's store is a new DC's (marked serving);
   * else it starts without a marker and is rebuilt from the peers (docs/architecture.md
   * section 12).
   */
  public boolean memoryNew() {
    return memoryNew;
  }

  /** The DC's HBase store settings; present exactly when {@link #store()} is HBASE. */
  public Optional<HBaseStoreConfig> hbase() {
    return hbase;
  }

  public int readMaxKeys() {
    return readMaxKeys;
  }

  public int catchUpMaxPositions() {
    return catchUpMaxPositions;
  }

  public Duration catchUpWait() {
    return catchUpWait;
  }

  /** The request limits for {@link TransactionService}. */
  public TransactionService.Limits limits() {
    return new TransactionService.Limits(readMaxKeys, cluster.maxDatagramBytes(), catchUpWait);
  }

  /** The catch-up settings. */
  public CatchUp.Settings catchUpSettings() {
    return new CatchUp.Settings(learnTimeout, learnerTimeout, catchUpMaxPositions);
  }

  /**
   * The GC settings (section 7), or empty when {@link #GC_RETENTION_POSITIONS} is 0.
   */
  public Optional<GroupCollector.Settings> gcSettings() {
    return gcRetention == 0 ? Optional.empty() : Optional.of(new GroupCollector.Settings(
        gcRetention, gcEvery, gcBatch, gcPeerTimeout, gcMaxLag));
  }

  /** {@link #METRICS} and its HTTP and JMX publication. */
  public Metrics metrics() {
    return metrics;
  }

  /** {@link #CACHE_GROUPS}: the bound of each per-group cache. */
  public int cacheGroups() {
    return cacheGroups;
  }

  /** {@link #LEADER_HOLD_SHARE}: see {@link LeaderCombiner.Options#holdShare}. */
  public double leaderHoldShare() {
    return leaderHoldShare;
  }

  /**
   * Leader combination's options for this service: the emulated WAN's leader costs and RTTs
   * when it is on (unless {@link #LEADER_RTTS} is measured), else probes every
   * {@link #RTT_PROBE} (unless it is off).
   */
  public LeaderCombiner.Options leaderOptions() {
    boolean configured = cluster.wan().enabled() && leaderRtts != LeaderRtts.MEASURED;
    return new LeaderCombiner.Options(
        configured ? cluster.leaderCosts() : Map.of(), LeaderCombiner.Rules.SHIPPED,
        leaderHoldShare, configured ? cluster.wan().latency() : null,
        leaderRtts == LeaderRtts.OFF ? null : rttProbe);
  }

  /** Every service key with its effective value (defaults filled in). */
  public Map<String, String> effectiveValues() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(DC.name(), dc);
    m.put(BIND.name(), bind.getHostString() + ":" + bind.getPort());
    m.put(THREADS.name(), Integer.toString(threads));
    m.put(QUEUE_MAX_REQUESTS.name(), Integer.toString(admission.maxQueued()));
    m.put(QUEUE_MAX_WAIT.name(), Long.toString(admission.maxWait().toMillis()));
    m.put(STORE.name(), store.name().toLowerCase(java.util.Locale.ROOT));
    m.put(MEMORY_NEW.name(), Boolean.toString(memoryNew));
    m.put(READ_MAX_KEYS.name(), Integer.toString(readMaxKeys));
    m.put(CATCHUP_MAX_POSITIONS.name(), Integer.toString(catchUpMaxPositions));
    m.put(CATCHUP_WAIT.name(), Long.toString(catchUpWait.toMillis()));
    m.put(LEARN_TIMEOUT.name(), Long.toString(learnTimeout.toMillis()));
    m.put(LEARNER_TIMEOUT.name(), Long.toString(learnerTimeout.toMillis()));
    m.put(GC_RETENTION_POSITIONS.name(), Integer.toString(gcRetention));
    m.put(GC_EVERY_POSITIONS.name(), Integer.toString(gcEvery));
    m.put(GC_BATCH_POSITIONS.name(), Integer.toString(gcBatch));
    m.put(GC_MAX_LAG_POSITIONS.name(), Integer.toString(gcMaxLag));
    m.put(GC_PEER_TIMEOUT.name(), Long.toString(gcPeerTimeout.toMillis()));
    m.put(LEADER_HOLD_SHARE.name(), Double.toString(leaderHoldShare));
    m.put(LEADER_RTTS.name(), leaderRtts.name().toLowerCase(java.util.Locale.ROOT));
    m.put(RTT_PROBE.name(), Long.toString(rttProbe.toMillis()));
    m.put(CACHE_GROUPS.name(), Integer.toString(cacheGroups));
    m.put(METRICS.name(), Boolean.toString(metrics.enabled()));
    m.put(METRICS_PORT.name(), Integer.toString(metrics.http().map(a -> a.getPort()).orElse(0)));
    m.put(METRICS_BIND.name(), metrics.bindHost());
    m.put(METRICS_JMX.name(), Boolean.toString(metrics.jmx()));
    return Collections.unmodifiableMap(m);
  }

  /** Logs every effective value once (at start-up), then the cluster and the store settings. */
  public void logEffectiveValues() {
    effectiveValues().forEach((k, v) -> LOG.info("{} = {}", k, v));
    LOG.info("cluster: {}", cluster);
    hbase.ifPresent(h -> LOG.info("store: {}", h));
    if (store == StoreKind.MEMORY) {
      LOG.warn("{} = memory: DC {}'s data lives in this process only and is lost when it stops",
          STORE.name(), dc);
      if (!memoryNew) {
        LOG.warn("{} = false: DC {}'s store starts without a marker and serves no group until "
            + "paxoscp dc rebuild --dc {} --all copies it from its peers (a new cluster sets it "
            + "true)", MEMORY_NEW.name(), dc, dc);
      }
    }
  }

  @Override
  public String toString() {
    return "ServiceConfig" + effectiveValues();
  }

}
