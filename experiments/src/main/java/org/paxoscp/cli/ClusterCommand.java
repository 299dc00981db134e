package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.paxoscp.local.FreePorts;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.nemesis.NamespaceCluster;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp cluster}: starts a local multi-DC cluster ({@link LocalCluster}: embedded
 * ZooKeeper, embedded HBase or in-memory stores, one UDP Transaction Service per DC, loopback
 * only, the paper's emulated round-trip times unless {@code --no-wan}), writes the client
 * configuration to {@code <dir>/cluster.properties}, prints how to connect, and runs until
 * interrupted (Ctrl-C or SIGTERM close it cleanly). With HBase the data lives under {@code --dir}
 * and a later run on the same directory reopens it. With {@code --netns} (root, in-memory stores)
 * each DC's service is a process in a network namespace of its own ({@link NamespaceCluster}):
 * the layout of separate hosts, on one machine.
 *
 * <p>Exit codes: 0 stopped cleanly; 1 the cluster failed to start; 2 usage.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
    footer = {"%n--request-timeout-ms sets the cluster's timeouts together: the client request "
        + "timeout and the proposer phase timeout to it, the services' learn timeout to it, "
        + "learner timeout to 4x, catch-up wait to 2x.", "%nExplained in docs/running.md."},
    description = "Run a local multi-DC cluster (embedded HBase, one UDP Transaction Service per "
        + "DC, emulated WAN, loopback only unless --netns) until interrupted; connect to it with "
        + "`shell`.")
public final class ClusterCommand implements Callable<Integer> {

  /** The name of the client configuration file under {@code --dir}. */
  static final String CONFIG_FILE = "cluster.properties";

  @Spec
  CommandSpec spec;

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,O");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOptions = new SharedOptions.Wan();

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(2000);

  @Option(names = "--dir", defaultValue = "./paxoscp-data/cluster",
      description = "Directory for " + CONFIG_FILE + " and the HBase and ZooKeeper data "
          + "(default: ${DEFAULT-VALUE}).")
  Path dir;

  @Option(names = "--threads", defaultValue = "16",
      description = "Worker threads per service (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--metrics-port", paramLabel = "PORT", description = "The first DC's "
      + "/metrics HTTP port, the next DC's PORT+1 and so on (default: free ports; with --netns "
      + "each DC's own address, port 9100).")
  Integer metricsPort;

  @Option(names = "--no-metrics-http", description = "Serve no /metrics over HTTP (the "
      + "services still keep metrics, for `status`).")
  boolean noMetricsHttp;

  @Option(names = "--netns", description = "Each DC's service as a process in a network "
      + "namespace of its own, with its own address on a bridge, as on separate hosts (needs "
      + "root and `ip`; with --store memory: each service process holds its DC's data).")
  boolean netns;

  @Option(names = "--regionservers", paramLabel = "N", defaultValue = "1", description = "HBase's "
      + "region servers (default: ${DEFAULT-VALUE}, embedded in this process). With more, HBase "
      + "runs as processes, a master and N region servers, in <dir>/hbase-servers (logs in its "
      + "logs/), stopped with the cluster; `paxoscp hbase stop --dir <dir>/hbase-servers` stops "
      + "them if this process was killed.")
  int regionServers;

  @Option(names = "--service", paramLabel = "KEY=VALUE", description = "A service key "
      + "(paxoscp.service.*, docs/configuration.md) for every DC's service, e.g. "
      + "paxoscp.service.leader.rtts=measured; repeatable.")
  Map<String, String> serviceKeys = new LinkedHashMap<>();

