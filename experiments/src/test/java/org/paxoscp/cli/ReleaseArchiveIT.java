package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.local.FreePorts;
import org.paxoscp.testing.Poll;

/**
 * The release archive the build makes ({@code target/paxoscp-<version>.tar.gz}) unpacked into an
 * empty directory runs on its own: three {@code bin/paxoscp service} processes (in-memory stores)
 * and {@code bin/paxoscp shell} committing and reading through them, with nothing but a JDK (no
 * Maven, no sources: the archive's launcher builds nothing).
 */
@Timeout(180)
class ReleaseArchiveIT {
  private final List<Process> processes = new ArrayList<>();

  @AfterEach
  void stopAll() throws InterruptedException {
    for (Process p : processes) {
      p.destroy();
    }
    for (Process p : processes) {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    }
  }

  private static Path archive() throws IOException {
    try (Stream<Path> s = Files.list(Path.of("target"))) {
      return s.filter(p -> p.getFileName().toString().matches("paxoscp-.*\\.tar\\.gz"))
          .findFirst().orElseThrow(() -> new AssertionError("no target/paxoscp-*.tar.gz: the "
              + "package phase makes it"));
    }
  }

  private static String readQuietly(Path file) {
    try {
      return Files.exists(file) ? Files.readString(file) : "";
    } catch (IOException e) {
      return "";
    }
  }

  private static String run(Path dir, Duration timeout, String stdin, String... cmd)
      throws Exception {
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .start();
    if (stdin != null) {
      p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
    }
    p.getOutputStream().close();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", cmd) + " did not finish in " + timeout);
    }
    return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
  }

  @Test
  void theUnpackedArchiveRunsServicesAndTheShellWithOnlyAJdk(@TempDir Path empty)
      throws Exception {
    Path tgz = archive().toAbsolutePath();
    assertEquals("", run(empty, Duration.ofSeconds(60), null, "tar", "-xzf", tgz.toString()));
    Path home;
    try (Stream<Path> s = Files.list(empty)) {
      home = s.findFirst().orElseThrow();
    }
    assertTrue(home.getFileName().toString().startsWith("paxoscp-"), home.toString());
    assertTrue(Files.isExecutable(home.resolve("bin/paxoscp")));
    try (Stream<Path> lib = Files.list(home.resolve("lib"))) {
      List<String> jars = lib.map(p -> p.getFileName().toString()).toList();
      assertTrue(jars.stream().anyMatch(j -> j.startsWith("experiments-")), jars.toString());
      assertTrue(jars.stream().anyMatch(j -> j.startsWith("txn-client-")), jars.toString());
    }
    for (String f : List.of("cluster.properties.example", "service.properties.example",
        "paxoscp-service.service.example")) {
      assertTrue(Files.exists(home.resolve("conf").resolve(f)), f);
    }
    assertTrue(Files.readString(home.resolve("BUNDLED-LIBRARIES.txt")).contains("picocli"));
    // The pages the commands' help names travel with them.
    assertTrue(Files.exists(home.resolve("README.md")));
    for (String page : List.of("running.md", "client.md", "configuration.md", "operating.md",
        "deploying.md")) {
      assertTrue(Files.exists(home.resolve("docs").resolve(page)), page);
    }
    assertTrue(Files.exists(home.resolve("docs/grafana/paxoscp-dashboard.json")),
        "the Grafana dashboard operating.md names");

    List<String> dcs = List.of("V1", "V2", "O");
    Map<String, String> cluster = new LinkedHashMap<>();
    cluster.put("paxoscp.dcs", "V1,V2,O");
    cluster.put("paxoscp.key", "00112233445566778899aabbccddeeff");
    List<Integer> ports = new ArrayList<>();
    for (String dc : dcs) {
      int port = FreePorts.udp();
      ports.add(port);
      cluster.put("paxoscp.dc." + dc + ".endpoints", "127.0.0.1:" + port);
    }
    // Owner-only, as deploying.md asks: the launcher's readers refuse a key file others may read.
    KeyFiles.writePrivate(home.resolve("conf/cluster.properties"), cluster, null);
    for (int i = 0; i < dcs.size(); i++) {
      Path conf = home.resolve("conf/service-" + dcs.get(i) + ".properties");
      Map<String, String> service = new LinkedHashMap<>(cluster);
      service.put("paxoscp.service.dc", dcs.get(i));
      service.put("paxoscp.service.bind", "127.0.0.1:" + ports.get(i));
      service.put("paxoscp.service.store", "memory");
      KeyFiles.writePrivate(conf, service, null);
      Path log = home.resolve("service-" + dcs.get(i) + ".log");
      processes.add(new ProcessBuilder("bin/paxoscp", "service", "--config", conf.toString(),
          "--new-cluster")
          .directory(home.toFile()).redirectErrorStream(true)
          .redirectOutput(log.toFile()).start());
    }
    for (String dc : dcs) {
      Path log = home.resolve("service-" + dc + ".log");
      Poll.until("service " + dc + " to serve (its log: " + log + ")", Duration.ofSeconds(90),
          () -> {
            assertTrue(processes.stream().allMatch(Process::isAlive), "a service exited: "
                + readQuietly(log));
            return readQuietly(log).contains("serving on udp");
          });
    }

    String out = run(home, Duration.ofSeconds(90),
        "begin accounts\nput alice 100\ncommit\nbegin accounts\nget alice\ncommit\n",
        "bin/paxoscp", "shell", "--config", "conf/cluster.properties");
    assertTrue(out.contains("committed at position 1"), out);
    assertTrue(out.contains("alice = 100"), out);
  }
}
