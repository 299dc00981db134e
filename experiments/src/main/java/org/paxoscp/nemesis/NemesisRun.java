package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.FreePorts;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;

/**
 * One nemesis run on real processes: a standalone HBase server (one namespace per DC), one
 * Transaction Service process per DC (two for the first DC), each behind a {@link FaultProxy},
 * the {@link NemesisWorkload} in this process, and a seeded schedule of faults. At the end
 * everything is healed, every DC catches up, histories and logs are exported, and the run is
 * checked. See {@link NemesisCommand} for the command line.
 *
 * <p>{@link #close()} stops every process and thread the run started; it is idempotent and runs
 * from a shutdown hook too (Ctrl-C).
 */
public final class NemesisRun implements AutoCloseable {

  /** The kinds of fault the nemesis injects. */
  public enum Fault {
    KILL_RESTART("kill -9 + restart of a service"),
    PAUSE("SIGSTOP/SIGCONT of a service"),
    PARTITION("one DC partitioned"),
    MAJORITY_DOWN("two DCs down at once"),
    NET_BURST("loss/dup/delay burst"),
    HBASE_RESTART("HBase restart"),
    CLIENT_CRASH("client crash mid-commit");

    final String label;

    Fault(String label) {
      this.label = label;
    }
  }

  /**
   * The run's settings.
   *
   * @param dcs DC names (at least 3 for the majority-down fault to make sense)
   * @param duration how long the workload runs under faults, at least: every kind of {@code
   *     faults} is injected once even if that takes longer
   * @param seed seeds the fault schedule, the workload and the proxies
   * @param dir work directory (HBase data, configurations, process logs)
   * @param export where histories and logs are exported
   * @param requestTimeout the protocol's request timeout
   * @param faults the kinds to inject
   * @param attrGroups how many attribute-workload groups
   * @param bankGroups how many closed-economy groups
   * @param hbasePerDc one HBase server per DC (an HBase restart is then under one DC) rather
   *     than one shared by every DC, each in its own namespace
   * @param netns run each DC's services in a network namespace of their own ({@link
   *     NetNamespaces}); a partition is then a link taken down
   */
  public record Options(List<String> dcs, Duration duration, long seed, Path dir, Path export,
      Duration requestTimeout, Set<Fault> faults, int attrGroups, int bankGroups,
      boolean hbasePerDc, boolean netns) {
    public Options {
      dcs = List.copyOf(dcs);
      faults = Set.copyOf(faults);
    }
  }

  /** What a run found. */
  public record Report(Map<Fault, Integer> faults, Map<NemesisWorkload.Outcome, Long> outcomes,
      Map<String, Long> byShape, Map<String, Integer> historyOutcomes, List<String> violations,
      long positions) {
    public boolean ok() {
      return violations.isEmpty();
    }
  }

  private static final Duration START_TIMEOUT = Duration.ofSeconds(90);

  private final Options options;
  private final PrintWriter out;
  private final long startNanos = System.nanoTime();
  private final NetRules rules = new NetRules();
  private final List<FaultProxy> proxies = new ArrayList<>();
  private final List<ServiceProcess> services = new ArrayList<>();
  private final Map<String, KvStore> stores = new LinkedHashMap<>();
  private final Map<Fault, AtomicInteger> injected = new EnumMap<>(Fault.class);
  /** Liveness violations: commits that did not resume once a fault was healed. */
  private final List<String> liveness = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** The HBase server of each DC: its data directory (one for all DCs when shared). */
  private final Map<String, Path> hbaseDirs = new LinkedHashMap<>();
  /** The ZooKeeper port of each HBase server, by data directory. */
  private final Map<Path, Integer> zkPorts = new LinkedHashMap<>();
  private final List<Path> hbaseStarted = new ArrayList<>();
  private NetNamespaces netns;
  private TcpForwarder rootForwarder;
  private final List<ServiceProcess> nsForwarders = new ArrayList<>();
  private List<Integer> forwardedPorts = List.of();
  private NemesisWorkload workload;
  private ClusterConfig cluster;
  private boolean closed;
  private final Thread hook = new Thread(this::close, "nemesis-shutdown");

  public NemesisRun(Options options, PrintWriter out) {
    this.options = options;
    this.out = out;
    for (Fault f : Fault.values()) {
      injected.put(f, new AtomicInteger());
    }
  }

