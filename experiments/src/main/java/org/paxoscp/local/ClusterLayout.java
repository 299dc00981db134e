package org.paxoscp.local;

import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.transport.ClusterConfig;

/**
 * The configuration of a cluster that runs on this machine, written in one place for every way
 * of running one: {@link LocalCluster} (services in this JVM), {@code cluster --netns}, the
 * nemesis and {@code bench-groups} (services as processes). It draws a fresh cluster key, names
 * the DCs, their endpoints and HBase, and derives each service's properties from the cluster's;
 * files that hold the key are readable by their owner only.
 *
 * <pre>{@code
 * ClusterLayout layout = ClusterLayout.builder(dcs)
 *     .requestTimeout(timeout)
 *     .endpoints("V1", List.of("127.0.0.1:7001"))
 *     .build();
 * Map<String, String> v1 = layout.serviceProperties("V1", "127.0.0.1:7001", Map.of());
 * }</pre>
 */
public final class ClusterLayout {
  private final ClusterConfig config;

  private ClusterLayout(ClusterConfig config) {
    this.config = config;
  }

  public static Builder builder(List<String> dcs) {
    return new Builder(dcs);
  }

  /** The cluster as its clients see it. */
  public ClusterConfig config() {
    return config;
  }

  /**
   * One service's properties: the cluster's, then its DC and bind address, then {@code
   * settings} (service keys, which win).
   *
   * @throws IllegalArgumentException naming the key, if a setting is not valid
   */
  public Map<String, String> serviceProperties(String dc, String bind,
      Map<String, String> settings) {
    Map<String, String> sp = new LinkedHashMap<>(config.toProperties());
    sp.put(ServiceConfig.DC.name(), dc);
    if (bind != null) {
      sp.put(ServiceConfig.BIND.name(), bind);
    }
    sp.putAll(settings);
    ServiceConfig.fromProperties(sp); // a bad setting fails here, not in the service process
    return sp;
  }

  /**
   * The service timeouts a local cluster derives from its request timeout: learn timeout and
   * GC peer timeout equal to it, learner timeout 4x, catch-up wait 2x.
   */
  public static Map<String, String> derivedServiceTimeouts(Duration requestTimeout) {
    long ms = requestTimeout.toMillis();
    Map<String, String> m = new LinkedHashMap<>();
    m.put(ServiceConfig.LEARN_TIMEOUT.name(), Long.toString(ms));
    m.put(ServiceConfig.LEARNER_TIMEOUT.name(), Long.toString(4 * ms));
    m.put(ServiceConfig.CATCHUP_WAIT.name(), Long.toString(2 * ms));
    m.put(ServiceConfig.GC_PEER_TIMEOUT.name(), Long.toString(ms));
    return m;
  }

  /** Writes the clients' configuration (it holds the cluster key: owner-only). */
  public void writeClientConfig(Path file, String comment) {
    writePrivate(file, config.toProperties(), comment);
  }

  /**
   * Writes {@code props} as a properties file readable by its owner only (it holds the cluster
   * key), replacing any file or link there without following it; creates the parent
   * directories. The same as {@link KeyFiles#writePrivate}, which every writer of key files uses.
   *
   * @throws java.io.UncheckedIOException naming the file, if it cannot be written or made
   *     owner-only
   */
  public static void writePrivate(Path file, Map<String, String> props, String comment) {
    KeyFiles.writePrivate(file, props, comment);
  }

  /** Builds a layout; every DC needs its endpoints. */
  public static final class Builder {
    private final Map<String, String> props = new LinkedHashMap<>();
    private ClusterConfig.Wan wan;

    private Builder(List<String> dcs) {
      props.put(ClusterConfig.DCS.name(), String.join(",", dcs));
      byte[] key = new byte[32];
      new SecureRandom().nextBytes(key);
      props.put(ClusterConfig.KEY.name(), HexFormat.of().formatHex(key));
    }

    /** The clients' request timeout. */
    public Builder requestTimeout(Duration timeout) {
      props.put(ClusterConfig.REQUEST_TIMEOUT.name(), Long.toString(timeout.toMillis()));
      return this;
    }

    /** The proposers' phase timeout (without it, the key's default). */
    public Builder phaseTimeout(Duration timeout) {
      props.put(ProposerConfig.PHASE_TIMEOUT.name(), Long.toString(timeout.toMillis()));
      return this;
    }

    /** ZooKeeper service discovery, with how long a process waits to connect to it. */
    public Builder discovery(String zkConnect, Duration connectTimeout) {
      props.put(ClusterConfig.DISCOVERY_ZK.name(), zkConnect);
      props.put(ClusterConfig.DISCOVERY_CONNECT_TIMEOUT.name(),
          Long.toString(connectTimeout.toMillis()));
      return this;
    }

    /** DC {@code dc}'s service endpoints, {@code host:port} each. */
    public Builder endpoints(String dc, List<String> hostPorts) {
      props.put(ClusterConfig.DC_PREFIX + dc + ".endpoints", String.join(",", hostPorts));
      return this;
    }

    /** DC {@code dc}'s HBase, by its ZooKeeper quorum and port. */
    public Builder hbase(String dc, String zkQuorum, int zkPort) {
      props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.quorum", zkQuorum);
      props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.port", Integer.toString(zkPort));
      return this;
    }

    /** A further cluster key ({@link ClusterConfig#KEYS}), e.g. {@code paxoscp.wire.encrypt}. */
    public Builder set(String key, String value) {
      if (!ClusterConfig.KEYS.knows(key)) {
        throw new IllegalArgumentException(key + " is not a cluster key");
      }
      props.put(key, value);
      return this;
    }

    /** The WAN emulation (none when not set). */
    public Builder wan(ClusterConfig.Wan wan) {
      this.wan = wan;
      return this;
    }

    /** @throws IllegalArgumentException naming the key, if the configuration is not valid */
    public ClusterLayout build() {
      ClusterConfig base = ClusterConfig.fromProperties(props);
      return new ClusterLayout(wan == null ? base : base.with(base.dcs(), wan));
    }
  }
}
