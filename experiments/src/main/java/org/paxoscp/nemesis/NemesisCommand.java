package org.paxoscp.nemesis;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import org.paxoscp.cli.SharedOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp nemesis}: a workload on a local cluster of real processes (a standalone HBase
 * server, one Transaction Service process per DC and two for the first DC, UDP on loopback) while
 * a seeded schedule of faults hits it; at the end everything is healed, the DCs catch up, the
 * histories and logs are exported and checked, and a summary is printed ({@link NemesisRun}).
 *
 * <p>Exit codes: 0 no violation; 1 a violation (the summary lists it, with the seed); 2 usage;
 * 3 the run could not be carried out (a process did not start, a DC did not catch up).
 */
@Command(name = "nemesis", mixinStandardHelpOptions = true,
    description = "Run a workload on real processes (HBase, one service per DC, UDP) under a "
        + "seeded schedule of faults, then heal, export and check the run.",
    footer = "%nFaults: kill -9 + restart of a service, SIGSTOP/SIGCONT, a DC partitioned, two "
        + "DCs down at once, loss/duplication/delay bursts, old datagrams replayed (also to "
        + "other DCs), an HBase restart, client crashes mid-commit, a DC's store lost; with "
        + "--regionservers 2 or more also the engine's own: a region moved or split, a region "
        + "server killed, the balancer run. Network "
        + "faults are applied by a UDP proxy in front of every service process. The summary "
        + "counts the datagrams the services dropped, by reason. Exit 1 on a violation."
        + "%nExplained in docs/guarantees.md.")
public final class NemesisCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Option(names = "--quick", description = "A short run (60 s of faults, fewer groups).")
  boolean quick;

  @Option(names = "--duration", paramLabel = "S",
      description = "Seconds of workload under faults (default 180, or 60 with --quick); a "
          + "run goes on until every selected kind has been injected once, even if longer.")
  Long durationSeconds;

  @Option(names = "--seed", description = "Seed of the fault schedule and the workload "
      + "(default: random, printed).")
  Long seed;

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,O");

  @Option(names = "--export", paramLabel = "DIR",
      description = "Where to export histories and logs (default: <dir>/export-<seed>); must not "
          + "hold a run already. Check it again later with `paxoscp check DIR`.")
  Path export;

  @Option(names = "--dir", defaultValue = "./paxoscp-data/nemesis",
      description = "Work directory: HBase data, configurations, process logs (default: "
          + "${DEFAULT-VALUE}).")
  Path dir;

  @Mixin
  SharedOptions.RequestTimeout requestTimeout = new SharedOptions.RequestTimeout(1000);

  @Option(names = "--faults", split = ",", paramLabel = "KIND",
      description = "Only these kinds: kill_restart, pause, partition, majority_down, "
          + "net_burst, replay, hbase_restart, client_crash, store_loss, upgrade, and the "
          + "engine's region_move, region_split, rs_crash, balancer (default: all, the "
          + "engine's only with --regionservers 2 or more; with upgrade the services start held "
          + "one cluster version below this build's and are upgraded once, mid-run).")
  List<String> faults;

  @Option(names = "--regionservers", defaultValue = "1", paramLabel = "N",
      description = "Region servers of each HBase (default: ${DEFAULT-VALUE}, in the master's "
          + "process); with 2 or more each is a process of its own and the engine faults "
          + "apply. Not with --netns.")
  int regionServers;

  @Option(names = "--hbase", defaultValue = "shared", paramLabel = "shared|per-dc",
      description = "One HBase server for every DC, each DC in its own namespace (shared, the "
          + "default), or one server per DC (per-dc: an HBase restart is under one DC only).")
  String hbase;

  @Option(names = "--netns", description = "Run each DC's services in a network namespace of "
      + "their own, linked to the nemesis by veth links and a bridge; a partition takes the DC's "
      + "link down (needs root and `ip netns`).")
  boolean netnsMode;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!hbase.equals("shared") && !hbase.equals("per-dc")) {
      err.println("nemesis: --hbase must be shared or per-dc, was " + hbase);
      return 2;
    }
    List<String> dcs;
    Duration timeout;
    try {
      dcs = dcList.dcs();
      timeout = requestTimeout.timeout();
    } catch (IllegalArgumentException e) {
      err.println("nemesis: " + e.getMessage());
      return 2;
    }
    if (dcs.size() < 3 || (durationSeconds != null && durationSeconds <= 0)) {
      err.println("nemesis: needs at least 3 DCs (--dcs) and a positive --duration");
      return 2;
    }
    long s = seed != null ? seed : new java.security.SecureRandom().nextLong() & Long.MAX_VALUE;
    long secs = durationSeconds != null ? durationSeconds : quick ? 60 : 180;
    Path exportDir = export != null ? export : dir.resolve("export-" + s);
    if (regionServers < 1 || regionServers > org.paxoscp.store.hbase.StandaloneHBase
        .MAX_REGION_SERVERS || (regionServers > 1 && netnsMode)) {
      err.println("nemesis: --regionservers must be in 1.."
          + org.paxoscp.store.hbase.StandaloneHBase.MAX_REGION_SERVERS
          + ", and 1 with --netns");
      return 2;
    }
    Set<Fault> kinds = EnumSet.allOf(Fault.class);
    if (regionServers < 2) {
      kinds.removeIf(Fault::engine);
    }
    if (faults != null && !faults.isEmpty()) {
      kinds = EnumSet.noneOf(Fault.class);
      for (String f : faults) {
        try {
          kinds.add(Fault.valueOf(f.trim().toUpperCase(java.util.Locale.ROOT)));
        } catch (IllegalArgumentException e) {
          err.println("nemesis: --faults: unknown kind " + f + "; known: "
              + java.util.Arrays.toString(Fault.values()).toLowerCase(
                  java.util.Locale.ROOT));
          return 2;
        }
      }
      if (regionServers < 2 && kinds.stream().anyMatch(Fault::engine)) {
        err.println("nemesis: --faults: region_move, region_split, rs_crash and balancer need "
            + "--regionservers 2 or more");
        return 2;
      }
    }
    NemesisRun.Options o = new NemesisRun.Options(dcs, Duration.ofSeconds(secs), s,
        dir.resolve("run-" + s), exportDir, timeout, kinds,
        quick ? 2 : 3, quick ? 2 : 3, hbase.equals("per-dc"),
        netnsMode, regionServers);
    try (NemesisRun run = new NemesisRun(o, out)) {
      NemesisRun.Report r = run.run();
      if (!r.ok()) {
        err.printf("nemesis: %d violation(s); replay with --seed %d%n", r.violations().size(), s);
        return 1;
      }
      return 0;
    } catch (IllegalArgumentException e) {
      err.println("nemesis: " + e.getMessage());
      return 2;
    } catch (Exception e) {
      err.println("nemesis: the run failed (seed " + s + "): " + e);
      e.printStackTrace(err);
      return 3;
    }
  }
}