  /** Runs everything; returns the report (also printed). */
  public Report run() throws IOException {
    Runtime.getRuntime().addShutdownHook(hook);
    Path dir = options.dir().toAbsolutePath().normalize();
    Files.createDirectories(dir);
    Path export = options.export().toAbsolutePath().normalize();
    if (Files.exists(export.resolve("wal")) || Files.exists(export.resolve("history"))) {
      throw new IllegalArgumentException("export directory " + export
          + " already holds a run; choose an empty one");
    }
    log("seed %d, DCs %s, %d s of faults, work dir %s, export %s", options.seed(),
        options.dcs(), options.duration().toSeconds(), dir, export);

    if (options.netns()) {
      String why = NetNamespaces.unavailableReason();
      if (why != null) {
        throw new IllegalArgumentException(why);
      }
      netns = new NetNamespaces(options.dcs());
      netns.create();
      log("network namespaces: DCs %s at %s, the nemesis and its proxies at %s",
          options.dcs(), options.dcs().stream().map(netns::address).toList(),
          netns.rootAddress());
    }
    for (String dc : options.dcs()) {
      Path hd = options.hbasePerDc() ? dir.resolve("hbase-" + dc) : dir.resolve("hbase");
      hbaseDirs.put(dc, hd);
      if (!zkPorts.containsKey(hd)) {
        int port = FreePorts.tcp();
        zkPorts.put(hd, port);
        log("starting HBase %s (ZooKeeper port %d) ...", hd.getFileName(), port);
        StandaloneHBase.Status hs = StandaloneHBase.start(hd, port, Duration.ofSeconds(180));
        hbaseStarted.add(hd);
        log("HBase %s pid %d", hd.getFileName(), hs.pid().orElse(-1));
      }
    }

    if (netns != null) {
      startHBaseForwarders();
    }
    Map<String, String> props = clusterProperties();
    cluster = ClusterConfig.fromProperties(props);
    for (ServiceProcess s : services) {
      log("starting service %s ...", s.name());
      s.start(START_TIMEOUT);
      log("service %s pid %d", s.name(), s.pid());
    }
    for (String dc : options.dcs()) {
      stores.put(dc, HBaseKvStore.open(HBaseStoreConfig.fromProperties(dc,
          cluster.dc(dc).hbase())));
    }

    workload = new NemesisWorkload(cluster, export.resolve("history"), options.attrGroups(),
        options.bankGroups(), options.seed());
    workload.initialise(Duration.ofSeconds(60));
    log("workload: %d attribute and %d closed-economy groups, %d across groups, one client per "
        + "DC and protocol", options.attrGroups(), options.bankGroups(),
        workload.xgGroups().size());
    workload.start();

    runFaults();

    log("healing: network, frozen and dead services, HBase");
    healAll();
    // Liveness: once everything is healed, commits must resume.
    long before = committed();
    long healed = System.nanoTime();
    while (committed() < before + 20
        && System.nanoTime() - healed < Duration.ofSeconds(60).toNanos()) {
      sleep(200);
    }
    long resumed = committed() - before;
    if (resumed < 20) {
      liveness.add(String.format("liveness: only %d read-write commits in the 60 s after "
          + "healing", resumed));
    } else {
      log("commits resumed after healing: 20 read-write commits within %.1f s",
          (System.nanoTime() - healed) / 1e9);
    }
    sleep(2000);
    workload.stop();
    log("workload stopped: %s", workload.outcomes());
    if (!workload.xgGroups().isEmpty()) {
      // Resolves what crashed clients left prepared, so that every group's data is final.
      Optional<String> unsettled = workload.settleAcrossGroups(options.dcs().get(0),
          Duration.ofSeconds(60));
      unsettled.ifPresent(liveness::add);
      if (unsettled.isEmpty()) {
        log("economy across groups %s settled: an audit across them saw the sum %d",
            workload.xgGroups(), workload.xgTotal());
      }
    }

    HistoryFiles.Run history = HistoryFiles.read(export);
    long positions = 0;
    for (String group : workload.groups()) {
      List<TxnRecord> recs = history.recordsByGroup().getOrDefault(group, List.of());
      long upTo = catchUp(group, Math.max(provenPosition(recs),
          history.crossGroupPositions().getOrDefault(group, 0L)));
      positions += upTo;
      for (String dc : options.dcs()) {
        HistoryFiles.appendWal(export, dc, group, dcLog(dc, group, upTo));
      }
    }
    log("exported histories and logs to %s", export);
    List<String> violations = check(export);
    violations.addAll(workload.violations());
    violations.addAll(liveness);
    Report report = new Report(counts(), workload.outcomes(), workload.byShape(),
        historyOutcomes(export), violations, positions);
    printSummary(report);
    return report;
  }