  private volatile Foreground foreground;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    ClusterConfig.Wan wan;
    List<String> dcs;
    Duration timeout;
    LocalCluster.Options localOptions;
    LocalCluster.StoreKind store = storeOption.kind();
    try {
      if (threads <= 0) {
        throw new IllegalArgumentException("--threads must be positive, was " + threads);
      }
      if (regionServers != 1 && netns) {
        throw new IllegalArgumentException("--regionservers is for the HBase store; --netns "
            + "runs in-memory stores");
      }
      dcs = dcList.dcs();
      timeout = requestTimeout.timeout();
      wan = wanOptions.wan(dcs);
      // Checks --regionservers against its range and the store.
      localOptions = new LocalCluster.Options(dcs, store, dir, wan, timeout, threads,
          regionServers);
      for (String key : serviceKeys.keySet()) {
        if (!ServiceConfig.KEYS.knows(key) || key.equals(ServiceConfig.DC.name())) {
          throw new IllegalArgumentException("--service " + key + ": not a service key one "
              + "can set for every DC (see `paxoscp config-reference`)");
        }
      }
    } catch (IllegalArgumentException e) {
      err.println("cluster: " + e.getMessage());
      return 2;
    }
    if (netns) {
      if (store != LocalCluster.StoreKind.MEMORY) {
        err.println("cluster: --netns runs each DC's service in its own namespace with an "
            + "in-memory store; add --store memory (embedded HBase stays on this host's "
            + "loopback, which the namespaces cannot reach)");
        return 2;
      }
      String why = NamespaceCluster.unavailableReason();
      if (why != null) {
        err.println("cluster: --netns is not possible here: " + why);
        return 1;
      }
    }
    Path config = dir.resolve(CONFIG_FILE);
    out.printf("cluster: DCs %s, store %s%s, WAN %s, data in %s%s%n", dcs, store,
        regionServers > 1 ? " (" + regionServers + " region servers)" : "",
        wanOptions.summary(wan, dcs), dir.toAbsolutePath().normalize(),
        netns ? ", each DC in a network namespace" : "");
    out.flush();
    java.util.function.Consumer<String> progress = line -> {
      out.println("  " + line);
      out.flush();
    };
    AutoCloseable cluster;
    ClusterConfig clusterConfig;
    // HBase's processes run in sessions of their own, which Ctrl-C does not reach. While the
    // cluster starts, a hook of this command stops them if this process is stopped: it
    // interrupts the start (which then kills what it spawned and spawns nothing more), waits for
    // it to end, closes what it started and stops whatever still runs. Once the cluster runs,
    // the Foreground's hook closes it instead; the phase decides which of the two acts, so that
    // the two never stop it at once.
    AtomicReference<StartPhase> phase = new AtomicReference<>(StartPhase.STARTING);
    AtomicReference<AutoCloseable> starting = new AtomicReference<>();
    CountDownLatch startEnded = new CountDownLatch(1);
    Thread stopHBase = null;
    if (regionServers > 1) {
      Path servers = LocalCluster.hbaseServersDir(dir);
      Thread starter = Thread.currentThread();
      stopHBase = new Thread(() -> {
        if (!phase.compareAndSet(StartPhase.STARTING, StartPhase.STOPPING)) {
          return;
        }
        starter.interrupt();
        try {
          startEnded.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        AutoCloseable started = starting.get();
        try {
          if (started != null) {
            closeCluster(started);
          }
        } finally {
          StandaloneHBase.stop(servers, Duration.ofSeconds(10));
        }
      }, "paxoscp-cluster-stop-hbase");
      Runtime.getRuntime().addShutdownHook(stopHBase);
    }
    try {
      Files.createDirectories(dir);
      if (netns) {
        NamespaceCluster c = NamespaceCluster.start(dcs, wan, dir, timeout, threads,
            noMetricsHttp ? 0 : metricsPort == null ? NamespaceCluster.METRICS_PORT : metricsPort,
            progress, serviceKeys);
        cluster = c;
        clusterConfig = c.config();
        writeConfig(c::writeConfig, c, config);
      } else {
        Map<String, Map<String, String>> perDc = new LinkedHashMap<>();
        for (int i = 0; i < dcs.size() && !noMetricsHttp; i++) {
          int port = metricsPort == null ? FreePorts.tcp() : metricsPort + i;
          perDc.put(dcs.get(i), Map.of(ServiceConfig.METRICS_PORT.name(), Integer.toString(port),
              ServiceConfig.METRICS_BIND.name(), "127.0.0.1"));
        }
        LocalCluster c = LocalCluster.start(localOptions, progress, serviceKeys, perDc);
        starting.set(c);
        cluster = c;
        clusterConfig = c.config();
        writeConfig(c::writeConfig, c, config);
      }
    } catch (IOException | RuntimeException e) {
      err.println(phase.get() == StartPhase.STOPPING
          ? "cluster: stopped while starting; stopping HBase's processes"
          : "cluster: failed to start: " + oneLine(e));
      removeHook(stopHBase);
      return 1;
    } finally {
      startEnded.countDown();
    }
    if (!phase.compareAndSet(StartPhase.STARTING, StartPhase.STARTED)) {
      // Stopped just as the start ended: the hook closes what started.
      Thread.interrupted();
      err.println("cluster: stopped while starting; stopping HBase's processes");
      return 1;
    }
    try {
      // Printed before running() turns true, so a caller that waits for it sees the whole text.
      printConnectionInfo(out, clusterConfig, config, metricsUrls(cluster));
      // Its hook is in place before this command's goes, so that no moment is without one.
      foreground = new Foreground("paxoscp-cluster", () -> {
        out.println("cluster: stopping ...");
        out.flush();
        closeCluster(cluster);
        out.println(store == LocalCluster.StoreKind.HBASE
            ? "cluster: stopped; data kept in " + dir.toAbsolutePath().normalize()
            : "cluster: stopped");
        out.flush();
      });
    } catch (IllegalStateException shuttingDown) {
      // Stopped (Ctrl-C, SIGTERM) while it started.
      err.println("cluster: stopped while starting");
      closeCluster(cluster);
      return 1;
    } finally {
      removeHook(stopHBase);
    }
    foreground.await();
    return 0;
  }

