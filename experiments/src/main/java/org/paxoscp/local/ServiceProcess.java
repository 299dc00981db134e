package org.paxoscp.local;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One Transaction Service as a real operating-system process: {@code paxoscp service --config F}
 * in a JVM of its own (this JVM's Java and classpath), its output appended to a log file; or any
 * main class of the classpath the same way. Every process a local cluster runs outside this JVM
 * ({@code cluster --netns}, the nemesis, {@code bench-groups}) is one of these. The nemesis
 * kills it with SIGKILL, freezes it with SIGSTOP and thaws it with SIGCONT, and starts it again
 * on the same configuration (same DC, same port, same store).
 *
 * <p>The nemesis drives each process from one thread; only {@link #stop} may come from another
 * (the shutdown hook), and after it the process never starts again.
 */
public final class ServiceProcess {
  /** The same flags as the {@code paxoscp} launcher (HBase's client on JDK 17). */
  static final List<String> JVM_FLAGS = org.paxoscp.store.hbase.StandaloneHBase.jvmFlags();

  private final String name;
  private final String dc;
  private final List<String> prefix;
  private final List<String> program;
  private final String ready;
  private final Path log;
  /** The {@code -Xmx} value, e.g. {@code 256m}. */
  private final String maxHeap;
  /** JVM options added after the defaults (a later option wins over an earlier one). */
  private final List<String> jvmOptions;
  private volatile Process process;
  private volatile boolean stopped;
  /** Set by {@link #stop}: the process is never started again (a run being torn down). */
  private boolean retired;

  /**
   * A service process of DC {@code dc} run with {@code config}, its output in {@code log}.
   *
   * @param prefix what to run it under (e.g. {@code ip netns exec NS}); empty for nothing
   */
  public static ServiceProcess service(String name, String dc, Path config, Path log,
      List<String> prefix) {
    return service(name, dc, config, log, prefix, false);
  }

  /**
   * As above; {@code newCluster} starts it with {@code --new-cluster} (a memory store is a new
   * DC's, marked serving; a process restarted later is not, and is rebuilt from its peers).
   */
  public static ServiceProcess service(String name, String dc, Path config, Path log,
      List<String> prefix, boolean newCluster) {
    List<String> program = new java.util.ArrayList<>(List.of("org.paxoscp.cli.Main", "service",
        "--config", config.toString()));
    if (newCluster) {
      program.add("--new-cluster");
    }
    return program(name, dc, prefix, program, "serving on udp", log);
  }

  /**
   * Any main class of the classpath as a process, with a 256 MB heap.
   *
   * @param prefix what to run it under (e.g. {@code ip netns exec NS}); empty for nothing
   * @param program the main class and its arguments
   * @param ready the text the process prints once it is ready
   */
  public static ServiceProcess program(String name, String dc, List<String> prefix,
      List<String> program, String ready, Path log) {
    return new ServiceProcess(name, dc, prefix, program, ready, log, "256m", List.of());
  }

  private ServiceProcess(String name, String dc, List<String> prefix, List<String> program,
      String ready, Path log, String maxHeap, List<String> jvmOptions) {
    if (!maxHeap.matches("[0-9]+[kKmMgG]?")) {
      throw new IllegalArgumentException("a heap size such as 256m, was " + maxHeap);
    }
    this.maxHeap = maxHeap;
    this.jvmOptions = List.copyOf(jvmOptions);
    this.name = name;
    this.dc = dc;
    this.prefix = List.copyOf(prefix);
    this.program = List.copyOf(program);
    this.ready = ready;
    this.log = log;
  }

  /**
   * A main class of this classpath as a process of its own (for benchmarks that measure one
   * process's heap and CPU time), with the nemesis's JVM settings except the heap bound.
   *
   * @param program the main class and its arguments
   * @param ready the text the process prints once it is ready
   * @param maxHeap the {@code -Xmx} value, e.g. {@code 256m}
   * @param jvmOptions further JVM options, after the defaults
   * @throws IllegalArgumentException if {@code maxHeap} is not a heap size
   */
  public static ServiceProcess of(String name, String dc, List<String> program, String ready,
      Path log, String maxHeap, List<String> jvmOptions) {
    return new ServiceProcess(name, dc, List.of(), program, ready, log, maxHeap, jvmOptions);
  }

  public String name() {
    return name;
  }

  public String dc() {
    return dc;
  }

  /** The process id while it runs, else -1. */
  public long pid() {
    Process p = process;
    return p != null && p.isAlive() ? p.pid() : -1;
  }

  public boolean alive() {
    return process != null && process.isAlive();
  }

  /** Whether it was frozen with SIGSTOP and not yet thawed. */
  public boolean frozen() {
    return stopped && alive();
  }

  /**
   * Starts the process and waits until it says it serves.
   *
   * @throws IllegalStateException if it exits or does not serve within {@code timeout}
   */
  public void start(Duration timeout) {
    if (alive()) {
      throw new IllegalStateException(name + " already runs");
    }
    List<String> cmd = new ArrayList<>(prefix);
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(JVM_FLAGS);
    cmd.add("-Xmx" + maxHeap);
    cmd.add("-XX:+UseSerialGC");
    cmd.add("-XX:TieredStopAtLevel=1");
    cmd.add("-Djava.net.preferIPv4Stack=true");
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
    cmd.add("-Dorg.slf4j.simpleLogger.logFile=System.out");
    cmd.addAll(jvmOptions);
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.addAll(program);
    long mark;
    try {
      Files.createDirectories(log.getParent());
      Files.writeString(log, "==== starting " + name + "\n", StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      mark = Files.size(log);
      ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
          .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
      synchronized (this) {
        if (retired) {
          throw new IllegalStateException(name + " is retired: the run is stopping");
        }
        process = pb.start();
      }
      stopped = false;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + name, e);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException(name + " exited with " + process.exitValue()
            + " at start-up; see " + log);
      }
      if (logSince(mark).contains(ready)) {
        return;
      }
      sleep(100);
    }
    kill();
    throw new IllegalStateException(name + " did not serve within " + timeout + "; see " + log);
  }

  private String logSince(long mark) {
    try {
      byte[] all = Files.readAllBytes(log);
      return new String(all, (int) Math.min(mark, all.length),
          (int) Math.max(0, all.length - mark), StandardCharsets.UTF_8);
    } catch (IOException e) {
      return "";
    }
  }

  /** SIGKILL, and waits until it is gone. A no-op if it does not run. */
  public void kill() {
    Process p = process;
    if (p == null || !p.isAlive()) {
      return;
    }
    p.destroyForcibly(); // SIGKILL on Unix
    try {
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        throw new IllegalStateException(name + " (pid " + p.pid() + ") survived SIGKILL");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    stopped = false;
  }

  /** SIGSTOP: the process stays, frozen, and answers nothing. */
  public void freeze() {
    signal("STOP");
    stopped = true;
  }

  /** SIGCONT. */
  public void thaw() {
    signal("CONT");
    stopped = false;
  }

  private void signal(String sig) {
    long pid = pid();
    if (pid < 0) {
      return;
    }
    try {
      Process k = new ProcessBuilder("kill", "-" + sig, Long.toString(pid)).inheritIO().start();
      if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
        throw new IllegalStateException("kill -" + sig + " " + pid + " failed");
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Stops the process for good: thaws it if frozen, SIGTERM (a clean close), SIGKILL after
   * {@code grace}.
   */
  public void stop(Duration grace) {
    Process p;
    synchronized (this) {
      retired = true;
      p = process;
    }
    if (p == null || !p.isAlive()) {
      return;
    }
    if (stopped) {
      thaw();
    }
    p.destroy();
    try {
      if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
        kill();
      }
    } catch (InterruptedException e) {
      kill();
      Thread.currentThread().interrupt();
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  @Override
  public String toString() {
    return name + (alive() ? " (pid " + pid() + (frozen() ? ", frozen" : "") + ")" : " (down)");
  }
}
