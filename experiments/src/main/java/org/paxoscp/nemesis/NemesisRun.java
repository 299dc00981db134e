package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;

/**
 * One nemesis run on real processes. The run's jobs, each a class of its own:
 *
 * <ol>
 *   <li>{@link NemesisCluster} starts and controls the processes: HBase, one Transaction Service
 *       per DC (two for the first) behind {@link FaultProxy}s, network namespaces if asked;
 *   <li>{@link NemesisWorkload} runs the clients in this process;
 *   <li>{@link FaultSchedule} decides, from the seed, which fault comes when;
 *   <li>{@link FaultInjector} carries each one out, heals it and watches commits resume (before
 *       it empties a DC's store, it saves the DC's log to the export);
 *   <li>this class heals everything at the end and checks liveness, then {@link LogExport}
 *       catches every DC up and exports histories and logs;
 *   <li>{@link NemesisVerdict} checks the export, with the logs saved before store losses, and
 *       prints the summary.
 * </ol>
 *
 * See {@link NemesisCommand} for the command line. {@link #close()} stops every process and
 * thread the run started; it is idempotent and runs from a shutdown hook too (Ctrl-C).
 */
public final class NemesisRun implements AutoCloseable {

  /**
   * The run's settings.
   *
   * @param dcs DC names (at least 3 for the majority-down fault to make sense)
   * @param duration how long the workload runs under faults, at least: every kind of {@code
   *     faults} is injected once even if that takes longer
   * @param seed seeds the fault schedule, the workload and the proxies
   * @param dir work directory (HBase data, configurations, process logs)
   * @param export where histories and logs are exported
   * @param requestTimeout the protocol's request timeout
   * @param faults the kinds to inject
   * @param attrGroups how many attribute-workload groups
   * @param bankGroups how many closed-economy groups
   * @param hbasePerDc one HBase server per DC (an HBase restart is then under one DC) rather
   *     than one shared by every DC, each in its own namespace
   * @param netns run each DC's services in a network namespace of their own ({@link
   *     NetNamespaces}); a partition is then a link taken down
   * @param regionServers region servers of each HBase (1: in the master's process; more: each
   *     a process of its own, which the engine faults need)
   */
  public record Options(List<String> dcs, Duration duration, long seed, Path dir, Path export,
      Duration requestTimeout, Set<Fault> faults, int attrGroups, int bankGroups,
      boolean hbasePerDc, boolean netns, int regionServers) {
    public Options {
      dcs = List.copyOf(dcs);
      faults = Set.copyOf(faults);
    }
  }

  /**
   * What a run found.
   *
   * @param positions log positions exported, summed over the groups
   * @param fromSavedLogs log positions missing from every DC's final log and judged from a log
   *     saved before a store loss ({@link LogExport#saveBeforeLoss})
   * @param droppedByReason datagrams the services dropped before any handler, by reason
   *     (stale, replay, misdirected, bad_mac, ...), over the run: a lower bound ({@link
   *     DropCounters})
   * @param dropsUnread service processes whose drop counters could not be read, and why
   */
  public record Report(Map<Fault, Integer> faults, Map<NemesisWorkload.Outcome, Long> outcomes,
      Map<String, Long> byShape, Map<String, Integer> historyOutcomes, List<String> violations,
      long positions, long fromSavedLogs, SortedMap<String, Long> droppedByReason,
      List<String> dropsUnread) {
    public boolean ok() {
      return violations.isEmpty();
    }
  }

  /** Read-write commits that must follow the final heal, and how soon. */
  private static final int COMMITS_AFTER_HEALING = 20;
  private static final Duration RESUME_WITHIN = Duration.ofSeconds(60);

  private final Options options;
  private final RunLog log;
  private final FaultSchedule.Clock clock = FaultSchedule.Clock.system();
  private NemesisCluster cluster;
  private NemesisWorkload workload;
  private boolean closed;
  private final Thread hook = new Thread(this::close, "nemesis-shutdown");

  public NemesisRun(Options options, PrintWriter out) {
    this.options = options;
    this.log = new RunLog(out);
  }

