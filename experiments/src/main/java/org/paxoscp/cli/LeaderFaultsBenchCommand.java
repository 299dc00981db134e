package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.FaultMix;
import org.paxoscp.sim.SimConfig;
import org.paxoscp.sim.SimResult;
import org.paxoscp.sim.Simulator;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code paxoscp bench-leader-faults}: leader combination beside Paxos-CP in the simulator, under
 * every fault mix, on 3 and 5 DCs, with every way of placing batchers; one row per cell with the
 * ratios the targets are stated in (docs/leader-combination.md, "Under compound faults").
 */
@Command(
    name = "bench-leader-faults",
    mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/leader-combination.md.",
    description = {
        "Runs leader combination and Paxos-CP in the deterministic simulator under each fault "
            + "mix, DC set and batcher placement, the same seeds for both, and prints per cell: "
            + "commits, p50 and p99 commit latency, the share of positions without a "
            + "transaction (no-ops and withdrawals), the checker's verdict, and whether leader "
            + "combination met its targets (commits >= Paxos-CP's - 2%%, p50 <= Paxos-CP's, "
            + "p99 <= 1.2x Paxos-CP's, no-ops <= 3%%).",
        "Exits 1 if the checker found a violation in any run."})
public final class LeaderFaultsBenchCommand implements Callable<Integer> {
  /** The placements of batchers: the latency model's table, none, measured round trips. */
  enum Placement { MODEL, NONE, MEASURED }

  @Option(names = "--seeds", defaultValue = "20",
      description = "Runs per protocol and cell. Default: ${DEFAULT-VALUE}.")
  int seeds;

  @Option(names = "--seed", defaultValue = "12700000",
      description = "First seed. Default: ${DEFAULT-VALUE}.")
  long seed;

  @Option(names = "--mixes", split = ",", defaultValue = "CLEAN,LOSSY,PARTITIONS,CRASHES,OUTAGES,"
      + "RESTARTS,EVERYTHING,TARGETED,STORE,COMPOUND",
      description = "Fault mixes (docs/simulator.md). Default: all.")
  List<FaultMix> mixes;

  @Option(names = "--dc-sets", split = ";", defaultValue = "V1,V2,O;V1,V2,V3,O,C",
      description = "DC sets, separated by ';'. Default: ${DEFAULT-VALUE}.")
  List<String> dcSets;

  @Option(names = "--placements", split = ",", defaultValue = "MODEL,NONE,MEASURED",
      description = "Batcher placements: MODEL (the latency model's round trips), NONE (no "
          + "costs: the next position's leader batches), MEASURED (round trips measured by the "
          + "services). Default: all.")
  List<Placement> placements;

  @Option(names = "--clients", defaultValue = "8", description = "Default: ${DEFAULT-VALUE}.")
  int clients;

  @Option(names = "--attributes", defaultValue = "20", description = "Default: ${DEFAULT-VALUE}.")
  int attributes;

  @Option(names = "--ops", defaultValue = "6", description = "Default: ${DEFAULT-VALUE}.")
  int ops;

  @Option(names = "--txns", defaultValue = "200", description = "Default: ${DEFAULT-VALUE}.")
  int txns;

  @Option(names = "--rate", defaultValue = "2.0", description = "Default: ${DEFAULT-VALUE}.")
  double rate;

  @Option(names = "--timeout-ms", defaultValue = "2000",
      description = "Phase timeout. Default: ${DEFAULT-VALUE}.")
  long timeoutMillis;

  @Option(names = "--out", description = "Also write the rows as CSV to this file.")
  Path out;

  /** What one protocol did in one cell over all its seeds. */
  private static final class Cell {
    long committed;
    long positions;
    long noops;
    long withdrawals;
    int runs;
    int violations;
    final Histogram latency = new Histogram(3);

    void add(SimResult r) {
      runs++;
      committed += r.committed();
      positions += r.positions();
      noops += r.noopPositions();
      withdrawals += r.withdrawalPositions();
      latency.add(r.commitLatencyMicros());
      violations += r.safe() ? 0 : 1;
    }

    double committedPerRun() {
      return runs == 0 ? 0 : (double) committed / runs;
    }

    double ms(double percentile) {
      return latency.getTotalCount() == 0 ? Double.NaN
          : latency.getValueAtPercentile(percentile) / 1000.0;
    }

    double noopShare() {
      return positions == 0 ? 0 : 100.0 * noops / positions;
    }
  }

