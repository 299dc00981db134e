package org.paxoscp.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.ycsb.ClosedEconomyWorkload;
import org.paxoscp.ycsb.PaxosCpDB;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * {@code paxoscp ycsb load|run --config FILE -P WORKLOAD [YCSB options]}: runs YCSB's own client
 * ({@code site.ycsb.Client}) with the paxoscp binding against a running cluster, in a JVM of its
 * own (YCSB's client ends its JVM when it is done). Its output is YCSB's, passed through.
 *
 * <p>Exit codes: YCSB's; 1 when a validated workload (the closed economy, the scan and counter
 * workloads) fails its validation; 2 usage or a bad configuration.
 */
@Command(name = "ycsb", mixinStandardHelpOptions = true,
    description = "Run YCSB (its own client and measurements) against a running cluster with the "
        + "paxoscp binding: the attribute, closed-economy, scan and counter workloads of "
        + "ycsb-ext/workloads, or YCSB's core workloads.",
    footer = {"%nEvery other option goes to YCSB as it is: -P FILE, -p key=value, -threads N, "
        + "-target OPS, -s (status every 10 s).",
        "Binding properties: paxoscp.dc (home DC or a list the threads take in turn), "
            + "paxoscp.protocol (the commit mode: basic, cp, ...), paxoscp.grouping (record or "
            + "table: the entity group of an operation outside a transaction).",
        "%nExplained in docs/benchmarks.md."})
public final class YcsbCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "load|run",
      description = "load: the workload's load phase (YCSB -load); run: its transactions (-t).")
  String phase;

  @Option(names = "--config", required = true, paramLabel = "FILE",
      description = "The cluster's client configuration, as `cluster` writes it.")
  Path configFile;

  @Option(names = "--db", paramLabel = "CLASS",
      description = "The YCSB binding (default: ${DEFAULT-VALUE}).")
  String db = PaxosCpDB.class.getName();

  @Unmatched
  List<String> ycsbArgs = new ArrayList<>();

  @Override
  public Integer call() throws Exception {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!phase.equals("load") && !phase.equals("run")) {
      err.println("ycsb: the phase is load or run, not '" + phase + "'");
      return 2;
    }
    try {
      ClusterConfig.fromProperties(KeyFiles.read(configFile));
    } catch (IllegalArgumentException | UncheckedIOException e) {
      err.println("ycsb: bad configuration in " + configFile + ": " + ClusterCommand.oneLine(e));
      return 2;
    }
    Path validation = Files.createTempFile("paxoscp-ycsb-validation", ".txt");
    Files.delete(validation);
    try {
      List<String> cmd = commandLine(phase, configFile, db, validation, ycsbArgs);
      Process p = new ProcessBuilder(cmd).start();
      Thread copyErr = copy(p.getErrorStream(), err, "ycsb-stderr");
      copy(p.getInputStream(), out, "ycsb-stdout").join();
      copyErr.join();
      int code = p.waitFor();
      if (code != 0) {
        return code;
      }
      if (Files.exists(validation)) {
        String result = Files.readString(validation, StandardCharsets.UTF_8);
        if (!result.startsWith("OK")) {
          err.println("ycsb: the workload failed its validation:");
          err.print(result.lines().skip(1).map(l -> "  " + l + System.lineSeparator())
              .reduce("", String::concat));
          err.flush();
          return 1;
        }
      }
      return 0;
    } finally {
      Files.deleteIfExists(validation);
    }
  }

  /** The command line of the YCSB client JVM: this JVM's java and class path. */
  static List<String> commandLine(String phase, Path config, String db, Path validationFile,
      List<String> ycsbArgs) {
    List<String> cmd = new ArrayList<>();
    cmd.add(ProcessHandle.current().info().command().orElse("java"));
    String keyFileCheck = System.getProperty(KeyFiles.CHECK);
    if (keyFileCheck != null) {
      // The YCSB JVM reads the same cluster file: it checks it as this one does.
      cmd.add("-D" + KeyFiles.CHECK + "=" + keyFileCheck);
    }
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add("site.ycsb.Client");
    cmd.add(phase.equals("load") ? "-load" : "-t");
    cmd.add("-db");
    cmd.add(db);
    cmd.add("-p");
    cmd.add(PaxosCpDB.CONFIG + "=" + config.toAbsolutePath().normalize());
    cmd.add("-p");
    cmd.add(ClosedEconomyWorkload.VALIDATION_FILE + "=" + validationFile.toAbsolutePath());
    cmd.addAll(ycsbArgs);
    return cmd;
  }

  private static Thread copy(InputStream in, PrintWriter to, String name) {
    Thread t = new Thread(() -> {
      try (var r = new java.io.BufferedReader(
          new java.io.InputStreamReader(in, StandardCharsets.UTF_8))) {
        String line;
        while ((line = r.readLine()) != null) {
          synchronized (to) {
            to.println(line);
            to.flush();
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }, name);
    t.setDaemon(true);
    t.start();
    return t;
  }
}
