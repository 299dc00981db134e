package org.paxoscp.cli;

import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import org.HdrHistogram.Histogram;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.sim.SimConfig;
import org.paxoscp.sim.SimResult;
import org.paxoscp.sim.Simulator;
import org.paxoscp.transport.Admission;
import org.paxoscp.transport.Latency;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code paxoscp simulate}: deterministic simulation runs judged by the checker. */
@Command(
    name = "simulate",
    mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/simulator.md.",
    description = {
        "Runs the protocol in the deterministic simulator (virtual time, seeded faults) and "
            + "judges every run with the one-copy-serializability checker.",
        "Prints, per protocol, commits (total and by promotion round), aborts, unknowns, "
            + "latency p50/p99 and the checker's verdict; exits 1 on any violation and prints "
            + "the command that replays it."})
public final class SimulateCommand implements Callable<Integer> {
  private static final int MAX_ROUND_COLUMNS = 6;

  @Spec
  CommandSpec spec;

  @Option(names = "--protocol", split = ",", defaultValue = "basic,cp,leader",
      description = "basic, cp, leader (leader combination), both (basic,cp) or all; "
          + "comma-separated. Default: ${DEFAULT-VALUE}.")
  List<String> protocols;

  @Option(names = "--seeds", defaultValue = "1", description = "Runs per protocol, with seeds "
      + "--seed, --seed+1, ... Default: ${DEFAULT-VALUE}.")
  int seeds;

  @Option(names = "--seed", defaultValue = "1", description = "First seed. Default: ${DEFAULT-VALUE}.")
  long seed;

  @Mixin
  SharedOptions.Dcs dcList = new SharedOptions.Dcs("V1,V2,V3");

  @Mixin
  SharedOptions.Rtt rtt = new SharedOptions.Rtt();

  private List<String> dcs;

  @Option(names = "--clients", defaultValue = "4", description = "Default: ${DEFAULT-VALUE}.")
  int clients;

  @Option(names = "--attributes", defaultValue = "100",
      description = "Items in the entity group. Default: ${DEFAULT-VALUE}.")
  int attributes;

  @Option(names = "--ops", defaultValue = "10",
      description = "Operations per transaction. Default: ${DEFAULT-VALUE}.")
  int ops;

  @Option(names = "--txns", defaultValue = "500",
      description = "Transactions per run, over all clients. Default: ${DEFAULT-VALUE}.")
  int txns;

  @Option(names = "--rate", defaultValue = "1.0",
      description = "Target transactions per second per client. Default: ${DEFAULT-VALUE}.")
  double rate;

  @Option(names = "--op-ms", defaultValue = "20",
      description = "Virtual time per operation (sets the read-to-commit window). "
          + "Default: ${DEFAULT-VALUE}.")
  double opMillis;

  @Option(names = "--read-fraction", defaultValue = "0.5", description = "Default: ${DEFAULT-VALUE}.")
  double readFraction;

  @Option(names = "--zipfian", description = "Zipfian key choice instead of uniform.")
  boolean zipfian;

  @Option(names = "--scan-share", defaultValue = "0", description = "Share of the read "
      + "operations that are range reads over the attribute keys (docs/simulator.md, \"Range "
      + "reads in the simulated workload\"; the test suites use 0.1). Default: ${DEFAULT-VALUE}.")
  double scanShare;

  @Option(names = "--update-share", defaultValue = "0", description = "Share of the write "
      + "operations that are counter adds and counting-set updates on a few keys of their own "
      + "(some of them puts and deletes of those keys), and of the read operations that read "
      + "one of those keys (docs/simulator.md, \"Counters and counting sets in the simulated "
      + "workload\"; the test suites use 0.1). Default: ${DEFAULT-VALUE}.")
  double updateShare;

  @Option(names = "--max-promotions", defaultValue = "-1",
      description = "Cap on promotions per transaction, -1 for none. Default: ${DEFAULT-VALUE}.")
  int maxPromotions;

  @Option(names = "--timeout-ms", defaultValue = "2000",
      description = "Phase timeout (the paper used 2 s). Default: ${DEFAULT-VALUE}.")
  double timeoutMillis;

