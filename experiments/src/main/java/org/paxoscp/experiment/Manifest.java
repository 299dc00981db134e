package org.paxoscp.experiment;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** What a run needs to be reproduced and judged: git revision, config, seed, JVM, machine. */
final class Manifest {
  private Manifest() {}

  static void write(Path file, Figure figure, List<Point> points, FigureRunner.Settings s,
      boolean quick, List<String> args, String started, double wallSeconds, boolean allOk)
      throws IOException {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("figure", figure.cliName());
    m.put("paper", figure.paperName());
    m.put("command", "./paxoscp experiment " + String.join(" ", args));
    m.put("started_utc", started);
    m.put("wall_seconds", Math.round(wallSeconds * 10) / 10.0);
    m.put("all_runs_serializable", allOk);
    Map<String, Object> git = new LinkedHashMap<>();
    git.put("revision", run("git", "rev-parse", "HEAD"));
    git.put("branch", run("git", "rev-parse", "--abbrev-ref", "HEAD"));
    String status = run("git", "status", "--porcelain", "--untracked-files=no");
    git.put("dirty", status == null ? null : !status.isBlank());
    m.put("git", git);
    Map<String, Object> cfg = new LinkedHashMap<>();
    cfg.put("quick", quick);
    cfg.put("quick_means", "fewer transactions per point (time is not scaled)");
    cfg.put("txns_per_mode_per_point", s.txns());
    cfg.put("seed", s.seed());
    cfg.put("op_think_ms", s.opMs());
    cfg.put("ops_per_txn", s.ops());
    cfg.put("read_fraction", s.readFraction());
    cfg.put("store", s.store().toString());
    cfg.put("request_timeout_ms", s.requestTimeout().toMillis());
    cfg.put("leader_hold_share", s.holdShare());
    cfg.put("leader_rtts", s.leaderRtts().name().toLowerCase(java.util.Locale.ROOT));
    cfg.put("wan", "paper region RTTs (org.paxoscp.transport.Latency.paperRegions)");
    List<String> modes = new ArrayList<>();
    for (var p : s.modes()) {
      modes.add(p.name().toLowerCase(java.util.Locale.ROOT));
    }
    cfg.put("modes", modes);
    List<Map<String, Object>> ps = new ArrayList<>();
    for (Point p : points) {
      Map<String, Object> pm = new LinkedHashMap<>();
      pm.put("label", p.label());
      pm.put("dcs", p.dcs());
      pm.put("home_dcs", p.homeDcs());
      pm.put("clients", p.clients());
      pm.put("attributes", p.attributes());
      pm.put("rate_per_client", p.ratePerClient());
      pm.put("txns_per_client", p.txnsPerClient());
      ps.add(pm);
    }
    cfg.put("points", ps);
    m.put("config", cfg);
    Map<String, Object> jvm = new LinkedHashMap<>();
    for (String k : List.of("java.version", "java.vm.name", "java.vm.version", "java.vendor")) {
      jvm.put(k, System.getProperty(k));
    }
    jvm.put("max_heap_mb", Runtime.getRuntime().maxMemory() / (1024 * 1024));
    jvm.put("input_arguments", ManagementFactory.getRuntimeMXBean().getInputArguments());
    m.put("jvm", jvm);
    Map<String, Object> machine = new LinkedHashMap<>();
    machine.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
    machine.put("arch", System.getProperty("os.arch"));
    machine.put("cores", Runtime.getRuntime().availableProcessors());
    machine.put("cpu", cpuModel());
    machine.put("load_average", ManagementFactory.getOperatingSystemMXBean()
        .getSystemLoadAverage());
    try {
      machine.put("hostname", InetAddress.getLocalHost().getHostName());
    } catch (IOException e) {
      machine.put("hostname", null);
    }
    m.put("machine", machine);
    new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(file.toFile(), m);
  }

  private static String cpuModel() {
    Path info = Path.of("/proc/cpuinfo");
    try {
      if (Files.exists(info)) {
        for (String line : Files.readAllLines(info, StandardCharsets.UTF_8)) {
          if (line.startsWith("model name")) {
            return line.substring(line.indexOf(':') + 1).trim();
          }
        }
      }
    } catch (IOException e) {
      return null;
    }
    return null;
  }

  /** The command's trimmed output, or null if it could not run. */
  private static String run(String... cmd) {
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String outText = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        return null;
      }
      return outText.trim();
    } catch (IOException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }
}
