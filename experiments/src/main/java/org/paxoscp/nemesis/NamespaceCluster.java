package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.transport.ClusterConfig;

/**
 * A cluster laid out as on separate hosts, on one machine ({@code paxoscp cluster --netns}):
 * each DC's Transaction Service is a process of its own in a network namespace of its own, with
 * its own address on a veth link to a bridge in the root namespace ({@link NetNamespaces}), so
 * every datagram between DCs, and from a client on this host, crosses real network interfaces.
 * Stores are in memory (the services' processes hold them; an explicit choice of the caller).
 * The layout {@code MultiHostIT} tests. Needs root and {@code ip}; {@link #close()} stops the
 * processes and removes the namespaces and links.
 */
public final class NamespaceCluster implements AutoCloseable {
  /** Every DC's service port, on the DC's own address. */
  public static final int PORT = 7101;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final NetNamespaces hosts;
  private final List<ServiceProcess> services = new ArrayList<>();
  private ClusterConfig config;

  private NamespaceCluster(List<String> dcs) {
    this.hosts = new NetNamespaces(dcs);
  }

  /** Why this machine cannot run it (not root, no {@code ip netns}), or null if it can. */
  public static String unavailableReason() {
    return NetNamespaces.unavailableReason();
  }

  /**
   * Creates the namespaces and starts one service per DC, each with an in-memory store; blocks
   * until all serve.
   *
   * @param dir where the service configurations and logs go
   * @param progress told what is starting (one line each)
   * @throws IllegalStateException if a service does not start; everything is removed again
   */
  public static NamespaceCluster start(List<String> dcs, ClusterConfig.Wan wan, Path dir,
      Duration requestTimeout, int serviceThreads, Consumer<String> progress) {
    NamespaceCluster c = new NamespaceCluster(dcs);
    try {
      c.hosts.create();
      progress.accept("network namespaces: " + dcs.stream()
          .map(dc -> dc + " at " + c.hosts.address(dc)).toList() + ", this host at "
          + c.hosts.rootAddress() + " (bridge)");
      Map<String, String> props = new LinkedHashMap<>();
      props.put(ClusterConfig.DCS.name(), String.join(",", dcs));
      byte[] key = new byte[32];
      new SecureRandom().nextBytes(key);
      props.put(ClusterConfig.KEY.name(), HexFormat.of().formatHex(key));
      long timeoutMs = requestTimeout.toMillis();
      props.put(ClusterConfig.REQUEST_TIMEOUT.name(), Long.toString(timeoutMs));
      props.put(ProposerConfig.PHASE_TIMEOUT.name(), Long.toString(timeoutMs));
      for (String dc : dcs) {
        props.put(ClusterConfig.DC_PREFIX + dc + ".endpoints", c.hosts.address(dc) + ":" + PORT);
      }
      ClusterConfig base = ClusterConfig.fromProperties(props);
      c.config = base.with(base.dcs(), wan);
      Path conf = dir.toAbsolutePath().resolve("conf");
      Files.createDirectories(conf);
      for (String dc : dcs) {
        Map<String, String> sp = new LinkedHashMap<>(c.config.toProperties());
        sp.put(ServiceConfig.DC.name(), dc);
        sp.put(ServiceConfig.BIND.name(), c.hosts.address(dc) + ":" + PORT);
        sp.put(ServiceConfig.STORE.name(), "memory");
        sp.put(ServiceConfig.THREADS.name(), Integer.toString(serviceThreads));
        sp.put(ServiceConfig.LEARN_TIMEOUT.name(), Long.toString(timeoutMs));
        sp.put(ServiceConfig.LEARNER_TIMEOUT.name(), Long.toString(4 * timeoutMs));
        sp.put(ServiceConfig.CATCHUP_WAIT.name(), Long.toString(2 * timeoutMs));
        Path file = conf.resolve("service-" + dc + ".properties");
        store(sp, file, "service of DC " + dc + " in its own network namespace");
        ServiceProcess s = new ServiceProcess("service-" + dc, dc, file,
            dir.toAbsolutePath().resolve("logs").resolve("service-" + dc + ".log"),
            c.hosts.exec(dc));
        c.services.add(s);
        s.start(START_TIMEOUT);
        progress.accept("DC " + dc + ": Transaction Service pid " + s.pid() + " on udp "
            + c.hosts.address(dc) + ":" + PORT);
      }
      return c;
    } catch (IOException e) {
      c.close();
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** The cluster as its clients see it (the DCs' namespace addresses). */
  public ClusterConfig config() {
    return config;
  }

  /** Writes the client configuration (it holds the cluster's secret key). */
  public void writeConfig(Path file) {
    try {
      store(config.toProperties(), file, "paxoscp cluster, each DC in a network namespace; "
          + "the key seals every datagram: keep this file private");
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + file, e);
    }
  }

  private static void store(Map<String, String> props, Path file, String comment)
      throws IOException {
    Properties p = new Properties();
    props.forEach(p::setProperty);
    // The file holds the cluster's secret key: readable by its owner only.
    Files.deleteIfExists(file);
    Files.createFile(file, java.nio.file.attribute.PosixFilePermissions.asFileAttribute(
        java.nio.file.attribute.PosixFilePermissions.fromString("rw-------")));
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, comment);
    }
  }

  /** Stops every service and removes the namespaces; idempotent. */
  @Override
  public void close() {
    for (ServiceProcess s : services) {
      s.stop(Duration.ofSeconds(5));
    }
    services.clear();
    hosts.close();
  }
}