  // ---- setup ---------------------------------------------------------------------------------

  private Map<String, String> clusterProperties() throws IOException {
    Map<String, String> props = new LinkedHashMap<>();
    props.put(ClusterConfig.DCS.name(), String.join(",", options.dcs()));
    byte[] key = new byte[32];
    new SecureRandom().nextBytes(key);
    props.put(ClusterConfig.KEY.name(), HexFormat.of().formatHex(key));
    props.put(ClusterConfig.REQUEST_TIMEOUT.name(),
        Long.toString(options.requestTimeout().toMillis()));
    Map<ServiceProcess, String> binds = new LinkedHashMap<>();
    String proxyHost = netns != null ? netns.rootAddress() : "127.0.0.1";
    for (int d = 0; d < options.dcs().size(); d++) {
      String dc = options.dcs().get(d);
      int processes = d == 0 ? 2 : 1;
      List<String> endpoints = new ArrayList<>();
      for (int i = 0; i < processes; i++) {
        String name = dc + "-" + (char) ('a' + i);
        // In a namespace of its own the DC has every port to itself.
        InetSocketAddress backend = netns != null
            ? new InetSocketAddress(netns.address(dc), 7000 + i)
            : new InetSocketAddress("127.0.0.1", FreePorts.udp());
        FaultProxy proxy = FaultProxy.start(dc, new InetSocketAddress(proxyHost, 0), backend,
            rules, options.seed() * 31 + proxies.size());
        proxies.add(proxy);
        endpoints.add(proxyHost + ":" + proxy.address().getPort());
        ServiceProcess s = new ServiceProcess(name, dc,
            options.dir().toAbsolutePath().resolve("conf").resolve(name + ".properties"),
            options.dir().toAbsolutePath().resolve("logs").resolve(name + ".log"),
            netns != null ? netns.exec(dc) : List.of());
        services.add(s);
        binds.put(s, backend.getHostString() + ":" + backend.getPort());
      }
      props.put(ClusterConfig.DC_PREFIX + dc + ".endpoints", String.join(",", endpoints));
      props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.quorum", "127.0.0.1");
      props.put(ClusterConfig.DC_PREFIX + dc + ".hbase.zk.port",
          Integer.toString(zkPorts.get(hbaseDirs.get(dc))));
    }
    for (var e : binds.entrySet()) {
      Map<String, String> sp = new LinkedHashMap<>(props);
      sp.put(ServiceConfig.DC.name(), e.getKey().dc());
      sp.put(ServiceConfig.BIND.name(), e.getValue());
      sp.put(ServiceConfig.THREADS.name(), "8");
      sp.put(ServiceConfig.STORE.name(), "hbase");
      // Keep every log position: the checker judges complete logs.
      sp.put(ServiceConfig.GC_RETENTION_POSITIONS.name(), "0");
      ServiceConfig.fromProperties(sp); // fails here, naming the key, rather than in the process
      Path file = options.dir().toAbsolutePath().resolve("conf")
          .resolve(e.getKey().name() + ".properties");
      writeProperties(file, sp);
    }
    writeProperties(options.dir().toAbsolutePath().resolve("conf").resolve("cluster.properties"),
        props);
    return props;
  }

  private static void writeProperties(Path file, Map<String, String> props) throws IOException {
    Files.createDirectories(file.getParent());
    Properties p = new Properties();
    props.forEach(p::setProperty);
    try (Writer w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      p.store(w, "paxoscp nemesis; the key seals every datagram");
    }
  }

  // ---- faults --------------------------------------------------------------------------------

  private void runFaults() {
    SplittableRandom random = new SplittableRandom(options.seed());
    List<Fault> kinds = new ArrayList<>(options.faults());
    Collections.sort(kinds);
    long end = System.nanoTime() + options.duration().toNanos();
    List<Fault> order = new ArrayList<>();
    sleep(2000); // some fault-free commits first
    // The first round of shuffled kinds always completes, so every selected kind gets its turn
    // however slowly processes start on this machine; later rounds stop when the time is up.
    boolean firstRound = true;
    while ((firstRound || System.nanoTime() < end) && !kinds.isEmpty()) {
      if (order.isEmpty()) {
        order.addAll(kinds);
        Collections.shuffle(order, new java.util.Random(random.nextLong()));
      }
      Fault f = order.remove(0);
      firstRound &= !order.isEmpty();
      long hold = 1500 + random.nextLong(2500);
      inject(f, hold, random);
      sleep(500 + random.nextLong(1500));
    }
  }