  @Override
  public Integer call() throws IOException {
    SimulateCommand.quietServiceLogs();
    PrintStream o = System.out;
    o.printf(Locale.ROOT, "bench-leader-faults: seeds %d..%d per cell, %d clients, %d attributes, "
        + "%d ops, %d txns, rate %.1f/s, phase timeout %d ms%n", seed, seed + seeds - 1, clients,
        attributes, ops, txns, rate, timeoutMillis);
    String header = String.format(Locale.ROOT, "%-10s %-14s %-8s %7s %7s %7s %8s %8s %6s %9s %9s "
        + "%6s %7s %7s %5s  %s", "mix", "dcs", "placing", "cp", "leader", "diff", "cp p50",
        "ld p50", "ratio", "cp p99", "ld p99", "ratio", "cp noop", "ld noop", "wd", "targets");
    o.println(header);
    List<String> csv = new ArrayList<>();
    csv.add("mix,dcs,placement,cp_committed,leader_committed,diff_pct,cp_p50_ms,leader_p50_ms,"
        + "p50_ratio,cp_p99_ms,leader_p99_ms,p99_ratio,cp_noop_pct,leader_noop_pct,"
        + "leader_withdrawals,commits_met,p50_met,p99_met,noop_met,checker");
    int violations = 0;
    int cells = 0;
    int allMet = 0;
    for (FaultMix mix : mixes) {
      for (String set : dcSets) {
        List<String> dcs = List.of(set.split(","));
        Cell cp = run(Protocol.CP, mix, dcs, Placement.MODEL);
        violations += cp.violations;
        for (Placement placement : placements) {
          Cell ld = run(Protocol.LEADER, mix, dcs, placement);
          violations += ld.violations;
          double diff = cp.committedPerRun() == 0 ? 0
              : 100.0 * (ld.committedPerRun() - cp.committedPerRun()) / cp.committedPerRun();
          double p50 = ld.ms(50) / cp.ms(50);
          double p99 = ld.ms(99) / cp.ms(99);
          boolean commitsMet = diff >= -2.0;
          boolean p50Met = !(p50 > 1.0);
          boolean p99Met = !(p99 > 1.2);
          boolean noopMet = ld.noopShare() <= 3.0;
          boolean checker = cp.violations == 0 && ld.violations == 0;
          cells++;
          allMet += commitsMet && p50Met && p99Met && noopMet ? 1 : 0;
          String targets = (commitsMet ? "" : "commits ") + (p50Met ? "" : "p50 ")
              + (p99Met ? "" : "p99 ") + (noopMet ? "" : "noops ");
          o.printf(Locale.ROOT, "%-10s %-14s %-8s %7.1f %7.1f %+6.1f%% %8.1f %8.1f %6.2f %9.1f "
              + "%9.1f %6.2f %6.1f%% %6.1f%% %5d  %s%s%n", mix.name().toLowerCase(Locale.ROOT),
              set, placement.name().toLowerCase(Locale.ROOT), cp.committedPerRun(),
              ld.committedPerRun(), diff, cp.ms(50), ld.ms(50), p50, cp.ms(99), ld.ms(99), p99,
              cp.noopShare(), ld.noopShare(), ld.withdrawals,
              targets.isEmpty() ? "met" : "missed: " + targets.trim(),
              checker ? "" : "  CHECKER VIOLATION");
          csv.add(String.join(",", mix.name().toLowerCase(Locale.ROOT), set.replace(',', ' '),
              placement.name().toLowerCase(Locale.ROOT), f(cp.committedPerRun()),
              f(ld.committedPerRun()), f(diff), f(cp.ms(50)), f(ld.ms(50)), f(p50), f(cp.ms(99)),
              f(ld.ms(99)), f(p99), f(cp.noopShare()), f(ld.noopShare()),
              Long.toString(ld.withdrawals), Boolean.toString(commitsMet),
              Boolean.toString(p50Met), Boolean.toString(p99Met), Boolean.toString(noopMet),
              checker ? "ok" : "violation"));
        }
      }
    }
    o.printf(Locale.ROOT, "%d of %d cells met every target; checker: %s%n", allMet, cells,
        violations == 0 ? "OK in every run" : violations + " runs with a violation");
    if (out != null) {
      if (out.getParent() != null) {
        Files.createDirectories(out.getParent());
      }
      Files.write(out, csv);
      o.println("rows written to " + out);
    }
    return violations == 0 ? 0 : 1;
  }

  private Cell run(Protocol protocol, FaultMix mix, List<String> dcs, Placement placement) {
    Cell cell = new Cell();
    long started = System.nanoTime();
    for (int i = 0; i < seeds; i++) {
      ProposerConfig pc = ProposerConfig.defaults(protocol, dcs)
          .withPhaseTimeoutMicros(timeoutMillis * 1000);
      SimConfig cfg = SimConfig.paperDefaults(protocol, dcs, seed + i)
          .withLatency(WanOptions.wan(dcs, List.of(), false).latency())
          .withProposer(pc)
          .withWorkload(clients, attributes, ops, txns)
          .withTiming(rate, 20_000)
          .withFaults(mix.faults());
      Simulator sim = new Simulator(cfg);
      if (protocol == Protocol.LEADER && placement == Placement.NONE) {
        sim.withoutLeaderCosts();
      } else if (protocol == Protocol.LEADER && placement == Placement.MEASURED) {
        sim.withMeasuredRtts();
      }
      cell.add(sim.run());
    }
    System.err.printf(Locale.ROOT, "  %s %s %s %s: %d runs, %.0f s%n",
        mix.name().toLowerCase(Locale.ROOT), String.join(",", dcs),
        protocol.name().toLowerCase(Locale.ROOT), protocol == Protocol.LEADER
            ? placement.name().toLowerCase(Locale.ROOT) : "", seeds,
        (System.nanoTime() - started) / 1e9);
    return cell;
  }

  private static String f(double v) {
    return String.format(Locale.ROOT, "%.2f", v);
  }
}