  @Option(names = "--loss", defaultValue = "0", description = "Message loss probability.")
  double loss;

  @Option(names = "--dup", defaultValue = "0", description = "Message duplication probability.")
  double dup;

  @Option(names = "--reorder", defaultValue = "0",
      description = "Probability of an extra delay of up to one max RTT (reordering).")
  double reorder;

  @Option(names = "--partitions", description = "Isolate a random DC now and then.")
  boolean partitions;

  @Option(names = "--crashes", description = "Crash clients in mid-commit now and then.")
  boolean crashes;

  @Option(names = "--outages", description = "Take a random DC down now and then.")
  boolean outages;

  @Option(names = "--restarts", description = "Kill a random service instance now and then and "
      + "start a fresh one over the same store.")
  boolean restarts;

  @Option(names = "--two-instances", description = "Serve one DC with two service instances at "
      + "once.")
  boolean twoInstances;

  @Option(names = "--targeted", description = "Faults aimed at one message type per run (picked "
      + "by its seed): half of its messages lost, the rest delayed by up to one maximum RTT.")
  boolean targeted;

  @Option(names = "--target", description = "With --targeted, aim at this message type instead: "
      + "one of Prepare, PrepareReply, Accept, AcceptReply, Apply, GrantRequest, GrantReply, "
      + "Learn, LearnReply, SubmitRequest, SubmitReply, BeginReply, ReadReply.")
  String target;

  @Option(names = "--store-faults", defaultValue = "0", description = "Probability that a "
      + "service's store operation fails: half before it does anything, half after a write was "
      + "done (an ambiguous write).")
  double storeFaults;

  @Option(names = "--replay", defaultValue = "0", paramLabel = "P", description = "Probability "
      + "that a delivered message is sent once more, --replay-min-ms to --replay-max-ms later, "
      + "to the same DC or (half of them) to another DC's service.")
  double replay;

  @Option(names = "--replay-min-ms", paramLabel = "MS", description = "With --replay, the "
      + "earliest a copy comes after its original. Default: 2000.")
  Long replayMinMs;

  @Option(names = "--replay-max-ms", paramLabel = "MS", description = "With --replay, the "
      + "latest a copy comes after its original. Default: 120000.")
  Long replayMaxMs;

  @Option(names = "--no-leader-costs", description = "Leader combination as in production "
      + "without WAN emulation and with round-trip probes off: services and clients know no "
      + "leading costs, so services pass entries on to the next position's leader as they know "
      + "it and several DCs may batch a group.")
  boolean noLeaderCosts;

  @Option(names = "--measured-rtts", description = "Leader combination as in production "
      + "without WAN emulation with probes on: services and clients are given no leading "
      + "costs; the services probe each other every second and place batchers by the round "
      + "trips they measure and agree on.")
  boolean measuredRtts;

  @Option(names = "--partition-dc", paramLabel = "DC", description = "With --partitions, "
      + "every partition isolates this DC (default: a random DC each time).")
  String partitionDc;

  @Option(names = "--client-dcs", split = ",", paramLabel = "DC", description = "Home the "
      + "clients at these DCs only, in turn (default: every DC in turn).")
  List<String> clientDcs;

  @Option(names = "--force-eviction", description = "Every service instance empties its "
      + "per-group caches after each request it handles (a service must stay correct whenever "
      + "its caches are evicted).")
  boolean forceEviction;

  @Option(names = "--service-capacity", paramLabel = "WORKERS", description = "Give each DC a "
      + "service of bounded capacity: WORKERS requests in service at once, each for --service-ms, "
      + "the others queued under admission control (--queue-max, --queue-wait-ms) and refused "
      + "OVERLOADED beyond it (docs/simulator.md, Overload). Default: unbounded.")
  Integer serviceWorkers;

  @Option(names = "--service-ms", defaultValue = "0.5", description = "A DC's time per protocol "
      + "message (default: ${DEFAULT-VALUE}).")
  double serviceMillis;

  @Option(names = "--queue-max", defaultValue = "1024", description = "With --service-capacity: "
      + "requests that may wait for a worker (default: ${DEFAULT-VALUE}, as "
      + "paxoscp.service.queue.max.requests).")
  int queueMax;

