package org.paxoscp.store.hbase;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Pattern;
import org.paxoscp.config.ConfigKey;
import org.paxoscp.config.ConfigKeys;

/**
 * How one DC's {@link HBaseKvStore} reaches its HBase, and the deadlines of its calls. Immutable;
 * build with {@link #builder(String)} or {@link #fromProperties(String, Map)}. Every value is
 * validated when built, so a bad configuration fails at start-up with a message naming the key.
 *
 * <p>Its keys (all optional, prefix {@value #PREFIX}) are the {@link ConfigKey}s of
 * {@link #KEYS}; docs/configuration.md is generated from them.
 */
public final class HBaseStoreConfig {

  public static final String PREFIX = "paxoscp.hbase.";
  public static final ConfigKey<String> ZK_QUORUM = ConfigKey.string(PREFIX + "zk.quorum",
      "127.0.0.1", "ZooKeeper hosts of the DC's HBase, comma-separated (host or host:port)");
  public static final ConfigKey<Integer> ZK_PORT = ConfigKey.integer(PREFIX + "zk.port", 2181, 1,
      65_535, "ZooKeeper client port for hosts without one");
  public static final ConfigKey<String> ZNODE_PARENT = ConfigKey.string(PREFIX + "znode.parent",
      "/hbase", "HBase's root znode");
  public static final ConfigKey<Duration> OPERATION_DEADLINE = ConfigKey.millis(
      PREFIX + "operation.deadline.ms", 3_000, 1, Integer.MAX_VALUE,
      "upper bound of one store call, retries and region look-ups included");
  public static final ConfigKey<Duration> RPC_TIMEOUT = ConfigKey.millis(
      PREFIX + "rpc.timeout.ms", 1_000, 1, Integer.MAX_VALUE,
      "bound of one RPC attempt (at most the operation deadline)");
  public static final ConfigKey<Duration> RETRY_PAUSE = ConfigKey.millis(
      PREFIX + "retry.pause.ms", 50, 1, Integer.MAX_VALUE,
      "base pause between retries (HBase backs off from it)");
  public static final ConfigKey<Duration> CONNECT_DEADLINE = ConfigKey.millis(
      PREFIX + "connect.deadline.ms", 3_000, 1, Integer.MAX_VALUE,
      "upper bound of opening the connection (cluster id from ZooKeeper)");
  public static final ConfigKey<Duration> ADMIN_DEADLINE = ConfigKey.millis(
      PREFIX + "admin.deadline.ms", 30_000, 1, Integer.MAX_VALUE,
      "upper bound of a schema operation (create namespace/table, describe)");
  public static final ConfigKey<Boolean> CREATE_SCHEMA = ConfigKey.bool(PREFIX + "create.schema",
      true, "create the DC's namespace and tables if missing (false: only verify them)");
  public static final ConfigKey<Boolean> NEW_STORE = ConfigKey.bool(PREFIX + "new.store", true,
      "when create.schema creates the DC's meta table: the store is a new DC's and is marked "
          + "serving (false: it replaces a store that was lost, and stays unmarked, refusing "
          + "every group until paxoscp dc rebuild; docs/rebuilding.md)");
  public static final ConfigKey<Integer> REGIONS = ConfigKey.integer(PREFIX + "regions", 8, 1,
      4096, "regions each table is pre-split into when it is created (rows start with a hash "
          + "of the group, so groups spread evenly over them); existing tables are left as "
          + "they are");

  /** Every HBase store key. */
  public static final ConfigKeys KEYS = new ConfigKeys(
      "HBase store (per DC, as paxoscp.dc.<DC>.hbase.<key> in a cluster file)", ZK_QUORUM,
      ZK_PORT, ZNODE_PARENT, OPERATION_DEADLINE, RPC_TIMEOUT, RETRY_PAUSE, CONNECT_DEADLINE,
      ADMIN_DEADLINE, CREATE_SCHEMA, NEW_STORE, REGIONS);

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
  private final boolean newStore;
  private final int regions;

