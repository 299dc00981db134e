package org.paxoscp.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.local.ClusterLayout;
import org.paxoscp.local.FreePorts;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.local.ServiceProcess;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.CountingKvStore;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.transport.ClusterConfig;

/**
 * {@code paxoscp bench-groups}' measurement of one point: a fresh cluster of one Transaction
 * Service process per DC ({@link ServiceProcess}, each with its own {@code -Xmx}), on a fresh
 * standalone HBase (one namespace per DC) or on in-memory stores, then closed-loop clients in
 * this process that each run begin / read one key / write one key / commit on a group drawn from
 * {@code N} groups, then the services' CPU time, store requests and live heap (after a full GC),
 * then everything is stopped again. Every point starts from nothing, so groups of one point never
 * weigh on the next.
 *
 * <p>Not thread-safe: one point at a time. {@link #close()} (also a shutdown hook, for Ctrl-C)
 * stops whatever a point left running.
 */
public final class GroupsBench implements AutoCloseable {

  /** Transactions per point when neither a count nor a duration is given. */
  public static long defaultTxns(long groups) {
    return Math.max(2_000, Math.min(groups, 50_000));
  }

  /**
   * A count as written on the command line: {@code 1000000}, {@code 1e6}, {@code 10^6}, {@code
   * 10k}, {@code 1m}.
   *
   * @throws IllegalArgumentException if it is not a positive whole number
   */
  public static long parseCount(String text) {
    String t = text.trim().toLowerCase(Locale.ROOT).replace("_", "");
    BigDecimal v;
    try {
      if (t.startsWith("10^")) {
        v = BigDecimal.TEN.pow(Integer.parseInt(t.substring(3)));
      } else if (t.endsWith("k")) {
        v = new BigDecimal(t.substring(0, t.length() - 1)).scaleByPowerOfTen(3);
      } else if (t.endsWith("m")) {
        v = new BigDecimal(t.substring(0, t.length() - 1)).scaleByPowerOfTen(6);
      } else {
        v = new BigDecimal(t);
      }
      long n = v.longValueExact();
      if (n < 1) {
        throw new ArithmeticException();
      }
      return n;
    } catch (NumberFormatException | ArithmeticException e) {
      throw new IllegalArgumentException("--groups: a positive whole number (e.g. 10000, 1e6, "
          + "10^6, 10k), was '" + text + "'");
    }
  }

  /**
   * The benchmark's settings.
   *
   * @param dcs the DCs, one service process each
   * @param clientDcs client thread {@code i} has home DC {@code clientDcs[i mod size]}
   * @param clients closed-loop client threads
   * @param store where the services keep their data
   * @param serviceHeap each service's {@code -Xmx}
   * @param serviceJvmOptions further JVM options of every service
   * @param serviceSettings extra {@code paxoscp.service.*} keys of every service
   * @param serviceThreads each service's worker threads
   * @param protocol the clients' commit protocol
   * @param wan the WAN emulation (its {@code enabled} flag turns it on)
   * @param txnsPerPoint transactions per point; 0 for {@link #defaultTxns} (ignored when {@code
   *     duration} is set)
   * @param duration how long each point's load runs, or null to run {@code txnsPerPoint}
   * @param warmupTxns transactions run before each point's measured load (same groups and
   *     distribution; their groups count as touched, nothing else of them is counted)
   * @param keysPerGroup keys per group that reads and writes draw from
   * @param valueBytes size of a written value
   * @param countStore run the services as {@link CountingServiceMain} (store requests counted)
   *     rather than {@code paxoscp service}
   * @param requestTimeout the cluster's request timeout
   * @param workDir where configurations, counts files and HBase data live while a point runs
   * @param logDir where service logs and class histograms are kept
   * @param progressEvery how often a progress line is printed during the load
   * @param regionServers region servers of the HBase (1: in the master's process; more: each a
   *     process of its own)
   */
  public record Settings(List<String> dcs, List<String> clientDcs, int clients,
      LocalCluster.StoreKind store, String serviceHeap, List<String> serviceJvmOptions,
      Map<String, String> serviceSettings, int serviceThreads, CommitProtocol protocol,
      ClusterConfig.Wan wan, long txnsPerPoint, Duration duration, long warmupTxns,
      int keysPerGroup,
      int valueBytes, boolean countStore, Duration requestTimeout, Path workDir, Path logDir,
      Duration progressEvery, int regionServers) {
    public Settings {
      dcs = List.copyOf(dcs);
      clientDcs = List.copyOf(clientDcs);
      serviceJvmOptions = List.copyOf(serviceJvmOptions);
      serviceSettings = Map.copyOf(serviceSettings);
    }
  }