  private void inject(Fault f, long holdMs, SplittableRandom random) {
    switch (f) {
      case KILL_RESTART -> {
        ServiceProcess s = services.get(random.nextInt(services.size()));
        long pid = s.pid();
        s.kill();
        count(f, "kill -9 %s (pid %d); restart in %d ms", s.name(), pid, holdMs);
        sleep(holdMs);
        restart(s);
      }
      case PAUSE -> {
        ServiceProcess s = services.get(random.nextInt(services.size()));
        s.freeze();
        count(f, "SIGSTOP %s (pid %d) for %d ms", s.name(), s.pid(), holdMs);
        sleep(holdMs);
        s.thaw();
        log("SIGCONT %s", s.name());
      }
      case PARTITION -> {
        String dc = options.dcs().get(random.nextInt(options.dcs().size()));
        if (netns != null) {
          netns.cut(dc);
          count(f, "partition DC %s: its link is down for %d ms", dc, holdMs);
          sleep(holdMs);
          netns.healAll();
        } else {
          rules.set(new NetRules.Rules(Set.of(dc), 0, 0, 0));
          count(f, "partition DC %s from the others for %d ms", dc, holdMs);
          sleep(holdMs);
          rules.heal();
        }
        log("partition healed");
      }
      case MAJORITY_DOWN -> {
        List<String> dcs = new ArrayList<>(options.dcs());
        Collections.shuffle(dcs, new java.util.Random(random.nextLong()));
        int down = options.dcs().size() - (options.dcs().size() / 2 + 1) + 1;
        List<String> victims = dcs.subList(0, down);
        List<ServiceProcess> killed = new ArrayList<>();
        for (ServiceProcess s : services) {
          if (victims.contains(s.dc())) {
            s.kill();
            killed.add(s);
          }
        }
        count(f, "kill -9 every service of DCs %s (no majority); restart in %d ms", victims,
            holdMs);
        long atKill = committed();
        sleep(holdMs);
        long duringOutage = committed() - atKill;
        for (ServiceProcess s : killed) {
          restart(s);
        }
        awaitAvailability(String.format("every service of DCs %s was killed (%d read-write "
            + "commits returned while they were down: decided before, or in flight)", victims,
            duringOutage));
      }
      case NET_BURST -> {
        double loss = 0.05 + random.nextDouble() * 0.25;
        double dup = 0.05 + random.nextDouble() * 0.25;
        long delay = 20 + random.nextLong(180);
        rules.set(new NetRules.Rules(Set.of(), loss, dup, delay));
        count(f, "network burst for %d ms: loss %.2f, duplication %.2f, delay 0-%d ms", holdMs,
            loss, dup, delay);
        sleep(holdMs);
        rules.heal();
        log("network healthy");
      }
      case HBASE_RESTART -> {
        String dc = options.dcs().get(random.nextInt(options.dcs().size()));
        Path hd = hbaseDirs.get(dc);
        List<String> under = new ArrayList<>();
        hbaseDirs.forEach((d, p) -> {
          if (p.equals(hd)) {
            under.add(d);
          }
        });
        count(f, "HBase restart under DCs %s (clean stop, then start; their stores are down "
            + "meanwhile)", under);
        StandaloneHBase.Status st = StandaloneHBase.stop(hd, Duration.ofSeconds(60));
        log("HBase %s %s", hd.getFileName(), st.detail());
        sleep(Math.min(holdMs, 2000));
        StandaloneHBase.Status s = StandaloneHBase.start(hd, zkPorts.get(hd),
            Duration.ofSeconds(180));
        log("HBase %s running again: pid %d", hd.getFileName(), s.pid().orElse(-1));
        if (netns != null) {
          startHBaseForwarders();
        }
        awaitAvailability("HBase " + hd.getFileName() + " restarted");
      }
      case CLIENT_CRASH -> {
        // Up to three tries: a commit may return before the client is closed.
        for (int attempt = 0; attempt < 3; attempt++) {
          long delay = random.nextLong(10 >> attempt);
          Optional<String> what = workload.crashClientMidCommit(random, delay,
              Duration.ofSeconds(15));
          if (what.isPresent()) {
            count(f, "client crash: %s", what.get());
            break;
          }
          log("client crash: no commit in flight when the client closed; not counted");
        }
      }
      default -> throw new IllegalStateException(f.toString());
    }
  }

