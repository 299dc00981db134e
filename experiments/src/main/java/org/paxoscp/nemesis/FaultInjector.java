package org.paxoscp.nemesis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.paxoscp.local.ServiceProcess;
import org.paxoscp.service.ClusterVersionFinalizer;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Role;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.VersionProbe;
import org.paxoscp.version.ClusterVersion;

/**
 * Carries out each fault of the {@link FaultSchedule} on the {@link NemesisCluster} and the
 * {@link NemesisWorkload}, heals it, and, after an outage of a majority or of HBase, watches
 * that commits resume (a liveness violation if none within 60 s). Counts what it injected.
 * Before it empties a DC's store it saves the DC's log to the export, for the verdict.
 */
final class FaultInjector implements FaultSchedule.Injector {
  private static final Duration RESUME_WITHIN = Duration.ofSeconds(60);

  private final NemesisCluster cluster;
  private final NemesisWorkload workload;
  private final RunLog log;
  private final FaultSchedule.Clock clock;
  private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
  private final List<String> liveness = new CopyOnWriteArrayList<>();
  /** Where the logs saved before store losses go ({@link LogExport#saveBeforeLoss}). */
  private final Path export;
  /** Store losses begun, which numbers the logs saved before them. */
  private int storeLosses;
  /** Whether the rolling upgrade ran ({@link Fault#UPGRADE} acts once). */
  private boolean upgraded;
  private final EngineFaults engine;

  FaultInjector(NemesisCluster cluster, NemesisWorkload workload, RunLog log,
      FaultSchedule.Clock clock, Path export) {
    this.cluster = cluster;
    this.workload = workload;
    this.log = log;
    this.clock = clock;
    this.export = export;
    this.engine = new EngineFaults(cluster, log, clock);
    for (Fault f : Fault.values()) {
      injected.put(f, new AtomicInteger());
    }
  }

