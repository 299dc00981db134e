package org.paxoscp.transport;

import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import org.paxoscp.config.ConfigKey;
import org.paxoscp.config.ConfigKeys;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;

/**
 * A cluster's topology and shared settings, the same for every service and client of the cluster:
 * the DCs (in a fixed order, which is the proposers' DC index order), each DC's service endpoints
 * and HBase settings, the per-cluster secret key, optional ZooKeeper discovery, the
 * datagram size limit, the request timeout, and the WAN emulation (off unless enabled).
 *
 * <p>Read from {@code key=value} properties by {@link #fromProperties}; every key is a
 * {@link ConfigKey} listed in {@link #KEYS}, and the cluster file also carries the proposer
 * settings of {@link ProposerConfig#KEYS}. Unknown {@code paxoscp.*} keys are rejected. Immutable.
 */
public final class ClusterConfig {
  public static final ConfigKey<List<String>> DCS = ConfigKey.custom("paxoscp.dcs",
      "DC names", null, "(required)", "comma-separated DC names, in order", ClusterConfig::names);
  public static final ConfigKey<byte[]> KEY = ConfigKey.custom("paxoscp.key", "hex", null,
      "(required)", "per-cluster secret key, at least 16 bytes (32 hex digits): every datagram is "
          + "sealed under keys derived from it. Services need it; an application host may hold "
          + "only the client key (client:<hex>), an operator's host the operator key "
          + "(operator:<hex>): ./paxoscp key derive prints them", ClusterConfig::hexKey);
  public static final ConfigKey<List<byte[]>> KEY_ACCEPT = ConfigKey.custom("paxoscp.key.accept",
      "hex list", List.of(), "(none)",
      "further keys (comma-separated) this process opens datagrams with but never seals with: "
          + "for a key change without downtime, add the new key here everywhere, then make it "
          + "paxoscp.key with the old one here, then drop the old one (one rolling restart each)",
      ClusterConfig::hexKeys);
  public static final ConfigKey<Boolean> WIRE_ENCRYPT = ConfigKey.bool("paxoscp.wire.encrypt",
      true, "encrypt datagrams (AES-256-GCM) besides authenticating them; false: authenticated "
          + "only, readable on the wire. A receiver opens both, so either can be rolled out "
          + "one process at a time (with " + "paxoscp.wire.require.encrypted=false)");
  public static final ConfigKey<Boolean> WIRE_REQUIRE_ENCRYPTED = ConfigKey.bool(
      "paxoscp.wire.require.encrypted", true, "drop datagrams that arrive authenticated but not "
          + "encrypted (counted as clear); false lets a receiver open them, for a packet capture "
          + "while debugging with paxoscp.wire.encrypt=false");
  public static final ConfigKey<Integer> CLUSTER_VERSION_MAX = ConfigKey.integer(
      "paxoscp.cluster.version.max", org.paxoscp.version.ClusterVersion.LATEST,
      org.paxoscp.version.ClusterVersion.OLDEST, org.paxoscp.version.ClusterVersion.LATEST,
      "the newest cluster version this process speaks (docs/upgrading.md); lower only to hold "
          + "a process to the formats of an earlier build (it refuses a cluster raised past it)");
  public static final ConfigKey<Duration> CLUSTER_VERSION_POLL = ConfigKey.millis(
      "paxoscp.cluster.version.poll.ms", 5_000, 100, 600_000, "how often a service re-reads "
          + "the cluster version in its DC's store and a client asks its home DC for it");
  public static final ConfigKey<Duration> WIRE_FRESHNESS = ConfigKey.millis(
      "paxoscp.wire.freshness.ms", 30_000, 1_000, 3_600_000, "a datagram sealed further than this "
          + "from the receiver's clock is dropped as stale (clocks need NTP; paxoscp status shows "
          + "each DC's offset)");
  /** {@code paxoscp.dc.<DC>.}: the prefix of one DC's keys. */
  public static final String DC_PREFIX = "paxoscp.dc.";
  public static final ConfigKey<List<InetSocketAddress>> DC_ENDPOINTS = ConfigKey.custom(
      DC_PREFIX + "<DC>.endpoints", "host:port list", List.of(), "(none)",
      "static host:port list of the services of DC <DC>", v -> parseEndpoints("endpoints", v));
  public static final ConfigKey<String> DC_HBASE = ConfigKey.optionalString(
      DC_PREFIX + "<DC>.hbase.<key>", "the HBase store setting paxoscp.hbase.<key> for DC "
          + "<DC> (e.g. paxoscp.dc.V1.hbase.zk.port)");
  public static final ConfigKey<String> DISCOVERY_ZK = ConfigKey.optionalString(
      "paxoscp.discovery.zk", "ZooKeeper connect string for Curator service discovery");
  public static final ConfigKey<String> DISCOVERY_PATH = ConfigKey.string(
      "paxoscp.discovery.path", "/paxoscp", "ZooKeeper base path for service discovery");
  public static final ConfigKey<Duration> DISCOVERY_CONNECT_TIMEOUT = ConfigKey.millis(
      "paxoscp.discovery.connect.timeout.ms", 10_000, 1, Integer.MAX_VALUE,
      "how long a service or client waits for ZooKeeper when it starts");
  /** UDP payloads over IPv4 are at most 65,507 bytes. */
  public static final int MAX_UDP_PAYLOAD = 65_507;
  public static final ConfigKey<Integer> MAX_DATAGRAM_BYTES = ConfigKey.integer(
      "paxoscp.max.datagram.bytes", 60_000, 1024, MAX_UDP_PAYLOAD,
      "largest datagram sent or accepted");
  public static final ConfigKey<Duration> REQUEST_TIMEOUT = ConfigKey.millis(
      "paxoscp.request.timeout.ms", 2_000, 1, Integer.MAX_VALUE,
      "how long a client's begin or read request waits for one DC before it fails over to the "
          + "next (a service may spend up to paxoscp.service.catchup.wait.ms catching up first)");
  public static final ConfigKey<Boolean> WAN_ENABLED = ConfigKey.bool("paxoscp.wan.enabled",
      false, "emulate WAN delays between DCs");
  /** {@code paxoscp.wan.rtt.<A>.<B>}: round-trip time in ms between DCs A and B. */
  public static final String WAN_RTT_PREFIX = "paxoscp.wan.rtt.";
  public static final ConfigKey<Duration> WAN_RTT = ConfigKey.fractionalMillis(
      WAN_RTT_PREFIX + "<A>.<B>", 0, "round-trip ms between DCs A and B")
      .withDefaultText("the paper's V/O/C regions");
  public static final ConfigKey<Duration> WAN_LOCAL_RTT = ConfigKey.fractionalMillis(
      "paxoscp.wan.local.rtt.ms", 0, "round-trip ms between a client and its home DC");
  public static final ConfigKey<Double> WAN_JITTER = ConfigKey.decimal("paxoscp.wan.jitter",
      0.1, 0, 1, "delay jitter as a fraction of the one-way delay");
  public static final ConfigKey<Double> WAN_LOSS = ConfigKey.decimal("paxoscp.wan.loss", 0, 0,
      1, "probability a datagram between DCs is dropped");
  public static final ConfigKey<Double> WAN_DUPLICATE = ConfigKey.decimal(
      "paxoscp.wan.duplicate", 0, 0, 1, "probability a datagram between DCs is sent twice");
  public static final ConfigKey<Set<String>> WAN_PARTITIONED = ConfigKey.custom(
      "paxoscp.wan.partitioned", "DC names", Set.of(), "(none)",
      "comma-separated DCs cut off from every other DC", v -> Set.copyOf(names(v)));