  private long committed() {
    return workload.readWriteCommits();
  }

  /** Waits until a read-write transaction commits again; a liveness violation after 60 s. */
  private void awaitAvailability(String after) {
    long before = committed();
    long t0 = System.nanoTime();
    while (committed() == before) {
      if (System.nanoTime() - t0 > Duration.ofSeconds(60).toNanos()) {
        liveness.add("liveness: no commit within 60 s after " + after + " and the restart");
        log("NO read-write commit within 60 s after the restart");
        return;
      }
      sleep(50);
    }
    log("availability regained: a read-write commit %.1f s after the restart; %s",
        (System.nanoTime() - t0) / 1e9, after);
  }

  private void restart(ServiceProcess s) {
    try {
      s.start(START_TIMEOUT);
      log("restarted %s (pid %d)", s.name(), s.pid());
    } catch (IllegalStateException e) {
      log("restart of %s failed (%s); trying once more", s.name(), e.getMessage());
      s.start(START_TIMEOUT);
    }
  }

  private void healAll() {
    rules.heal();
    if (netns != null) {
      netns.healAll();
    }
    for (var e : zkPorts.entrySet()) {
      if (StandaloneHBase.status(e.getKey()).state() != StandaloneHBase.State.RUNNING) {
        StandaloneHBase.start(e.getKey(), e.getValue(), Duration.ofSeconds(180));
        if (netns != null) {
          startHBaseForwarders();
        }
      }
    }
    for (ServiceProcess s : services) {
      if (s.frozen()) {
        s.thaw();
      }
      if (!s.alive()) {
        restart(s);
      }
    }
  }

  /**
   * The network-namespace mode: HBase binds and advertises 127.0.0.1 in the root namespace, so
   * its ZooKeeper, master and region server ports are forwarded from 127.0.0.1 in every DC's
   * namespace across the DC's link to the bridge address, and from there to 127.0.0.1. (Re)starts
   * the forwarders when the ports are new (a restarted server may have had to pick others).
   */
  private void startHBaseForwarders() {
    List<Integer> ports = new ArrayList<>();
    for (Path hd : zkPorts.keySet()) {
      org.apache.hadoop.conf.Configuration c = new org.apache.hadoop.conf.Configuration(false);
      c.addResource(new org.apache.hadoop.fs.Path(hd.resolve("conf").resolve("hbase-site.xml")
          .toUri()));
      for (String k : List.of("hbase.zookeeper.property.clientPort", "hbase.master.port",
          "hbase.regionserver.port")) {
        int p = c.getInt(k, 0);
        if (p <= 0) {
          throw new IllegalStateException(k + " of " + hd + " is not fixed; cannot forward it");
        }
        ports.add(p);
      }
    }
    if (ports.equals(forwardedPorts)) {
      return;
    }
    stopHBaseForwarders();
    List<TcpForwarder.Rule> root = new ArrayList<>();
    List<String> inNs = new ArrayList<>();
    for (int p : ports) {
      root.add(new TcpForwarder.Rule(new InetSocketAddress(netns.rootAddress(), p),
          new InetSocketAddress("127.0.0.1", p)));
      inNs.add("127.0.0.1:" + p + "=" + netns.rootAddress() + ":" + p);
    }
    try {
      rootForwarder = TcpForwarder.start(root);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot forward HBase's ports on " + netns.rootAddress(), e);
    }
    for (String dc : options.dcs()) {
      List<String> program = new ArrayList<>();
      program.add(TcpForwarder.class.getName());
      program.addAll(inNs);
      ServiceProcess fw = new ServiceProcess("hbase-forwarder-" + dc, dc, netns.exec(dc),
          program, "forwarding", options.dir().toAbsolutePath().resolve("logs")
              .resolve("hbase-forwarder-" + dc + ".log"));
      fw.start(START_TIMEOUT);
      nsForwarders.add(fw);
    }
    forwardedPorts = ports;
    log("HBase ports %s forwarded into every DC's namespace", ports);
  }

