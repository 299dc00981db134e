package org.paxoscp.store.hbase;

import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.paxoscp.store.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real HBase server process on this machine: {@code HMaster start} in standalone mode (master,
 * region server and ZooKeeper in one JVM) with the current classpath, its data under a directory,
 * listening on loopback only. Unlike {@link EmbeddedHBase} it outlives the process that started it,
 * can be killed and restarted, and is reached over the network by every store that connects to
 * its ZooKeeper port. A restart on the same directory keeps the data.
 *
 * <p>With more than one region server ({@link #start(Path, int, Duration, int)}) the server is a
 * cluster of processes: the first runs ZooKeeper and the master only, and each region server runs
 * in a process of its own ({@code HRegionServer start}, distributed mode, on the same directory),
 * so that regions move between them, split, and fail over when one is killed
 * ({@link #killRegionServer}), as they do in production.
 *
 * <p>Layout of the directory: {@code conf/hbase-site.xml} (generated at every start),
 * {@code hbase.pid}, {@code logs/hbase.log}, the data in {@code hbase/}, {@code zookeeper/}
 * and {@code tmp/}, and with several region servers {@code rs-<i>/} for each ({@code conf/},
 * {@code rs.pid}, {@code tmp/}; its log is {@code logs/rs-<i>.log}).
 *
 * <p>A region server killed with kill -9 has lost no acknowledged write in any run of
 * RegionServerCrashIT, which kills one right after it acknowledged a run of check-and-writes and
 * reads them all back once its regions serve elsewhere. The local filesystem does not sync
 * HBase's write-ahead log to disk, so a crash of the machine may lose the last writes. {@link #stop} shuts
 * the cluster down cleanly (region servers flush their memstores).
 *
 * <p>Every method blocks for a bounded time. Not safe to call concurrently for the same directory.
 */
public final class StandaloneHBase {
  private static final Logger LOG = LoggerFactory.getLogger(StandaloneHBase.class);

  public static final int DEFAULT_ZK_PORT = 2181;
  public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(120);
  public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(60);

  /** Marker on the server's command line, so a pid file is never trusted for a foreign process. */
  private static final String DIR_PROPERTY = "paxoscp.hbase.dir";
  private static final String MASTER_CLASS = "org.apache.hadoop.hbase.master.HMaster";
  private static final Duration PROBE_DEADLINE = Duration.ofSeconds(2);

  private StandaloneHBase() {}

  /**
   * The JVM flags HBase's client and server need on JDK 17 (the {@code paxoscp} launcher passes
   * the same), for a process that runs either.
   */
  public static java.util.List<String> jvmFlags() {
    return HBaseServerSettings.JVM_FLAGS;
  }

  /** Whether the server of a directory runs and answers. */
  public enum State {
    /** The process runs and HBase answers on its ZooKeeper port. */
    RUNNING,
    /** The process runs but HBase does not answer (still starting, or stuck). */
    UNRESPONSIVE,
    /** No server process for this directory. */
    NOT_RUNNING
  }

  /**
   * The state of a directory's server.
   *
   * @param pid    the server's process id while it runs
   * @param zkPort the ZooKeeper client port it was started with (0 if never started)
   * @param detail one human-readable line
   */
  public record Status(State state, Path dir, OptionalLong pid, int zkPort, String detail) {
    public boolean running() {
      return state == State.RUNNING;
    }
  }

  /** {@link #start(Path, int, Duration)} with {@link #DEFAULT_START_TIMEOUT}. */
  public static Status start(Path dir, int zkPort) {
    return start(dir, zkPort, DEFAULT_START_TIMEOUT);
  }

  /** {@link #start(Path, int, Duration, int)} with one region server, in the master's process. */
  public static Status start(Path dir, int zkPort, Duration timeout) {
    return start(dir, zkPort, timeout, 1);
  }

  /**
   * Starts the server of {@code dir} with ZooKeeper on 127.0.0.1:{@code zkPort} and waits until it
   * answers with {@code regionServers} live region servers. If it already runs and answers,
   * returns its status and starts nothing (region servers that are not running are started).
   * Region servers left from an earlier start are killed first.
   *
   * <p>One region server runs in the master's process, as a standalone HBase does. More run
   * each in a process of its own, beside a process of ZooKeeper and the master.
   *
   * @throws IllegalStateException if the port is taken, a process of this directory runs but
   *     does not answer, or it runs with another number of region servers
   * @throws StoreUnavailableException if the server exits or does not answer within
   *     {@code timeout} (it is then killed); the message carries the end of its log
   */
  public static Status start(Path dir, int zkPort, Duration timeout, int regionServers) {
    Path abs = dir.toAbsolutePath().normalize();
    if (zkPort < 1 || zkPort > 65535) {
      throw new IllegalArgumentException("ZooKeeper port must be in 1..65535, was " + zkPort);
    }
    if (regionServers < 1 || regionServers > MAX_REGION_SERVERS) {
      throw new IllegalArgumentException("region servers must be in 1.." + MAX_REGION_SERVERS
          + ", was " + regionServers);
    }
    Status now = status(abs);
    if (now.state() == State.RUNNING) {
      int had = regionServerCount(abs);
      if (had != regionServers) {
        throw new IllegalStateException("HBase of " + abs + " runs with " + had
            + " region server(s); stop it to start it with " + regionServers);
      }
      for (int i = 1; i <= had && had > 1; i++) {
        if (regionServerProcess(abs, i).isEmpty()) {
          startRegionServer(abs, i);
        }
      }
      return new Status(State.RUNNING, abs, now.pid(), now.zkPort(), "already running");
    }
    if (now.state() == State.UNRESPONSIVE) {
      throw new IllegalStateException("HBase of " + abs + " runs (pid " + now.pid().getAsLong()
          + ") but does not answer; stop it first");
    }
    long t0 = System.nanoTime();
    // Region servers left from a master that died cannot serve without it, and the count below
    // may differ from theirs: none may outlive this start.
    killRegionServers(abs);
    Process p = null;
    try {
      Files.createDirectories(abs.resolve("conf"));
      Files.createDirectories(abs.resolve("logs"));
      Files.deleteIfExists(pidFile(abs));
      requireFree(zkPort, "ZooKeeper");
      Ports previous = readPorts(abs).orElse(null);
      java.util.Set<Integer> taken = new java.util.HashSet<>(List.of(zkPort));
      int master = distinctPort(previous == null ? 0 : previous.master(), taken);
      int regionServer = distinctPort(previous == null ? 0 : previous.regionServer(), taken);
      java.util.Map<String, String> site = new java.util.LinkedHashMap<>(
          HBaseServerSettings.settings(abs, zkPort, master, regionServer));
      site.put(REGION_SERVERS_KEY, Integer.toString(regionServers));
      writeSite(siteFile(abs), site);
      // Every region server's port, chosen now so that no two are the same.
      for (int i = 1; i <= regionServers && regionServers > 1; i++) {
        writeRegionServerSite(abs, i, distinctPort(regionServerPort(abs, i), taken));
      }

      p = spawn(abs, siteFile(abs).getParent(), logFile(abs), MASTER_CLASS,
          regionServers > 1 ? List.of("--localRegionServers=0", "start") : List.of("start"),
          regionServers > 1 ? HBaseServerSettings.MASTER_HEAP
              : HBaseServerSettings.REGION_SERVER_HEAP);
      Files.writeString(pidFile(abs), Long.toString(p.pid()) + "\n");
      LOG.info("Started HBase server pid {} for {} (ZooKeeper port {}, {} region server(s))",
          p.pid(), abs, zkPort, regionServers);

      long end = t0 + timeout.toNanos();
      boolean regionServersStarted = regionServers == 1;
      int respawns = 0;
      while (true) {
        if (!p.isAlive()) {
          Files.deleteIfExists(pidFile(abs));
          killRegionServers(abs);
          throw new StoreUnavailableException("HBase of " + abs + " exited with code "
              + p.exitValue() + " during start-up; end of " + logFile(abs) + ":\n" + logTail(abs));
        }
        if (!regionServersStarted && accepts(zkPort)) {
          // ZooKeeper runs in the master's process: a region server that finds it not yet
          // listening gives up after a few seconds.
          for (int i = 1; i <= regionServers; i++) {
            startRegionServer(abs, i);
          }
          regionServersStarted = true;
        } else if (regionServersStarted && regionServers > 1) {
          for (int i = 1; i <= regionServers; i++) {
            if (regionServerProcess(abs, i).isEmpty()) {
              if (++respawns > 2 * regionServers) {
                throw new StoreUnavailableException("region server " + i + " of " + abs
                    + " keeps exiting during start-up; end of its log "
                    + regionServerLog(abs, i));
              }
              LOG.warn("Region server {} of {} exited during start-up; starting it again", i,
                  abs);
              startRegionServer(abs, i);
            }
          }
        }
        if (regionServersStarted && answers(abs, zkPort, regionServers)) {
          Duration took = Duration.ofNanos(System.nanoTime() - t0);
          Process started = p;
          p = null;
          return new Status(State.RUNNING, abs, OptionalLong.of(started.pid()), zkPort,
              String.format("started in %.1f s", took.toMillis() / 1000.0));
        }
        if (System.nanoTime() > end) {
          throw new StoreUnavailableException("HBase of " + abs + " did not answer within "
              + timeout.toSeconds() + " s and was killed; end of " + logFile(abs) + ":\n"
              + logTail(abs));
        }
        LockSupport.parkNanos(Duration.ofMillis(250).toNanos());
        if (Thread.currentThread().isInterrupted()) {
          throw new StoreUnavailableException("interrupted while starting HBase of " + abs);
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot prepare " + abs + ": " + e.getMessage(), e);
    } finally {
      // A start that did not return a running server leaves nothing behind.
      if (p != null) {
        kill(p.toHandle(), Duration.ofSeconds(10));
        killRegionServers(abs);
        deleteQuietly(pidFile(abs));
      }
    }
  }

  /** Whether something accepts connections on 127.0.0.1:{@code port}. */
  private static boolean accepts(int port) {
    try (java.net.Socket s = new java.net.Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** {@link #reuseOrPick} a port not in {@code taken}, which it joins. */
  private static int distinctPort(int previous, java.util.Set<Integer> taken) throws IOException {
    int port = taken.contains(previous) ? 0 : previous;
    for (int tries = 0; tries < 20; tries++) {
      int p = reuseOrPick(port);
      if (taken.add(p)) {
        return p;
      }
      port = 0;
    }
    throw new IOException("no free port distinct from " + taken);
  }

  /** {@link #stop(Path, Duration)} with {@link #DEFAULT_STOP_TIMEOUT}. */
  public static Status stop(Path dir) {
    return stop(dir, DEFAULT_STOP_TIMEOUT);
  }

  /**
   * Shuts the server of {@code dir} down cleanly (cluster shutdown through its master; memstores
   * are flushed), falling back to SIGTERM and finally SIGKILL if it does not exit within
   * {@code timeout}; region servers in processes of their own that outlive the cluster's
   * shutdown are killed. Stopping a directory whose master does not run removes a stale pid file
   * and kills region servers left behind.
   */
  public static Status stop(Path dir, Duration timeout) {
    Path abs = dir.toAbsolutePath().normalize();
    int zkPort = readPorts(abs).map(Ports::zk).orElse(0);
    Optional<ProcessHandle> server = serverProcess(abs);
    if (server.isEmpty()) {
      boolean stale = Files.exists(pidFile(abs));
      deletePidFile(abs);
      // Region servers outlive a master that died; they cannot serve without it.
      killRegionServers(abs);
      return new Status(State.NOT_RUNNING, abs, OptionalLong.empty(), zkPort,
          stale ? "was not running (stale pid file removed)" : "was not running");
    }
    ProcessHandle h = server.get();
    long t0 = System.nanoTime();
    String how = "clean shutdown";
    if (!requestShutdown(abs, zkPort)) {
      how = "SIGTERM";
      h.destroy();
    }
    if (!awaitExit(h, timeout)) {
      if (Thread.currentThread().isInterrupted()) {
        LOG.warn("Interrupted while HBase of {} (pid {}) shut down after {}; killing it", abs,
            h.pid(), how);
      } else {
        LOG.warn("HBase of {} (pid {}) did not exit within {} s after {}; sending SIGTERM", abs,
            h.pid(), timeout.toSeconds(), how);
      }
      how = "SIGTERM after a shutdown timeout";
      if (!kill(h, Duration.ofSeconds(15))) {
        how = "SIGKILL";
      }
    }
    deletePidFile(abs);
    // A clean cluster shutdown stops every region server; one that does not exit within what is
    // left of the timeout (at once, after a forced stop of the master) is killed.
    long rsEnd = how.equals("clean shutdown") ? t0 + timeout.toNanos() : System.nanoTime();
    for (int i : regionServerIndexes(abs)) {
      Optional<ProcessHandle> rs = regionServerProcess(abs, i);
      Duration left = Duration.ofNanos(Math.max(0, rsEnd - System.nanoTime()));
      if (rs.isPresent() && !awaitExit(rs.get(), left)) {
        LOG.warn("Region server {} of {} (pid {}) did not exit after the cluster shut down; "
            + "killing it", i, abs, rs.get().pid());
        kill(rs.get(), Duration.ofSeconds(15));
      }
      deleteQuietly(regionServerPidFile(abs, i));
    }
    return new Status(State.NOT_RUNNING, abs, OptionalLong.of(h.pid()), zkPort,
        String.format("stopped (pid %d, %s) in %.1f s", h.pid(), how,
            (System.nanoTime() - t0) / 1e9));
  }

  /** The state of {@code dir}'s server; changes nothing. Blocks for at most a few seconds. */
  public static Status status(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    int zkPort = readPorts(abs).map(Ports::zk).orElse(0);
    Optional<ProcessHandle> server = serverProcess(abs);
    if (server.isEmpty()) {
      return new Status(State.NOT_RUNNING, abs, OptionalLong.empty(), zkPort,
          Files.exists(pidFile(abs)) ? "not running (stale pid file)" : "not running");
    }
    long pid = server.get().pid();
    if (answers(abs, zkPort, 1)) {
      int n = regionServerCount(abs);
      String detail = "running";
      if (n > 1) {
        List<String> rs = new ArrayList<>();
        for (int i = 1; i <= n; i++) {
          Optional<ProcessHandle> h = regionServerProcess(abs, i);
          rs.add("rs-" + i + (h.isPresent() ? " pid " + h.get().pid() : " not running"));
        }
        detail = "running, region servers: " + String.join(", ", rs);
      }
      return new Status(State.RUNNING, abs, OptionalLong.of(pid), zkPort, detail);
    }
    return new Status(State.UNRESPONSIVE, abs, OptionalLong.of(pid), zkPort,
        "process runs but HBase does not answer on ZooKeeper port " + zkPort
            + " (starting, or stuck: see " + logFile(abs) + ")");
  }

  /** The server's log file. */
  public static Path logFile(Path dir) {
    return dir.toAbsolutePath().normalize().resolve("logs").resolve("hbase.log");
  }

  static Path pidFile(Path abs) {
    return abs.resolve("hbase.pid");
  }

  private static Path siteFile(Path abs) {
    return abs.resolve("conf").resolve("hbase-site.xml");
  }

  private record Ports(int zk, int master, int regionServer) {}

  private static Optional<Ports> readPorts(Path abs) {
    Path site = siteFile(abs);
    if (!Files.isRegularFile(site)) {
      return Optional.empty();
    }
    try {
      Configuration c = new Configuration(false);
      c.addResource(site.toUri().toURL());
      return Optional.of(new Ports(c.getInt("hbase.zookeeper.property.clientPort", 0),
          c.getInt("hbase.master.port", 0), c.getInt("hbase.regionserver.port", 0)));
    } catch (IOException | RuntimeException e) {
      LOG.warn("Unreadable {}: {}", site, e.toString());
      return Optional.empty();
    }
  }

  private static void writeSite(Path site, java.util.Map<String, String> settings)
      throws IOException {
    Configuration c = new Configuration(false);
    settings.forEach((k, v) -> c.set(k, v, "paxoscp"));
    Files.createDirectories(site.getParent());
    Path tmp = site.resolveSibling("hbase-site.xml.tmp");
    try (OutputStream out = Files.newOutputStream(tmp)) {
      c.writeXml(out);
    }
    Files.move(tmp, site, java.nio.file.StandardCopyOption.REPLACE_EXISTING,
        java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  private static void requireFree(int port, String what) throws IOException {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    } catch (BindException e) {
      throw new IllegalStateException(what + " port " + port
          + " on 127.0.0.1 is in use (another HBase or ZooKeeper?)", e);
    }
  }

  /** The port used last time if it is still free, else a free one. */
  private static int reuseOrPick(int previous) throws IOException {
    if (previous > 0) {
      try (ServerSocket s = new ServerSocket()) {
        s.setReuseAddress(true);
        s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), previous));
        return previous;
      } catch (BindException e) {
        LOG.info("Port {} is taken now; picking another", previous);
      }
    }
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  /**
   * Starts {@code mainClass} with {@code args} on this classpath, {@code confDir} first, in a
   * session of its own, its output appended to {@code log}.
   */
  private static Process spawn(Path abs, Path confDir, Path log, String mainClass,
      List<String> args, String heap) throws IOException {
    List<String> cmd = new ArrayList<>();
    // A session of its own: the server survives the terminal (SIGHUP) and Ctrl-C of the
    // command that started it.
    for (String setsid : List.of("/usr/bin/setsid", "/bin/setsid")) {
      if (Files.isExecutable(Path.of(setsid))) {
        cmd.add(setsid);
        break;
      }
    }
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.addAll(HBaseServerSettings.JVM_FLAGS);
    cmd.add("-Xmx" + heap);
    // The collector's log beside the process's own: a server that stops answering for seconds
    // may be collecting (docs/operating.md, "HBase settings for many groups").
    String logName = log.getFileName().toString().replaceFirst("\\.log$", "");
    cmd.add("-Xlog:gc*=info,safepoint=warning:file=" + log.resolveSibling("gc-" + logName + ".log")
        + ":time,uptime,level,tags:filecount=3,filesize=20m");
    cmd.add("-Djava.net.preferIPv4Stack=true");
    cmd.add("-D" + DIR_PROPERTY + "=" + abs);
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
    // The command line's logging file quiets org.apache; a server's log should not be.
    cmd.add("-Dorg.slf4j.simpleLogger.log.org.apache=info");
    cmd.add("-Dorg.slf4j.simpleLogger.log.org.paxoscp=info");
    cmd.add("-Dorg.slf4j.simpleLogger.showDateTime=true");
    cmd.add("-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS");
    cmd.add("-Dorg.slf4j.simpleLogger.logFile=System.out");
    cmd.add("-cp");
    cmd.add(confDir + File.pathSeparator + System.getProperty("java.class.path"));
    cmd.add(mainClass);
    cmd.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(cmd).directory(abs.toFile()).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
    File devNull = new File("/dev/null");
    if (devNull.exists()) {
      pb.redirectInput(ProcessBuilder.Redirect.from(devNull));
    }
    Files.writeString(log, "==== starting: " + String.join(" ", cmd) + "\n",
        StandardCharsets.UTF_8, java.nio.file.StandardOpenOption.CREATE,
        java.nio.file.StandardOpenOption.APPEND);
    Process p = pb.start();
    if (pb.redirectInput() == ProcessBuilder.Redirect.PIPE) {
      p.getOutputStream().close();
    }
    return p;
  }

  /** The live server process of {@code abs} named by its pid file, if any. */
  private static Optional<ProcessHandle> serverProcess(Path abs) {
    return liveProcess(pidFile(abs), abs);
  }

  /**
   * The live process named by pid file {@code pf}, if it is one of {@code abs}'s HBase processes.
   */
  private static Optional<ProcessHandle> liveProcess(Path pf, Path abs) {
    if (!Files.isRegularFile(pf)) {
      return Optional.empty();
    }
    long pid;
    try {
      pid = Long.parseLong(Files.readString(pf).trim());
    } catch (IOException | NumberFormatException e) {
      LOG.warn("Unreadable pid file {}: {}", pf, e.toString());
      return Optional.empty();
    }
    return ProcessHandle.of(pid).filter(ProcessHandle::isAlive)
        // The JDK may truncate a long command line (the classpath is long), so look only for the
        // directory marker, which comes before the classpath.
        .filter(h -> h.info().commandLine()
            .map(cl -> cl.contains("-D" + DIR_PROPERTY + "=" + abs + " "))
            // Without a readable command line, trust the pid file.
            .orElse(true));
  }

  private static void deletePidFile(Path abs) {
    try {
      Files.deleteIfExists(pidFile(abs));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + pidFile(abs), e);
    }
  }

  private static HBaseStoreConfig probeConfig(int zkPort) {
    return HBaseStoreConfig.builder("probe").zkQuorum(HBaseServerSettings.LOOPBACK).zkPort(zkPort)
        .deadline(PROBE_DEADLINE).adminDeadline(PROBE_DEADLINE).build();
  }

  /**
   * Whether HBase answers an admin call (so its master is initialized) and counts at least
   * {@code regionServers} live region servers.
   */
  private static boolean answers(Path abs, int zkPort, int regionServers) {
    if (zkPort <= 0) {
      return false;
    }
    AsyncConnection c;
    try {
      c = HBaseKvStore.connect(probeConfig(zkPort));
    } catch (StoreUnavailableException e) {
      return false;
    }
    try {
      Await.get(c.getAdmin().listNamespaces(), PROBE_DEADLINE, () -> "probe HBase of " + abs);
      return regionServers <= 1 || Await.get(c.getAdmin().getRegionServers(), PROBE_DEADLINE,
          () -> "list region servers of " + abs).size() >= regionServers;
    } catch (StoreUnavailableException e) {
      return false;
    } finally {
      HBaseKvStore.closeQuietly(c, "probe connection");
    }
  }

  // ---- region servers in processes of their own ----

  /** The most region servers {@link #start(Path, int, Duration, int)} runs. */
  public static final int MAX_REGION_SERVERS = 16;

  /** Key in the master's site file: how many region servers the directory's HBase runs. */
  private static final String REGION_SERVERS_KEY = "paxoscp.regionservers";
  private static final String REGION_SERVER_CLASS =
      "org.apache.hadoop.hbase.regionserver.HRegionServer";

  /**
   * One region server of a directory's HBase.
   *
   * @param index 1..{@link #regionServerCount}
   * @param port  its RPC port (0 before its first start)
   * @param pid   its process while it runs
   * @param log   its log file
   */
  public record RegionServer(int index, int port, OptionalLong pid, Path log) {
    /** {@code 127.0.0.1:port}, the host and port HBase names it by. */
    public String address() {
      return HBaseServerSettings.LOOPBACK + ":" + port;
    }
  }

  /**
   * How many region servers the directory's HBase was last started with (1: in the master's
   * process).
   */
  public static int regionServerCount(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    Path site = siteFile(abs);
    if (!Files.isRegularFile(site)) {
      return 1;
    }
    try {
      Configuration c = new Configuration(false);
      c.addResource(site.toUri().toURL());
      return Math.max(1, c.getInt(REGION_SERVERS_KEY, 1));
    } catch (IOException | RuntimeException e) {
      return 1;
    }
  }

  /**
   * The region servers in processes of their own (empty when the one region server runs in the
   * master's process).
   */
  public static List<RegionServer> regionServers(Path dir) {
    Path abs = dir.toAbsolutePath().normalize();
    int n = regionServerCount(abs);
    List<RegionServer> out = new ArrayList<>();
    for (int i = 1; i <= n && n > 1; i++) {
      OptionalLong pid = regionServerProcess(abs, i).map(h -> OptionalLong.of(h.pid()))
          .orElse(OptionalLong.empty());
      out.add(new RegionServer(i, regionServerPort(abs, i), pid, regionServerLog(abs, i)));
    }
    return out;
  }

  /**
   * Starts region server {@code index} of {@code dir}'s HBase (its master must run) on the port
   * it had before if still free, and returns once the process runs; the master counts it live
   * a moment later. A region server that runs already is left alone.
   */
  public static RegionServer startRegionServer(Path dir, int index) {
    Path abs = dir.toAbsolutePath().normalize();
    int n = regionServerCount(abs);
    if (index < 1 || index > n || n == 1) {
      throw new IllegalArgumentException("HBase of " + abs + " has no region server " + index
          + " in a process of its own (it runs " + n + ")");
    }
    Optional<ProcessHandle> running = regionServerProcess(abs, index);
    if (running.isPresent()) {
      return new RegionServer(index, regionServerPort(abs, index),
          OptionalLong.of(running.get().pid()), regionServerLog(abs, index));
    }
    Optional<Ports> master = readPorts(abs);
    if (master.isEmpty()) {
      throw new IllegalStateException("HBase of " + abs + " was never started");
    }
    try {
      int port = regionServerPort(abs, index);
      if (port <= 0 || !free(port)) {
        java.util.Set<Integer> taken = new java.util.HashSet<>(List.of(master.get().zk(),
            master.get().master(), master.get().regionServer()));
        for (int i : regionServerIndexes(abs)) {
          taken.add(regionServerPort(abs, i));
        }
        port = distinctPort(0, taken);
        writeRegionServerSite(abs, index, port);
      }
      Path rsDir = abs.resolve("rs-" + index);
      Process p = spawn(abs, rsDir.resolve("conf"), regionServerLog(abs, index),
          REGION_SERVER_CLASS, List.of("start"), HBaseServerSettings.REGION_SERVER_HEAP);
      Files.writeString(regionServerPidFile(abs, index), Long.toString(p.pid()) + "\n");
      LOG.info("Started region server {} of {}: pid {}, port {}", index, abs, p.pid(), port);
      return new RegionServer(index, port, OptionalLong.of(p.pid()), regionServerLog(abs, index));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start region server " + index + " of " + abs, e);
    }
  }

  /**
   * Kills region server {@code index} with SIGKILL, as a crash does: no flush, no goodbye to the
   * master, which notices once its ZooKeeper session expires, splits its write-ahead log and
   * assigns its regions to the others. Returns whether a process was killed.
   */
  public static boolean killRegionServer(Path dir, int index) {
    Path abs = dir.toAbsolutePath().normalize();
    Optional<ProcessHandle> h = regionServerProcess(abs, index);
    if (h.isEmpty()) {
      return false;
    }
    h.get().destroyForcibly();
    if (!awaitExitAfterKill(h.get())) {
      throw new IllegalStateException("region server " + index + " of " + abs + " (pid "
          + h.get().pid() + ") survived SIGKILL for 10 s");
    }
    deleteQuietly(regionServerPidFile(abs, index));
    LOG.info("Killed region server {} of {} (pid {})", index, abs, h.get().pid());
    return true;
  }

  /**
   * Kills every region server process of {@code abs} (a start that failed, a dead master), by
   * the pid files present, whatever count the site file holds now.
   */
  private static void killRegionServers(Path abs) {
    for (int i : regionServerIndexes(abs)) {
      killRegionServer(abs, i);
    }
  }

  /** The indexes of the {@code rs-<i>} directories of {@code abs}, sorted. */
  private static List<Integer> regionServerIndexes(Path abs) {
    List<Integer> out = new ArrayList<>();
    try (var dirs = Files.list(abs)) {
      for (Path d : dirs.toList()) {
        String name = d.getFileName().toString();
        if (name.matches("rs-[0-9]{1,3}") && Files.isDirectory(d)) {
          out.add(Integer.parseInt(name.substring(3)));
        }
      }
    } catch (IOException e) {
      // no directory yet: no region servers
    }
    out.sort(null);
    return out;
  }

  /** Writes region server {@code index}'s site file: this HBase's settings and its port. */
  private static void writeRegionServerSite(Path abs, int index, int port) throws IOException {
    Ports master = readPorts(abs).orElseThrow(() -> new IllegalStateException("HBase of " + abs
        + " has no site file"));
    Path rsDir = abs.resolve("rs-" + index);
    java.util.Map<String, String> site = new java.util.LinkedHashMap<>(
        HBaseServerSettings.regionServer(abs, master.zk(), master.master(), port));
    site.put("hbase.tmp.dir", rsDir.resolve("tmp").toString());
    writeSite(rsDir.resolve("conf").resolve("hbase-site.xml"), site);
  }

  private static boolean free(int port) {
    try (ServerSocket s = new ServerSocket()) {
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static Path regionServerPidFile(Path abs, int index) {
    return abs.resolve("rs-" + index).resolve("rs.pid");
  }

  private static Path regionServerLog(Path abs, int index) {
    return abs.resolve("logs").resolve("rs-" + index + ".log");
  }

  /** The port region server {@code index} was last started on, 0 if never. */
  private static int regionServerPort(Path abs, int index) {
    Path site = abs.resolve("rs-" + index).resolve("conf").resolve("hbase-site.xml");
    if (!Files.isRegularFile(site)) {
      return 0;
    }
    try {
      Configuration c = new Configuration(false);
      c.addResource(site.toUri().toURL());
      return c.getInt("hbase.regionserver.port", 0);
    } catch (IOException | RuntimeException e) {
      return 0;
    }
  }

  private static Optional<ProcessHandle> regionServerProcess(Path abs, int index) {
    return liveProcess(regionServerPidFile(abs, index), abs);
  }

  private static void deleteQuietly(Path p) {
    try {
      Files.deleteIfExists(p);
    } catch (IOException e) {
      LOG.warn("Cannot remove {}: {}", p, e.toString());
    }
  }

  /**
   * Asks the master to shut the cluster down. The master may drop the connection before it
   * answers, so only a failure to reach it at all counts as failure.
   */
  private static boolean requestShutdown(Path abs, int zkPort) {
    if (zkPort <= 0) {
      return false;
    }
    AsyncConnection c;
    try {
      c = HBaseKvStore.connect(probeConfig(zkPort));
    } catch (StoreUnavailableException e) {
      LOG.warn("Cannot reach HBase of {} to shut it down: {}", abs, e.getMessage());
      return false;
    }
    try {
      c.getAdmin().shutdown().get(10, TimeUnit.SECONDS);
      return true;
    } catch (ExecutionException | TimeoutException e) {
      LOG.info("Shutdown request to HBase of {} ended with {}; waiting for the process to exit",
          abs, e.toString());
      return true;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } finally {
      HBaseKvStore.closeQuietly(c, "shutdown connection");
    }
  }

  private static boolean awaitExit(ProcessHandle h, Duration timeout) {
    try {
      h.onExit().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
      return true;
    } catch (TimeoutException e) {
      return false;
    } catch (ExecutionException e) {
      return !h.isAlive();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return !h.isAlive();
    }
  }

  /** SIGTERM, then SIGKILL if the process is still there after {@code grace}. */
  private static boolean kill(ProcessHandle h, Duration grace) {
    h.destroy();
    if (awaitExit(h, grace)) {
      return true;
    }
    if (!Thread.currentThread().isInterrupted()) {
      LOG.warn("pid {} ignored SIGTERM for {} s; sending SIGKILL", h.pid(), grace.toSeconds());
    }
    h.destroyForcibly();
    awaitExitAfterKill(h);
    return false;
  }

  /**
   * Waits up to 10 s for a process sent SIGKILL to be gone, even on an interrupted thread (a
   * start or stop cut short still cleans up): the wait is bounded, and the interrupt is kept.
   */
  private static boolean awaitExitAfterKill(ProcessHandle h) {
    boolean interrupted = Thread.interrupted();
    try {
      return awaitExit(h, Duration.ofSeconds(10));
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private static String logTail(Path abs) {
    try {
      List<String> lines = Files.readAllLines(logFile(abs), StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    } catch (IOException | UncheckedIOException e) {
      return "(log unreadable: " + e + ")";
    }
  }
}
