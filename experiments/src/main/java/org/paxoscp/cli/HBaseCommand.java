package org.paxoscp.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.store.hbase.StandaloneHBase.Status;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp hbase start|stop|status}: an HBase server on this machine (loopback only), with
 * its data under {@code --dir}: master, region server and ZooKeeper in one process, or with
 * {@code --regionservers N} ZooKeeper and the master in one and each region server in one of its
 * own. A restart on the same directory keeps the data. Stores of any DC reach it through
 * {@code 127.0.0.1:<zk-port>}.
 *
 * <p>Exit codes: 0 success / running; 1 failure, or (status) a process that does not answer;
 * 2 usage; 3 (status) not running.
 */
@Command(name = "hbase", mixinStandardHelpOptions = true,
    description = "Start, stop or check an HBase server on this machine (loopback only): one "
        + "process, or a master and several region server processes.",
    footer = "%nThe server's log is <dir>/logs/hbase.log; its pid is in <dir>/hbase.pid."
        + "%nExplained in docs/operating.md.")
public final class HBaseCommand implements Callable<Integer> {

  static final int EXIT_NOT_RUNNING = 3;

  @Spec
  CommandSpec spec;

  @Option(names = "--dir", defaultValue = "./paxoscp-data/hbase", scope = ScopeType.INHERIT,
      description = "Data directory of the server (default: ${DEFAULT-VALUE}).")
  Path dir;

  @Option(names = "--zk-port", defaultValue = "2181", scope = ScopeType.INHERIT,
      description = "ZooKeeper client port on 127.0.0.1, used by start (default: ${DEFAULT-VALUE}); "
          + "stop and status read the port the server was started with.")
  int zkPort;

  @Override
  public Integer call() {
    spec.commandLine().usage(out());
    return 2;
  }

  @Command(name = "start", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/operating.md.",
      description = "Start the server (no-op if it already runs) and wait until it answers.")
  int start(
      @Option(names = "--timeout", defaultValue = "120", paramLabel = "SECONDS",
          description = "How long to wait for the server to answer (default: ${DEFAULT-VALUE}).")
      long timeoutSeconds,
      @Option(names = "--regionservers", paramLabel = "N",
          description = "Region servers (default: 1, in the master's process, or as many as a "
              + "running server has). With more, ZooKeeper and the master run in one process "
              + "and each region server in a process of its own, its log in "
              + "<dir>/logs/rs-<i>.log.")
      Integer regionServersOption) {
    int regionServers = regionServersOption != null ? regionServersOption
        : StandaloneHBase.status(dir).state() == StandaloneHBase.State.NOT_RUNNING ? 1
            : StandaloneHBase.regionServerCount(dir);
    out().printf("Starting HBase in %s (ZooKeeper port %d, %d region server%s)...%n", abs(),
        zkPort, regionServers, regionServers == 1 ? "" : "s");
    out().flush();
    try {
      Status s = StandaloneHBase.start(dir, zkPort, Duration.ofSeconds(timeoutSeconds),
          regionServers);
      boolean already = s.detail().equals("already running");
      out().printf("HBase %s: pid %d, ZooKeeper 127.0.0.1:%d, data %s%s%n",
          already ? "already running" : "running", s.pid().orElse(-1), s.zkPort(), s.dir(),
          already ? "" : " (" + s.detail() + ")");
      out().printf("Log: %s%n", StandaloneHBase.logFile(dir));
      for (StandaloneHBase.RegionServer rs : StandaloneHBase.regionServers(dir)) {
        out().printf("Region server %d: pid %d, %s, log %s%n", rs.index(), rs.pid().orElse(-1),
            rs.address(), rs.log());
      }
      return 0;
    } catch (IllegalArgumentException e) {
      err().printf("hbase start: %s%n", e.getMessage());
      return 2;
    } catch (RuntimeException e) {
      err().printf("HBase failed to start: %s%n", e.getMessage());
      return 1;
    }
  }

  @Command(name = "stop", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/operating.md.",
      description = "Shut the server down cleanly (SIGTERM, then SIGKILL, if it does not exit).")
  int stop(
      @Option(names = "--timeout", defaultValue = "60", paramLabel = "SECONDS",
          description = "How long to wait for a clean shutdown (default: ${DEFAULT-VALUE}).")
      long timeoutSeconds) {
    try {
      Status s = StandaloneHBase.stop(dir, Duration.ofSeconds(timeoutSeconds));
      if (s.pid().isPresent()) {
        out().printf("HBase %s; data kept in %s%n", s.detail(), s.dir());
      } else {
        out().printf("HBase %s (data %s)%n", s.detail(), s.dir());
      }
      return 0;
    } catch (RuntimeException e) {
      err().printf("HBase failed to stop: %s%n", e.getMessage());
      return 1;
    }
  }

  @Command(name = "status", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/operating.md.",
      description = "Report whether the server runs and answers. Exit 0 running, 1 not answering, "
          + "3 not running.")
  int status() {
    Status s = StandaloneHBase.status(dir);
    switch (s.state()) {
      case RUNNING -> {
        out().printf("HBase running: pid %d, ZooKeeper 127.0.0.1:%d, data %s%n",
            s.pid().getAsLong(), s.zkPort(), s.dir());
        for (StandaloneHBase.RegionServer rs : StandaloneHBase.regionServers(dir)) {
          out().printf("Region server %d: %s, %s%n", rs.index(), rs.pid().isPresent()
              ? "pid " + rs.pid().getAsLong() : "not running", rs.address());
        }
        return 0;
      }
      case UNRESPONSIVE -> {
        out().printf("HBase not answering: pid %d, %s%n", s.pid().getAsLong(), s.detail());
        return 1;
      }
      default -> {
        out().printf("HBase %s (data %s)%n", s.detail(), s.dir());
        return EXIT_NOT_RUNNING;
      }
    }
  }

  private Path abs() {
    return dir.toAbsolutePath().normalize();
  }

  private PrintWriter out() {
    return spec.commandLine().getOut();
  }

  private PrintWriter err() {
    return spec.commandLine().getErr();
  }
}
