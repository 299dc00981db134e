package org.paxoscp.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.paxoscp.service.CuratorDiscovery;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp status --config FILE}: one screen for the whole cluster. Asks every service
 * instance of every DC (from discovery when the cluster has ZooKeeper, else the static endpoints)
 * for its status over the cluster's own authenticated datagrams, twice {@code --interval} apart,
 * and prints each instance's state (up; rebuild when its DC's store lost its contents or is
 * being rebuilt), uptime, committed entries recorded per second, begin latency
 * and error counts; with {@code --group}, the group's applied position, GC watermark and fast-path leader
 * at every DC. An instance that does not answer within the request timeout is shown DOWN.
 *
 * <p>Exit codes: 0 every DC answered; 1 a DC had no instance that answered; 2 usage or a bad
 * configuration.
 */
@Command(name = "status", mixinStandardHelpOptions = true,
    footer = {"%nColumns: entries/s is the committed entries this instance recorded per second "
        + "(every DC records every commit, once; commits of clients on the direct store path "
        + "are recorded by the client itself at its home DC); begin "
        + "p50/p99 is this instance's begin latency (a sliding window of about two minutes); "
        + "errors are requests the instance failed (store unavailable, catch-up failed, ...); "
        + "too_old are requests for collected positions.",
        "%nExplained in docs/operating.md."},
    description = "Show every DC's service instances: reachable or not, uptime, entries/s, "
        + "begin latency and errors; with --group, that group's positions at every DC.")
