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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.local.FreePorts;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;

/**
 * An application built outside this source tree against the client artifact as {@code mvn
 * install} publishes it ({@code org.paxoscp:txn-client} with its parent POM and the two modules
 * it depends on), resolved by Maven from a local repository, and run as its own process against
 * three services: it commits.
 *
 * <p>The local repository is this machine's ({@code ~/.m2/repository}, where the build found its
 * libraries) with this build's artifacts laid out as {@code mvn install} lays them out, in a
 * temporary copy (links for everything else), so the test leaves {@code ~/.m2} as it was.
 */
@Timeout(300)
class ClientArtifactIT {
  private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
  private static final String VERSION = "0.1.0-SNAPSHOT";
  private static final List<String> DCS = List.of("V", "O", "C");

  /** The artifacts an application's dependency on txn-client needs: id, module directory. */
  private static final Map<String, String> PUBLISHED = new LinkedHashMap<>();

  static {
    PUBLISHED.put("paxoscp-parent", ".");
    PUBLISHED.put("wal-paxos", "wal-paxos/core");
    PUBLISHED.put("txn-service-core", "txn-service/core");
    PUBLISHED.put("txn-client", "txn-client");
  }

  private static final String APP = """
      import java.io.FileReader;
      import java.util.HashMap;
      import java.util.Map;
      import java.util.Properties;
      import org.paxoscp.client.CommitProtocol;
      import org.paxoscp.client.TxnClient;
      import org.paxoscp.transport.ClusterConfig;

      public class App {
        public static void main(String[] args) throws Exception {
          Properties p = new Properties();
          try (FileReader in = new FileReader(args[0])) {
            p.load(in);
          }
          Map<String, String> props = new HashMap<>();
          p.forEach((k, v) -> props.put((String) k, (String) v));
          ClusterConfig cluster = ClusterConfig.fromProperties(props);
          try (TxnClient client = TxnClient.builder(cluster, args[1], CommitProtocol.CP).build()) {
            long n = client.runInTransaction("app", t -> {
              long v = t.getString("n").map(Long::parseLong).orElse(0L) + 1;
              t.put("n", Long.toString(v));
              return v;
            });
            System.out.println("committed n=" + n);
          }
        }
      }
      """;

  private static final String POM = """
      <?xml version="1.0" encoding="UTF-8"?>
      <project xmlns="http://maven.apache.org/POM/4.0.0">
        <modelVersion>4.0.0</modelVersion>
        <groupId>com.example</groupId>
        <artifactId>app</artifactId>
        <version>1</version>
        <properties>
          <maven.compiler.release>17</maven.compiler.release>
          <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
        </properties>
        <dependencies>
          <dependency>
            <groupId>org.paxoscp</groupId>
            <artifactId>txn-client</artifactId>
            <version>%s</version>
          </dependency>
          <dependency>
            <groupId>org.slf4j</groupId>
            <artifactId>slf4j-simple</artifactId>
            <version>%s</version>
          </dependency>
        </dependencies>
        <build>
          <pluginManagement>
            <plugins>
              <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.14.0</version></plugin>
              <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
              <plugin><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
              <plugin><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
              <plugin><artifactId>maven-dependency-plugin</artifactId><version>3.8.1</version></plugin>
            </plugins>
          </pluginManagement>
        </build>
      </project>
      """;

  private final List<ServiceRunner> services = new ArrayList<>();

  @AfterEach
  void stop() {
    services.forEach(ServiceRunner::close);
  }