  private void stopHBaseForwarders() {
    for (ServiceProcess fw : nsForwarders) {
      fw.kill();
    }
    nsForwarders.clear();
    if (rootForwarder != null) {
      rootForwarder.close();
      rootForwarder = null;
    }
    forwardedPorts = List.of();
  }

  private void count(Fault f, String fmt, Object... args) {
    injected.get(f).incrementAndGet();
    log("FAULT %-14s " + fmt, prepend(f.name().toLowerCase(Locale.ROOT), args));
  }

  private static Object[] prepend(Object first, Object[] rest) {
    Object[] all = new Object[rest.length + 1];
    all[0] = first;
    System.arraycopy(rest, 0, all, 1, rest.length);
    return all;
  }

  private Map<Fault, Integer> counts() {
    Map<Fault, Integer> m = new EnumMap<>(Fault.class);
    injected.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  // ---- catch-up, export, checks --------------------------------------------------------------

  /** The highest commit or read position clients were told of. */
  static long provenPosition(List<TxnRecord> records) {
    long p = 0;
    for (TxnRecord r : records) {
      p = Math.max(p, r.readPosition());
      if (r.status() == TxnRecord.Status.COMMITTED) {
        p = Math.max(p, r.commitPosition());
      }
    }
    return p;
  }

  /**
   * Brings every DC up to the highest position of {@code group} proved to exist (chosen at some
   * DC, or told to a client): each DC's service is asked to begin at that position, which makes
   * it learn what it misses from its peers. Positions that hold only votes are left alone.
   *
   * @return that position
   */
  private long catchUp(String group, long proven) {
    long highest = proven;
    for (KvStore s : stores.values()) {
      highest = Math.max(highest, highestChosen(group, s));
    }
    if (highest == 0) {
      return 0;
    }
    String self = options.dcs().get(0);
    try (UdpTransport t = UdpTransport.builder(cluster, self).build()) {
      for (String dc : options.dcs()) {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (true) {
          try {
            Message reply = t.request(dc, new Message.BeginRequest(group, highest),
                options.requestTimeout().multipliedBy(4)).join();
            if (reply instanceof Message.BeginReply b && b.position() >= highest) {
              break;
            }
            if (System.nanoTime() > deadline) {
              throw new IllegalStateException("DC " + dc + " did not catch up to position "
                  + highest + " of " + group + ": " + reply);
            }
          } catch (CompletionException e) {
            if (System.nanoTime() > deadline) {
              throw new IllegalStateException("DC " + dc + " did not catch up to position "
                  + highest + " of " + group + ": " + e.getCause(), e.getCause());
            }
          }
          sleep(500);
        }
      }
    }
    return highest;
  }

  private static long highestChosen(String group, KvStore store) {
    Acceptor a = new Acceptor(store);
    long p = new LogApplier(store).appliedWatermark(group);
    long highest = p;
    for (long q = p + 1, misses = 0; misses < 64; q++) {
      if (a.chosen(group, q).isPresent()) {
        highest = q;
        misses = 0;
      } else {
        misses++;
      }
    }
    return highest;
  }

  private SortedMap<Long, LogValue> dcLog(String dc, String group, long upTo) {
    Acceptor a = new Acceptor(stores.get(dc));
    SortedMap<Long, LogValue> log = new TreeMap<>();
    for (long p = 1; p <= upTo; p++) {
      Optional<LogValue> v = a.chosen(group, p);
      if (v.isPresent()) {
        log.put(p, v.get());
      }
    }
    return log;
  }

  /**
   * Checks the exported run: the serializability checker per group, and the cross-group checker
   * over all of them when their logs hold steps of transactions across groups; every DC holds
   * the same, complete log; every COMMITTED read-write transaction is in it; every
   * closed-economy group holds its total at every DC, and the economy across groups its sum.
   */
  private List<String> check(Path export) {
    List<String> violations = new ArrayList<>();
    HistoryFiles.Run run = HistoryFiles.read(export);
    for (String group : workload.groups()) {
      Map<String, SortedMap<Long, LogValue>> logs =
          run.logsByGroup().getOrDefault(group, Map.of());
      List<TxnRecord> records = run.recordsByGroup().getOrDefault(group, List.of());
      violations.addAll(checkGroup(group, options.dcs(), logs, records));
    }
    if (run.hasCrossGroup()) {
      // One conflict graph over every group, with what the clients saw of transactions across
      // groups (each group's own check ran above).
      CrossGroupChecker.Result x = CrossGroupChecker.check(run.logsByGroup(),
          run.recordsByGroup(), run.crossGroup());
      log("across groups: %d transactions committed, %d aborted, %d undecided, %d client "
          + "records; %s", x.committed(), x.aborted(), x.undecided(), run.crossGroup().size(),
          x.crossGroup().ok() ? "serializable" : "VIOLATION");
      for (var v : x.crossGroup().violations()) {
        violations.add("across groups: checker: " + v);
      }
    }
    for (String group : workload.bankGroups()) {
      Map<String, Long> totals = totals(group, run.logsByGroup().getOrDefault(group, Map.of()),
          violations);
      totals.forEach((dc, sum) -> {
        if (sum != NemesisWorkload.total()) {
          violations.add(String.format("group %s: DC %s holds a total of %d, not %d", group, dc,
              sum, NemesisWorkload.total()));
        } else {
          log("group %s: DC %s holds the total %d", group, dc, sum);
        }
      });
    }
    if (!workload.xgGroups().isEmpty()) {
      Map<String, Long> sums = new TreeMap<>();
      for (String group : workload.xgGroups()) {
        totals(group, run.logsByGroup().getOrDefault(group, Map.of()), violations)
            .forEach((dc, sum) -> sums.merge(dc, sum, Long::sum));
      }
      for (String dc : options.dcs()) {
        Long sum = sums.get(dc);
        if (sum == null) {
          continue; // a group it did not answer for is reported already
        }
        if (sum != workload.xgTotal()) {
          violations.add(String.format("groups %s: DC %s holds a sum of %d, not %d",
              workload.xgGroups(), dc, sum, workload.xgTotal()));
        } else {
          log("groups %s: DC %s holds the sum %d", workload.xgGroups(), dc, sum);
        }
      }
    }
    return violations;
  }

  /**
   * The checks of one group that need no running process: the checker, agreement and
   * completeness of every DC's log, and COMMITTED transactions in the log.
   */
  static List<String> checkGroup(String group, List<String> dcs,
      Map<String, SortedMap<Long, LogValue>> logs, List<TxnRecord> records) {
    List<String> violations = new ArrayList<>();
    CheckResult r = SerializabilityChecker.check(logs, records);
    for (var v : r.violations()) {
      violations.add("group " + group + ": checker: " + v);
    }
    long highest = 0;
    for (SortedMap<Long, LogValue> log : logs.values()) {
      if (!log.isEmpty()) {
        highest = Math.max(highest, log.lastKey());
      }
    }
    for (String dc : dcs) {
      SortedMap<Long, LogValue> log = logs.getOrDefault(dc, new TreeMap<>());
      if (log.size() != highest) {
        violations.add(String.format("group %s: DC %s holds %d of the %d positions after "
            + "catch-up", group, dc, log.size(), highest));
      }
    }
    SortedMap<Long, LogValue> reference = logs.getOrDefault(dcs.get(0), new TreeMap<>());
    for (String dc : dcs) {
      SortedMap<Long, LogValue> log = logs.getOrDefault(dc, new TreeMap<>());
      for (var e : log.entrySet()) {
        LogValue ref = reference.get(e.getKey());
        if (ref != null && !ref.equals(e.getValue())) {
          violations.add(String.format("group %s: DCs %s and %s disagree at position %d",
              group, dcs.get(0), dc, e.getKey()));
        }
      }
    }
    for (TxnRecord rec : records) {
      if (rec.status() != TxnRecord.Status.COMMITTED || rec.writes().isEmpty()) {
        continue;
      }
      boolean found = false;
      for (SortedMap<Long, LogValue> log : logs.values()) {
        LogValue v = log.get(rec.commitPosition());
        if (v != null && v.contains(rec.txnId())) {
          found = true;
          break;
        }
      }
      if (!found) {
        violations.add(String.format("group %s: COMMITTED txn %s is not at its position %d in "
            + "any DC's log", group, rec.txnId(), rec.commitPosition()));
      }
    }
    return violations;
  }

  /**
   * Every DC's total of the group's accounts, read through its service at the log's end; a DC
   * that does not answer is a violation and has no total.
   */
  private Map<String, Long> totals(String group, Map<String, SortedMap<Long, LogValue>> logs,
      List<String> violations) {
    Map<String, Long> totals = new TreeMap<>();
    long upTo = 0;
    for (SortedMap<Long, LogValue> log : logs.values()) {
      if (!log.isEmpty()) {
        upTo = Math.max(upTo, log.lastKey());
      }
    }
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < NemesisWorkload.ACCOUNTS; i++) {
      keys.add(NemesisWorkload.account(i));
    }
    try (UdpTransport t = UdpTransport.builder(cluster, options.dcs().get(0)).build()) {
      for (String dc : options.dcs()) {
        Message reply;
        try {
          reply = t.request(dc, new Message.ReadRequest(group, upTo, keys),
              options.requestTimeout().multipliedBy(4)).join();
        } catch (CompletionException e) {
          violations.add("group " + group + ": DC " + dc + " did not answer the final read: "
              + e.getCause());
          continue;
        }
        if (!(reply instanceof Message.ReadReply rr)) {
          violations.add("group " + group + ": DC " + dc + " answered the final read with "
              + reply);
          continue;
        }
        long sum = 0;
        for (String k : keys) {
          byte[] v = rr.values().get(k);
          sum += v == null || v.length == 0 ? 0
              : Long.parseLong(new String(v, StandardCharsets.UTF_8));
        }
        totals.put(dc, sum);
      }
    }
    return totals;
  }