  public static final ConfigKey<InetSocketAddress> CLIENT_BIND = ConfigKey.custom(
      "paxoscp.client.bind", "host or host:port", null,
      "loopback if every endpoint is, else the wildcard address",
      "local address a client's socket binds (port 0 or none: any free port); set it on a "
          + "host with several interfaces", ClusterConfig::parseBind);
  public static final ConfigKey<Integer> CLIENT_SESSION_GROUPS = ConfigKey.integer(
      "paxoscp.client.session.groups", 100_000, 1, Integer.MAX_VALUE,
      "most groups whose session position (read-your-writes) a client caches; an evicted group "
          + "still reads its own writes, at one extra round to a majority of DCs per begin");
  public static final ConfigKey<Integer> CLIENT_XG_MAX_GROUPS = ConfigKey.integer(
      "paxoscp.client.xg.max.groups", 25, 2, 1000,
      "most entity groups one cross-group transaction may touch; a transaction that touches "
          + "more fails before anything is sent");
  public static final ConfigKey<Duration> CLIENT_XG_LOCK_TIMEOUT = ConfigKey.millis(
      "paxoscp.client.xg.lock.timeout.ms", 5_000, 1, 3_600_000,
      "how long a cross-group transaction's PREPAREs hold their keys before a reader that "
          + "meets them may abort the transaction (its client normally decides much sooner)");

  /** Every cluster key; docs/configuration.md is generated from it. */
  public static final ConfigKeys KEYS = new ConfigKeys("Cluster (every service and client)",
      DCS, KEY, KEY_ACCEPT, WIRE_ENCRYPT, WIRE_REQUIRE_ENCRYPTED, CLUSTER_VERSION_MAX,
      CLUSTER_VERSION_POLL, WIRE_FRESHNESS, DC_ENDPOINTS, DC_HBASE, DISCOVERY_ZK, DISCOVERY_PATH,
      DISCOVERY_CONNECT_TIMEOUT, MAX_DATAGRAM_BYTES, REQUEST_TIMEOUT, CLIENT_BIND,
      CLIENT_SESSION_GROUPS, CLIENT_XG_MAX_GROUPS, CLIENT_XG_LOCK_TIMEOUT, WAN_ENABLED, WAN_RTT,
      WAN_LOCAL_RTT, WAN_JITTER, WAN_LOSS, WAN_DUPLICATE, WAN_PARTITIONED);

  /** One DC: its name, static service endpoints (may be empty with discovery) and HBase keys. */
  public record Dc(String name, List<InetSocketAddress> endpoints, Map<String, String> hbase) {
    public Dc {
      endpoints = List.copyOf(endpoints);
      hbase = Collections.unmodifiableMap(new TreeMap<>(hbase));
    }
  }