  /** Runs everything; returns the report (also printed). */
  public Report run() throws IOException {
    Runtime.getRuntime().addShutdownHook(hook);
    Path dir = options.dir().toAbsolutePath().normalize();
    Files.createDirectories(dir);
    Path export = options.export().toAbsolutePath().normalize();
    if (Files.exists(export.resolve("wal")) || Files.exists(export.resolve("history"))) {
      throw new IllegalArgumentException("export directory " + export
          + " already holds a run; choose an empty one");
    }
    log.log("seed %d, DCs %s, %d s of faults, work dir %s, export %s", options.seed(),
        options.dcs(), options.duration().toSeconds(), dir, export);

    synchronized (this) {
      if (closed) {
        throw new IllegalStateException("the run was stopped");
      }
      cluster = new NemesisCluster(options, dir, log);
    }
    cluster.start();

    workload = new NemesisWorkload(cluster.config(), export.resolve("history"),
        options.attrGroups(), options.bankGroups(), options.seed());
    workload.initialise(Duration.ofSeconds(60));
    log.log("workload: %d attribute and %d closed-economy groups, %d across groups, one client "
        + "per DC and protocol", options.attrGroups(), options.bankGroups(),
        workload.xgGroups().size());
    workload.start();

    FaultInjector injector = new FaultInjector(cluster, workload, log, clock, export);
    new FaultSchedule(options.faults(), options.seed()).run(options.duration(), injector, clock);

    log.log("healing: network, frozen and dead services, HBase");
    cluster.healAll();
    List<String> liveness = new ArrayList<>(injector.liveness());
    awaitCommitsAfterHealing().ifPresent(liveness::add);
    clock.sleep(2000);
    workload.stop();
    log.log("workload stopped: %s", workload.outcomes());
    for (String line : injector.engineReport(workload.events())) {
      log.log("%s", line);
    }
    if (!workload.xgGroups().isEmpty()) {
      // Resolves what crashed clients left prepared, so that every group's data is final.
      Optional<String> unsettled = workload.settleAcrossGroups(options.dcs().get(0),
          Duration.ofSeconds(60));
      unsettled.ifPresent(liveness::add);
      if (unsettled.isEmpty()) {
        log.log("economy across groups %s settled: an audit across them saw the sum %d",
            workload.xgGroups(), workload.xgTotal());
      }
    }

    long positions = LogExport.export(cluster, workload.groups(), export,
        options.requestTimeout());
    log.log("exported histories and logs to %s", export);
    NemesisVerdict.Result verdict = new NemesisVerdict(cluster, workload,
        options.requestTimeout(), log).check(export);
    List<String> violations = new ArrayList<>(verdict.violations());
    violations.addAll(workload.violations());
    violations.addAll(liveness);
    DropCounters.Totals dropped = cluster.dropped();
    Report report = new Report(injector.counts(), workload.outcomes(), workload.byShape(),
        NemesisVerdict.historyOutcomes(export), violations, positions, verdict.fromSavedLogs(),
        dropped.byReason(), dropped.unread());
    NemesisVerdict.printSummary(report, options.seed(), log.out());
    return report;
  }

  /** Liveness: once everything is healed, commits must resume; a violation if they do not. */
  private Optional<String> awaitCommitsAfterHealing() {
    long before = workload.readWriteCommits();
    long healed = clock.nanoTime();
    while (workload.readWriteCommits() < before + COMMITS_AFTER_HEALING
        && clock.nanoTime() - healed < RESUME_WITHIN.toNanos()) {
      clock.sleep(200);
    }
    long resumed = workload.readWriteCommits() - before;
    if (resumed < COMMITS_AFTER_HEALING) {
      return Optional.of(String.format("liveness: only %d read-write commits in the 60 s after "
          + "healing", resumed));
    }
    log.log("commits resumed after healing: %d read-write commits within %.1f s",
        COMMITS_AFTER_HEALING, (clock.nanoTime() - healed) / 1e9);
    return Optional.empty();
  }

  /** Stops everything the run started: clients, services, proxies, stores, HBase. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // already shutting down: we run in the hook
    }
    if (workload != null) {
      try {
        workload.stop();
      } catch (RuntimeException e) {
        log.out().println("nemesis: stopping the workload: " + e);
      }
    }
    if (cluster != null) {
      cluster.close();
    }
    log.out().flush();
  }
}
