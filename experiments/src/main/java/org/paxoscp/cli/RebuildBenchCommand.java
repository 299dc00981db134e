package org.paxoscp.cli;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;
import org.HdrHistogram.Recorder;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.HBaseSchema;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp bench-rebuild}: a measurement, not a test. Loads {@code --groups} groups of
 * {@code --keys} keys on a local cluster, measures foreground commits at the other DCs, then
 * empties the last DC's store and rebuilds it with {@code dc rebuild --all} while the same
 * foreground load goes on; prints the rebuild's time and rate and the foreground's commit
 * latency before and during it, side by side from one run.
 *
 * <p>Exit codes: 0 measured (whatever the numbers); 1 the rebuild failed; 2 usage.
 */
@Command(name = "bench-rebuild", mixinStandardHelpOptions = true, sortOptions = false,
    description = {"Measure rebuilding a DC that lost its store while the others serve: the "
        + "rebuild's time and rate, and the other DCs' commit latency before and during it."},
    footer = {"", "Example: ./paxoscp bench-rebuild --groups 1000 --keys 100",
        "%nExplained in docs/benchmarks.md."})
public final class RebuildBenchCommand implements Callable<Integer> {
  @Spec
  CommandSpec spec;

  @Option(names = "--groups", defaultValue = "1000", description = "Groups loaded (default: "
      + "${DEFAULT-VALUE}).")
  int groups;

  @Option(names = "--keys", defaultValue = "100", description = "Keys per group, written by one "
      + "transaction (default: ${DEFAULT-VALUE}).")
  int keys;

  @Option(names = "--value-bytes", defaultValue = "100", description = "Bytes per value "
      + "(default: ${DEFAULT-VALUE}).")
  int valueBytes;

  @Option(names = "--clients", defaultValue = "4", description = "Foreground client threads, "
      + "homed at the DCs that keep their stores (default: ${DEFAULT-VALUE}).")
  int clients;

  @Option(names = "--before-seconds", defaultValue = "20", description = "Foreground load "
      + "measured before the store is lost (default: ${DEFAULT-VALUE}).")
  int beforeSeconds;

  @Option(names = "--warmup-seconds", defaultValue = "15", description = "Foreground load run "
      + "first and not measured, after the data is loaded (default: ${DEFAULT-VALUE}).")
  int warmupSeconds;

  @Option(names = "--parallel", defaultValue = "2", description = "Groups rebuilt at once, as "
      + "dc rebuild --parallel (default: ${DEFAULT-VALUE}).")
  int parallel;

  @Mixin
  SharedOptions.Dcs dcsOption = new SharedOptions.Dcs("V1,V2,V3");

  @Mixin
  SharedOptions.Store storeOption = new SharedOptions.Store();

  @Mixin
  SharedOptions.Wan wanOption = new SharedOptions.Wan();