  /**
   * The WAN emulation settings.
   *
   * @param enabled when false the transport adds nothing to real network behaviour
   * @param latency round-trip times between DCs (the paper's regions unless overridden)
   * @param localRttMicros round trip between a client and its home DC's services
   */
  public record Wan(boolean enabled, Latency latency, long localRttMicros, double jitter,
      double loss, double duplicate, Set<String> partitioned) {
    public Wan {
      partitioned = Set.copyOf(partitioned);
      if (jitter < 0 || jitter > 1 || loss < 0 || loss > 1 || duplicate < 0 || duplicate > 1) {
        throw new IllegalArgumentException("WAN jitter, loss and duplicate must be in [0, 1]");
      }
      if (localRttMicros < 0) {
        throw new IllegalArgumentException("WAN local RTT must be >= 0");
      }
    }

    public static Wan off() {
      return new Wan(false, Latency.paperRegions(), 0, 0.1, 0, 0, Set.of());
    }

    /** One-way delay between two DCs in microseconds; 0 when emulation is off. */
    public long oneWayMicros(String a, String b) {
      if (!enabled) {
        return 0;
      }
      return (a.equals(b) ? localRttMicros : latency.rttMicros(a, b)) / 2;
    }
  }

  private final List<Dc> dcs;
  private final byte[] key;
  private final Optional<String> discoveryZk;
  private final String discoveryPath;
  private final int maxDatagramBytes;
  private final Duration requestTimeout;
  private final Duration discoveryConnectTimeout;
  private final Wan wan;
  /** The proposer settings of {@link ProposerConfig#KEYS} as given (defaults for the others). */
  private final Map<String, String> proposerProperties;
  private final Optional<InetSocketAddress> clientBind;
  private final int clientSessionGroups;
  private final CrossGroup crossGroup;
  private final List<byte[]> acceptedKeys;
  private final Wire wire;

  /**
   * How this process speaks on the wire.
   *
   * @param encrypt {@link #WIRE_ENCRYPT}
   * @param requireEncrypted {@link #WIRE_REQUIRE_ENCRYPTED}
   * @param versionMax {@link #CLUSTER_VERSION_MAX}
   * @param versionPoll {@link #CLUSTER_VERSION_POLL}
   * @param freshness {@link #WIRE_FRESHNESS}
   * @param keyRole the role whose key {@link #KEY} is (its prefix); null: the cluster key
   */
  public record Wire(boolean encrypt, boolean requireEncrypted, int versionMax,
      Duration versionPoll, Duration freshness, Role keyRole) {
    public static final Wire DEFAULTS = new Wire(WIRE_ENCRYPT.defaultValue(),
        WIRE_REQUIRE_ENCRYPTED.defaultValue(), CLUSTER_VERSION_MAX.defaultValue(),
        CLUSTER_VERSION_POLL.defaultValue(), WIRE_FRESHNESS.defaultValue(), null);

    public Wire {
      if (!encrypt && requireEncrypted) {
        throw new IllegalArgumentException(WIRE_ENCRYPT.name() + "=false sends datagrams that "
            + "every receiver requiring encryption drops: set " + WIRE_REQUIRE_ENCRYPTED.name()
            + "=false here and at every receiver first");
      }
      if (keyRole == Role.SERVICE) {
        throw new IllegalArgumentException(KEY.name() + ": a service needs the cluster key "
            + "itself, not a service: key");
      }
      if (keyRole != null && versionMax < org.paxoscp.version.ClusterVersion.WIRE_4) {
        throw new IllegalArgumentException(KEY.name() + " holds a role key; cluster version "
            + versionMax + " (" + CLUSTER_VERSION_MAX.name() + ") sends wire version 3, which "
            + "needs the cluster key");
      }
    }
  }

  /** The client's cross-group transaction settings. */
  public record CrossGroup(int maxGroups, Duration lockTimeout) {
    public static final CrossGroup DEFAULTS = new CrossGroup(CLIENT_XG_MAX_GROUPS.defaultValue(),
        CLIENT_XG_LOCK_TIMEOUT.defaultValue());
  }

  /**
   * For launchers and tests: one timeout for requests and the proposer's phases, the default
   * discovery connect timeout, defaults for the other proposer settings.
   */
  public ClusterConfig(List<Dc> dcs, byte[] key, Optional<String> discoveryZk,
      String discoveryPath, int maxDatagramBytes, Duration requestTimeout, Wan wan) {
    this(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes, requestTimeout,
        DISCOVERY_CONNECT_TIMEOUT.defaultValue(), wan,
        Map.of(ProposerConfig.PHASE_TIMEOUT.name(), Long.toString(requestTimeout.toMillis())));
  }

  public ClusterConfig(List<Dc> dcs, byte[] key, Optional<String> discoveryZk,
      String discoveryPath, int maxDatagramBytes, Duration requestTimeout,
      Duration discoveryConnectTimeout, Wan wan, Map<String, String> proposerProperties) {
    this(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes, requestTimeout,
        discoveryConnectTimeout, wan, proposerProperties, Optional.empty(),
        CLIENT_SESSION_GROUPS.defaultValue(), CrossGroup.DEFAULTS, List.of(), Wire.DEFAULTS);
  }