  @Test
  void anApplicationBuiltAgainstTheInstalledClientCommits(@TempDir Path tmp) throws Exception {
    Path m2 = Path.of(System.getProperty("user.home"), ".m2", "repository");
    Assumptions.assumeTrue(Files.isDirectory(m2), "no local Maven repository at " + m2);
    for (var e : PUBLISHED.entrySet()) {
      if (!e.getKey().equals("paxoscp-parent")) {
        Assumptions.assumeTrue(Files.exists(jar(e.getKey(), e.getValue())),
            "the reactor has not packaged " + e.getKey() + " yet");
      }
    }
    Path repo = installedRepository(m2, tmp.resolve("repo"));

    Path app = tmp.resolve("app");
    Files.createDirectories(app.resolve("src/main/java"));
    Files.writeString(app.resolve("pom.xml"), String.format(POM, VERSION, slf4jVersion()));
    Files.writeString(app.resolve("src/main/java/App.java"), APP);
    String build = run(app, Duration.ofSeconds(180), "mvn", "-B", "-o", "-q",
        "-Dmaven.repo.local=" + repo, "package", "dependency:copy-dependencies");
    assertTrue(Files.exists(app.resolve("target/app-1.jar")), "the application did not build:\n"
        + build);

    Map<String, String> cluster = new LinkedHashMap<>();
    cluster.put("paxoscp.dcs", String.join(",", DCS));
    cluster.put("paxoscp.key", "0123456789abcdef0123456789abcdef");
    cluster.put("paxoscp.request.timeout.ms", "500");
    for (String dc : DCS) {
      cluster.put("paxoscp.dc." + dc + ".endpoints", "127.0.0.1:" + FreePorts.udp());
    }
    for (String dc : DCS) {
      Map<String, String> p = new LinkedHashMap<>(cluster);
      p.put(ServiceConfig.DC.name(), dc);
      p.put(ServiceConfig.BIND.name(), cluster.get("paxoscp.dc." + dc + ".endpoints"));
      p.put(ServiceConfig.STORE.name(), "memory");
      p.put(ServiceConfig.MEMORY_NEW.name(), "true");
      services.add(ServiceRunner.start(ServiceConfig.fromProperties(p),
          ServiceTransportFactory.UDP));
    }
    Path file = tmp.resolve("cluster.properties");
    KeyFiles.writePrivate(file, cluster, null); // it holds the key: owner-only, as deployed


    String javaCommand = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = app.resolve("target/app-1.jar") + java.io.File.pathSeparator
        + app.resolve("target/dependency") + java.io.File.separator + "*";
    for (int i = 1; i <= 2; i++) {
      String out = run(tmp, Duration.ofSeconds(60), javaCommand, "-cp", classpath, "App",
          file.toString(), DCS.get(i));
      assertTrue(out.contains("committed n=" + i), out);
    }
    // Only the client's libraries (no HBase or Hadoop), each at the version this build resolved
    // for txn-client and tested it with (the build writes that classpath at package time).
    List<String> built = new ArrayList<>();
    for (String entry : Files.readString(ROOT.resolve("txn-client/target/runtime-classpath.txt"))
        .trim().split(java.io.File.pathSeparator)) {
      built.add(Path.of(entry).getFileName().toString());
    }
    try (Stream<Path> libs = Files.list(app.resolve("target/dependency"))) {
      List<String> names = libs.map(p -> p.getFileName().toString()).sorted().toList();
      assertEquals(List.of(), names.stream()
          .filter(n -> n.startsWith("hbase") || n.startsWith("hadoop")).toList(), names.toString());
      assertEquals(List.of(), names.stream()
          .filter(n -> !built.contains(n) && !n.startsWith("txn-client-")
              && !n.startsWith("slf4j-simple-"))
          .toList(), "libraries at versions txn-client was not built with");
      System.out.printf("application classpath: %d jars: %s%n", names.size(), names);
    }
  }

  private static Path jar(String artifact, String module) {
    return ROOT.resolve(module).resolve("target").resolve(artifact + "-" + VERSION + ".jar");
  }

  /**
   * {@code m2} as links, except this project's artifacts, laid out as {@code mvn install}
   * writes them: {@code org/paxoscp/<id>/<version>/<id>-<version>.{pom,jar}}.
   */
  private static Path installedRepository(Path m2, Path repo) throws IOException {
    Files.createDirectories(repo.resolve("org"));
    try (Stream<Path> top = Files.list(m2)) {
      for (Path p : top.toList()) {
        if (!p.getFileName().toString().equals("org")) {
          Files.createSymbolicLink(repo.resolve(p.getFileName().toString()), p);
        }
      }
    }
    try (Stream<Path> org = Files.list(m2.resolve("org"))) {
      for (Path p : org.toList()) {
        if (!p.getFileName().toString().equals("paxoscp")) {
          Files.createSymbolicLink(repo.resolve("org").resolve(p.getFileName().toString()), p);
        }
      }
    }
    for (var e : PUBLISHED.entrySet()) {
      String id = e.getKey();
      Path dir = repo.resolve("org/paxoscp").resolve(id).resolve(VERSION);
      Files.createDirectories(dir);
      Files.copy(ROOT.resolve(e.getValue()).resolve("pom.xml"),
          dir.resolve(id + "-" + VERSION + ".pom"));
      if (!id.equals("paxoscp-parent")) {
        Files.copy(jar(id, e.getValue()), dir.resolve(id + "-" + VERSION + ".jar"));
      }
    }
    return repo;
  }

  /** The slf4j version this build uses (the application logs with slf4j-simple). */
  private static String slf4jVersion() throws IOException {
    String pom = Files.readString(ROOT.resolve("pom.xml"));
    java.util.regex.Matcher m = java.util.regex.Pattern.compile(
        "<slf4j.version>([^<]+)</slf4j.version>").matcher(pom);
    assertTrue(m.find(), "the root pom names no slf4j.version");
    return m.group(1);
  }

  private static String run(Path dir, Duration timeout, String... command) throws Exception {
    Path output = Files.createTempFile(dir, "out", ".txt");
    Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(output.toFile()).start();
    if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(String.join(" ", command) + " did not finish within " + timeout
          + ":\n" + Files.readString(output));
    }
    String text = Files.readString(output);
    assertEquals(0, p.exitValue(), String.join(" ", command) + "\n" + text);
    return text;
  }
}
