package org.paxoscp.store.hbase;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * How one DC's {@link HBaseKvStore} reaches its HBase, and the deadlines of its calls. Immutable;
 * build with {@link #builder(String)} or {@link #fromProperties(String, Map)}. Every value is
 * validated when built, so a bad configuration fails at start-up with a message naming the key.
 *
 * <table>
 *   <caption>Keys (all optional, prefix {@value #PREFIX})</caption>
 *   <tr><th>key</th><th>default</th><th>meaning</th></tr>
 *   <tr><td>{@value #ZK_QUORUM}</td><td>127.0.0.1</td>
 *       <td>ZooKeeper hosts of the DC's HBase, comma-separated (host or host:port)</td></tr>
 *   <tr><td>{@value #ZK_PORT}</td><td>2181</td><td>ZooKeeper client port for hosts without one</td></tr>
 *   <tr><td>{@value #ZNODE_PARENT}</td><td>/hbase</td><td>HBase's root znode</td></tr>
 *   <tr><td>{@value #OPERATION_DEADLINE_MS}</td><td>3000</td>
 *       <td>upper bound of one store call, retries and region look-ups included</td></tr>
 *   <tr><td>{@value #RPC_TIMEOUT_MS}</td><td>1000</td><td>bound of one RPC attempt (at most the deadline)</td></tr>
 *   <tr><td>{@value #RETRY_PAUSE_MS}</td><td>50</td><td>base pause between retries (HBase backs off from it)</td></tr>
 *   <tr><td>{@value #CONNECT_DEADLINE_MS}</td><td>3000</td>
 *       <td>upper bound of opening the connection (cluster id from ZooKeeper)</td></tr>
 *   <tr><td>{@value #ADMIN_DEADLINE_MS}</td><td>30000</td>
 *       <td>upper bound of a schema operation (create namespace/table, describe)</td></tr>
 *   <tr><td>{@value #CREATE_SCHEMA}</td><td>true</td>
 *       <td>create the DC's namespace and tables if missing (false: only verify them)</td></tr>
 * </table>
 */
public final class HBaseStoreConfig {

  public static final String PREFIX = "paxoscp.hbase.";
  public static final String ZK_QUORUM = PREFIX + "zk.quorum";
  public static final String ZK_PORT = PREFIX + "zk.port";
  public static final String ZNODE_PARENT = PREFIX + "znode.parent";
  public static final String OPERATION_DEADLINE_MS = PREFIX + "operation.deadline.ms";
  public static final String RPC_TIMEOUT_MS = PREFIX + "rpc.timeout.ms";
  public static final String RETRY_PAUSE_MS = PREFIX + "retry.pause.ms";
  public static final String CONNECT_DEADLINE_MS = PREFIX + "connect.deadline.ms";
  public static final String ADMIN_DEADLINE_MS = PREFIX + "admin.deadline.ms";
  public static final String CREATE_SCHEMA = PREFIX + "create.schema";

  /** DC names become part of an HBase namespace, which allows only these characters. */
  private static final Pattern DC_NAME = Pattern.compile("[A-Za-z0-9_]{1,40}");
  private static final Pattern QUORUM = Pattern.compile("[A-Za-z0-9._\\-\\[\\]:]+(,[A-Za-z0-9._\\-\\[\\]:]+)*");

  private final String dc;
  private final String zkQuorum;
  private final int zkPort;
  private final String znodeParent;
  private final Duration operationDeadline;
  private final Duration rpcTimeout;
  private final Duration retryPause;
  private final Duration connectDeadline;
  private final Duration adminDeadline;
  private final boolean createSchema;

  private HBaseStoreConfig(Builder b) {
    this.dc = validateDc(b.dc);
    this.zkQuorum = require(b.zkQuorum, ZK_QUORUM);
    if (!QUORUM.matcher(zkQuorum).matches()) {
      throw new IllegalArgumentException(ZK_QUORUM + ": not a host list: '" + zkQuorum + "'");
    }
    if (b.zkPort < 1 || b.zkPort > 65535) {
      throw new IllegalArgumentException(ZK_PORT + ": must be in 1..65535, was " + b.zkPort);
    }
    this.zkPort = b.zkPort;
    this.znodeParent = require(b.znodeParent, ZNODE_PARENT);
    if (!znodeParent.startsWith("/")) {
      throw new IllegalArgumentException(ZNODE_PARENT + ": must start with '/', was " + znodeParent);
    }
    this.operationDeadline = positive(b.operationDeadline, OPERATION_DEADLINE_MS);
    this.rpcTimeout = positive(b.rpcTimeout, RPC_TIMEOUT_MS);
    this.retryPause = positive(b.retryPause, RETRY_PAUSE_MS);
    this.connectDeadline = positive(b.connectDeadline, CONNECT_DEADLINE_MS);
    this.adminDeadline = positive(b.adminDeadline, ADMIN_DEADLINE_MS);
    if (rpcTimeout.compareTo(operationDeadline) > 0) {
      throw new IllegalArgumentException(RPC_TIMEOUT_MS + " (" + rpcTimeout.toMillis()
          + ") must not exceed " + OPERATION_DEADLINE_MS + " (" + operationDeadline.toMillis() + ")");
    }
    if (retryPause.compareTo(operationDeadline) >= 0) {
      throw new IllegalArgumentException(RETRY_PAUSE_MS + " must be below " + OPERATION_DEADLINE_MS);
    }
    this.createSchema = b.createSchema;
  }

  /** A builder with every default, for DC {@code dc}. */
  public static Builder builder(String dc) {
    return new Builder(dc);
  }

  /**
   * Builds a config for {@code dc} from string properties. Keys outside {@value #PREFIX} are
   * ignored (they belong to other components); unknown keys inside it are rejected.
   *
   * @throws IllegalArgumentException naming the key of the first bad or unknown value
   */
  public static HBaseStoreConfig fromProperties(String dc, Map<String, String> props) {
    Builder b = builder(dc);
    for (var e : props.entrySet()) {
      String k = e.getKey();
      if (!k.startsWith(PREFIX)) {
        continue;
      }
      String v = e.getValue().trim();
      switch (k) {
        case ZK_QUORUM -> b.zkQuorum(v);
        case ZK_PORT -> b.zkPort(parseInt(k, v));
        case ZNODE_PARENT -> b.znodeParent(v);
        case OPERATION_DEADLINE_MS -> b.operationDeadline(millis(k, v));
        case RPC_TIMEOUT_MS -> b.rpcTimeout(millis(k, v));
        case RETRY_PAUSE_MS -> b.retryPause(millis(k, v));
        case CONNECT_DEADLINE_MS -> b.connectDeadline(millis(k, v));
        case ADMIN_DEADLINE_MS -> b.adminDeadline(millis(k, v));
        case CREATE_SCHEMA -> {
          if (!v.equals("true") && !v.equals("false")) {
            throw new IllegalArgumentException(k + ": expected true or false, was '" + v + "'");
          }
          b.createSchema(Boolean.parseBoolean(v));
        }
        default -> throw new IllegalArgumentException("unknown configuration key " + k);
      }
    }
    return b.build();
  }

  public String dc() {
    return dc;
  }

  public String zkQuorum() {
    return zkQuorum;
  }

  public int zkPort() {
    return zkPort;
  }

  public String znodeParent() {
    return znodeParent;
  }

  public Duration operationDeadline() {
    return operationDeadline;
  }

  public Duration rpcTimeout() {
    return rpcTimeout;
  }

  public Duration retryPause() {
    return retryPause;
  }

  public Duration connectDeadline() {
    return connectDeadline;
  }

  public Duration adminDeadline() {
    return adminDeadline;
  }

  public boolean createSchema() {
    return createSchema;
  }

  /** A builder initialised with this config's values. */
  public Builder toBuilder() {
    return builder(dc).zkQuorum(zkQuorum).zkPort(zkPort).znodeParent(znodeParent)
        .operationDeadline(operationDeadline).rpcTimeout(rpcTimeout).retryPause(retryPause)
        .connectDeadline(connectDeadline).adminDeadline(adminDeadline).createSchema(createSchema);
  }

  /** The effective values by key, for logging once at start-up. */
  public Map<String, String> effectiveValues() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(ZK_QUORUM, zkQuorum);
    m.put(ZK_PORT, Integer.toString(zkPort));
    m.put(ZNODE_PARENT, znodeParent);
    m.put(OPERATION_DEADLINE_MS, Long.toString(operationDeadline.toMillis()));
    m.put(RPC_TIMEOUT_MS, Long.toString(rpcTimeout.toMillis()));
    m.put(RETRY_PAUSE_MS, Long.toString(retryPause.toMillis()));
    m.put(CONNECT_DEADLINE_MS, Long.toString(connectDeadline.toMillis()));
    m.put(ADMIN_DEADLINE_MS, Long.toString(adminDeadline.toMillis()));
    m.put(CREATE_SCHEMA, Boolean.toString(createSchema));
    return m;
  }

  @Override
  public String toString() {
    return "HBaseStoreConfig{dc=" + dc + ", " + effectiveValues() + "}";
  }

  static String validateDc(String dc) {
    if (dc == null || !DC_NAME.matcher(dc).matches()) {
      throw new IllegalArgumentException("DC name must be 1-40 characters of [A-Za-z0-9_] (it names"
          + " the DC's HBase namespace), was '" + dc + "'");
    }
    return dc;
  }

  private static String require(String v, String key) {
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException(key + ": must not be empty");
    }
    return v;
  }

  private static Duration positive(Duration d, String key) {
    Objects.requireNonNull(d, key);
    if (d.isNegative() || d.isZero() || d.toMillis() < 1) {
      throw new IllegalArgumentException(key + ": must be at least 1 ms, was " + d);
    }
    if (d.toMillis() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(key + ": too large: " + d);
    }
    return d;
  }

  private static int parseInt(String key, String v) {
    try {
      return Integer.parseInt(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(key + ": not an integer: '" + v + "'");
    }
  }

  private static Duration millis(String key, String v) {
    return Duration.ofMillis(parseInt(key, v));
  }

  /** Builder with defaults; not thread-safe. */
  public static final class Builder {
    private final String dc;
    private String zkQuorum = "127.0.0.1";
    private int zkPort = 2181;
    private String znodeParent = "/hbase";
    private Duration operationDeadline = Duration.ofSeconds(3);
    private Duration rpcTimeout = Duration.ofSeconds(1);
    private Duration retryPause = Duration.ofMillis(50);
    private Duration connectDeadline = Duration.ofSeconds(3);
    private Duration adminDeadline = Duration.ofSeconds(30);
    private boolean createSchema = true;

    private Builder(String dc) {
      this.dc = dc;
    }

    public Builder zkQuorum(String hosts) {
      this.zkQuorum = hosts;
      return this;
    }

    public Builder zkPort(int port) {
      this.zkPort = port;
      return this;
    }

    public Builder znodeParent(String znode) {
      this.znodeParent = znode;
      return this;
    }

    /** Upper bound of one store call; must be at least the {@linkplain #rpcTimeout RPC timeout}. */
    public Builder operationDeadline(Duration d) {
      this.operationDeadline = d;
      return this;
    }

    public Builder rpcTimeout(Duration d) {
      this.rpcTimeout = d;
      return this;
    }

    public Builder retryPause(Duration d) {
      this.retryPause = d;
      return this;
    }

    public Builder connectDeadline(Duration d) {
      this.connectDeadline = d;
      return this;
    }

    public Builder adminDeadline(Duration d) {
      this.adminDeadline = d;
      return this;
    }

    public Builder createSchema(boolean create) {
      this.createSchema = create;
      return this;
    }

    /**
     * Sets the operation deadline and scales the RPC timeout, connect deadline and retry pause
     * with it (RPC a third of the deadline, at least 100 ms) — handy for tests with short bounds.
     */
    public Builder deadline(Duration d) {
      this.operationDeadline = d;
      this.connectDeadline = d;
      this.rpcTimeout = Duration.ofMillis(Math.max(Math.min(100, d.toMillis()), d.toMillis() / 3));
      this.retryPause = Duration.ofMillis(Math.max(1, Math.min(50, d.toMillis() / 20)));
      return this;
    }

    /** @throws IllegalArgumentException naming the key of the first invalid value */
    public HBaseStoreConfig build() {
      return new HBaseStoreConfig(this);
    }
  }
}