  private static Map<String, Integer> historyOutcomes(Path export) {
    Map<String, Integer> m = new TreeMap<>();
    HistoryFiles.read(export).recordsByGroup().values().forEach(l -> l.forEach(r ->
        m.merge(r.status().name() + (r.writes().isEmpty() ? " (read-only)" : ""), 1,
            Integer::sum)));
    return m;
  }

  // ---- output --------------------------------------------------------------------------------

  private void printSummary(Report r) {
    out.println();
    out.println("=== nemesis summary (seed " + options.seed() + ") ===");
    out.println("faults injected:");
    int total = 0;
    for (Fault f : Fault.values()) {
      int n = r.faults().get(f);
      total += n;
      out.printf(Locale.ROOT, "  %-16s %-36s %4d%n", f.name().toLowerCase(Locale.ROOT),
          f.label, n);
    }
    out.printf(Locale.ROOT, "  %-53s %4d%n", "total", total);
    out.println("transactions by outcome (as the application saw them):");
    long all = 0;
    for (var e : r.outcomes().entrySet()) {
      all += e.getValue();
      out.printf(Locale.ROOT, "  %-53s %6d%n", e.getKey().name().toLowerCase(Locale.ROOT),
          e.getValue());
    }
    out.printf(Locale.ROOT, "  %-53s %6d%n", "total", all);
    out.println("by shape:");
    r.byShape().forEach((k, v) -> out.printf(Locale.ROOT, "  %-53s %6d%n", k, v));
    out.println("history records by outcome:");
    r.historyOutcomes().forEach((k, v) -> out.printf(Locale.ROOT, "  %-53s %6d%n", k, v));
    out.printf(Locale.ROOT, "log positions checked (all groups):  %d%n", r.positions());
    out.printf(Locale.ROOT, "violations: %d%n", r.violations().size());
    for (String v : r.violations()) {
      out.println("  VIOLATION " + v);
    }
    out.println(r.ok() ? "RESULT: PASS" : "RESULT: FAIL (seed " + options.seed() + ")");
    out.flush();
  }

  private void log(String fmt, Object... args) {
    double t = (System.nanoTime() - startNanos) / 1e9;
    out.printf(Locale.ROOT, "[%6.1fs] " + fmt + "%n", prepend(t, args));
    out.flush();
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** Stops everything the run started: clients, services, proxies, stores, HBase. Idempotent. */
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
    if (workload != null) {
      try {
        workload.stop();
      } catch (RuntimeException e) {
        out.println("nemesis: stopping the workload: " + e);
      }
    }
    for (ServiceProcess s : services) {
      try {
        s.stop(Duration.ofSeconds(10));
      } catch (RuntimeException e) {
        s.kill();
      }
    }
    for (FaultProxy p : proxies) {
      p.close();
    }
    stopHBaseForwarders();
    if (netns != null) {
      netns.close();
    }
    for (KvStore s : stores.values()) {
      try {
        s.close();
      } catch (RuntimeException e) {
        // ignore
      }
    }
    for (Path hd : hbaseStarted) {
      try {
        StandaloneHBase.stop(hd, Duration.ofSeconds(60));
      } catch (RuntimeException e) {
        out.println("nemesis: stopping HBase " + hd + ": " + e);
      }
    }
    out.flush();
  }
}
