package org.paxoscp.transport;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.paxoscp.sim.Latency;

/**
 * A cluster's topology and shared settings, the same for every service and client of the cluster:
 * the DCs (in a fixed order, which is the proposers' DC index order), each DC's service endpoints
 * and HBase settings, the per-cluster authentication key, optional ZooKeeper discovery, the
 * datagram size limit, the request timeout, and the WAN emulation (off unless enabled).
 *
 * <p>Read from {@code key=value} properties by {@link #fromProperties}; every key is listed in
 * {@link #KEYS} with its meaning. Unknown {@code paxoscp.*} keys are rejected. Immutable.
 */
public final class ClusterConfig {
  public static final String DCS = "paxoscp.dcs";
  public static final String KEY = "paxoscp.key";
  /** {@code paxoscp.dc.<DC>.endpoints}: static {@code host:port} list of the DC's services. */
  public static final String DC_PREFIX = "paxoscp.dc.";
  public static final String DISCOVERY_ZK = "paxoscp.discovery.zk";
  public static final String DISCOVERY_PATH = "paxoscp.discovery.path";
  public static final String MAX_DATAGRAM_BYTES = "paxoscp.max.datagram.bytes";
  public static final String REQUEST_TIMEOUT_MS = "paxoscp.request.timeout.ms";
  public static final String WAN_ENABLED = "paxoscp.wan.enabled";
  /** {@code paxoscp.wan.rtt.<A>.<B>}: round-trip time in ms between DCs A and B. */
  public static final String WAN_RTT_PREFIX = "paxoscp.wan.rtt.";
  public static final String WAN_LOCAL_RTT_MS = "paxoscp.wan.local.rtt.ms";
  public static final String WAN_JITTER = "paxoscp.wan.jitter";
  public static final String WAN_LOSS = "paxoscp.wan.loss";
  public static final String WAN_DUPLICATE = "paxoscp.wan.duplicate";
  public static final String WAN_PARTITIONED = "paxoscp.wan.partitioned";

  /** Every key with a one-line description; the README's configuration table mirrors it. */
  public static final Map<String, String> KEYS = keys();

  /** UDP payloads over IPv4 are at most 65,507 bytes. */
  public static final int MAX_UDP_PAYLOAD = 65_507;

  private static Map<String, String> keys() {
    Map<String, String> k = new LinkedHashMap<>();
    k.put(DCS, "comma-separated DC names, in order (required)");
    k.put(KEY, "per-cluster authentication key, hex, at least 16 bytes (required)");
    k.put(DC_PREFIX + "<DC>.endpoints", "static host:port list of DC <DC>'s services");
    k.put(DC_PREFIX + "<DC>.hbase.<key>",
        "DC <DC>'s HBase store setting paxoscp.hbase.<key> (e.g. paxoscp.dc.V1.hbase.zk.port)");
    k.put(DISCOVERY_ZK, "ZooKeeper connect string for Curator service discovery (optional)");
    k.put(DISCOVERY_PATH, "ZooKeeper base path for service discovery (default /paxoscp)");
    k.put(MAX_DATAGRAM_BYTES, "largest datagram sent or accepted (default 60000, max 65507)");
    k.put(REQUEST_TIMEOUT_MS, "protocol phase and request timeout in ms (default 2000)");
    k.put(WAN_ENABLED, "emulate WAN delays between DCs (default false)");
    k.put(WAN_RTT_PREFIX + "<A>.<B>",
        "round-trip ms between DCs A and B (default: the paper's V/O/C regions)");
    k.put(WAN_LOCAL_RTT_MS, "round-trip ms between a client and its home DC (default 0)");
    k.put(WAN_JITTER, "delay jitter as a fraction of the one-way delay (default 0.1)");
    k.put(WAN_LOSS, "probability a datagram between DCs is dropped (default 0)");
    k.put(WAN_DUPLICATE, "probability a datagram between DCs is sent twice (default 0)");
    k.put(WAN_PARTITIONED, "comma-separated DCs cut off from every other DC (default none)");
    return Collections.unmodifiableMap(k);
  }

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
  private final Wan wan;