  @Override
  public void inject(Fault f, long holdMs, SplittableRandom random) {
    List<ServiceProcess> services = cluster.services();
    List<String> dcs = cluster.dcs();
    switch (f) {
      case KILL_RESTART -> {
        ServiceProcess s = services.get(random.nextInt(services.size()));
        long pid = s.pid();
        cluster.kill(s);
        count(f, "kill -9 %s (pid %d); restart in %d ms", s.name(), pid, holdMs);
        clock.sleep(holdMs);
        cluster.restart(s);
      }
      case PAUSE -> {
        ServiceProcess s = services.get(random.nextInt(services.size()));
        s.freeze();
        count(f, "SIGSTOP %s (pid %d) for %d ms", s.name(), s.pid(), holdMs);
        clock.sleep(holdMs);
        s.thaw();
        log.log("SIGCONT %s", s.name());
      }
      case PARTITION -> {
        String dc = dcs.get(random.nextInt(dcs.size()));
        cluster.partition(dc);
        count(f, cluster.namespaces() ? "partition DC %s: its link is down for %d ms"
            : "partition DC %s from the others for %d ms", dc, holdMs);
        clock.sleep(holdMs);
        cluster.healPartitions();
        log.log("partition healed");
      }
      case MAJORITY_DOWN -> {
        List<String> shuffled = new ArrayList<>(dcs);
        Collections.shuffle(shuffled, new Random(random.nextLong()));
        int down = dcs.size() - (dcs.size() / 2 + 1) + 1;
        List<String> victims = shuffled.subList(0, down);
        List<ServiceProcess> killed = new ArrayList<>();
        for (ServiceProcess s : services) {
          if (victims.contains(s.dc())) {
            cluster.kill(s);
            killed.add(s);
          }
        }
        count(f, "kill -9 every service of DCs %s (no majority); restart in %d ms", victims,
            holdMs);
        long atKill = committed();
        clock.sleep(holdMs);
        long duringOutage = committed() - atKill;
        for (ServiceProcess s : killed) {
          cluster.restart(s);
        }
        awaitAvailability(String.format("every service of DCs %s was killed (%d read-write "
            + "commits returned while they were down: decided before, or in flight)", victims,
            duringOutage));
      }
      case NET_BURST -> {
        double loss = 0.05 + random.nextDouble() * 0.25;
        double dup = 0.05 + random.nextDouble() * 0.25;
        long delay = 20 + random.nextLong(180);
        cluster.burst(loss, dup, delay);
        count(f, "network burst for %d ms: loss %.2f, duplication %.2f, delay 0-%d ms", holdMs,
            loss, dup, delay);
        clock.sleep(holdMs);
        cluster.healNetwork();
        log.log("network healthy");
      }
      case REPLAY -> {
        double p = 0.1 + random.nextDouble() * 0.4;
        long before = cluster.replayed();
        cluster.replay(p);
        count(f, "replay for %d ms: with probability %.2f a datagram forwarded brings a copy of "
            + "one forwarded %d s to %d s earlier, to its destination or another DC's service, "
            + "from a fresh socket", holdMs, p, FaultProxy.MIN_AGE_MS / 1000,
            FaultProxy.MAX_AGE_MS / 1000);
        clock.sleep(holdMs);
        cluster.healNetwork();
        log.log("network healthy; %d old datagrams replayed", cluster.replayed() - before);
      }
      case HBASE_RESTART -> {
        String dc = dcs.get(random.nextInt(dcs.size()));
        count(f, "HBase restart under DCs %s (clean stop, then start; their stores are down "
            + "meanwhile)", cluster.dcsSharingHBaseOf(dc));
        cluster.restartHBase(dc, Math.min(holdMs, 2000));
        awaitAvailability("HBase " + cluster.hbaseName(dc) + " restarted");
      }
      case CLIENT_CRASH -> {
        // Up to three tries: a commit may return before the client is closed.
        for (int attempt = 0; attempt < 3; attempt++) {
          long delay = random.nextLong(10 >> attempt);
          Optional<String> what = workload.crashClientMidCommit(random, delay,
              Duration.ofSeconds(15));
          if (what.isPresent()) {
            count(f, "client crash: %s", what.get());
            break;
          }
          log.log("client crash: no commit in flight when the client closed; not counted");
        }
      }
      case STORE_LOSS -> {
        // A DC loses its disks: its tables come back empty (meta first, with the store marker)
        // under its running services, as a real loss does not stop them first; they answer
        // REBUILDING until the DC is rebuilt from its peers while the others serve
        // (docs/architecture.md section 12). Its log is saved first: once rebuilt it holds the log
        // above the position it was copied at only, and a run whose faults destroyed its evidence
        // proves nothing.
        String dc = dcs.get(random.nextInt(dcs.size()));
        String copy = dc + "-" + (++storeLosses);
        long t0 = clock.nanoTime();
        SortedMap<String, Integer> saved;
        try {
          saved = LogExport.saveBeforeLoss(cluster.stores().get(dc), workload.groups(), export,
              copy);
        } catch (RuntimeException e) {
          log.log("store loss of DC %s not injected: its log could not be saved first (%s)", dc,
              e);
          return;
        }
        log.log("DC %s: %d log positions saved before its store is emptied (%s) in %.1f s, to %s",
            dc, saved.values().stream().mapToLong(Integer::longValue).sum(), perGroup(saved),
            (clock.nanoTime() - t0) / 1e9, LogExport.savedFile(export, copy));
        cluster.emptyStore(dc);
        count(f, "DC %s lost its store: tables emptied under its running services; dc rebuild "
            + "--all in %d ms", dc, Math.min(holdMs, 1000));
        clock.sleep(Math.min(holdMs, 1000));
        // As an operator would: run the rebuild again when it fails (a peer slow to list its
        // groups, a restart meanwhile); three runs that all fail are a liveness violation.
        int code = -1;
        for (int run = 0; run < 3 && code != 0; run++) {
          long t1 = clock.nanoTime();
          java.io.StringWriter out = new java.io.StringWriter();
          code = org.paxoscp.cli.DcCommand.Rebuild.rebuildAll(cluster.config(), dc, 8,
              new java.io.PrintWriter(out, true), new java.io.PrintWriter(out, true));
          for (String line : out.toString().strip().split("\n")) {
            log.log("%s", line);
          }
          log.log("dc rebuild of DC %s: exit %d after %.1f s", dc, code,
              (clock.nanoTime() - t1) / 1e9);
        }
        if (code != 0) {
          liveness.add("store_loss: DC " + dc + " was not rebuilt (dc rebuild exit " + code
              + ")");
        }
      }
      case UPGRADE -> upgrade(f);
      case REGION_MOVE, REGION_SPLIT, RS_CRASH, BALANCER -> engine(f, holdMs, random);
      default -> throw new IllegalStateException(f.toString());
    }
  }

  /**
   * The rolling upgrade (docs/upgrading.md), once per run: every service, one at a time, is
   * killed and started again as this build (its file no longer holds it to the earlier build's
   * cluster version) while the workload runs; then {@code cluster-version finalize} raises the
   * cluster to the newest version. A later draw of the fault finds nothing to upgrade.
   */
  private void upgrade(Fault f) {
    if (upgraded) {
      log.log("upgrade: every service runs this build and the cluster is finalized already");
      return;
    }
    upgraded = true;
    count(f, "rolling upgrade from cluster version %d: every service restarted as this build, "
        + "one at a time, then finalized", NemesisCluster.EARLIER_VERSION);
    for (ServiceProcess s : cluster.services()) {
      cluster.upgradeConfig(s);
      cluster.kill(s);
      cluster.restart(s);
      awaitAvailability("service " + s.name() + " was upgraded");
    }
    // As an operator would: run finalize again when it stops short (a restarted service slow to
    // answer); three runs that all stop short are a liveness violation.
    ClusterVersionFinalizer.Result r = null;
    for (int run = 0; run < 3 && (r == null || !r.complete()); run++) {
      r = finalizeCluster();
      if (r.complete()) {
        log.log("upgrade: cluster version %d to %d", r.from(), r.to());
      } else {
        log.log("upgrade: finalization stopped at cluster version %d: %s", r.to(),
            String.join("; ", r.laggards()));
      }
    }
    if (!r.complete()) {
      liveness.add("upgrade: finalization stopped at cluster version " + r.to() + ": "
          + r.laggards());
    }
  }