  @Option(names = "--queue-wait-ms", defaultValue = "500", description = "With "
      + "--service-capacity: the longest a request may wait for a worker (default: "
      + "${DEFAULT-VALUE}, as paxoscp.service.queue.max.wait.ms).")
  long queueWaitMs;

  @Option(names = "--quiet", description = "Only the summary table and violations.")
  boolean quiet;

  @Option(names = "--trace", description = "Print every protocol message and reply (use with "
      + "one seed and one protocol to replay a failing run).")
  boolean trace;

  @Override
  public Integer call() {
    quietServiceLogs();
    PrintStream out = System.out;
    List<Protocol> list = new ArrayList<>();
    for (String p : protocols) {
      switch (p.trim().toLowerCase(Locale.ROOT)) {
        case "basic" -> list.add(Protocol.BASIC);
        case "cp" -> list.add(Protocol.CP);
        case "leader" -> list.add(Protocol.LEADER);
        case "both" -> {
          list.add(Protocol.BASIC);
          list.add(Protocol.CP);
        }
        case "all" -> list.addAll(List.of(Protocol.values()));
        default -> throw new ParameterException(spec.commandLine(),
            "--protocol must be basic, cp, leader, both or all, not '" + p + "'");
      }
    }
    if (seeds < 1) {
      throw new ParameterException(spec.commandLine(), "--seeds must be >= 1");
    }
    if (noLeaderCosts && measuredRtts) {
      throw new ParameterException(spec.commandLine(),
          "--no-leader-costs and --measured-rtts exclude each other");
    }
    if (target != null && !SimConfig.Faults.TARGETS.contains(target)) {
      throw new ParameterException(spec.commandLine(), "--target must be one of "
          + SimConfig.Faults.TARGETS + ", not '" + target + "'");
    }
    if (target != null) {
      targeted = true;
    }
    if ((replayMinMs != null || replayMaxMs != null) && replay <= 0) {
      throw new ParameterException(spec.commandLine(),
          "--replay-min-ms and --replay-max-ms need --replay");
    }
    SimConfig base;
    try {
      dcs = dcList.dcs();
      base = baseConfig();
    } catch (IllegalArgumentException e) {
      throw new ParameterException(spec.commandLine(), e.getMessage());
    }
    if (partitionDc != null && (!partitions || !dcs.contains(partitionDc))) {
      throw new ParameterException(spec.commandLine(), "--partition-dc names one of " + dcs
          + " and needs --partitions");
    }
    if (clientDcs != null && !dcs.containsAll(clientDcs)) {
      throw new ParameterException(spec.commandLine(), "--client-dcs must name DCs of " + dcs
          + ", not " + clientDcs);
    }
    out.printf(Locale.ROOT, "simulate: dcs=%s clients=%d attributes=%d ops=%d txns=%d rate=%.2f/s "
        + "op=%.1fms faults=[%s] seeds=%d..%d%n", dcs, clients, attributes, ops, txns, rate,
        opMillis, base.faults(), seed, seed + seeds - 1);
    List<Summary> summaries = new ArrayList<>();
    boolean violation = false;
    for (Protocol protocol : list) {
      Summary s = new Summary(protocol);
      long startedNanos = System.nanoTime();
      long lastProgress = startedNanos;
      for (int i = 0; i < seeds; i++) {
        SimConfig cfg = base.withProtocol(protocol).withSeed(seed + i);
        Simulator sim = new Simulator(cfg);
        if (forceEviction) {
          sim.withForcedEviction();
        }
        if (noLeaderCosts) {
          sim.withoutLeaderCosts();
        } else if (measuredRtts) {
          sim.withMeasuredRtts();
        }
        if (clientDcs != null) {
          sim.withClientHomes(clientDcs);
        }
        if (partitionDc != null) {
          sim.withPartitionsOf(partitionDc);
        }
        if (target != null) {
          sim.withTargetedType(target);
        }
        if (trace) {
          sim.trace(out::println);
        }
        if (serviceWorkers != null) {
          sim.withServiceCapacity(serviceWorkers,
              new Admission(queueMax, Duration.ofMillis(queueWaitMs)));
        }
        SimResult r = sim.run();
        s.add(r);
        s.add(sim.apiCounts());
        sim.overloadRefusals().forEach((k, v) -> s.refusals.merge(k, v, Long::sum));
        s.overloadAborts += sim.overloadAborts();
        s.clientBackoffs += sim.clientOverloadBackoffs();
        if (!r.safe() || !r.finished()) {
          violation |= !r.safe();
          out.printf("%s seed %d: %s%n", protocol, cfg.seed(), !r.safe() ? "VIOLATION" : "DID NOT FINISH");
          if (!r.safe()) {
            out.println(r.check());
            r.applyConflicts().forEach(c -> out.println("  " + c));
            r.oracleViolations().forEach(c -> out.println("  " + c));
          }
          out.println("  replay: " + replayCommand(protocol, cfg.seed()));
        }
        long now = System.nanoTime();
        if (!quiet && seeds > 1 && now - lastProgress > 2_000_000_000L) {
          lastProgress = now;
          System.err.printf("  %s: %d/%d seeds, %.0f s%n", protocol, i + 1, seeds,
              (now - startedNanos) / 1e9);
        }
      }
      summaries.add(s);
    }
    printTable(out, summaries);
    return violation ? 1 : 0;
  }

