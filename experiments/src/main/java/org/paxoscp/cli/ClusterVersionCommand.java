package org.paxoscp.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import org.paxoscp.service.ClusterVersionFinalizer;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Role;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.VersionProbe;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.version.UnsupportedClusterVersionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp cluster-version show|finalize}: the cluster version every service instance runs
 * at and speaks, and raising it once every process speaks the next (docs/upgrading.md).
 *
 * <p>Exit codes: 0 done (every instance answered, for show); 1 refused or incomplete (the
 * laggards are named); 2 usage or a bad configuration.
 */
@Command(name = "cluster-version", mixinStandardHelpOptions = true,
    description = "Show the cluster version, or raise it once every process speaks the next.",
    footer = "%nExplained in docs/upgrading.md.",
    subcommands = {ClusterVersionCommand.Show.class, ClusterVersionCommand.Finalize.class})
public final class ClusterVersionCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  /** What both subcommands open: the operator's transport, speaking the cluster's version. */
  private static final class Session implements AutoCloseable {
    final List<AutoCloseable> opened = new ArrayList<>();
    final Endpoints endpoints;
    final UdpTransport transport;
    final String source;

    Session(ClusterConfig cluster, PrintWriter err, String tool) {
      String[] from = new String[1];
      this.endpoints = StatusCommand.endpoints(cluster, opened, err, tool, from);
      this.source = from[0];
      try {
        this.transport = UdpTransport.builder(cluster, cluster.dcNames().get(0))
            .endpoints(endpoints).role(Role.OPERATOR).build();
        opened.add(0, transport);
        VersionProbe.followAsTool(transport, cluster.versionRange(), cluster.dcNames(),
            cluster.requestTimeout());
      } catch (RuntimeException e) {
        close();
        throw e;
      }
    }

    ClusterVersionFinalizer finalizer(ClusterConfig cluster, Duration drain, Duration wait,
        PrintWriter out) {
      return new ClusterVersionFinalizer(transport, cluster.dcNames(), endpoints,
          cluster.requestTimeout(), drain, wait, out);
    }

    @Override
    public void close() {
      StatusCommand.closeAll(opened);
    }
  }

  /** {@code paxoscp cluster-version show --config FILE}. */
  @Command(name = "show", mixinStandardHelpOptions = true,
      description = "Every service instance's cluster version, the versions it speaks, its "
          + "DC's fence, and when it last received wire version 3.",
      footer = "%nExplained in docs/upgrading.md.")
  public static final class Show implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      ClusterConfig cluster;
      try {
        cluster = config.load();
      } catch (IllegalArgumentException | UncheckedIOException e) {
        err.println("cluster-version show: " + ClusterCommand.oneLine(e));
        return 2;
      }
      try (Session s = new Session(cluster, err, "cluster-version show")) {
        Map<ClusterVersionFinalizer.Instance, Message.VersionReply> survey =
            s.finalizer(cluster, Duration.ZERO, Duration.ZERO, out).survey();
        out.printf("this build knows cluster versions %d-%d:%n", ClusterVersion.OLDEST,
            ClusterVersion.LATEST);
        for (ClusterVersion.Version v : ClusterVersion.ALL) {
          out.printf("  %d %-14s %s%n", v.number(), v.name(), v.switchesOn());
        }
        out.printf("instances (from %s):%n", s.source);
        out.printf("%-6s %-22s %-8s %-7s %-6s %s%n", "DC", "instance", "version", "speaks",
            "fence", "last wire 3 request");
        boolean all = !survey.isEmpty();
        for (var e : survey.entrySet()) {
          Message.VersionReply r = e.getValue();
          String inst = e.getKey().address().getHostString() + ":"
              + e.getKey().address().getPort();
          if (r == null) {
            all = false;
            out.printf("%-6s %-22s no answer (down, or a build from before cluster versions)%n",
                e.getKey().dc(), inst);
            continue;
          }
          out.printf("%-6s %-22s %-8s %-7s %-6s %s%n", e.getKey().dc(), inst,
              r.active() == 0 ? "?" : Integer.toString(r.active()), r.min() + "-" + r.max(),
              r.fence() == 0 ? "-" : Integer.toString(r.fence()), r.wire3AgoMillis() < 0
                  ? "never" : r.wire3AgoMillis() + " ms ago from " + r.wire3From());
        }
        out.flush();
        return all ? 0 : 1;
      } catch (UnsupportedClusterVersionException e) {
        err.println("cluster-version show: " + e.getMessage());
        return 2;
      } catch (RuntimeException e) {
        err.println("cluster-version show: " + ClusterCommand.oneLine(e));
        return 1;
      }
    }
  }

  /** {@code paxoscp cluster-version finalize --config FILE [--to N]}. */
  @Command(name = "finalize", mixinStandardHelpOptions = true,
      description = "Raise the cluster version one step at a time, up to --to, once every "
          + "service instance of every DC speaks it; refuses and names the laggards otherwise.",
      footer = {"%nBefore it, every process can be replaced by the build it replaced; after "
          + "it, not.", "%nExplained in docs/upgrading.md."})
  public static final class Finalize implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

    @Option(names = "--to", paramLabel = "N", description = "The version to reach (default: "
        + "the newest this build knows).")
    int to = ClusterVersion.LATEST;

    @Option(names = "--drain", paramLabel = "S", description = "Before a step that stops "
        + "opening wire version 3: how long no service may have received it (default: "
        + "${DEFAULT-VALUE} s; at least three poll intervals, paxoscp.cluster.version.poll.ms).")
    int drainSeconds = 15;

    @Option(names = "--wait", paramLabel = "S", description = "How long to wait for that "
        + "before refusing (default: ${DEFAULT-VALUE} s).")
    int waitSeconds = 60;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      ClusterConfig cluster;
      try {
        cluster = config.load();
        if (to < ClusterVersion.OLDEST || to > ClusterVersion.LATEST) {
          throw new IllegalArgumentException("--to " + to + ": this build knows cluster "
              + "versions " + ClusterVersion.OLDEST + "-" + ClusterVersion.LATEST);
        }
        if (drainSeconds < 0 || waitSeconds < 0) {
          throw new IllegalArgumentException("--drain and --wait must not be negative");
        }
      } catch (IllegalArgumentException | UncheckedIOException e) {
        err.println("cluster-version finalize: " + ClusterCommand.oneLine(e));
        return 2;
      }
      try (Session s = new Session(cluster, err, "cluster-version finalize")) {
        ClusterVersionFinalizer.Result r = s.finalizer(cluster, Duration.ofSeconds(drainSeconds),
            Duration.ofSeconds(waitSeconds), out).finalizeTo(to);
        if (r.complete()) {
          out.printf(r.to() == r.from() ? "the cluster is at version %2$s already%n"
              : "raised from cluster version %s to %s%n", ClusterVersion.describe(r.from()),
              ClusterVersion.describe(r.to()));
          out.flush();
          return 0;
        }
        err.printf("cluster-version finalize: stopped at cluster version %s (target %d):%n",
            ClusterVersion.describe(r.to()), to);
        r.laggards().forEach(l -> err.println("  " + l));
        err.flush();
        return 1;
      } catch (UnsupportedClusterVersionException e) {
        err.println("cluster-version finalize: " + e.getMessage());
        return 2;
      } catch (RuntimeException e) {
        err.println("cluster-version finalize: " + ClusterCommand.oneLine(e));
        return 1;
      }
    }
  }
}