  public ClusterConfig(List<Dc> dcs, byte[] key, Optional<String> discoveryZk,
      String discoveryPath, int maxDatagramBytes, Duration requestTimeout, Wan wan) {
    this.dcs = List.copyOf(dcs);
    this.key = key.clone();
    this.discoveryZk = discoveryZk;
    this.discoveryPath = discoveryPath;
    this.maxDatagramBytes = maxDatagramBytes;
    this.requestTimeout = requestTimeout;
    this.wan = wan;
    if (this.dcs.isEmpty()) {
      throw new IllegalArgumentException(DCS + ": at least one DC is needed");
    }
    Set<String> names = new HashSet<>();
    for (Dc d : this.dcs) {
      if (!d.name().matches("[A-Za-z0-9_]{1,40}")) {
        throw new IllegalArgumentException(DCS + ": DC name '" + d.name()
            + "' must be 1-40 letters, digits or underscores");
      }
      if (!names.add(d.name())) {
        throw new IllegalArgumentException(DCS + ": DC " + d.name() + " is listed twice");
      }
      if (d.endpoints().isEmpty() && discoveryZk.isEmpty()) {
        throw new IllegalArgumentException("DC " + d.name() + " has no endpoints: set "
            + DC_PREFIX + d.name() + ".endpoints or " + DISCOVERY_ZK);
      }
    }
    if (this.key.length < 16) {
      throw new IllegalArgumentException(KEY + " must be at least 16 bytes (32 hex digits)");
    }
    // A client keeps 512 bytes of each datagram for the envelope around a log value.
    if (maxDatagramBytes < 1024 || maxDatagramBytes > MAX_UDP_PAYLOAD) {
      throw new IllegalArgumentException(MAX_DATAGRAM_BYTES + " must be in [1024, "
          + MAX_UDP_PAYLOAD + "], was " + maxDatagramBytes);
    }
    if (requestTimeout.isNegative() || requestTimeout.isZero()) {
      throw new IllegalArgumentException(REQUEST_TIMEOUT_MS + " must be positive");
    }
    if (wan.enabled()) {
      wan.latency().validate(names);
    }
    for (String p : wan.partitioned()) {
      if (!names.contains(p)) {
        throw new IllegalArgumentException(WAN_PARTITIONED + ": unknown DC " + p);
      }
    }
  }