  /** A fault of the HBase engine ({@link EngineFaults}); counted once carried out. */
  private void engine(Fault f, long holdMs, SplittableRandom random) {
    log.log("FAULT %-14s starting", f.cliName());
    String what;
    try {
      what = switch (f) {
        case REGION_MOVE -> engine.regionMove(holdMs, random);
        case REGION_SPLIT -> engine.regionSplit(holdMs, random);
        case RS_CRASH -> engine.regionServerCrash(holdMs, random);
        case BALANCER -> engine.balancer(holdMs, random);
        default -> throw new IllegalStateException(f.toString());
      };
    } catch (RuntimeException e) {
      // The master refused or did not answer before the fault was carried out (a region in
      // transition, a split too soon after the last): not counted, as an operator would try
      // again later. Failures after it was carried out are logged by EngineFaults and counted.
      log.log("%s not injected: the master refused or did not answer: %s", f.cliName(),
          e.getMessage());
      return;
    }
    if (what == null) {
      log.log("%s not injected: nothing to act on", f.cliName());
      return;
    }
    count(f, "%s", what);
    if (f == Fault.RS_CRASH) {
      awaitAvailability("a region server was killed and started again");
    }
  }

  /** The engine faults' per-fault report (empty without engine faults). */
  List<String> engineReport(List<NemesisWorkload.Event> events) {
    return engine.report(events);
  }

  /** One run of {@code paxoscp cluster-version finalize}, its output in the run's log. */
  private ClusterVersionFinalizer.Result finalizeCluster() {
    ClusterConfig config = cluster.config();
    java.io.StringWriter out = new java.io.StringWriter();
    try (UdpTransport operator = UdpTransport.builder(config, config.dcNames().get(0))
        .endpoints(org.paxoscp.transport.Endpoints.fromConfig(config)).role(Role.OPERATOR)
        .build()) {
      VersionProbe.followAsTool(operator, config.versionRange(), config.dcNames(),
          config.requestTimeout());
      ClusterVersionFinalizer.Result r = new ClusterVersionFinalizer(operator, config.dcNames(),
          org.paxoscp.transport.Endpoints.fromConfig(config), config.requestTimeout(),
          Duration.ofSeconds(5), Duration.ofSeconds(60), new java.io.PrintWriter(out, true))
          .finalizeTo(ClusterVersion.LATEST);
      for (String line : out.toString().strip().split("\n")) {
        log.log("%s", line);
      }
      return r;
    }
  }

  /** {@code group count, ...}: the positions saved of each group. */
  private static String perGroup(SortedMap<String, Integer> saved) {
    StringBuilder b = new StringBuilder();
    saved.forEach((g, n) -> b.append(b.isEmpty() ? "" : ", ").append(g).append(' ').append(n));
    return b.toString();
  }

  private long committed() {
    return workload.readWriteCommits();
  }

  /** Waits until a read-write transaction commits again; a liveness violation after 60 s. */
  private void awaitAvailability(String after) {
    long before = committed();
    long t0 = clock.nanoTime();
    while (committed() == before) {
      if (clock.nanoTime() - t0 > RESUME_WITHIN.toNanos()) {
        liveness.add("liveness: no commit within 60 s after " + after + " and the restart");
        log.log("NO read-write commit within 60 s after the restart");
        return;
      }
      clock.sleep(50);
    }
    log.log("availability regained: a read-write commit %.1f s after the restart; %s",
        (clock.nanoTime() - t0) / 1e9, after);
  }

  private void count(Fault f, String fmt, Object... args) {
    injected.get(f).incrementAndGet();
    log.log("FAULT %-14s " + fmt, RunLog.prepend(f.cliName(), args));
  }

  /** How many faults of each kind were injected. */
  Map<Fault, Integer> counts() {
    Map<Fault, Integer> m = new EnumMap<>(Fault.class);
    injected.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  /** The liveness violations seen: commits that did not resume after a fault healed. */
  List<String> liveness() {
    return List.copyOf(liveness);
  }
}