  /** Where a start with HBase's processes is, for {@link #call}'s shutdown hook. */
  private enum StartPhase {
    STARTING, STARTED, STOPPING
  }

  /** Removes {@code hook} (if any) unless the JVM is shutting down, when it runs anyway. */
  private static void removeHook(Thread hook) {
    if (hook != null) {
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // The hook is running or about to.
      }
    }
  }

  /** Stops a running cluster as Ctrl-C would (for tests); a no-op before it started. */
  void stop() {
    Foreground f = foreground;
    if (f != null) {
      f.stop();
    }
  }

  /** True once the cluster serves and its configuration is written. */
  boolean running() {
    return foreground != null;
  }

  /**
   * Writes the client configuration with {@code writer} (owner-only, {@link
   * org.paxoscp.config.KeyFiles#writePrivate}, or it fails); on failure closes the cluster.
   */
  private static void writeConfig(java.util.function.Consumer<Path> writer, AutoCloseable cluster,
      Path file) {
    try {
      writer.accept(file);
    } catch (RuntimeException e) {
      closeCluster(cluster);
      throw e;
    }
  }

  private static void closeCluster(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      // LocalCluster and NamespaceCluster close without throwing checked exceptions.
      throw new IllegalStateException(e);
    }
  }

  /** Each DC's /metrics URL, of the services that serve one. */
  private Map<String, String> metricsUrls(AutoCloseable cluster) {
    Map<String, String> urls = new LinkedHashMap<>();
    if (cluster instanceof LocalCluster c) {
      for (String dc : c.dcs()) {
        c.service(dc).flatMap(r -> r.metrics()).flatMap(m -> m.httpAddress()).ifPresent(a ->
            urls.put(dc, "http://" + a.getHostString() + ":" + a.getPort() + "/metrics"));
      }
    } else if (cluster instanceof NamespaceCluster c) {
      urls.putAll(c.metricsUrls());
    }
    return urls;
  }

  private void printConnectionInfo(PrintWriter out, ClusterConfig config, Path file,
      Map<String, String> metrics) {
    out.println();
    out.println(netns ? "Cluster running, each DC on an address of its own (network namespaces "
        + "on a bridge; this host reaches them):" : "Cluster running (loopback only):");
    List<String> dcs = config.dcNames();
    int width = dcs.stream().mapToInt(String::length).max().orElse(1);
    for (String dc : dcs) {
      List<String> eps = new ArrayList<>();
      for (InetSocketAddress a : config.dc(dc).endpoints()) {
        eps.add(a.getHostString() + ":" + a.getPort());
      }
      out.printf(Locale.ROOT, "  DC %-" + width + "s  udp %s%n", dc, String.join(", ", eps));
    }
    out.println("  ZooKeeper (discovery): " + config.discoveryZk().orElse("none"));
    metrics.forEach((dc, url) -> out.printf(Locale.ROOT, "  metrics of DC %-" + width + "s  %s%n",
        dc, url));
    out.println("  client configuration:  " + file);
    out.println();
    out.println("Connect with:");
    out.println("  ./paxoscp shell --config " + file + " --dc " + dcs.get(0));
    out.println("Watch it with:");
    out.println("  ./paxoscp status --config " + file);
    out.println();
    out.println("Ctrl-C stops the cluster.");
    out.flush();
  }

  static String oneLine(Throwable e) {
    String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    return m.replaceAll("\\s*\\R\\s*", " ");
  }
}