  private HBaseStoreConfig(Builder b) {
    this.dc = validateDc(b.dc);
    this.zkQuorum = require(b.zkQuorum, ZK_QUORUM.name());
    if (!QUORUM.matcher(zkQuorum).matches()) {
      throw new IllegalArgumentException(ZK_QUORUM.name() + ": not a host list: '" + zkQuorum
          + "'");
    }
    if (b.zkPort < 1 || b.zkPort > 65535) {
      throw new IllegalArgumentException(ZK_PORT.name() + ": must be in 1..65535, was "
          + b.zkPort);
    }
    this.zkPort = b.zkPort;
    this.znodeParent = require(b.znodeParent, ZNODE_PARENT.name());
    if (!znodeParent.startsWith("/")) {
      throw new IllegalArgumentException(ZNODE_PARENT.name() + ": must start with '/', was "
          + znodeParent);
    }
    this.operationDeadline = positive(b.operationDeadline, OPERATION_DEADLINE.name());
    this.rpcTimeout = positive(b.rpcTimeout, RPC_TIMEOUT.name());
    this.retryPause = positive(b.retryPause, RETRY_PAUSE.name());
    this.connectDeadline = positive(b.connectDeadline, CONNECT_DEADLINE.name());
    this.adminDeadline = positive(b.adminDeadline, ADMIN_DEADLINE.name());
    if (rpcTimeout.compareTo(operationDeadline) > 0) {
      throw new IllegalArgumentException(RPC_TIMEOUT.name() + " (" + rpcTimeout.toMillis()
          + ") must not exceed " + OPERATION_DEADLINE.name() + " ("
          + operationDeadline.toMillis() + ")");
    }
    if (retryPause.compareTo(operationDeadline) >= 0) {
      throw new IllegalArgumentException(RETRY_PAUSE.name() + " must be below "
          + OPERATION_DEADLINE.name());
    }
    this.createSchema = b.createSchema;
    this.newStore = b.newStore;
    if (b.regions < 1 || b.regions > 4096) {
      throw new IllegalArgumentException(REGIONS.name() + ": must be in 1..4096, was "
          + b.regions);
    }
    this.regions = b.regions;
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
    KEYS.rejectUnknown(props, PREFIX);
    return builder(dc).zkQuorum(ZK_QUORUM.from(props)).zkPort(ZK_PORT.from(props))
        .znodeParent(ZNODE_PARENT.from(props)).operationDeadline(OPERATION_DEADLINE.from(props))
        .rpcTimeout(RPC_TIMEOUT.from(props)).retryPause(RETRY_PAUSE.from(props))
        .connectDeadline(CONNECT_DEADLINE.from(props)).adminDeadline(ADMIN_DEADLINE.from(props))
        .createSchema(CREATE_SCHEMA.from(props)).newStore(NEW_STORE.from(props))
        .regions(REGIONS.from(props)).build();
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

  /** {@link #NEW_STORE}: whether tables created here are a new DC's store. */
  public boolean newStore() {
    return newStore;
  }

  /** {@link #REGIONS}: regions a new table is pre-split into. */
  public int regions() {
    return regions;
  }

  /** A builder initialised with this config's values. */
  public Builder toBuilder() {
    return builder(dc).zkQuorum(zkQuorum).zkPort(zkPort).znodeParent(znodeParent)
        .operationDeadline(operationDeadline).rpcTimeout(rpcTimeout).retryPause(retryPause)
        .connectDeadline(connectDeadline).adminDeadline(adminDeadline).createSchema(createSchema)
        .newStore(newStore).regions(regions);
  }

  /** The effective values by key, for logging once at start-up. */
  public Map<String, String> effectiveValues() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put(ZK_QUORUM.name(), zkQuorum);
    m.put(ZK_PORT.name(), Integer.toString(zkPort));
    m.put(ZNODE_PARENT.name(), znodeParent);
    m.put(OPERATION_DEADLINE.name(), Long.toString(operationDeadline.toMillis()));
    m.put(RPC_TIMEOUT.name(), Long.toString(rpcTimeout.toMillis()));
    m.put(RETRY_PAUSE.name(), Long.toString(retryPause.toMillis()));
    m.put(CONNECT_DEADLINE.name(), Long.toString(connectDeadline.toMillis()));
    m.put(ADMIN_DEADLINE.name(), Long.toString(adminDeadline.toMillis()));
    m.put(CREATE_SCHEMA.name(), Boolean.toString(createSchema));
    m.put(NEW_STORE.name(), Boolean.toString(newStore));
    m.put(REGIONS.name(), Integer.toString(regions));
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

  /** Builder with defaults; not thread-safe. */
  public static final class Builder {
    private final String dc;
    private String zkQuorum = ZK_QUORUM.defaultValue();
    private int zkPort = ZK_PORT.defaultValue();
    private String znodeParent = ZNODE_PARENT.defaultValue();
    private Duration operationDeadline = OPERATION_DEADLINE.defaultValue();
    private Duration rpcTimeout = RPC_TIMEOUT.defaultValue();
    private Duration retryPause = RETRY_PAUSE.defaultValue();
    private Duration connectDeadline = CONNECT_DEADLINE.defaultValue();
    private Duration adminDeadline = ADMIN_DEADLINE.defaultValue();
    private boolean createSchema = CREATE_SCHEMA.defaultValue();
    private boolean newStore = NEW_STORE.defaultValue();
    private int regions = REGIONS.defaultValue();

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

    /** Regions a new table is pre-split into (see {@link #REGIONS}). */
    public Builder regions(int n) {
      this.regions = n;
      return this;
    }

    /** {@link #NEW_STORE}. */
    public Builder newStore(boolean isNew) {
      this.newStore = isNew;
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
