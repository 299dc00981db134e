package org.paxoscp.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.Callable;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.StoreUnavailableException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp service --config FILE}: runs one DC's Transaction Service in this process, on
 * UDP, as the properties file says (the cluster's keys plus the {@code paxoscp.service.*} keys of
 * {@link ServiceConfig}), until interrupted (Ctrl-C or SIGTERM close it cleanly).
 *
 * <p>Exit codes: 0 stopped cleanly; 1 the service could not start (store or discovery
 * unreachable, address in use); 2 usage or a bad configuration (the message names the key).
 */
@Command(name = "service", mixinStandardHelpOptions = true,
    description = "Run one DC's Transaction Service (UDP) as a properties file configures it, "
        + "until interrupted.",
    footer = "%nThe file holds the cluster's keys (paxoscp.dcs, paxoscp.key, paxoscp.dc.<DC>.*, "
        + "...) and the service's: paxoscp.service.dc (required), paxoscp.service.bind, "
        + "paxoscp.service.threads, paxoscp.service.store (hbase or memory), ..."
        + "%nExplained in docs/deploying.md.")
public final class ServiceCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--config", required = true, paramLabel = "FILE",
      description = "The service's properties file.")
  Path configFile;

  @Option(names = "--new-cluster",
      description = "With paxoscp.service.store = memory: this process starts with the whole "
          + "cluster, new, so its empty store is a new DC's and is marked serving (sets "
          + "paxoscp.service.memory.new for this run). Without it a memory-store service starts "
          + "without a store marker and serves no group until paxoscp dc rebuild copies its DC "
          + "from the peers: a restarted process lost every promise and vote it made "
          + "(docs/rebuilding.md).")
  boolean newCluster;

  private volatile Foreground foreground;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (System.getProperty("org.slf4j.simpleLogger.log.org.paxoscp") == null) {
      // A service logs its life-cycle at info (settings at start, round trips measured, batcher
      // moves, rebuilds). slf4j-simple reads its levels when the first logger is made: here,
      // before ServiceConfig's; --log-level sets the property first.
      System.setProperty("org.slf4j.simpleLogger.log.org.paxoscp", "info");
    }
    ServiceConfig config;
    try {
      Map<String, String> props = new java.util.LinkedHashMap<>(readConfig(configFile));
      if (newCluster) {
        props.put(ServiceConfig.MEMORY_NEW.name(), "true");
      }
      config = ServiceConfig.fromProperties(props);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      err.println("service: bad configuration in " + configFile + ": "
          + ClusterCommand.oneLine(e));
      return 2;
    }
    if (newCluster && config.store() != ServiceConfig.StoreKind.MEMORY) {
      err.println("service: --new-cluster applies to paxoscp.service.store = memory only; an "
          + "HBase store is marked when its tables are created (paxoscp.hbase.new.store)");
    }
    ServiceRunner runner;
    try {
      runner = ServiceRunner.start(config, ServiceTransportFactory.UDP);
    } catch (StoreUnavailableException e) {
      err.println("service: the store of DC " + config.dc() + " is unreachable: "
          + ClusterCommand.oneLine(e));
      return 1;
    } catch (RuntimeException e) {
      err.println("service: DC " + config.dc() + " failed to start: "
          + ClusterCommand.oneLine(e));
      return 1;
    }
    InetSocketAddress a = runner.boundAddress();
    foreground = new Foreground("paxoscp-service", () -> {
      runner.close();
      out.println("service: DC " + config.dc() + " stopped");
      out.flush();
    });
    out.printf("service: DC %s serving on udp %s:%d (store %s%s); Ctrl-C stops it%n",
        config.dc(), a.getHostString(), a.getPort(), config.effectiveValues().get(
            ServiceConfig.STORE.name()), config.cluster().discoveryZk().map(
                zk -> ", discovery " + zk).orElse(""));
    out.flush();
    foreground.await();
    return 0;
  }

  /** Stops a running service as Ctrl-C would (for tests); a no-op before it started. */
  void stop() {
    Foreground f = foreground;
    if (f != null) {
      f.stop();
    }
  }

  private static Map<String, String> readConfig(Path file) {
    if (!Files.isRegularFile(file)) {
      throw new IllegalArgumentException("no such file");
    }
    return KeyFiles.read(file);
  }
}