  /**
   * The shipped service logs every catch-up it gives up; under injected faults that is
   * thousands of expected warnings. Keeps only errors, unless the user asked for a level.
   */
  static void quietServiceLogs() {
    if (System.getProperty("org.slf4j.simpleLogger.log.org.paxoscp.service") == null) {
      System.setProperty("org.slf4j.simpleLogger.log.org.paxoscp.service", "error");
    }
  }

  private SimConfig baseConfig() {
    Latency latency = WanOptions.wan(dcs, rtt.overrides(), false).latency();
    ProposerConfig pc = ProposerConfig.defaults(Protocol.CP, dcs)
        .withMaxPromotions(maxPromotions)
        .withPhaseTimeoutMicros(Math.round(timeoutMillis * 1000));
    return SimConfig.paperDefaults(Protocol.CP, dcs, seed)
        .withLatency(latency)
        .withProposer(pc)
        .withWorkload(clients, attributes, ops, txns)
        .withTiming(rate, Math.round(opMillis * 1000))
        .withKeys(readFraction, zipfian)
        .withScanShare(scanShare)
        .withUpdateShare(updateShare)
        .withServiceMicros(Math.round(serviceMillis * 1000))
        .withFaults(new SimConfig.Faults(loss, dup, reorder, partitions, crashes, outages,
            restarts, twoInstances, targeted, storeFaults, replayFault()));
  }

  private SimConfig.Replay replayFault() {
    long min = replayMinMs != null ? replayMinMs * 1000 : SimConfig.Replay.DEFAULT_MIN_MICROS;
    long max = replayMaxMs != null ? replayMaxMs * 1000 : SimConfig.Replay.DEFAULT_MAX_MICROS;
    // One bound given: the other's default gives way to it.
    if (replayMaxMs == null) {
      max = Math.max(min, max);
    }
    if (replayMinMs == null) {
      min = Math.min(min, max);
    }
    return new SimConfig.Replay(replay, min, max);
  }