  private ClusterConfig(List<Dc> dcs, byte[] key, Optional<String> discoveryZk,
      String discoveryPath, int maxDatagramBytes, Duration requestTimeout,
      Duration discoveryConnectTimeout, Wan wan, Map<String, String> proposerProperties,
      Optional<InetSocketAddress> clientBind, int clientSessionGroups, CrossGroup crossGroup,
      List<byte[]> acceptedKeys, Wire wire) {
    this.clientBind = clientBind;
    this.acceptedKeys = acceptedKeys.stream().map(byte[]::clone).toList();
    this.wire = java.util.Objects.requireNonNull(wire);
    this.crossGroup = crossGroup;
    this.clientSessionGroups = clientSessionGroups;
    if (clientSessionGroups < 1) {
      throw new IllegalArgumentException(CLIENT_SESSION_GROUPS.name() + " must be >= 1");
    }
    this.discoveryConnectTimeout = discoveryConnectTimeout;
    this.proposerProperties = Map.copyOf(proposerProperties);
    this.dcs = List.copyOf(dcs);
    this.key = key.clone();
    this.discoveryZk = discoveryZk;
    this.discoveryPath = discoveryPath;
    this.maxDatagramBytes = maxDatagramBytes;
    this.requestTimeout = requestTimeout;
    this.wan = wan;
    if (this.dcs.isEmpty()) {
      throw new IllegalArgumentException(DCS.name() + ": at least one DC is needed");
    }
    Set<String> names = new HashSet<>();
    for (Dc d : this.dcs) {
      if (!d.name().matches("[A-Za-z0-9_]{1,40}")) {
        throw new IllegalArgumentException(DCS.name() + ": DC name '" + d.name()
            + "' must be 1-40 letters, digits or underscores");
      }
      if (!names.add(d.name())) {
        throw new IllegalArgumentException(DCS.name() + ": DC " + d.name() + " is listed twice");
      }
      if (d.endpoints().isEmpty() && discoveryZk.isEmpty()) {
        throw new IllegalArgumentException("DC " + d.name() + " has no endpoints: set "
            + DC_PREFIX + d.name() + ".endpoints or " + DISCOVERY_ZK.name());
      }
    }
    if (this.key.length < 16) {
      throw new IllegalArgumentException(KEY.name() + " must be at least 16 bytes (32 hex digits)");
    }
    for (byte[] k : this.acceptedKeys) {
      if (k.length < 16) {
        throw new IllegalArgumentException(KEY_ACCEPT.name()
            + ": every key must be at least 16 bytes (32 hex digits)");
      }
    }
    // A client keeps 512 bytes of each datagram for the envelope around a log value.
    if (maxDatagramBytes < 1024 || maxDatagramBytes > MAX_UDP_PAYLOAD) {
      throw new IllegalArgumentException(MAX_DATAGRAM_BYTES.name() + " must be in [1024, "
          + MAX_UDP_PAYLOAD + "], was " + maxDatagramBytes);
    }
    if (requestTimeout.isNegative() || requestTimeout.isZero()) {
      throw new IllegalArgumentException(REQUEST_TIMEOUT.name() + " must be positive");
    }
    if (wan.enabled()) {
      wan.latency().validate(names);
    }
    for (String p : wan.partitioned()) {
      if (!names.contains(p)) {
        throw new IllegalArgumentException(WAN_PARTITIONED.name() + ": unknown DC " + p);
      }
    }
  }