  private static final Duration START_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration STOP_GRACE = Duration.ofSeconds(10);

  private final Settings s;
  private final PrintStream progress;
  private final HeapProbe heap = new HeapProbe();
  private final List<ServiceProcess> running = new ArrayList<>();
  private Path hbaseDir;
  /** Region servers of the running point's HBase. */
  private int regionServers = 1;
  /** Where the running point's HBase logs are kept once it stops. */
  private Path hbaseLogsTo;
  private final Thread hook = new Thread(this::close, "bench-groups-shutdown");
  private boolean closed;

  /** A benchmark printing progress to {@code progress}; registers a shutdown hook. */
  public GroupsBench(Settings settings, PrintStream progress) {
    this.s = settings;
    this.progress = progress;
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** Measures {@code groups} groups drawn by {@code dist} on a fresh cluster. */
  public GroupsRow run(long groups, GroupPicker.Dist dist) throws IOException {
    return run(groups, dist, s.regionServers());
  }

  /**
   * Measures {@code groups} groups drawn by {@code dist} on a fresh cluster whose HBase has
   * {@code regionServers} region servers (the row's store is then {@code hbase/<n>rs}).
   */
  public GroupsRow run(long groups, GroupPicker.Dist dist, int regionServers)
      throws IOException {
    this.regionServers = regionServers;
    String point = groups + "-" + dist.label() + (regionServers > 1 ? "-" + regionServers + "rs"
        : "");
    Path work = s.workDir().resolve(point);
    Path logs = s.logDir().resolve(point);
    Files.createDirectories(work);
    Files.createDirectories(logs);
    log("N=%d %s: starting %s services (-Xmx%s, store %s) ...", groups, dist.label(),
        s.dcs().size(), s.serviceHeap(), s.store().toString().toLowerCase(Locale.ROOT));
    List<TxnClient> clients = new ArrayList<>();
    try {
      Integer zkPort = null;
      if (s.store() == LocalCluster.StoreKind.HBASE) {
        zkPort = FreePorts.tcp();
        synchronized (this) {
          hbaseDir = work.resolve("hbase");
        }
        long t0 = System.nanoTime();
        synchronized (this) {
          hbaseLogsTo = logs;
        }
        StandaloneHBase.Status hs = StandaloneHBase.start(work.resolve("hbase"), zkPort,
            Duration.ofSeconds(240), regionServers);
        log("N=%d %s: HBase pid %d with %d region server(s) ready in %.1f s (ZooKeeper port "
            + "%d)", groups, dist.label(), hs.pid().orElse(-1), regionServers,
            (System.nanoTime() - t0) / 1e9, zkPort);
      }
      ClusterConfig cluster = writeConfigs(work, zkPort);
      Map<String, ServiceProcess> services = new LinkedHashMap<>();
      for (String dc : s.dcs()) {
        Path conf = work.resolve("conf").resolve(dc + ".properties");
        List<String> program = s.countStore()
            ? List.of(CountingServiceMain.class.getName(), conf.toString(),
                countsFile(work, dc).toString())
            : List.of("org.paxoscp.cli.Main", "service", "--config", conf.toString());
        List<String> jvm = new ArrayList<>();
        jvm.add("-XX:+ExitOnOutOfMemoryError");
        jvm.addAll(s.serviceJvmOptions());
        ServiceProcess p = ServiceProcess.of("service-" + dc, dc, program, "serving on udp",
            logs.resolve("service-" + dc + ".log"), s.serviceHeap(), jvm);
        synchronized (this) {
          if (closed) {
            throw new IllegalStateException("bench-groups is stopping");
          }
          running.add(p);
        }
        p.start(START_TIMEOUT);
        services.put(dc, p);
      }
      log("N=%d %s: services up (pids %s)", groups, dist.label(),
          services.values().stream().map(p -> Long.toString(p.pid())).toList());
      for (String dc : new java.util.LinkedHashSet<>(s.clientDcs())) {
        clients.add(TxnClient.builder(cluster, dc, s.protocol()).meterRegistry(clientMeters)
            .build());
      }
      Map<String, Double> idle = new LinkedHashMap<>();
      for (var e : services.entrySet()) {
        idle.put(e.getKey(), heap.liveHeap(e.getValue().pid()).usedMb());
      }
      GroupsRow row = load(groups, dist, services, clients, work, idle, logs);
      if (zkPort != null) {
        logSpread("N=" + groups + " " + dist.label(), zkPort);
      }
      return row;
    } finally {
      for (TxnClient c : clients) {
        try {
          c.close();
        } catch (RuntimeException e) {
          log("closing a client: %s", e);
        }
      }
      stopAll();
      deleteRecursively(work);
    }
  }

  /** The clients' meters (their OVERLOADED back-offs among them). */
  private final io.micrometer.core.instrument.MeterRegistry clientMeters =
      new io.micrometer.core.instrument.simple.SimpleMeterRegistry();

  /** Back-offs the clients took after OVERLOADED refusals so far. */
  private long overloadBackoffs() {
    double n = 0;
    for (var c : clientMeters.find("paxoscp.client.overload.backoffs").counters()) {
      n += c.count();
    }
    return (long) n;
  }

  /** What one phase of client load counted. */
  private static final class Tally {
    final LongAdder done = new LongAdder();
    final LongAdder commits = new LongAdder();
    final LongAdder aborted = new LongAdder();
    /** Of the aborts: the services refused the commit OVERLOADED before its entry went out. */
    final LongAdder abortedOverloaded = new LongAdder();
    final LongAdder unknown = new LongAdder();
    final LongAdder unavailable = new LongAdder();
    final LongAdder errors = new LongAdder();
    final Histogram commitMicros = new ConcurrentHistogram(3);
    final Histogram txnMicros = new ConcurrentHistogram(3);
  }

  /**
   * Runs the clients until {@code target} transactions were started or {@code deadline} (a
   * {@link System#nanoTime} value) passed, or a majority of the services is gone.
   */
  private Tally runClients(String label, GroupPicker picker, Map<String, TxnClient> byDc,
      long target, long deadline, GroupSet touched, GroupSet committedGroups,
      Map<String, ServiceProcess> services) {
    Tally t = new Tally();
    AtomicLong issued = new AtomicLong();
    AtomicInteger errorsLogged = new AtomicInteger();
    AtomicBoolean stop = new AtomicBoolean();
    byte[] value = new byte[s.valueBytes()];
    Arrays.fill(value, (byte) 'v');
    long start = System.nanoTime();
    ExecutorService pool = Executors.newFixedThreadPool(s.clients(), r -> {
      Thread th = new Thread(r, "bench-groups-client");
      th.setDaemon(true);
      return th;
    });
    List<Future<?>> futures = new ArrayList<>();
    for (int c = 0; c < s.clients(); c++) {
      TxnClient client = byDc.get(s.clientDcs().get(c % s.clientDcs().size()));
      futures.add(pool.submit(() -> {
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!stop.get() && issued.getAndIncrement() < target
            && System.nanoTime() < deadline) {
          long g = picker.next();
          touched.add(g);
          String readKey = "k" + rnd.nextInt(s.keysPerGroup());
          String writeKey = "k" + rnd.nextInt(s.keysPerGroup());
          long t0 = System.nanoTime();
          Transaction tx = null;
          try {
            tx = client.begin(GroupPicker.name(g));
            tx.get(readKey);
            tx.put(writeKey, value);
            long c0 = System.nanoTime();
            tx.commit();
            long t1 = System.nanoTime();
            t.commits.increment();
            committedGroups.add(g);
            t.commitMicros.recordValue(Math.max(1, (t1 - c0) / 1000));
            t.txnMicros.recordValue(Math.max(1, (t1 - t0) / 1000));
          } catch (TransactionAbortedException e) {
            t.aborted.increment();
            if (e.overloaded()) {
              t.abortedOverloaded.increment();
            }
          } catch (OutcomeUnknownException e) {
            t.unknown.increment();
          } catch (UnavailableException e) {
            t.unavailable.increment();
          } catch (RuntimeException e) {
            t.errors.increment();
            if (errorsLogged.incrementAndGet() <= 5) {
              log("%s: transaction failed: %s", label, e);
            }
          } finally {
            if (tx != null && tx.isActive()) {
              try {
                tx.abort();
              } catch (RuntimeException e) {
                // the transaction is over either way; its outcome is counted above
              }
            }
          }
          t.done.increment();
        }
        return null;
      }));
    }
    pool.shutdown();
    long lastDone = 0;
    long lastAt = start;
    List<Double> intervalRates = new ArrayList<>();
    try {
      while (!pool.awaitTermination(s.progressEvery().toMillis(), TimeUnit.MILLISECONDS)) {
        long now = System.nanoTime();
        long d = t.done.sum();
        int alive = (int) services.values().stream().filter(ServiceProcess::alive).count();
        log("%s: %d/%s txns, %d committed, %.1f commits/s (last %.0f s: %.1f txns/s), "
                + "%d groups touched, services alive %d/%d", label, d,
            target == Long.MAX_VALUE ? "-" : Long.toString(target), t.commits.sum(),
            t.commits.sum() / ((now - start) / 1e9), (now - lastAt) / 1e9,
            (d - lastDone) / ((now - lastAt) / 1e9), touched.size(), alive, services.size());
        intervalRates.add((d - lastDone) / ((now - lastAt) / 1e9));
        lastDone = d;
        lastAt = now;
        if (alive <= services.size() / 2) {
          log("%s: no majority of services alive; stopping the load", label);
          stop.set(true);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stop.set(true);
      pool.shutdownNow();
      throw new IllegalStateException("interrupted", e);
    }
    for (Future<?> f : futures) {
      try {
        f.get();
      } catch (Exception e) {
        log("%s: a client thread failed: %s", label, e);
      }
    }
    logSteadiness(label, intervalRates);
    return t;
  }

  private GroupsRow load(long groups, GroupPicker.Dist dist, Map<String, ServiceProcess> services,
      List<TxnClient> clientList, Path work, Map<String, Double> idleHeap, Path logs)
      throws IOException {
    Map<String, TxnClient> byDc = new LinkedHashMap<>();
    for (TxnClient c : clientList) {
      byDc.put(c.homeDc(), c);
    }
    String label = "N=" + groups + " " + dist.label();
    GroupPicker picker = new GroupPicker(dist, groups);
    GroupSet touched = new GroupSet(groups);
    GroupSet committedGroups = new GroupSet(groups);
    if (s.warmupTxns() > 0) {
      log("%s: warm-up: %d transactions (not measured; their groups count as touched)", label,
          s.warmupTxns());
      Tally w = runClients(label + " warm-up", picker, byDc, s.warmupTxns(), Long.MAX_VALUE,
          touched, committedGroups, services);
      log("%s: warm-up done: %d of %d committed", label, w.commits.sum(), w.done.sum());
    }
    long target = s.duration() != null ? Long.MAX_VALUE
        : s.txnsPerPoint() > 0 ? s.txnsPerPoint() : defaultTxns(groups);
    Map<String, Long> cpu0 = serviceCpuNanos(services);
    long clientCpu0 = cpuNanos(ProcessHandle.current());
    Map<String, CountingServiceMain.StoreCounts> counts0 = s.countStore()
        ? storeCounts(work, System.currentTimeMillis()) : Map.of();
    log("%s: load: %d clients in %s, %s, %s", label, s.clients(), s.clientDcs(),
        s.protocol().name().toLowerCase(Locale.ROOT), s.duration() != null
            ? s.duration().toSeconds() + " s" : target + " transactions");
    long start = System.nanoTime();
    long deadline = s.duration() != null ? start + s.duration().toNanos() : Long.MAX_VALUE;
    long backoffs0 = overloadBackoffs();
    Tally t = runClients(label, picker, byDc, target, deadline, touched, committedGroups,
        services);
    long end = System.nanoTime();
    long endMillis = System.currentTimeMillis();
    Map<String, Long> cpu1 = serviceCpuNanos(services);
    long clientCpu1 = cpuNanos(ProcessHandle.current());
    double seconds = (end - start) / 1e9;
    long serviceCpuNanos = 0;
    boolean cpuKnown = true;
    for (String dc : services.keySet()) {
      Long a = cpu0.get(dc);
      Long b = cpu1.get(dc);
      if (a == null || b == null) {
        cpuKnown = false;
      } else {
        serviceCpuNanos += b - a;
      }
    }
    long backoffs = overloadBackoffs() - backoffs0;
    long storeRequests = -1;
    long refused = -1;
    if (s.countStore()) {
      Map<String, CountingServiceMain.StoreCounts> counts1 = storeCounts(work, endMillis);
      if (counts1.size() == services.size()) {
        storeRequests = 0;
        refused = 0;
        for (var e : counts1.entrySet()) {
          CountingKvStore.Counts d = e.getValue().counts().minus(counts0.get(e.getKey())
              .counts());
          storeRequests += d.operations();
          refused += e.getValue().overloaded() - counts0.get(e.getKey()).overloaded();
        }
      }
    }
    Map<String, Double> heapMb = new LinkedHashMap<>();
    int alive = 0;
    for (var e : services.entrySet()) {
      ServiceProcess p = e.getValue();
      if (!p.alive()) {
        heapMb.put(e.getKey(), -1.0);
        log("N=%d %s: service %s is not running (see %s)", groups, dist.label(), e.getKey(),
            logs.resolve("service-" + e.getKey() + ".log"));
        continue;
      }
      alive++;
      try {
        HeapProbe.Heap h = heap.liveHeap(p.pid());
        heapMb.put(e.getKey(), h.usedMb());
        heap.classHistogram(p.pid(), logs.resolve("histogram-" + e.getKey() + ".txt"), 40);
      } catch (RuntimeException ex) {
        heapMb.put(e.getKey(), -1.0);
        log("N=%d %s: heap of %s not measured: %s", groups, dist.label(), e.getKey(), ex);
      }
    }
    GroupsRow row = new GroupsRow(groups, dist, s.protocol().name().toLowerCase(Locale.ROOT),
        s.store().toString().toLowerCase(Locale.ROOT)
            + (regionServers > 1 ? "/" + regionServers + "rs" : ""), s.wan().enabled(),
        s.clients(), seconds,
        t.done.sum(), t.commits.sum(), t.aborted.sum(), t.unknown.sum(), t.unavailable.sum(),
        t.errors.sum(), pct(t.commitMicros, 50), pct(t.commitMicros, 99),
        pct(t.txnMicros, 50), pct(t.txnMicros, 99), touched.size(), committedGroups.size(),
        idleHeap, heapMb,
        cpuKnown ? serviceCpuNanos / 1e6 : -1, clientCpu1 - clientCpu0 < 0 ? -1
            : (clientCpu1 - clientCpu0) / 1e6, storeRequests, alive);
    log("N=%d %s: %d commits in %.1f s (%.1f/s), %d failed, %d groups touched, heap max "
            + "%.1f MB (idle %.1f MB), %.2f service CPU ms/commit, %s store requests/commit",
        groups, dist.label(), row.commits(), seconds, row.commitsPerSecond(), row.failed(),
        row.touched(), row.heapMaxMb(), row.heapIdleMaxMb(), row.cpuMsPerCommit(),
        GroupsRow.f(row.storeRequestsPerCommit(), 2));
    log("N=%d %s: outcomes: %d committed, %d aborted (%d of them refused OVERLOADED before "
            + "their entry went out, %d conflicts), %d UNKNOWN, %d unavailable, %d errors; "
            + "services refused %s requests OVERLOADED; clients backed off %d times on "
            + "OVERLOADED", groups, dist.label(), t.commits.sum(), t.aborted.sum(),
        t.abortedOverloaded.sum(), t.aborted.sum() - t.abortedOverloaded.sum(), t.unknown.sum(),
        t.unavailable.sum(), t.errors.sum(), refused < 0 ? "(not counted)" : refused, backoffs);
    return row;
  }

  /** Writes every service's configuration; returns the clients' cluster configuration. */
  private ClusterConfig writeConfigs(Path work, Integer zkPort) {
    ClusterLayout.Builder b = ClusterLayout.builder(s.dcs()).requestTimeout(s.requestTimeout())
        .wan(s.wan());
    Map<String, String> binds = new LinkedHashMap<>();
    for (String dc : s.dcs()) {
      binds.put(dc, "127.0.0.1:" + FreePorts.udp());
      b.endpoints(dc, List.of(binds.get(dc)));
      if (zkPort != null) {
        b.hbase(dc, "127.0.0.1", zkPort);
      }
    }
    ClusterLayout layout = b.build();
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put(ServiceConfig.THREADS.name(), Integer.toString(s.serviceThreads()));
    settings.put(ServiceConfig.STORE.name(), s.store().toString().toLowerCase(Locale.ROOT));
    // Every point starts a new cluster, never restarts a service.
    settings.put(ServiceConfig.MEMORY_NEW.name(), "true");
    settings.putAll(s.serviceSettings());
    for (String dc : s.dcs()) {
      ClusterLayout.writePrivate(work.resolve("conf").resolve(dc + ".properties"),
          layout.serviceProperties(dc, binds.get(dc), settings),
          "paxoscp bench-groups; the key seals every datagram");
    }
    return layout.config();
  }

  private static Path countsFile(Path work, String dc) {
    return work.resolve("store-counts-" + dc + ".txt");
  }

  /**
   * Every service's store counts written at or after {@code notBeforeMillis} (waiting up to 5 s
   * for them); services without such a sample are left out.
   */
  private Map<String, CountingServiceMain.StoreCounts> storeCounts(Path work,
      long notBeforeMillis) {
    Map<String, CountingServiceMain.StoreCounts> m = new LinkedHashMap<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    for (String dc : s.dcs()) {
      Path f = countsFile(work, dc);
      while (true) {
        try {
          CountingServiceMain.StoreCounts c = CountingServiceMain.read(f);
          if (c.atMillis() >= notBeforeMillis) {
            m.put(dc, c);
            break;
          }
        } catch (UncheckedIOException | IllegalArgumentException e) {
          // not written yet, or being replaced: try again
        }
        if (System.nanoTime() > deadline) {
          log("store counts of %s: no sample after the load in %s", dc, f);
          break;
        }
        sleep(50);
      }
    }
    return m;
  }

  private static Map<String, Long> serviceCpuNanos(Map<String, ServiceProcess> services) {
    Map<String, Long> m = new LinkedHashMap<>();
    for (var e : services.entrySet()) {
      long pid = e.getValue().pid();
      if (pid < 0) {
        continue;
      }
      ProcessHandle.of(pid).ifPresent(h -> {
        long n = cpuNanos(h);
        if (n >= 0) {
          m.put(e.getKey(), n);
        }
      });
    }
    return m;
  }

  private static long cpuNanos(ProcessHandle h) {
    return h.info().totalCpuDuration().map(Duration::toNanos).orElse(-1L);
  }

  private static double pct(Histogram h, double p) {
    return h.getTotalCount() == 0 ? -1 : h.getValueAtPercentile(p) / 1000.0;
  }

  /**
   * How the region servers shared the work: each server's read and write requests on the DCs'
   * tables (from the servers' own region metrics) as a share of the total, and the largest
   * distance from an even share.
   */
  private void logSpread(String label, int zkPort) {
    try (org.paxoscp.store.hbase.RegionControl control =
        org.paxoscp.store.hbase.RegionControl.connect(zkPort, Duration.ofSeconds(30))) {
      Map<String, Long> counts = control.requestCounts(s.dcs());
      long total = counts.values().stream().mapToLong(Long::longValue).sum();
      if (counts.size() < 2 || total == 0) {
        log("%s: region server requests: %s", label, counts);
        return;
      }
      double even = total / (double) counts.size();
      double worst = 0;
      StringBuilder b = new StringBuilder();
      for (var e : counts.entrySet()) {
        double off = (e.getValue() - even) / even;
        worst = Math.max(worst, Math.abs(off));
        b.append(String.format("%s%s %d (%.1f%%, %+.0f%% from even)", b.isEmpty() ? "" : "; ",
            e.getKey(), e.getValue(), 100.0 * e.getValue() / total, 100 * off));
      }
      log("%s: region server requests: %s; spread: the farthest is %.0f%% from an even share "
          + "(%s 25%%)", label, b, 100 * worst, worst <= 0.25 ? "within" : "NOT within");
    } catch (RuntimeException e) {
      log("%s: region server request counts not read: %s", label, e);
    }
  }

  /**
   * Whether the load ran steadily: the slowest progress interval against the median one (the
   * last, partial interval left out). A stall of the store shows here as intervals far below
   * the median.
   */
  private void logSteadiness(String label, List<Double> rates) {
    if (rates.size() < 3) {
      return;
    }
    List<Double> full = new ArrayList<>(rates.subList(0, rates.size() - 1));
    List<Double> sorted = new ArrayList<>(full);
    sorted.sort(null);
    double median = sorted.get(sorted.size() / 2);
    int slowest = full.indexOf(sorted.get(0));
    long below = full.stream().filter(r -> r < median / 2).count();
    log("%s: steadiness: median interval %.1f txns/s, slowest %.1f (interval %d of %d); %d "
        + "interval(s) below half the median", label, median, sorted.get(0), slowest + 1,
        full.size(), below);
  }

  /** Copies the HBase logs of a point to its log directory, where they outlive the point. */
  private void keepHBaseLogs(Path hd, Path to) {
    Path from = hd.resolve("logs");
    if (to == null || !Files.isDirectory(from)) {
      return;
    }
    try (var files = Files.list(from)) {
      for (Path f : files.toList()) {
        Files.copy(f, to.resolve("hbase-" + f.getFileName()),
            java.nio.file.StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      log("keeping the HBase logs of %s: %s", hd, e);
    }
  }

  private void stopAll() {
    List<ServiceProcess> toStop;
    Path hd;
    Path hbaseLogs;
    synchronized (this) {
      toStop = new ArrayList<>(running);
      running.clear();
      hd = hbaseDir;
      hbaseDir = null;
      hbaseLogs = hbaseLogsTo;
      hbaseLogsTo = null;
    }
    for (ServiceProcess p : toStop) {
      try {
        p.stop(STOP_GRACE);
      } catch (RuntimeException e) {
        p.kill();
      }
    }
    if (hd != null) {
      try {
        StandaloneHBase.stop(hd, Duration.ofSeconds(60));
      } catch (RuntimeException e) {
        log("stopping HBase %s: %s", hd, e);
      }
      keepHBaseLogs(hd, hbaseLogs);
    }
  }

  /** Stops whatever a point left running and deletes the work directory. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // already shutting down: we run in the hook
    }
    stopAll();
    deleteRecursivelyQuietly(s.workDir());
  }

  private void log(String fmt, Object... args) {
    progress.printf(Locale.ROOT, "bench-groups: " + fmt + "%n", args);
    progress.flush();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Deletes {@code dir} and everything under it; reports (does not throw) what it cannot. */
  public static void deleteRecursivelyQuietly(Path dir) {
    try {
      deleteRecursively(dir);
    } catch (IOException | UncheckedIOException e) {
      System.err.println("bench-groups: could not delete " + dir + ": " + e);
    }
  }

  static void deleteRecursively(Path dir) throws IOException {
    if (!Files.exists(dir)) {
      return;
    }
    try (var st = Files.walk(dir)) {
      for (Path p : st.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  /** A set of group indexes in {@code [0, n)}: a bitmap, safe for concurrent adds. */
  static final class GroupSet {
    private final AtomicLongArray words;
    private final LongAdder size = new LongAdder();

    GroupSet(long n) {
      long w = (n + 63) / 64;
      if (w > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("too many groups: " + n);
      }
      words = new AtomicLongArray((int) w);
    }

    /** Adds {@code i}; true if it was not there. */
    boolean add(long i) {
      int w = (int) (i >>> 6);
      long bit = 1L << (i & 63);
      while (true) {
        long old = words.get(w);
        if ((old & bit) != 0) {
          return false;
        }
        if (words.compareAndSet(w, old, old | bit)) {
          size.increment();
          return true;
        }
      }
    }

    long size() {
      return size.sum();
    }
  }
}
