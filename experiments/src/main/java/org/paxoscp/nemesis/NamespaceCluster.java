package org.paxoscp.nemesis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.paxoscp.local.ClusterLayout;
import org.paxoscp.local.ServiceProcess;
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
  /** Every DC's /metrics HTTP port, on the DC's own address, unless the caller picks another. */
  public static final int METRICS_PORT = 9100;
  private static final Duration START_TIMEOUT = Duration.ofSeconds(60);

  private final NetNamespaces hosts;
  private final List<ServiceProcess> services = new ArrayList<>();
  private ClusterLayout layout;
  private final Map<String, String> metricsUrls = new LinkedHashMap<>();

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
   * @param metricsPort the port each DC's service serves /metrics on, on its own address; 0
   *     for none
   * @param progress told what is starting (one line each)
   * @throws IllegalStateException if a service does not start; everything is removed again
   */
  public static NamespaceCluster start(List<String> dcs, ClusterConfig.Wan wan, Path dir,
      Duration requestTimeout, int serviceThreads, int metricsPort, Consumer<String> progress) {
    return start(dcs, wan, dir, requestTimeout, serviceThreads, metricsPort, progress, Map.of());
  }

  /** As above, with further service keys for every DC's service. */
  public static NamespaceCluster start(List<String> dcs, ClusterConfig.Wan wan, Path dir,
      Duration requestTimeout, int serviceThreads, int metricsPort, Consumer<String> progress,
      Map<String, String> serviceKeys) {
    NamespaceCluster c = new NamespaceCluster(dcs);
    try {
      c.hosts.create();
      progress.accept("network namespaces: " + dcs.stream()
          .map(dc -> dc + " at " + c.hosts.address(dc)).toList() + ", this host at "
          + c.hosts.rootAddress() + " (bridge)");
      Duration timeout = requestTimeout;
      ClusterLayout.Builder b = ClusterLayout.builder(dcs).requestTimeout(timeout)
          .phaseTimeout(timeout).wan(wan);
      for (String dc : dcs) {
        b.endpoints(dc, List.of(c.hosts.address(dc) + ":" + PORT));
      }
      c.layout = b.build();
      Map<String, String> settings = new LinkedHashMap<>();
      settings.put(ServiceConfig.STORE.name(), "memory");
      settings.put(ServiceConfig.THREADS.name(), Integer.toString(serviceThreads));
      settings.putAll(ClusterLayout.derivedServiceTimeouts(timeout));
      settings.putAll(serviceKeys);
      Path conf = dir.toAbsolutePath().resolve("conf");
      for (String dc : dcs) {
        Path file = conf.resolve("service-" + dc + ".properties");
        Map<String, String> own = new LinkedHashMap<>(settings);
        if (metricsPort != 0) {
          own.put(ServiceConfig.METRICS_PORT.name(), Integer.toString(metricsPort));
          c.metricsUrls.put(dc, "http://" + c.hosts.address(dc) + ":" + metricsPort + "/metrics");
        }
        ClusterLayout.writePrivate(file, c.layout.serviceProperties(dc,
            c.hosts.address(dc) + ":" + PORT, own),
            "service of DC " + dc + " in its own network namespace");
        // Every DC starts new together: its memory store is marked serving. (A process
        // restarted by hand is not, and refuses until paxoscp dc rebuild.)
        ServiceProcess s = ServiceProcess.service("service-" + dc, dc, file,
            dir.toAbsolutePath().resolve("logs").resolve("service-" + dc + ".log"),
            c.hosts.exec(dc), true);
        c.services.add(s);
        s.start(START_TIMEOUT);
        progress.accept("DC " + dc + ": Transaction Service pid " + s.pid() + " on udp "
            + c.hosts.address(dc) + ":" + PORT);
      }
      return c;
    } catch (RuntimeException e) {
      c.close();
      throw e;
    }
  }

  /** Each DC's /metrics URL (on its own address), when the services serve one. */
  public Map<String, String> metricsUrls() {
    return java.util.Collections.unmodifiableMap(new LinkedHashMap<>(metricsUrls));
  }

  /** The cluster as its clients see it (the DCs' namespace addresses). */
  public ClusterConfig config() {
    return layout.config();
  }

  /** Writes the client configuration (it holds the cluster's secret key: owner-only). */
  public void writeConfig(Path file) {
    layout.writeClientConfig(file, "paxoscp cluster, each DC in a network namespace; "
        + "the key seals every datagram: keep this file private");
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