  /**
   * Parses a cluster configuration. Keys outside {@code paxoscp.} are ignored (a service's file
   * may hold its own keys too, see {@code ServiceConfig}); unknown {@code paxoscp.} keys other
   * than {@code ignoredPrefixes} are rejected.
   *
   * @throws IllegalArgumentException naming the key, for a missing, unknown or invalid value
   */
  public static ClusterConfig fromProperties(Map<String, String> props,
      String... ignoredPrefixes) {
    String dcList = require(props, DCS);
    List<String> names = new ArrayList<>();
    for (String n : dcList.split(",")) {
      if (!n.isBlank()) {
        names.add(n.trim());
      }
    }
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
      if (!k.startsWith("paxoscp.") || KEYS.containsKey(k) || startsWithAny(k, ignoredPrefixes)) {
        continue;
      }
      if (k.startsWith(DC_PREFIX)) {
        String rest = k.substring(DC_PREFIX.length());
        int dot = rest.indexOf('.');
        String dc = dot < 0 ? rest : rest.substring(0, dot);
        String sub = dot < 0 ? "" : rest.substring(dot + 1);
        if (!names.contains(dc)) {
          throw new IllegalArgumentException(k + ": DC " + dc + " is not in " + DCS);
        }
        if (sub.equals("endpoints")) {
          endpoints.put(dc, parseEndpoints(k, v));
        } else if (sub.startsWith("hbase.")) {
          hbase.get(dc).put("paxoscp." + sub, v);
        } else {
          throw new IllegalArgumentException("unknown key " + k);
        }
      } else if (k.startsWith(WAN_RTT_PREFIX)) {
        String[] pair = k.substring(WAN_RTT_PREFIX.length()).split("\\.");
        if (pair.length != 2 || !names.contains(pair[0]) || !names.contains(pair[1])) {
          throw new IllegalArgumentException(k + ": expected " + WAN_RTT_PREFIX
              + "<A>.<B> with A and B in " + DCS);
        }
        latency = latency.withPair(pair[0], pair[1], millisToMicros(k, v));
      } else {
        throw new IllegalArgumentException("unknown key " + k + "; known keys: " + KEYS.keySet());
      }
    }
    List<Dc> dcs = new ArrayList<>();
    for (String n : names) {
      dcs.add(new Dc(n, endpoints.get(n), hbase.get(n)));
    }
    Set<String> partitioned = new HashSet<>();
    for (String p : props.getOrDefault(WAN_PARTITIONED, "").split(",")) {
      if (!p.isBlank()) {
        partitioned.add(p.trim());
      }
    }
    Wan wan = new Wan(bool(props, WAN_ENABLED, false), latency,
        millisToMicros(WAN_LOCAL_RTT_MS, props.getOrDefault(WAN_LOCAL_RTT_MS, "0")),
        dbl(props, WAN_JITTER, 0.1), dbl(props, WAN_LOSS, 0), dbl(props, WAN_DUPLICATE, 0),
        partitioned);
    byte[] key;
    try {
      key = HexFormat.of().parseHex(require(props, KEY));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(KEY + " must be hex digits: " + e.getMessage());
    }
    String zk = props.getOrDefault(DISCOVERY_ZK, "").trim();
    return new ClusterConfig(dcs, key, zk.isEmpty() ? Optional.empty() : Optional.of(zk),
        props.getOrDefault(DISCOVERY_PATH, "/paxoscp").trim(),
        integer(props, MAX_DATAGRAM_BYTES, 60_000),
        Duration.ofMillis(integer(props, REQUEST_TIMEOUT_MS, 2_000)), wan);
  }

  /** The properties that {@link #fromProperties} turns back into this configuration. */
  public Map<String, String> toProperties() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put(DCS, String.join(",", dcNames()));
    p.put(KEY, HexFormat.of().formatHex(key));
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
    discoveryZk.ifPresent(zk -> p.put(DISCOVERY_ZK, zk));
    p.put(DISCOVERY_PATH, discoveryPath);
    p.put(MAX_DATAGRAM_BYTES, Integer.toString(maxDatagramBytes));
    p.put(REQUEST_TIMEOUT_MS, Long.toString(requestTimeout.toMillis()));
    p.put(WAN_ENABLED, Boolean.toString(wan.enabled()));
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
    p.put(WAN_LOCAL_RTT_MS, Double.toString(wan.localRttMicros() / 1000.0));
    p.put(WAN_JITTER, Double.toString(wan.jitter()));
    p.put(WAN_LOSS, Double.toString(wan.loss()));
    p.put(WAN_DUPLICATE, Double.toString(wan.duplicate()));
    if (!wan.partitioned().isEmpty()) {
      p.put(WAN_PARTITIONED, String.join(",", new java.util.TreeSet<>(wan.partitioned())));
    }
    return p;
  }

  public List<Dc> dcs() {
    return dcs;
  }

  public List<String> dcNames() {
    return dcs.stream().map(Dc::name).toList();
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

  /** A copy with other settings; for launchers and tests. */
  public ClusterConfig with(List<Dc> newDcs, Wan newWan) {
    return new ClusterConfig(newDcs, key, discoveryZk, discoveryPath, maxDatagramBytes,
        requestTimeout, newWan);
  }

  @Override
  public String toString() {
    return "ClusterConfig" + dcNames() + " wan=" + (wan.enabled() ? "on" : "off")
        + " discovery=" + discoveryZk.orElse("static");
  }

  private static boolean startsWithAny(String k, String[] prefixes) {
    for (String p : prefixes) {
      if (k.startsWith(p)) {
        return true;
      }
    }
    return false;
  }

  private static String require(Map<String, String> props, String key) {
    String v = props.get(key);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("missing required key " + key);
    }
    return v.trim();
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

  private static long millisToMicros(String key, String v) {
    try {
      double ms = Double.parseDouble(v.trim());
      if (ms < 0 || Double.isNaN(ms) || Double.isInfinite(ms)) {
        throw new NumberFormatException();
      }
      return Math.round(ms * 1000);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' is not a non-negative number of ms");
    }
  }

  private static boolean bool(Map<String, String> p, String key, boolean dflt) {
    String v = p.getOrDefault(key, Boolean.toString(dflt)).trim();
    if (!v.equals("true") && !v.equals("false")) {
      throw new IllegalArgumentException(key + ": '" + v + "' is not true or false");
    }
    return Boolean.parseBoolean(v);
  }

  private static double dbl(Map<String, String> p, String key, double dflt) {
    String v = p.getOrDefault(key, Double.toString(dflt)).trim();
    try {
      return Double.parseDouble(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' is not a number");
    }
  }

  private static int integer(Map<String, String> p, String key, int dflt) {
    String v = p.getOrDefault(key, Integer.toString(dflt)).trim();
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": '" + v + "' is not an integer");
    }
  }
}