  private String replayCommand(Protocol protocol, long s) {
    StringBuilder b = new StringBuilder("./paxoscp simulate --protocol ")
        .append(protocol.name().toLowerCase(Locale.ROOT)).append(" --seed ").append(s)
        .append(" --dcs ").append(String.join(",", dcs))
        .append(" --clients ").append(clients).append(" --attributes ").append(attributes)
        .append(" --ops ").append(ops).append(" --txns ").append(txns)
        .append(" --rate ").append(rate).append(" --op-ms ").append(opMillis)
        .append(" --read-fraction ").append(readFraction)
        .append(" --max-promotions ").append(maxPromotions)
        .append(" --timeout-ms ").append(timeoutMillis);
    if (!rtt.overrides().isEmpty()) {
      b.append(" --rtt ").append(String.join(",", rtt.overrides()));
    }
    if (zipfian) {
      b.append(" --zipfian");
    }
    if (scanShare > 0) {
      b.append(" --scan-share ").append(scanShare);
    }
    if (updateShare > 0) {
      b.append(" --update-share ").append(updateShare);
    }
    if (loss > 0) {
      b.append(" --loss ").append(loss);
    }
    if (dup > 0) {
      b.append(" --dup ").append(dup);
    }
    if (reorder > 0) {
      b.append(" --reorder ").append(reorder);
    }
    if (partitions) {
      b.append(" --partitions");
    }
    if (crashes) {
      b.append(" --crashes");
    }
    if (outages) {
      b.append(" --outages");
    }
    if (restarts) {
      b.append(" --restarts");
    }
    if (twoInstances) {
      b.append(" --two-instances");
    }
    if (target != null) {
      b.append(" --target ").append(target);
    } else if (targeted) {
      b.append(" --targeted");
    }
    if (storeFaults > 0) {
      b.append(" --store-faults ").append(storeFaults);
    }
    if (replay > 0) {
      b.append(" --replay ").append(replay);
      if (replayMinMs != null) {
        b.append(" --replay-min-ms ").append(replayMinMs);
      }
      if (replayMaxMs != null) {
        b.append(" --replay-max-ms ").append(replayMaxMs);
      }
    }
    if (noLeaderCosts) {
      b.append(" --no-leader-costs");
    }
    if (measuredRtts) {
      b.append(" --measured-rtts");
    }
    if (clientDcs != null) {
      b.append(" --client-dcs ").append(String.join(",", clientDcs));
    }
    if (partitionDc != null) {
      b.append(" --partition-dc ").append(partitionDc);
    }
    if (forceEviction) {
      b.append(" --force-eviction");
    }
    if (serviceWorkers != null) {
      b.append(" --service-capacity ").append(serviceWorkers).append(" --queue-max ")
          .append(queueMax).append(" --queue-wait-ms ").append(queueWaitMs);
    }
    if (serviceMillis != 0.5) {
      b.append(" --service-ms ").append(serviceMillis);
    }
    return b.toString();
  }

