package org.paxoscp.service;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.transport.ClusterConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The settings of one Transaction Service process, read from the same {@code key=value} file as
 * the {@link ClusterConfig} (which ignores the {@value #PREFIX} keys): which DC it serves, where
 * it listens, its worker threads, its store, and its request and catch-up limits. Every key is in
 * {@link #KEYS} with its meaning; unknown {@value #PREFIX} keys are rejected.
 *
 * <p><b>Bind address.</b> When {@value #BIND} is not set, the service listens on its DC's first
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
  public static final String DC = PREFIX + "dc";
  public static final String BIND = PREFIX + "bind";
  public static final String THREADS = PREFIX + "threads";
  public static final String STORE = PREFIX + "store";
  public static final String READ_MAX_KEYS = PREFIX + "read.max.keys";
  public static final String CATCHUP_MAX_POSITIONS = PREFIX + "catchup.max.positions";
  public static final String CATCHUP_WAIT_MS = PREFIX + "catchup.wait.ms";
  public static final String GC_RETENTION_POSITIONS = PREFIX + "gc.retention.positions";
  public static final String GC_EVERY_POSITIONS = PREFIX + "gc.every.positions";
  public static final String GC_BATCH_POSITIONS = PREFIX + "gc.batch.positions";
  public static final String GC_MAX_LAG_POSITIONS = PREFIX + "gc.max.lag.positions";

  public static final int DEFAULT_THREADS = 16;
  public static final int DEFAULT_READ_MAX_KEYS = 1000;
  public static final int DEFAULT_CATCHUP_MAX_POSITIONS = 256;
  public static final int DEFAULT_GC_RETENTION_POSITIONS = 10_000;
  public static final int DEFAULT_GC_EVERY_POSITIONS = 100;
  public static final int DEFAULT_GC_BATCH_POSITIONS = 1_000;
  public static final int DEFAULT_GC_MAX_LAG_POSITIONS = 1_000_000;

  /** Every key with a one-line description; the README's configuration table mirrors it. */
  public static final Map<String, String> KEYS = keys();

  private static Map<String, String> keys() {
    Map<String, String> k = new LinkedHashMap<>();
    k.put(DC, "the DC this service serves; one of paxoscp.dcs (required)");
    k.put(BIND, "host:port to listen on (default: the DC's first static endpoint, else "
        + "127.0.0.1:0; port 0 needs discovery)");
    k.put(THREADS, "worker threads that handle requests (default " + DEFAULT_THREADS + ")");
    k.put(STORE, "hbase or memory (default hbase); memory keeps the DC's state in this process "
        + "only: one process per DC, never restarted");
    k.put(READ_MAX_KEYS, "most keys one read request may name (default "
        + DEFAULT_READ_MAX_KEYS + ")");
    k.put(CATCHUP_MAX_POSITIONS, "most log positions one catch-up run learns (default "
        + DEFAULT_CATCHUP_MAX_POSITIONS + ")");
    k.put(CATCHUP_WAIT_MS, "how long a begin or read request waits for catch-up, ms (default "
        + "twice paxoscp.request.timeout.ms)");
    k.put(GC_RETENTION_POSITIONS, "log positions kept below the lowest applied position of all "
        + "DCs; older WAL rows and superseded data versions are collected and requests for them "
        + "answered TOO_OLD; 0 turns collection off (default " + DEFAULT_GC_RETENTION_POSITIONS
        + ")");
    k.put(GC_EVERY_POSITIONS, "a GC round starts every this many applied positions of a group "
        + "(default " + DEFAULT_GC_EVERY_POSITIONS + ")");
    k.put(GC_BATCH_POSITIONS, "most positions one GC round collects (default "
        + DEFAULT_GC_BATCH_POSITIONS + ")");
    k.put(GC_MAX_LAG_POSITIONS, "how far the other DCs may get ahead of a silent DC before GC "
        + "goes on without it (that DC must then be rebuilt); 0 waits for ever (default "
        + DEFAULT_GC_MAX_LAG_POSITIONS + ")");
    return Collections.unmodifiableMap(k);
  }

  /** Where the DC's data lives. */
  public enum StoreKind { HBASE, MEMORY }

  private final ClusterConfig cluster;
  private final String dc;
  private final InetSocketAddress bind;
  private final int threads;
  private final StoreKind store;
  private final Optional<HBaseStoreConfig> hbase;
  private final int readMaxKeys;
  private final int catchUpMaxPositions;
  private final Duration catchUpWait;
  private final int gcRetention;
  private final int gcMaxLag;
  private final int gcEvery;
  private final int gcBatch;

  private ServiceConfig(ClusterConfig cluster, String dc, InetSocketAddress bind, int threads,
      StoreKind store, Optional<HBaseStoreConfig> hbase, int readMaxKeys,
      int catchUpMaxPositions, Duration catchUpWait, int gcRetention, int gcEvery, int gcBatch,
      int gcMaxLag) {
    this.gcRetention = gcRetention;
    this.gcMaxLag = gcMaxLag;
    this.gcEvery = gcEvery;
    this.gcBatch = gcBatch;
    this.cluster = cluster;
    this.dc = dc;
    this.bind = bind;
    this.threads = threads;
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
    ClusterConfig cluster = ClusterConfig.fromProperties(props, PREFIX);
    for (String k : props.keySet()) {
      if (k.startsWith(PREFIX) && !KEYS.containsKey(k)) {
        throw new IllegalArgumentException("unknown key " + k + "; known keys: " + KEYS.keySet());
      }
    }
    String dc = get(props, DC, "");
    if (dc.isEmpty()) {
      throw new IllegalArgumentException("missing required key " + DC);
    }
    if (!cluster.dcNames().contains(dc)) {
      throw new IllegalArgumentException(DC + ": DC " + dc + " is not in " + cluster.dcNames());
    }
    InetSocketAddress bind = bind(props, cluster, dc);
    int threads = intIn(props, THREADS, DEFAULT_THREADS, 1, 1024);
    StoreKind store = switch (get(props, STORE, "hbase")) {
      case "hbase" -> StoreKind.HBASE;
      case "memory" -> StoreKind.MEMORY;
      default -> throw new IllegalArgumentException(STORE + ": expected hbase or memory, was '"
          + get(props, STORE, "") + "'");
    };
    Optional<HBaseStoreConfig> hbase = Optional.empty();
    if (store == StoreKind.HBASE) {
      try {
        hbase = Optional.of(HBaseStoreConfig.fromProperties(dc, cluster.dc(dc).hbase()));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(ClusterConfig.DC_PREFIX + dc + ".hbase.*: "
            + e.getMessage(), e);
      }
    }
    int readMaxKeys = intIn(props, READ_MAX_KEYS, DEFAULT_READ_MAX_KEYS, 1, 1_000_000);
    int maxPositions = intIn(props, CATCHUP_MAX_POSITIONS, DEFAULT_CATCHUP_MAX_POSITIONS, 1,
        1_000_000);
    long defaultWait = cluster.requestTimeout().toMillis() * 2;
    int waitMs = intIn(props, CATCHUP_WAIT_MS, (int) Math.min(Integer.MAX_VALUE, defaultWait), 1,
        Integer.MAX_VALUE);
    int gcRetention = intIn(props, GC_RETENTION_POSITIONS, DEFAULT_GC_RETENTION_POSITIONS, 0,
        Integer.MAX_VALUE);
    int gcEvery = intIn(props, GC_EVERY_POSITIONS, DEFAULT_GC_EVERY_POSITIONS, 1, 1_000_000);
    int gcBatch = intIn(props, GC_BATCH_POSITIONS, DEFAULT_GC_BATCH_POSITIONS, 1, 1_000_000);
    int gcMaxLag = intIn(props, GC_MAX_LAG_POSITIONS, DEFAULT_GC_MAX_LAG_POSITIONS, 0,
        Integer.MAX_VALUE);
    return new ServiceConfig(cluster, dc, bind, threads, store, hbase, readMaxKeys, maxPositions,
        Duration.ofMillis(waitMs), gcRetention, gcEvery, gcBatch, gcMaxLag);
  }

  private static InetSocketAddress bind(Map<String, String> props, ClusterConfig cluster,
      String dc) {
    String v = get(props, BIND, "");
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
        throw new IllegalArgumentException(BIND + ": '" + v + "' is not host:port");
      }
    }
    if (port == 0 && cluster.discoveryZk().isEmpty()) {
      throw new IllegalArgumentException(BIND + ": port 0 (ephemeral) needs "
          + ClusterConfig.DISCOVERY_ZK + ", or peers and clients cannot find the service");
    }
    InetSocketAddress a = new InetSocketAddress(host, port);
    if (a.isUnresolved()) {
      throw new IllegalArgumentException(BIND + ": cannot resolve host '" + host + "'");
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

  public StoreKind store() {
    return store;
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

  /** The catch-up settings: learn requests wait one request timeout, a learner four. */
  public CatchUp.Settings catchUpSettings() {
    Duration t = cluster.requestTimeout();
    return new CatchUp.Settings(t, t.multipliedBy(4), catchUpMaxPositions);
  }

  /**
   * The GC settings (section 7), or empty when {@value #GC_RETENTION_POSITIONS} is 0; peers are
   * asked for their applied watermark with the cluster's request timeout.
   */
  public Optional<GroupCollector.Settings> gcSettings() {
    return gcRetention == 0 ? Optional.empty() : Optional.of(new GroupCollector.Settings(
        gcRetention, gcEvery, gcBatch, cluster.requestTimeout(), gcMaxLag));
  }

  /** Every service key with its effective value (defaults filled in). */
  public Map<String, String> effectiveValues() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(DC, dc);
    m.put(BIND, bind.getHostString() + ":" + bind.getPort());
    m.put(THREADS, Integer.toString(threads));
    m.put(STORE, store.name().toLowerCase(java.util.Locale.ROOT));
    m.put(READ_MAX_KEYS, Integer.toString(readMaxKeys));
    m.put(CATCHUP_MAX_POSITIONS, Integer.toString(catchUpMaxPositions));
    m.put(CATCHUP_WAIT_MS, Long.toString(catchUpWait.toMillis()));
    m.put(GC_RETENTION_POSITIONS, Integer.toString(gcRetention));
    m.put(GC_EVERY_POSITIONS, Integer.toString(gcEvery));
    m.put(GC_BATCH_POSITIONS, Integer.toString(gcBatch));
    m.put(GC_MAX_LAG_POSITIONS, Integer.toString(gcMaxLag));
    return Collections.unmodifiableMap(m);
  }

  /** Logs every effective value once (at start-up), then the cluster and the store settings. */
  public void logEffectiveValues() {
    effectiveValues().forEach((k, v) -> LOG.info("{} = {}", k, v));
    LOG.info("cluster: {}", cluster);
    hbase.ifPresent(h -> LOG.info("store: {}", h));
    if (store == StoreKind.MEMORY) {
      LOG.warn("{} = memory: DC {}'s data lives in this process only and is lost when it stops",
          STORE, dc);
    }
  }

  @Override
  public String toString() {
    return "ServiceConfig" + effectiveValues();
  }

  private static String get(Map<String, String> props, String key, String dflt) {
    String v = props.get(key);
    return v == null ? dflt : v.trim();
  }

  private static int intIn(Map<String, String> props, String key, int dflt, int min, int max) {
    String v = get(props, key, Integer.toString(dflt));
    int n;
    try {
      n = Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' is not an integer");
    }
    if (n < min || n > max) {
      throw new IllegalArgumentException(key + " must be in [" + min + ", " + max + "], was " + n);
    }
    return n;
  }
}