  @Mixin
  SharedOptions.Out outOption = new SharedOptions.Out("paxoscp-data/bench-rebuild");

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    List<String> dcs = dcsOption.dcs();
    if (groups < 1 || keys < 1 || valueBytes < 1 || clients < 1 || beforeSeconds < 1
        || warmupSeconds < 0 || parallel < 1 || dcs.size() < 3) {
      err.println("bench-rebuild: --groups, --keys, --value-bytes, --clients and "
          + "--before-seconds must be positive, and there must be 3 DCs or more");
      return 2;
    }
    String victim = dcs.get(dcs.size() - 1);
    List<String> homes = dcs.subList(0, dcs.size() - 1);
    Path dir = outOption.dir();
    Files.createDirectories(dir);
    LocalCluster.Options options = new LocalCluster.Options(dcs, storeOption.kind(),
        dir.resolve("data-" + System.currentTimeMillis()), wanOption.wan(dcs),
        java.time.Duration.ofSeconds(1), 8);
    err.printf("bench-rebuild: %d groups x %d keys of %d bytes on %s (%s), WAN %s; DC %s "
        + "loses its store%n", groups, keys, valueBytes, dcs, storeOption.kind(),
        wanOption.summary(options.wan(), dcs), victim);
    try (LocalCluster cluster = LocalCluster.start(options, line -> err.println("  " + line))) {
      load(cluster, homes.get(0), err);
      Recorder warmup = new Recorder(3);
      Recorder before = new Recorder(3);
      Recorder during = new Recorder(3);
      AtomicReference<Recorder> current = new AtomicReference<>(warmup);
      AtomicBoolean stop = new AtomicBoolean();
      ExecutorService pool = Executors.newFixedThreadPool(clients);
      List<Future<Long>> workers = new ArrayList<>();
      for (int c = 0; c < clients; c++) {
        int id = c;
        workers.add(pool.submit(() -> foreground(cluster, homes.get(id % homes.size()),
            "fg-" + id, current, stop)));
      }
      err.printf("bench-rebuild: foreground warm-up for %d s, then %d s measured before the "
          + "loss ...%n", warmupSeconds, beforeSeconds);
      Thread.sleep(warmupSeconds * 1000L);
      current.set(before);
      before.reset();
      Thread.sleep(beforeSeconds * 1000L);
      Histogram b = before.getIntervalHistogram();

      cluster.stopService(victim);
      KvStore store = cluster.store(victim);
      if (store instanceof HBaseKvStore h) {
        HBaseSchema.truncate(h.config());
      } else {
        ((InMemoryKvStore) store).wipe();
      }
      cluster.startService(victim);
      err.printf("bench-rebuild: DC %s lost its store; rebuilding ...%n", victim);
      current.set(during);
      during.reset();
      StringWriter rebuildOut = new StringWriter();
      long t0 = System.nanoTime();
      int code = DcCommand.Rebuild.rebuildAll(cluster.config(), victim, parallel,
          new PrintWriter(rebuildOut, true), new PrintWriter(rebuildOut, true));
      double seconds = (System.nanoTime() - t0) / 1e9;
      Histogram d = during.getIntervalHistogram();
      stop.set(true);
      pool.shutdown();
      pool.awaitTermination(30, TimeUnit.SECONDS);
      long failed = 0;
      for (Future<Long> w : workers) {
        failed += w.get();
      }
      err.print(rebuildOut);
      err.flush();
      if (code != 0) {
        err.println("bench-rebuild: the rebuild failed (exit " + code + ")");
        return 1;
      }
      long versions = (long) groups * keys;
      String table = String.format(
          "rebuild of DC %s (%d groups at once): %d groups (+%d foreground), %d data versions "
              + "loaded, %.1f s: %.0f groups/s, %.0f versions/s%n%n"
              + "| foreground (%d clients at %s) | commits | commits/s | p50 ms | p99 ms |%n"
              + "|---|---|---|---|---|%n"
              + "| before the loss (%d s) | %d | %.1f | %.2f | %.2f |%n"
              + "| during the rebuild (%.1f s) | %d | %.1f | %.2f | %.2f |%n"
              + "| during / before | | %.2f | %.2f | %.2f |%n"
              + "(failed foreground transactions over the run: %d)%n",
          victim, parallel, groups, clients, versions, seconds, groups / seconds, versions / seconds,
          clients, homes, beforeSeconds, b.getTotalCount(), b.getTotalCount() / (double)
              beforeSeconds, ms(b, 50), ms(b, 99), seconds, d.getTotalCount(),
          d.getTotalCount() / seconds, ms(d, 50), ms(d, 99),
          (d.getTotalCount() / seconds) / (b.getTotalCount() / (double) beforeSeconds),
          ms(d, 50) / ms(b, 50), ms(d, 99) / ms(b, 99), failed);
      out.print(table);
      out.flush();
      Files.writeString(dir.resolve("bench-rebuild.md"), table, StandardCharsets.UTF_8);
      return 0;
    } catch (UncheckedIOException | IOException e) {
      err.println("bench-rebuild: " + ClusterCommand.oneLine(e));
      return 1;
    }
  }

  private static double ms(Histogram h, double percentile) {
    return h.getTotalCount() == 0 ? Double.NaN
        : h.getValueAtPercentile(percentile) / 1000.0;
  }

  /** One transaction per group writes its keys, eight groups at a time. */
  private void load(LocalCluster cluster, String home, PrintWriter err) throws Exception {
    byte[] value = new byte[valueBytes];
    java.util.Arrays.fill(value, (byte) 'x');
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try (TxnClient client = cluster.client(home, CommitProtocol.CP);
         ProgressBar bar = new ProgressBarBuilder().setTaskName("load").setInitialMax(groups)
             .setStyle(ProgressBarStyle.ASCII).setUpdateIntervalMillis(1000)
             .setConsumer(new ConsoleProgressBarConsumer(System.err)).setUnit(" groups", 1)
             .build()) {
      List<Future<?>> done = new ArrayList<>();
      for (int g = 0; g < groups; g++) {
        String group = "g" + g;
        done.add(pool.submit(() -> {
          client.runInTransaction(group, t -> {
            for (int k = 0; k < keys; k++) {
              t.put("k" + k, value);
            }
            return null;
          });
          bar.step();
        }));
      }
      for (Future<?> f : done) {
        f.get();
      }
    } finally {
      pool.shutdown();
    }
  }

  /** Closed-loop read-modify-write commits on a group of its own; its failures. */
  private static long foreground(LocalCluster cluster, String home, String group,
      AtomicReference<Recorder> into, AtomicBoolean stop) {
    long failed = 0;
    try (TxnClient client = cluster.client(home, CommitProtocol.CP)) {
      long n = 0;
      while (!stop.get()) {
        long t0 = System.nanoTime();
        long i = n++;
        try {
          client.runInTransaction(group, t -> {
            t.get("k");
            t.put("k", Long.toString(i));
            return null;
          });
          into.get().recordValue(Math.max(1, (System.nanoTime() - t0) / 1000));
        } catch (RuntimeException e) {
          failed++;
        }
      }
    }
    return failed;
  }
}