  private void printTable(PrintStream out, List<Summary> summaries) {
    int rounds = 0;
    for (Summary s : summaries) {
      rounds = Math.max(rounds, s.byRound.isEmpty() ? 0 : s.byRound.lastKey() + 1);
    }
    StringBuilder header = new StringBuilder(String.format(Locale.ROOT,
        "%-9s %6s %9s", "protocol", "runs", "committed"));
    // Commits by promotion round: r0 = first try; rounds from MAX_ROUND_COLUMNS on are summed.
    int columns = Math.min(rounds, MAX_ROUND_COLUMNS);
    for (int r = 0; r < columns; r++) {
      boolean last = r == MAX_ROUND_COLUMNS - 1 && rounds > MAX_ROUND_COLUMNS;
      header.append(String.format(Locale.ROOT, " %6s", "r" + r + (last ? "+" : "")));
    }
    header.append(String.format(Locale.ROOT, " %7s %7s %7s %7s %8s %9s %9s  %s", "ro", "aborted",
        "unknown", "crashed", "combined", "p50(ms)", "p99(ms)", "checker"));
    out.println();
    out.println(header);
    for (Summary s : summaries) {
      StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "%-9s %6d %9s",
          s.protocol.name().toLowerCase(Locale.ROOT), s.runs, avg(s.committed, s.runs)));
      for (int r = 0; r < columns; r++) {
        long n = r == MAX_ROUND_COLUMNS - 1
            ? s.byRound.tailMap(r).values().stream().mapToLong(Long::longValue).sum()
            : s.byRound.getOrDefault(r, 0L);
        row.append(String.format(Locale.ROOT, " %6s", avg(n, s.runs)));
      }
      row.append(String.format(Locale.ROOT, " %7s %7s %7s %7s %8s %9.1f %9.1f  %s",
          avg(s.readOnly, s.runs), avg(s.aborted, s.runs), avg(s.unknown, s.runs),
          avg(s.crashed, s.runs), avg(s.combinedTxns, s.runs),
          pct(s.latency, 50), pct(s.latency, 99),
          s.violations == 0 ? "OK (" + s.runs + " runs)" : s.violations + " VIOLATING RUNS"));
      out.println(row);
    }
    if (summaries.stream().anyMatch(s -> s.runs > 1)) {
      out.println("(counts are means per run; latencies over all runs' committed read-write "
          + "transactions; ro = read-only)");
    }
    out.println();
    for (Summary s : summaries) {
      out.printf(Locale.ROOT, "%s log: %d positions decided, %d of them no-ops (%.1f%%; "
          + "withdrawals %d)%n", s.protocol.name().toLowerCase(Locale.ROOT), s.positions,
          s.noops, s.positions == 0 ? 0.0 : 100.0 * s.noops / s.positions, s.withdrawals);
    }
    for (Summary s : summaries) {
      out.printf("%s exercised (all runs): %s%n", s.protocol.name().toLowerCase(Locale.ROOT),
          s.exercised);
    }
    for (Summary s : summaries) {
      out.printf("%s %s (all runs)%n", s.protocol.name().toLowerCase(Locale.ROOT), s.api);
    }
    for (Summary s : summaries) {
      if (updateShare > 0) {
        out.printf("%s updates (all runs): %s%n", s.protocol.name().toLowerCase(Locale.ROOT),
            s.updates);
      }
    }
    for (Summary s : summaries) {
      if (serviceWorkers != null) {
        long total = s.refusals.values().stream().mapToLong(Long::longValue).sum();
        out.printf(Locale.ROOT, "%s overload (all runs): %d requests refused OVERLOADED %s, %d "
            + "commits aborted overloaded, %d client back-offs%n",
            s.protocol.name().toLowerCase(Locale.ROOT), total, s.refusals, s.overloadAborts,
            s.clientBackoffs);
      }
      if (s.replays.copies() > 0) {
        out.printf("%s replay (all runs): %s%n", s.protocol.name().toLowerCase(Locale.ROOT),
            s.replays);
      }
    }
  }

  private static double pct(Histogram h, double p) {
    return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(p) / 1000.0;
  }

  private static String avg(long total, int runs) {
    return runs == 1 ? Long.toString(total)
        : String.format(Locale.ROOT, "%.1f", (double) total / runs);
  }

  private static final class Summary {
    final Protocol protocol;
    final SortedMap<Integer, Long> byRound = new TreeMap<>();
    /** OVERLOADED refusals by request kind, over every run. */
    final SortedMap<String, Long> refusals = new TreeMap<>();
    long overloadAborts;
    long clientBackoffs;
    final Histogram latency = new Histogram(3_600_000_000L, 3);
    int runs;
    long committed;
    long readOnly;
    long aborted;
    long unknown;
    long crashed;
    long combinedTxns;
    long positions;
    long noops;
    long withdrawals;
    int violations;
    SimResult.Exercised exercised = SimResult.Exercised.none();
    SimResult.Replays replays = SimResult.Replays.NONE;
    SimResult.Updates updates = SimResult.Updates.NONE;
    final org.paxoscp.sim.Simulator.ApiCounts api = new org.paxoscp.sim.Simulator.ApiCounts();

    Summary(Protocol protocol) {
      this.protocol = protocol;
    }

    void add(SimResult r) {
      runs++;
      committed += r.committed();
      r.commitsByRound().forEach((k, v) -> byRound.merge(k, (long) v, Long::sum));
      readOnly += r.readOnlyCommits();
      aborted += r.aborted();
      unknown += r.unknown();
      crashed += r.crashed();
      combinedTxns += r.combinedTxns();
      positions += r.positions();
      noops += r.noopPositions();
      withdrawals += r.withdrawalPositions();
      latency.add(r.commitLatencyMicros());
      violations += r.safe() ? 0 : 1;
      exercised = exercised.plus(r.exercised());
      replays = replays.plus(r.replays());
      updates = updates.plus(r.updates());
    }

    void add(org.paxoscp.sim.Simulator.ApiCounts a) {
      api.batchReads += a.batchReads;
      api.withDeadline += a.withDeadline;
      api.deadlineAborts += a.deadlineAborts;
      api.handles += a.handles;
      api.handleSettles += a.handleSettles;
    }
  }
}
