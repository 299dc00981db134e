package org.paxoscp.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.Role;
import org.paxoscp.transport.UdpTransport;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code paxoscp dc ...}: operations on one DC of a running cluster. */
@Command(name = "dc", mixinStandardHelpOptions = true,
    description = "Operations on one DC of a running cluster.",
    footer = "%nExplained in docs/rebuilding.md.",
    subcommands = {DcCommand.Rebuild.class})
public final class DcCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Override
  public Integer call() {
    spec.commandLine().usage(spec.commandLine().getErr());
    return 2;
  }

  /**
   * {@code paxoscp dc rebuild --config FILE --dc D (--all | --groups G,...)}: asks DC D's service
   * to rebuild each group from its peers (docs/architecture.md section 12), a few at once, with
   * progress; with {@code --all}, lists the groups at the peers first and, when every one is
   * rebuilt, declares D's store rebuilt. Resumable: groups already rebuilt are skipped by the
   * service. It writes nothing itself; D's service writes only D's store.
   *
   * <p>Exit codes: 0 every group rebuilt; 1 some were not (run again to resume); 2 usage.
   */
  @Command(name = "rebuild", mixinStandardHelpOptions = true,
      description = "Rebuild a DC that lost its store, fell behind past its peers' GC "
          + "watermark, or is new, from its peers while the cluster runs.",
      footer = {"%nThe DC's services must run (they serve nothing of a group until it is "
          + "rebuilt there).", "%nExplained in docs/rebuilding.md."})
  public static final class Rebuild implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

    @Option(names = "--dc", required = true, paramLabel = "D", description = "The DC to rebuild.")
    String dc;

    @Option(names = "--from", paramLabel = "PEER", description = "Copy from this DC when it "
        + "answers (default: the peer that applied the most of each group).")
    String from = "";

    /** Which groups. */
    static final class Which {
      @Option(names = "--all", required = true, description = "Every group any peer holds, "
          + "then declare the DC rebuilt.")
      boolean all;

      @Option(names = "--groups", required = true, split = ",", paramLabel = "G",
          description = "These groups only.")
      List<String> groups;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Which which;

    @Option(names = "--parallel", paramLabel = "N", description = "Groups rebuilt at once "
        + "(default: ${DEFAULT-VALUE}).")
    int parallel = 2;

    @Option(names = "--group-timeout", paramLabel = "S", description = "How long one group's "
        + "rebuild, or one page of a peer's list of groups, may take before it is tried again "
        + "(default: ${DEFAULT-VALUE} s).")
    int groupTimeoutSeconds = 60;

    @Override
    public Integer call() {
      PrintWriter out = spec.commandLine().getOut();
      PrintWriter err = spec.commandLine().getErr();
      ClusterConfig cluster;
      try {
        cluster = config.load();
        if (!cluster.dcNames().contains(dc)) {
          throw new IllegalArgumentException("--dc " + dc + " is not a DC of the cluster "
              + cluster.dcNames());
        }
        if (!from.isEmpty() && (from.equals(dc) || !cluster.dcNames().contains(from))) {
          throw new IllegalArgumentException("--from " + from + " must be another DC of "
              + cluster.dcNames());
        }
        if (cluster.dcNames().size() < 2) {
          throw new IllegalArgumentException("a DC is rebuilt from its peers; the cluster has "
              + "one DC");
        }
        if (parallel < 1 || groupTimeoutSeconds < 1) {
          throw new IllegalArgumentException("--parallel and --group-timeout must be positive");
        }
      } catch (IllegalArgumentException | UncheckedIOException e) {
        err.println("dc rebuild: " + ClusterCommand.oneLine(e));
        return 2;
      }
      List<AutoCloseable> opened = new ArrayList<>();
      try {
        Endpoints endpoints = StatusCommand.endpoints(cluster, opened, err, "dc rebuild",
            new String[1]);
        return run(cluster, endpoints, opened, out, err);
      } finally {
        StatusCommand.closeAll(opened);
      }
    }

    /**
     * What {@code dc rebuild --config ... --dc DC --all --parallel N} does, for a caller that
     * holds the cluster's configuration (the nemesis, bench-rebuild): the exit code.
     */
    public static int rebuildAll(ClusterConfig cluster, String dc, int parallel,
        PrintWriter out, PrintWriter err) {
      Rebuild r = new Rebuild();
      r.dc = dc;
      r.parallel = parallel;
      r.which = new Which();
      r.which.all = true;
      List<AutoCloseable> opened = new ArrayList<>();
      try {
        return r.run(cluster, Endpoints.fromConfig(cluster), opened, out, err);
      } finally {
        StatusCommand.closeAll(opened);
      }
    }

    private int run(ClusterConfig cluster, Endpoints endpoints, List<AutoCloseable> opened,
        PrintWriter out, PrintWriter err) {
      try {
        UdpTransport transport = UdpTransport.builder(cluster, dc).endpoints(endpoints)
            .role(Role.OPERATOR).build();
        opened.add(0, transport);
        org.paxoscp.transport.VersionProbe.followAsTool(transport, cluster.versionRange(),
            cluster.dcNames(), cluster.requestTimeout());
        List<String> groups = which.all ? listGroups(cluster, transport, out)
            : List.copyOf(new TreeSet<>(which.groups));
        return rebuild(cluster, transport, groups, out, err);
      } catch (RuntimeException e) {
        err.println("dc rebuild: " + ClusterCommand.oneLine(e));
        return 1;
      }
    }

    /**
     * Every group the peers hold anything of: the union of the lists of at least
     * {@code n - majority + 1} peers, so that every group a lost promise or vote of this DC may
     * count in is on it (DcRebuild's safety argument).
     */
    private List<String> listGroups(ClusterConfig cluster, Transport transport,
        PrintWriter out) {
      List<String> peers = cluster.dcNames().stream().filter(d -> !d.equals(dc)).toList();
      int needed = cluster.dcNames().size() - (cluster.dcNames().size() / 2 + 1) + 1;
      Map<String, CompletableFuture<List<String>>> lists = new LinkedHashMap<>();
      for (String p : peers) {
        // A page of a peer's list is a scan of its store, not a one-row request: it gets a
        // group's time, not the request timeout.
        lists.put(p, list(transport, Duration.ofSeconds(groupTimeoutSeconds), p, "",
            new ArrayList<>()));
      }
      TreeSet<String> all = new TreeSet<>();
      List<String> answered = new ArrayList<>();
      List<String> failed = new ArrayList<>();
      for (var e : lists.entrySet()) {
        try {
          all.addAll(e.getValue().join());
          answered.add(e.getKey());
        } catch (CompletionException ex) {
          failed.add(e.getKey() + ": " + ClusterCommand.oneLine(ex.getCause()));
        }
      }
      if (answered.size() < needed) {
        throw new IllegalStateException("listed the groups of " + answered.size() + " peers; "
            + "rebuilding every group needs " + needed + " of " + peers.size() + ". " + failed);
      }
      out.printf("dc rebuild: %d groups held by peers %s%s%n", all.size(), answered,
          failed.isEmpty() ? "" : " (not listed: " + failed + ")");
      out.flush();
      return List.copyOf(all);
    }

    private CompletableFuture<List<String>> list(Transport transport, Duration timeout,
        String peer, String after, List<String> acc) {
      return retried(() -> transport.request(peer, new Message.GroupsRequest(after), timeout), 3)
          .thenCompose(m -> {
            if (!(m instanceof Message.GroupsReply r)) {
              throw new IllegalStateException("DC " + peer + " answered " + m);
            }
            acc.addAll(r.groups());
            return r.more() && !r.groups().isEmpty()
                ? list(transport, timeout, peer, r.groups().get(r.groups().size() - 1), acc)
                : CompletableFuture.completedFuture(acc);
          });
    }

    private int rebuild(ClusterConfig cluster, Transport transport, List<String> groups,
        PrintWriter out, PrintWriter err) {
      Duration timeout = Duration.ofSeconds(groupTimeoutSeconds);
      Semaphore slots = new Semaphore(parallel);
      AtomicLong items = new AtomicLong();
      Map<String, Long> outcomes = new java.util.concurrent.ConcurrentSkipListMap<>();
      Map<String, String> failures = new java.util.concurrent.ConcurrentSkipListMap<>();
      // Every request names the rebuild begun here; a completion names it too, so that it can
      // only end this rebuild of this DC's store (a store lost again meanwhile gets a new id).
      Message begun = retried(() -> transport.request(dc,
          new Message.RebuildRequest("", from, dc, "", false), cluster.requestTimeout()), 3)
          .join();
      if (!(begun instanceof Message.RebuildReply b)) {
        err.println("dc rebuild: DC " + dc + " answered " + begun + " to the start of the rebuild");
        return 1;
      }
      String rebuildId = b.rebuildId();
      long t0 = System.nanoTime();
      try (ProgressBar bar = new ProgressBarBuilder().setTaskName("rebuild " + dc)
          .setInitialMax(groups.size()).setStyle(ProgressBarStyle.ASCII)
          .setUpdateIntervalMillis(1000).setConsumer(new ConsoleProgressBarConsumer(System.err))
          .setUnit(" groups", 1).build()) {
        List<CompletableFuture<Void>> all = new ArrayList<>();
        for (String g : groups) {
          slots.acquireUninterruptibly();
          all.add(retried(() -> transport.request(dc,
              new Message.RebuildRequest(g, from, dc, rebuildId, false), timeout), 3).handle((m, t) -> {
                if (m instanceof Message.RebuildReply r) {
                  outcomes.merge(r.outcome(), 1L, Long::sum);
                  items.addAndGet(r.items());
                } else {
                  failures.put(g, t != null ? ClusterCommand.oneLine(
                      t instanceof CompletionException && t.getCause() != null ? t.getCause() : t)
                      : String.valueOf(m));
                }
                bar.step();
                bar.setExtraMessage(items.get() + " versions copied");
                slots.release();
                return null;
              }));
        }
        CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).join();
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      out.printf("dc rebuild: %d groups in %.1f s (%.0f groups/s), %d data versions copied "
          + "(%.0f/s); %s%n", groups.size(), seconds, groups.size() / Math.max(seconds, 1e-3),
          items.get(), items.get() / Math.max(seconds, 1e-3), outcomes);
      if (!failures.isEmpty()) {
        failures.entrySet().stream().limit(10).forEach(e ->
            err.println("dc rebuild: group " + e.getKey() + " not rebuilt: " + e.getValue()));
        err.printf("dc rebuild: %d of %d groups not rebuilt; run the same command again to "
            + "resume (groups rebuilt are skipped)%n", failures.size(), groups.size());
        return 1;
      }
      if (which.all) {
        Message m = retried(() -> transport.request(dc,
            new Message.RebuildRequest("", "", dc, rebuildId, true), cluster.requestTimeout()), 3)
            .join();
        if (!(m instanceof Message.RebuildReply)) {
          err.println("dc rebuild: DC " + dc + " answered " + m + " to the end of the rebuild");
          return 1;
        }
        out.printf("dc rebuild: DC %s rebuilt; a group it holds nothing of is new there%n", dc);
      } else {
        out.printf("dc rebuild: the groups named are rebuilt at DC %s (if its store was lost, "
            + "the others stay refused there until a rebuild with --all completes)%n", dc);
      }
      return 0;
    }

    /** {@code request}, again on no reply or an error reply, up to {@code attempts} times. */
    private static CompletableFuture<Message> retried(
        java.util.function.Supplier<CompletableFuture<Message>> request, int attempts) {
      return request.get().handle((m, t) -> {
        boolean failed = t != null || m instanceof Message.ErrorReply;
        if (failed && attempts > 1) {
          return retried(request, attempts - 1);
        }
        if (m instanceof Message.ErrorReply e) {
          return CompletableFuture.<Message>failedFuture(new IllegalStateException(e.code()
              + " " + e.detail()));
        }
        return t != null ? CompletableFuture.<Message>failedFuture(t)
            : CompletableFuture.completedFuture(m);
      }).thenCompose(f -> f);
    }
  }
}