  /**
   * Reads the cluster file {@code file} (a properties file, UTF-8, as {@code ./paxoscp cluster}
   * and the deployment guide write it) and parses it with {@link #fromProperties(Map,
   * ConfigKeys...)}. A file holding the key must be readable by its owner only (mode 600):
   * {@link KeyFiles#read} refuses it otherwise. The services' own keys
   * ({@value #SERVICE_PREFIX}*) are skipped, so an application may read a service's file.
   *
   * @throws IllegalArgumentException naming the file or the key, for a missing file or a
   *     missing, unknown or invalid value
   * @throws java.io.UncheckedIOException if the file cannot be read
   */
  public static ClusterConfig load(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException("no cluster file " + file.toAbsolutePath());
    }
    Map<String, String> props = new TreeMap<>(KeyFiles.read(file));
    props.keySet().removeIf(k -> k.startsWith(SERVICE_PREFIX));
    try {
      return fromProperties(props);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": " + e.getMessage(), e);
    }
  }

  /**
   * {@link #fromProperties(Map, ConfigKeys...)} of {@code props} as {@link Properties#load}
   * read them (every key and value a string).
   *
   * @throws IllegalArgumentException for a key or value that is not a string, and as the other
   */
  public static ClusterConfig fromProperties(Properties props, ConfigKeys... others) {
    Map<String, String> m = new TreeMap<>();
    for (Map.Entry<Object, Object> e : props.entrySet()) {
      if (!(e.getKey() instanceof String k) || !(e.getValue() instanceof String v)) {
        throw new IllegalArgumentException("a cluster property that is not a string: "
            + e.getKey());
      }
      m.put(k, v);
    }
    return fromProperties(m, others);
  }

  /** The prefix of the services' own keys, which {@link #load} skips. */
  public static final String SERVICE_PREFIX = "paxoscp.service.";

  /**
   * Parses a cluster configuration. Keys outside {@code paxoscp.} are ignored; unknown
   * {@code paxoscp.} keys are rejected unless they belong to {@code others} (a service's file
   * holds its own keys too, see {@code ServiceConfig}).
   *
   * @throws IllegalArgumentException naming the key, for a missing, unknown or invalid value
   */
  public static ClusterConfig fromProperties(Map<String, String> props, ConfigKeys... others) {
    props = withoutRetired(props);
    KEYS.rejectUnknown(props, "paxoscp.", concat(others, ProposerConfig.KEYS));
    List<String> names = DCS.from(props);
    Latency latency = Latency.paperRegions();
    Map<String, Map<String, String>> hbase = new LinkedHashMap<>();
    Map<String, List<InetSocketAddress>> endpoints = new LinkedHashMap<>();
    for (String n : names) {
      hbase.put(n, new TreeMap<>());
      endpoints.put(n, List.of());
    }
    for (var e : new TreeMap<>(props).entrySet()) {
      String k = e.getKey();
      String v = e.getValue().trim();
      if (k.startsWith(DC_PREFIX)) {
        String rest = k.substring(DC_PREFIX.length());
        int dot = rest.indexOf('.');
        String dc = dot < 0 ? rest : rest.substring(0, dot);
        String sub = dot < 0 ? "" : rest.substring(dot + 1);
        if (!names.contains(dc)) {
          throw new IllegalArgumentException(k + ": DC " + dc + " is not in " + DCS.name());
        }
        if (sub.equals("endpoints")) {
          endpoints.put(dc, parseEndpoints(k, v));
        } else {
          hbase.get(dc).put("paxoscp." + sub, v);
        }
      } else if (k.startsWith(WAN_RTT_PREFIX)) {
        String[] pair = k.substring(WAN_RTT_PREFIX.length()).split("\\.");
        if (pair.length != 2 || !names.contains(pair[0]) || !names.contains(pair[1])) {
          throw new IllegalArgumentException(k + ": expected " + WAN_RTT_PREFIX
              + "<A>.<B> with A and B in " + DCS.name());
        }
        Duration rtt = ConfigKey.fractionalMillis(k, 0, "").parse(v);
        latency = latency.withPair(pair[0], pair[1], rtt.toNanos() / 1000);
      }
    }
    List<Dc> dcs = new ArrayList<>();
    for (String n : names) {
      dcs.add(new Dc(n, endpoints.get(n), hbase.get(n)));
    }
    Wan wan = new Wan(WAN_ENABLED.from(props), latency,
        WAN_LOCAL_RTT.from(props).toNanos() / 1000, WAN_JITTER.from(props), WAN_LOSS.from(props),
        WAN_DUPLICATE.from(props), WAN_PARTITIONED.from(props));
    Map<String, String> proposer = new TreeMap<>();
    for (var e : props.entrySet()) {
      if (ProposerConfig.KEYS.knows(e.getKey())) {
        proposer.put(e.getKey(), e.getValue());
      }
    }
    // Validated now, so a bad proposer value fails at start-up, naming its key.
    ProposerConfig.fromProperties(Protocol.BASIC, names, proposer);
    return new ClusterConfig(dcs, KEY.from(props), DISCOVERY_ZK.optional(props),
        DISCOVERY_PATH.from(props), MAX_DATAGRAM_BYTES.from(props), REQUEST_TIMEOUT.from(props),
        DISCOVERY_CONNECT_TIMEOUT.from(props), wan, proposer, CLIENT_BIND.optional(props),
        CLIENT_SESSION_GROUPS.from(props), new CrossGroup(CLIENT_XG_MAX_GROUPS.from(props),
            CLIENT_XG_LOCK_TIMEOUT.from(props)), KEY_ACCEPT.from(props),
        new Wire(WIRE_ENCRYPT.from(props), WIRE_REQUIRE_ENCRYPTED.from(props),
            CLUSTER_VERSION_MAX.from(props), CLUSTER_VERSION_POLL.from(props),
            WIRE_FRESHNESS.from(props),
            keyRole(props)));
  }

  /**
   * Keys of earlier builds that the cluster version replaced ({@code paxoscp.wire.version},
   * {@code paxoscp.wire.accept.v3}, which files written by the build before cluster versions
   * hold): read past, with a warning, so that such a file still starts this build.
   */
  static final List<String> RETIRED = List.of("paxoscp.wire.version", "paxoscp.wire.accept.v3");

  private static Map<String, String> withoutRetired(Map<String, String> props) {
    if (RETIRED.stream().noneMatch(props::containsKey)) {
      return props;
    }
    Map<String, String> kept = new LinkedHashMap<>(props);
    for (String k : RETIRED) {
      if (kept.remove(k) != null) {
        org.slf4j.LoggerFactory.getLogger(ClusterConfig.class).warn("{} is ignored: the "
            + "cluster version decides the wire version now (docs/upgrading.md); remove it", k);
      }
    }
    return kept;
  }

  private static ConfigKeys[] concat(ConfigKeys[] a, ConfigKeys b) {
    ConfigKeys[] out = java.util.Arrays.copyOf(a, a.length + 1);
    out[a.length] = b;
    return out;
  }

  private static List<String> names(String v) {
    List<String> names = new ArrayList<>();
    for (String n : v.split(",")) {
      if (!n.isBlank()) {
        names.add(n.trim());
      }
    }
    return names;
  }

  /**
   * The role {@link #KEY}'s prefix names (null: none, the cluster key); every key of
   * {@link #KEY_ACCEPT} must have the same prefix.
   */
  private static Role keyRole(Map<String, String> props) {
    String key = props.get(KEY.name());
    Role role = key == null ? null : rolePrefix(key.trim());
    for (String k : names(props.getOrDefault(KEY_ACCEPT.name(), ""))) {
      if (rolePrefix(k) != role) {
        throw new IllegalArgumentException(KEY_ACCEPT.name() + ": every key must be of the kind "
            + KEY.name() + " is (" + (role == null ? "the cluster key" : role.prefix() + "<hex>")
            + ")");
      }
    }
    return role;
  }

  private static Role rolePrefix(String v) {
    int colon = v.indexOf(':');
    return colon < 0 ? null : Role.ofPrefix(v.substring(0, colon).trim());
  }

  private static String withoutRole(String v) {
    int colon = v.indexOf(':');
    return colon < 0 ? v : v.substring(colon + 1).trim();
  }

  private static List<byte[]> hexKeys(String v) {
    List<byte[]> keys = new ArrayList<>();
    for (String k : names(v)) {
      try {
        keys.add(HexFormat.of().parseHex(withoutRole(k)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(KEY_ACCEPT.name() + " must be comma-separated hex "
            + "keys: " + e.getMessage());
      }
    }
    return keys;
  }

  private static byte[] hexKey(String v) {
    try {
      return HexFormat.of().parseHex(withoutRole(v));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(KEY.name() + " must be hex digits: " + e.getMessage());
    }
  }

  /**
   * The proposer settings of this cluster for {@code protocol}: {@link ProposerConfig#KEYS} as
   * the cluster file gives them, defaults for the others.
   */
  public ProposerConfig proposer(Protocol protocol) {
    return ProposerConfig.fromProperties(protocol, dcNames(), proposerProperties);
  }

  /** The proposer's phase timeout ({@link ProposerConfig#PHASE_TIMEOUT}). */
  public Duration phaseTimeout() {
    return ProposerConfig.PHASE_TIMEOUT.from(proposerProperties);
  }

  /** How long a service or client waits for ZooKeeper when it starts. */
  public Duration discoveryConnectTimeout() {
    return discoveryConnectTimeout;
  }

  /** The properties that {@link #fromProperties} turns back into this configuration. */
  public Map<String, String> toProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(DCS.name(), String.join(",", dcNames()));
    String prefix = wire.keyRole() == null ? "" : wire.keyRole().prefix();
    p.put(KEY.name(), prefix + HexFormat.of().formatHex(key));
    if (!acceptedKeys.isEmpty()) {
      p.put(KEY_ACCEPT.name(), String.join(",",
          acceptedKeys.stream().map(k -> prefix + HexFormat.of().formatHex(k)).toList()));
    }
    p.put(WIRE_ENCRYPT.name(), Boolean.toString(wire.encrypt()));
    p.put(WIRE_REQUIRE_ENCRYPTED.name(), Boolean.toString(wire.requireEncrypted()));
    p.put(CLUSTER_VERSION_MAX.name(), Integer.toString(wire.versionMax()));
    p.put(CLUSTER_VERSION_POLL.name(), Long.toString(wire.versionPoll().toMillis()));
    p.put(WIRE_FRESHNESS.name(), Long.toString(wire.freshness().toMillis()));
    for (Dc d : dcs) {
      if (!d.endpoints().isEmpty()) {
        List<String> eps = new ArrayList<>();
        for (InetSocketAddress a : d.endpoints()) {
          eps.add(a.getHostString() + ":" + a.getPort());
        }
        p.put(DC_PREFIX + d.name() + ".endpoints", String.join(",", eps));
      }
      for (var h : d.hbase().entrySet()) {
        p.put(DC_PREFIX + d.name() + "." + h.getKey().substring("paxoscp.".length()),
            h.getValue());
      }
    }
    discoveryZk.ifPresent(zk -> p.put(DISCOVERY_ZK.name(), zk));
    p.put(DISCOVERY_PATH.name(), discoveryPath);
    p.put(DISCOVERY_CONNECT_TIMEOUT.name(), Long.toString(discoveryConnectTimeout.toMillis()));
    p.put(MAX_DATAGRAM_BYTES.name(), Integer.toString(maxDatagramBytes));
    p.put(REQUEST_TIMEOUT.name(), Long.toString(requestTimeout.toMillis()));
    p.putAll(new TreeMap<>(proposerProperties));
    clientBind.ifPresent(b -> p.put(CLIENT_BIND.name(),
        b.getPort() == 0 ? b.getHostString() : hostPort(b)));
    p.put(CLIENT_SESSION_GROUPS.name(), Integer.toString(clientSessionGroups));
    p.put(CLIENT_XG_MAX_GROUPS.name(), Integer.toString(crossGroup.maxGroups()));
    p.put(CLIENT_XG_LOCK_TIMEOUT.name(), Long.toString(crossGroup.lockTimeout().toMillis()));
    p.put(WAN_ENABLED.name(), Boolean.toString(wan.enabled()));
    if (wan.enabled()) {
      for (int i = 0; i < dcs.size(); i++) {
        for (int j = i + 1; j < dcs.size(); j++) {
          String a = dcs.get(i).name();
          String b = dcs.get(j).name();
          p.put(WAN_RTT_PREFIX + a + "." + b,
              Double.toString(wan.latency().rttMicros(a, b) / 1000.0));
        }
      }
    }
    p.put(WAN_LOCAL_RTT.name(), Double.toString(wan.localRttMicros() / 1000.0));
    p.put(WAN_JITTER.name(), Double.toString(wan.jitter()));
    p.put(WAN_LOSS.name(), Double.toString(wan.loss()));
    p.put(WAN_DUPLICATE.name(), Double.toString(wan.duplicate()));
    if (!wan.partitioned().isEmpty()) {
      p.put(WAN_PARTITIONED.name(), String.join(",", new java.util.TreeSet<>(wan.partitioned())));
    }
    return p;
  }

  public List<Dc> dcs() {
    return dcs;
  }

  public List<String> dcNames() {
    return dcs.stream().map(Dc::name).toList();
  }

  /**
   * What leading a group's positions costs at each DC in leader combination (docs/architecture.md
   * section 5.5), in microseconds: with WAN emulation on, its round-trip time to its nearest
   * majority (a leader's round takes that long); empty without emulation, where every DC costs the
   * same and each leader keeps the leadership it has (see {@code LeaderCombiner.Options}).
   */
  public Map<String, Long> leaderCosts() {
    Map<String, Long> costs = new LinkedHashMap<>();
    if (wan.enabled()) {
      for (String d : dcNames()) {
        costs.put(d, NearestMajority.rttMicros(wan.latency(), dcNames(), d));
      }
    }
    return Collections.unmodifiableMap(costs);
  }

  /** The DC named {@code name}. @throws UnknownDcException if there is none */
  public Dc dc(String name) {
    for (Dc d : dcs) {
      if (d.name().equals(name)) {
        return d;
      }
    }
    throw new UnknownDcException("DC " + name + " is not in this cluster " + dcNames());
  }

  public byte[] key() {
    return key.clone();
  }

  public Optional<String> discoveryZk() {
    return discoveryZk;
  }

  public String discoveryPath() {
    return discoveryPath;
  }

  public int maxDatagramBytes() {
    return maxDatagramBytes;
  }

  public Duration requestTimeout() {
    return requestTimeout;
  }

  public Wan wan() {
    return wan;
  }

  /**
   * The local address a client binds ({@link #CLIENT_BIND}), unresolved; empty for the default
   * ({@code UdpTransport.Builder#bind}).
   */
  public Optional<InetSocketAddress> clientBind() {
    return clientBind;
  }

  /** A copy with other settings; for launchers and tests. */
  public ClusterConfig with(List<Dc> newDcs, Wan newWan) {
    return new ClusterConfig(newDcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, discoveryConnectTimeout, newWan, proposerProperties, clientBind,
        clientSessionGroups, crossGroup, acceptedKeys, wire);
  }

  /** A copy whose clients bind {@code bind} (empty: the default); for launchers and tests. */
  public ClusterConfig withClientBind(Optional<InetSocketAddress> bind) {
    return new ClusterConfig(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, discoveryConnectTimeout, wan, proposerProperties, bind,
        clientSessionGroups, crossGroup, acceptedKeys, wire);
  }

  /** A copy whose clients cache at most {@code groups} session positions; for tests. */
  public ClusterConfig withClientSessionGroups(int groups) {
    return new ClusterConfig(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, discoveryConnectTimeout, wan, proposerProperties, clientBind, groups,
        crossGroup, acceptedKeys, wire);
  }

  /** A copy with other cross-group transaction settings; for tests. */
  public ClusterConfig withCrossGroup(CrossGroup settings) {
    return new ClusterConfig(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, discoveryConnectTimeout, wan, proposerProperties, clientBind,
        clientSessionGroups, settings, acceptedKeys, wire);
  }

  /** {@link #KEY_ACCEPT}: keys opened but never sealed with. */
  public List<byte[]> acceptedKeys() {
    return acceptedKeys.stream().map(byte[]::clone).toList();
  }

  /** {@link #WIRE_ENCRYPT}. */
  public boolean wireEncrypt() {
    return wire.encrypt();
  }

  /** How this process speaks on the wire. */
  public Wire wire() {
    return wire;
  }

  /** {@link #WIRE_REQUIRE_ENCRYPTED}. */
  public boolean wireRequireEncrypted() {
    return wire.requireEncrypted();
  }

  /**
   * The cluster versions this process speaks: up to {@link #CLUSTER_VERSION_MAX}, from the
   * oldest this build speaks, or from the first that sends wire version 4 when it holds one
   * role's key (wire version 3 is sealed under the cluster key).
   */
  public org.paxoscp.version.ClusterVersion.Range versionRange() {
    return org.paxoscp.version.ClusterVersion.Range.ofThisBuild(wire.keyRole() == null
        ? org.paxoscp.version.ClusterVersion.OLDEST : org.paxoscp.version.ClusterVersion.WIRE_4,
        wire.versionMax());
  }

  /** {@link #CLUSTER_VERSION_POLL}. */
  public Duration versionPoll() {
    return wire.versionPoll();
  }

  /** {@link #WIRE_FRESHNESS}. */
  public Duration wireFreshness() {
    return wire.freshness();
  }

  /** The role whose key {@link #KEY} holds; empty when it is the cluster key. */
  public Optional<Role> keyRole() {
    return Optional.ofNullable(wire.keyRole());
  }

  /** A copy whose datagrams hold at most {@code bytes}; for tests of mismatched settings. */
  public ClusterConfig withMaxDatagramBytes(int bytes) {
    return new ClusterConfig(dcs, key, discoveryZk, discoveryPath, bytes, requestTimeout,
        discoveryConnectTimeout, wan, proposerProperties, clientBind, clientSessionGroups,
        crossGroup, acceptedKeys, wire);
  }

  /** A copy that speaks on the wire as {@code settings} say; for launchers and tests. */
  public ClusterConfig withWire(Wire settings) {
    return new ClusterConfig(dcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, discoveryConnectTimeout, wan, proposerProperties, clientBind,
        clientSessionGroups, crossGroup, acceptedKeys, settings);
  }

  /**
   * A copy holding role {@code role}'s key instead of the cluster key (what an application or
   * operator host is given); for launchers and tests.
   */
  public ClusterConfig withRoleKey(Role role) {
    if (wire.keyRole() != null) {
      throw new IllegalStateException("this configuration holds a role key already");
    }
    return new ClusterConfig(dcs, role.keyFrom(key), discoveryZk, discoveryPath,
        maxDatagramBytes, requestTimeout, discoveryConnectTimeout, wan, proposerProperties,
        clientBind, clientSessionGroups, crossGroup,
        acceptedKeys.stream().map(role::keyFrom).toList(),
        new Wire(wire.encrypt(), wire.requireEncrypted(), wire.versionMax(),
            wire.versionPoll(), wire.freshness(), role));
  }

  /** {@link #CLIENT_XG_MAX_GROUPS} and {@link #CLIENT_XG_LOCK_TIMEOUT}. */
  public CrossGroup crossGroup() {
    return crossGroup;
  }

  /** {@link #CLIENT_SESSION_GROUPS}. */
  public int clientSessionGroups() {
    return clientSessionGroups;
  }

  @Override
  public String toString() {
    return "ClusterConfig" + dcNames() + " wan=" + (wan.enabled() ? "on" : "off")
        + " discovery=" + discoveryZk.orElse("static");
  }

  private static String hostPort(InetSocketAddress a) {
    String h = a.getHostString();
    return (h.contains(":") ? "[" + h + "]" : h) + ":" + a.getPort();
  }

  /**
   * {@code host}, {@code host:port}, {@code [v6]:port} or a bare IPv6 address; unresolved
   * (resolved when the socket binds).
   */
  static InetSocketAddress parseBind(String v) {
    String t = v.trim();
    String host = t;
    int port = 0;
    try {
      if (t.startsWith("[")) {
        int close = t.indexOf(']');
        if (close < 0) {
          throw new NumberFormatException();
        }
        host = t.substring(1, close);
        String rest = t.substring(close + 1);
        if (!rest.isEmpty()) {
          if (!rest.startsWith(":")) {
            throw new NumberFormatException();
          }
          port = Integer.parseInt(rest.substring(1));
        }
      } else if (t.indexOf(':') >= 0 && t.indexOf(':') == t.lastIndexOf(':')) {
        host = t.substring(0, t.indexOf(':'));
        port = Integer.parseInt(t.substring(t.indexOf(':') + 1));
      }
      if (host.isBlank() || port < 0 || port > 65_535) {
        throw new NumberFormatException();
      }
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(CLIENT_BIND.name() + ": '" + t
          + "' is not host, host:port or [IPv6]:port");
    }
    return InetSocketAddress.createUnresolved(host, port);
  }

  private static List<InetSocketAddress> parseEndpoints(String key, String v) {
    List<InetSocketAddress> out = new ArrayList<>();
    for (String ep : v.split(",")) {
      if (ep.isBlank()) {
        continue;
      }
      int colon = ep.lastIndexOf(':');
      try {
        int port = Integer.parseInt(ep.substring(colon + 1).trim());
        if (colon <= 0 || port < 1 || port > 65_535) {
          throw new NumberFormatException();
        }
        out.add(InetSocketAddress.createUnresolved(ep.substring(0, colon).trim(), port));
      } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
        throw new IllegalArgumentException(key + ": '" + ep.trim() + "' is not host:port");
      }
    }
    return out;
  }

}