public final class StatusCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Mixin
  SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

  @Option(names = "--group", paramLabel = "G",
      description = "Also show this group's applied position, GC watermark and fast-path "
          + "leader at every DC.")
  String group = "";

  @Option(names = "--interval", paramLabel = "MS", description = "Time between the two samples "
      + "that give the rates (default: ${DEFAULT-VALUE}).")
  long intervalMs = 1000;

  @Option(names = "--watch", paramLabel = "S", description = "Refresh every S seconds until "
      + "interrupted.")
  Integer watchSeconds;

  @Option(names = "--as-dc", paramLabel = "DC", description = "The DC this tool's datagrams "
      + "say they come from (default: the first DC).")
  String asDc;

  /** One instance's answer, or why there is none. */
  record Sample(String dc, InetSocketAddress instance, Map<String, String> fields, String down,
      long atNanos) {}

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    ClusterConfig cluster;
    try {
      cluster = config.load();
      if (asDc != null && !cluster.dcNames().contains(asDc)) {
        throw new IllegalArgumentException("--as-dc " + asDc + " is not a DC of the cluster "
            + cluster.dcNames());
      }
      if (intervalMs < 1 || (watchSeconds != null && watchSeconds < 1)) {
        throw new IllegalArgumentException("--interval and --watch must be positive");
      }
    } catch (IllegalArgumentException | UncheckedIOException e) {
      err.println("status: " + ClusterCommand.oneLine(e));
      return 2;
    }
    List<AutoCloseable> opened = new ArrayList<>();
    try {
      String[] source = new String[1];
      Endpoints endpoints = endpoints(cluster, opened, err, "status", source);
      UdpTransport transport = UdpTransport.builder(cluster,
          asDc != null ? asDc : cluster.dcNames().get(0)).endpoints(endpoints)
          .role(org.paxoscp.transport.Role.OPERATOR).build();
      opened.add(0, transport);
      org.paxoscp.transport.VersionProbe.followAsTool(transport, cluster.versionRange(),
          cluster.dcNames(), cluster.requestTimeout());
      int code;
      // The first round; the second goes to those that answered within --interval, so that a
      // DC that is down costs one request timeout, not two.
      long t0 = System.nanoTime();
      Map<Sample, CompletableFuture<Sample>> first = ask(cluster, endpoints, transport, null);
      sleep(Math.max(0, intervalMs - (System.nanoTime() - t0) / 1_000_000));
      List<Sample> answered = new ArrayList<>();
      first.forEach((k, f) -> {
        if (f.isDone() && f.join().down() == null) {
          answered.add(k);
        }
      });
      List<Sample> previous = collect(first);
      List<Sample> now = collect(ask(cluster, endpoints, transport, answered));
      for (Sample p : previous) {
        // Down, or slower than --interval: shown as the first round saw it (no rate).
        if (answered.stream().noneMatch(a -> a.dc().equals(p.dc())
            && java.util.Objects.equals(a.instance(), p.instance()))) {
          now.add(p);
        }
      }
      sort(now, cluster);
      while (true) {
        code = print(out, cluster, source[0], previous, now, transport.clockOffsetsMillis());
        out.flush();
        if (watchSeconds == null) {
          break;
        }
        sleep(watchSeconds * 1000L);
        previous = now;
        now = collect(ask(cluster, endpoints, transport, null));
        if (System.console() != null) {
          out.print("\033[H\033[2J"); // a fresh screen each time on a terminal
        }
      }
      return code;
    } catch (RuntimeException e) {
      err.println("status: " + ClusterCommand.oneLine(e));
      return 1;
    } finally {
      closeAll(opened);
    }
  }

  /** Closes each of {@code opened} in order, going on past failures. */
  static void closeAll(List<AutoCloseable> opened) {
    for (AutoCloseable c : opened) {
      try {
        c.close();
      } catch (Exception e) {
        // closing anyway
      }
    }
  }

  /**
   * The cluster's service instances: from discovery when the cluster has ZooKeeper (falling back
   * to the static endpoints for a DC none registered, or when discovery is unreachable), else its
   * static endpoints. What it opens is added to the front of {@code opened}; {@code source[0]}
   * says where the endpoints came from.
   */
  static Endpoints endpoints(ClusterConfig cluster, List<AutoCloseable> opened, PrintWriter err,
      String tool, String[] source) {
    Endpoints endpoints = Endpoints.fromConfig(cluster);
    source[0] = "static endpoints";
    if (cluster.discoveryZk().isPresent()) {
      try {
        CuratorDiscovery discovery = CuratorDiscovery.start(cluster.discoveryZk().get(),
            cluster.discoveryPath(), cluster.discoveryConnectTimeout());
        opened.add(0, discovery);
        Endpoints found = discovery.endpoints(cluster.dcNames());
        opened.add(0, found);
        Endpoints configured = endpoints;
        endpoints = dc -> found.of(dc).isEmpty() ? configured.of(dc) : found.of(dc);
        source[0] = "discovery (" + cluster.discoveryZk().get() + ")";
      } catch (RuntimeException e) {
        err.println(tool + ": discovery unreachable (" + ClusterCommand.oneLine(e)
            + "); asking the static endpoints");
      }
    }
    return endpoints;
  }

  /**
   * Asks every instance (or only {@code only}'s, when not null) at once; each future completes
   * with the instance's sample, stamped when its answer came, or a sample saying why there is
   * none (within the request timeout).
   */
  private Map<Sample, CompletableFuture<Sample>> ask(ClusterConfig cluster,
      Endpoints endpoints, UdpTransport transport, List<Sample> only) {
    Map<Sample, CompletableFuture<Sample>> asked = new LinkedHashMap<>();
    for (String dc : cluster.dcNames()) {
      List<InetSocketAddress> instances = only == null ? endpoints.of(dc)
          : only.stream().filter(x -> x.dc().equals(dc)).map(Sample::instance).toList();
      if (instances.isEmpty() && only == null) {
        Sample none = new Sample(dc, null, Map.of(), "no instance known (none registered, no "
            + "static endpoint)", 0);
        asked.put(none, CompletableFuture.completedFuture(none));
      }
      for (InetSocketAddress a : instances) {
        Sample key = new Sample(dc, a, Map.of(), null, 0);
        asked.put(key, transport.request(dc, a, new Message.StatusRequest(group),
            cluster.requestTimeout()).handle((m, t) -> {
              long at = System.nanoTime();
              if (t != null) {
                Throwable cause = t instanceof CompletionException && t.getCause() != null
                    ? t.getCause() : t;
                return new Sample(dc, a, Map.of(), ClusterCommand.oneLine(cause), at);
              }
              return m instanceof Message.StatusReply r
                  ? new Sample(dc, a, r.fields(), null, at)
                  : new Sample(dc, a, Map.of(), "answered " + m, at);
            }));
      }
    }
    return asked;
  }

  /**
   * The cluster version each instance runs at and the versions it speaks: one line when all
   * agree, else one entry per instance (docs/upgrading.md).
   */
  static String versions(List<Sample> samples) {
    Map<String, List<String>> by = new LinkedHashMap<>();
    for (Sample s : samples) {
      if (s.down() != null) {
        continue;
      }
      String v = s.fields().containsKey("version_range")
          ? "cluster version " + s.fields().getOrDefault("cluster_version", "?") + ", speaks "
              + s.fields().get("version_range")
          : "a build from before cluster versions";
      by.computeIfAbsent(v, k -> new ArrayList<>()).add(s.dc() + " "
          + s.instance().getHostString() + ":" + s.instance().getPort());
    }
    if (by.size() == 1) {
      return "versions: every instance at " + by.keySet().iterator().next()
          + " (docs/upgrading.md)";
    }
    List<String> parts = new ArrayList<>();
    by.forEach((v, who) -> parts.add(String.join(", ", who) + ": " + v));
    return "versions (mixed: an upgrade under way, docs/upgrading.md): " + String.join("; ",
        parts);
  }

  /** Every sample; complete within the request timeout. */
  private static List<Sample> collect(Map<Sample, CompletableFuture<Sample>> asked) {
    List<Sample> samples = new ArrayList<>();
    asked.values().forEach(f -> samples.add(f.join()));
    return samples;
  }

  private static void sort(List<Sample> samples, ClusterConfig cluster) {
    samples.sort(java.util.Comparator.comparingInt((Sample x) -> cluster.dcNames()
        .indexOf(x.dc())).thenComparing(x -> String.valueOf(x.instance())));
  }

  /** Prints the screen; returns 0 if every DC had an instance that answered, else 1. */
  private int print(PrintWriter out, ClusterConfig cluster, String source, List<Sample> before,
      List<Sample> now, Map<String, Long> clockOffsets) {
    out.printf(Locale.ROOT, "paxoscp status: DCs %s, instances from %s, request timeout %d "
        + "ms%n", cluster.dcNames(), source, cluster.requestTimeout().toMillis());
    out.printf(Locale.ROOT, "%-6s %-22s %-6s %9s %10s %17s %10s %8s %8s%n", "DC", "instance",
        "state", "uptime", "entries/s", "begin p50/p99 ms", "requests", "errors", "too_old");
    List<String> downDcs = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    // Leader combination's round trips (configured or measured), and which DCs hold each table.
    Map<String, List<String>> roundTrips = new LinkedHashMap<>();
    for (String dc : cluster.dcNames()) {
      boolean anyUp = false;
      for (Sample s : now) {
        if (!s.dc().equals(dc)) {
          continue;
        }
        String inst = s.instance() == null ? "-"
            : s.instance().getHostString() + ":" + s.instance().getPort();
        if (s.down() != null) {
          out.printf(Locale.ROOT, "%-6s %-22s %-6s %s%n", dc, inst, "DOWN", s.down());
          continue;
        }
        anyUp = true;
        Map<String, String> f = s.fields();
        if (f.containsKey("round_trips_ms")) {
          roundTrips.computeIfAbsent(f.get("round_trips_ms"), k -> new ArrayList<>()).add(dc);
        }
        // A store that lost its contents, or is being rebuilt, serves only what it rebuilt.
        String store = f.getOrDefault("store", "serving");
        String state = store.equals("serving") ? "up" : store.equals("unavailable") ? "up*"
            : "rebuild";
        if (!store.equals("serving")) {
          notes.add("DC " + dc + " (" + inst + "): store " + store + (store.equals("unavailable")
              ? "" : "; it serves only the groups it rebuilt (docs/rebuilding.md)"));
        }
        if (!f.getOrDefault("store_changes", "0").equals("0")) {
          notes.add("DC " + dc + " (" + inst + "): its store changed " + f.get("store_changes")
              + " time(s) under this running instance (lost, being rebuilt, rebuilt; "
              + "docs/rebuilding.md)");
        }
        out.printf(Locale.ROOT, "%-6s %-22s %-6s %9s %10s %17s %10s %8s %8s%n", dc, inst, state,
            uptime(f.get("uptime_s")), rate(before, s, "recorded_entries"),
            f.getOrDefault("begin_p50_ms", "-") + " / " + f.getOrDefault("begin_p99_ms", "-"),
            f.getOrDefault("requests", "-"), f.getOrDefault("errors", "-"),
            f.getOrDefault("too_old", "-"));
      }
      if (!anyUp) {
        downDcs.add(dc);
      }
    }
    if (!group.isEmpty()) {
      out.printf(Locale.ROOT, "%ngroup %s:%n%-6s %-22s %10s %13s %8s%n", group, "DC",
          "instance", "applied", "gc_watermark", "leader");
      for (Sample s : now) {
        if (s.down() != null) {
          continue;
        }
        Map<String, String> f = s.fields();
        String inst = s.instance().getHostString() + ":" + s.instance().getPort();
        if (f.containsKey("group.error")) {
          out.printf(Locale.ROOT, "%-6s %-22s %s%n", s.dc(), inst, "error: "
              + f.get("group.error"));
        } else {
          out.printf(Locale.ROOT, "%-6s %-22s %10s %13s %8s%n", s.dc(), inst,
              f.getOrDefault("group.applied", "-"), f.getOrDefault("group.gc_watermark", "-"),
              f.getOrDefault("group.leader", "-"));
        }
      }
    }
    notes.forEach(out::println);
    out.println(versions(now));
    roundTrips.forEach((table, holders) -> out.println("round trips (ms) for leader "
        + "combination" + (roundTrips.size() == 1 ? "" : " at " + String.join(", ", holders))
        + ": " + table));
    if (!clockOffsets.isEmpty()) {
      // Freshness needs clocks within the window (docs/operating.md, "Freshness").
      long window = cluster.wireFreshness().toMillis();
      List<String> parts = new ArrayList<>();
      List<String> far = new ArrayList<>();
      for (String dc : cluster.dcNames()) {
        Long o = clockOffsets.get(dc);
        if (o != null) {
          parts.add(String.format(Locale.ROOT, "%s %+d", dc, o));
          if (Math.abs(o) > window / 4) {
            far.add(dc);
          }
        }
      }
      out.printf(Locale.ROOT, "clock offsets from this host (ms, with one-way delay): %s; "
          + "datagrams outside +/-%d ms are dropped as stale%n", String.join(", ", parts), window);
      if (!far.isEmpty()) {
        out.printf(Locale.ROOT, "WARNING: the clocks of %s are over a quarter of the freshness "
            + "window from this host's: check NTP%n", far);
      }
    }
    if (downDcs.isEmpty()) {
      out.println("every DC answered");
      return 0;
    }
    out.printf(Locale.ROOT, "DCs with no instance answering: %s%n", downDcs);
    return 1;
  }

  /** The per-second rate of counter {@code field} between the two samples of one instance. */
  private static String rate(List<Sample> before, Sample now, String field) {
    for (Sample b : before) {
      if (b.down() == null && b.dc().equals(now.dc()) && b.instance().equals(now.instance())) {
        try {
          long d = Long.parseLong(now.fields().get(field))
              - Long.parseLong(b.fields().get(field));
          double secs = (now.atNanos() - b.atNanos()) / 1e9;
          return d < 0 || secs <= 0 ? "-" : String.format(Locale.ROOT, "%.1f", d / secs);
        } catch (NumberFormatException | NullPointerException e) {
          return "-";
        }
      }
    }
    return "-";
  }

  private static String uptime(String seconds) {
    if (seconds == null) {
      return "-";
    }
    long s = Long.parseLong(seconds);
    return s >= 3600 ? String.format(Locale.ROOT, "%dh%02dm", s / 3600, s % 3600 / 60)
        : String.format(Locale.ROOT, "%dm%02ds", s / 60, s % 60);
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }
}
