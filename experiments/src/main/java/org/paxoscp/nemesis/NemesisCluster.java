package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.paxoscp.local.ClusterLayout;
import org.paxoscp.local.FreePorts;
import org.paxoscp.local.ServiceProcess;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.store.hbase.StandaloneHBase;
import org.paxoscp.transport.ClusterConfig;

/**
 * The real processes of a nemesis run, and control over them: standalone HBase servers (one
 * shared by every DC, each in its own namespace, or one per DC), one Transaction Service process
 * per DC (two for the first DC), each behind a {@link FaultProxy}, and, in the network-namespace
 * mode, each DC's services in a namespace of their own ({@link NetNamespaces}) with HBase's
 * ports forwarded into it.
 *
 * <p>Driven from one thread; {@link #close()} may come from another (the shutdown hook) and is
 * idempotent. A start that fails half-way leaves what it started for {@link #close()}.
 */
final class NemesisCluster implements AutoCloseable {
  private static final Duration START_TIMEOUT = Duration.ofSeconds(90);

  /**
   * The cluster version the services start held to when the run has the upgrade fault: the
   * earlier build's (it sends wire version 4 and still opens version 3).
   */
  static final int EARLIER_VERSION = org.paxoscp.version.ClusterVersion.LATEST - 1;

  private final NemesisRun.Options options;
  private final RunLog log;
  private final Path dir;
  private final NetRules rules = new NetRules();
  private final List<FaultProxy> proxies = new ArrayList<>();
  private final List<ServiceProcess> services = new ArrayList<>();
  private final DropCounters drops = new DropCounters();
  private final Map<String, KvStore> stores = new LinkedHashMap<>();
  /** The HBase server of each DC: its data directory (one for all DCs when shared). */
  private final Map<String, Path> hbaseDirs = new LinkedHashMap<>();
  /** The ZooKeeper port of each HBase server, by data directory. */
  private final Map<Path, Integer> zkPorts = new LinkedHashMap<>();
  private final List<Path> hbaseStarted = new ArrayList<>();
  private final Map<Path, org.paxoscp.store.hbase.RegionControl> regionControls =
      new LinkedHashMap<>();
  private NetNamespaces netns;
  private TcpForwarder rootForwarder;
  private final List<ServiceProcess> nsForwarders = new ArrayList<>();
  private List<Integer> forwardedPorts = List.of();
  private ClusterConfig config;
  private boolean closed;

  NemesisCluster(NemesisRun.Options options, Path dir, RunLog log) {
    this.options = options;
    this.dir = dir;
    this.log = log;
  }

  /** Starts HBase, the namespaces if asked for, the proxies and every service; opens the stores. */
  void start() throws IOException {
    if (options.netns()) {
      String why = NetNamespaces.unavailableReason();
      if (why != null) {
        throw new IllegalArgumentException(why);
      }
      netns = new NetNamespaces(options.dcs());
      netns.create();
      log.log("network namespaces: DCs %s at %s, the nemesis and its proxies at %s",
          options.dcs(), options.dcs().stream().map(netns::address).toList(),
          netns.rootAddress());
    }
    for (String dc : options.dcs()) {
      Path hd = options.hbasePerDc() ? dir.resolve("hbase-" + dc) : dir.resolve("hbase");
      hbaseDirs.put(dc, hd);
      if (!zkPorts.containsKey(hd)) {
        int port = FreePorts.tcp();
        zkPorts.put(hd, port);
        log.log("starting HBase %s (ZooKeeper port %d) ...", hd.getFileName(), port);
        StandaloneHBase.Status hs = StandaloneHBase.start(hd, port, Duration.ofSeconds(240),
            options.regionServers());
        hbaseStarted.add(hd);
        log.log("HBase %s pid %d%s", hd.getFileName(), hs.pid().orElse(-1),
            options.regionServers() == 1 ? "" : ", region servers " + StandaloneHBase
                .regionServers(hd).stream().map(rs -> "rs-" + rs.index() + " pid "
                    + rs.pid().orElse(-1) + " " + rs.address()).toList());
      }
    }
    if (netns != null) {
      startHBaseForwarders();
    }
    if (options.regionServers() > 1) {
      // Regions move only when a fault moves them, so that every move falls in a fault's window.
      for (String dc : options.dcs()) {
        regionControl(dc).periodicBalancer(false);
      }
    }
    config = layOut();
    for (ServiceProcess s : services) {
      log.log("starting service %s ...", s.name());
      s.start(START_TIMEOUT);
      log.log("service %s pid %d", s.name(), s.pid());
    }
    for (String dc : options.dcs()) {
      stores.put(dc, HBaseKvStore.open(HBaseStoreConfig.fromProperties(dc,
          config.dc(dc).hbase())));
    }
  }

  /**
   * Creates a proxy and a service process (not yet started) per service, and writes their
   * configurations; returns the cluster as clients see it (through the proxies).
   */
  private ClusterConfig layOut() throws IOException {
    ClusterLayout.Builder b = ClusterLayout.builder(options.dcs())
        .requestTimeout(options.requestTimeout());
    Map<ServiceProcess, String> binds = new LinkedHashMap<>();
    Map<ServiceProcess, Integer> metricsPorts = new LinkedHashMap<>();
    Map<String, List<InetSocketAddress>> backends = new LinkedHashMap<>();
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
        ServiceProcess s = ServiceProcess.service(name, dc,
            dir.resolve("conf").resolve(name + ".properties"),
            dir.resolve("logs").resolve(name + ".log"),
            netns != null ? netns.exec(dc) : List.of());
        services.add(s);
        binds.put(s, backend.getHostString() + ":" + backend.getPort());
        backends.computeIfAbsent(dc, k -> new ArrayList<>()).add(backend);
        // Its dropped datagrams by reason are read from /metrics (DropCounters).
        int metricsPort = netns != null ? 9100 + i : FreePorts.tcp();
        metricsPorts.put(s, metricsPort);
        drops.register(name, java.net.URI.create("http://" + backend.getHostString() + ":"
            + metricsPort + "/metrics"));
      }
      b.endpoints(dc, endpoints);
      b.hbase(dc, "127.0.0.1", zkPorts.get(hbaseDirs.get(dc)));
    }
    // Replayed datagrams may be redirected to any DC's services (straight to the service).
    for (FaultProxy p : proxies) {
      p.replayTargets(backends);
    }
    ClusterLayout layout = b.build();
    Map<String, String> settings = new LinkedHashMap<>();
    settings.put(ServiceConfig.THREADS.name(), "8");
    settings.put(ServiceConfig.STORE.name(), "hbase");
    // Keep every log position: the checker judges complete logs.
    settings.put(ServiceConfig.GC_RETENTION_POSITIONS.name(), "0");
    String comment = "paxoscp nemesis; the key seals every datagram";
    for (var e : binds.entrySet()) {
      Map<String, String> own = new LinkedHashMap<>(settings);
      own.put(ServiceConfig.METRICS_PORT.name(), Integer.toString(metricsPorts.get(e.getKey())));
      if (options.faults().contains(Fault.UPGRADE)) {
        // The earlier build the upgrade fault replaces: held one cluster version below.
        own.put(ClusterConfig.CLUSTER_VERSION_MAX.name(), Integer.toString(EARLIER_VERSION));
      }
      ClusterLayout.writePrivate(dir.resolve("conf").resolve(e.getKey().name() + ".properties"),
          layout.serviceProperties(e.getKey().dc(), e.getValue(), own), comment);
    }
    layout.writeClientConfig(dir.resolve("conf").resolve("cluster.properties"), comment);
    return layout.config();
  }

  /** The cluster as clients see it (through the proxies). */
  ClusterConfig config() {
    return config;
  }

  List<String> dcs() {
    return options.dcs();
  }

  /** Every service process, the first DC's two first. */
  List<ServiceProcess> services() {
    return services;
  }

  /** Every DC's store, opened directly (for reading logs after the run). */
  Map<String, KvStore> stores() {
    return stores;
  }

  /** Whether DCs live in network namespaces (a partition is then a link taken down). */
  boolean namespaces() {
    return netns != null;
  }

  /** Cuts DC {@code dc} off from the others: its link down, or its proxies dropping. */
  void partition(String dc) {
    if (netns != null) {
      netns.cut(dc);
    } else {
      rules.set(new NetRules.Rules(Set.of(dc), 0, 0, 0));
    }
  }

  /** Heals every partition. */
  void healPartitions() {
    if (netns != null) {
      netns.healAll();
    } else {
      rules.heal();
    }
  }

  /** Loss, duplication and delay at every proxy until {@link #healNetwork}. */
  void burst(double loss, double dup, long delayMs) {
    rules.set(new NetRules.Rules(Set.of(), loss, dup, delayMs));
  }

  void healNetwork() {
    rules.heal();
  }

  /**
   * Every proxy replays old datagrams until {@link #healNetwork}: with probability {@code p}
   * per datagram forwarded, a copy of one forwarded seconds to minutes earlier.
   */
  void replay(double p) {
    rules.set(new NetRules.Rules(Set.of(), 0, 0, 0, p));
  }

  /** Old datagrams the proxies replayed since they started. */
  long replayed() {
    return proxies.stream().mapToLong(FaultProxy::replayed).sum();
  }

  /** Kills {@code s} with {@code kill -9}, having read its dropped-datagram counters first. */
  /**
   * Makes {@code s} a process of this build at its next start: its file no longer holds it to
   * the earlier build's cluster version ({@link Fault#UPGRADE}).
   */
  void upgradeConfig(ServiceProcess s) {
    Path file = dir.resolve("conf").resolve(s.name() + ".properties");
    java.util.Properties p = new java.util.Properties();
    try (var in = java.nio.file.Files.newBufferedReader(file)) {
      p.load(in);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException("upgrading the configuration of " + s.name(), e);
    }
    p.remove(ClusterConfig.CLUSTER_VERSION_MAX.name());
    Map<String, String> props = new java.util.TreeMap<>();
    p.stringPropertyNames().forEach(k -> props.put(k, p.getProperty(k)));
    ClusterLayout.writePrivate(file, props, "paxoscp nemesis; upgraded to this build's "
        + "cluster versions");
  }

  void kill(ServiceProcess s) {
    if (s.alive() && !s.frozen()) {
      drops.beforeKill(s.name());
    }
    s.kill();
  }

  /**
   * The datagrams the services dropped before any handler, by reason, over the whole run (read
   * at each kill and now; see {@link DropCounters}).
   */
  DropCounters.Totals dropped() {
    return drops.total();
  }

  /** Store requests that failed so far, summed over the live services of DCs {@code dcs}. */
  long storeErrors(List<String> dcs) {
    Set<String> names = new java.util.HashSet<>();
    for (ServiceProcess s : services) {
      if (dcs.contains(s.dc())) {
        names.add(s.name());
      }
    }
    return drops.storeErrors(names::contains);
  }

  /** The DCs that share DC {@code dc}'s HBase server (itself among them). */
  List<String> dcsSharingHBaseOf(String dc) {
    Path hd = hbaseDirs.get(dc);
    List<String> under = new ArrayList<>();
    hbaseDirs.forEach((d, p) -> {
      if (p.equals(hd)) {
        under.add(d);
      }
    });
    return under;
  }

  /** The name of DC {@code dc}'s HBase server (its data directory's). */
  String hbaseName(String dc) {
    return hbaseDirs.get(dc).getFileName().toString();
  }

  /**
   * Empties DC {@code dc}'s tables (meta first, then WAL and data; the tables and their splits
   * stay): the DC lost its store. Its services are left as they are, running or not: a real loss
   * does not stop them first.
   */
  void emptyStore(String dc) {
    org.paxoscp.store.hbase.HBaseSchema.truncate(
        ((HBaseKvStore) stores.get(dc)).config());
    log.log("DC %s: tables emptied", dc);
  }

  /** Stops DC {@code dc}'s HBase server cleanly, waits, and starts it again. */
  void restartHBase(String dc, long downMs) {
    Path hd = hbaseDirs.get(dc);
    StandaloneHBase.Status st = StandaloneHBase.stop(hd, Duration.ofSeconds(60));
    log.log("HBase %s %s", hd.getFileName(), st.detail());
    FaultSchedule.Clock.system().sleep(downMs);
    StandaloneHBase.Status s = StandaloneHBase.start(hd, zkPorts.get(hd),
        Duration.ofSeconds(240), options.regionServers());
    log.log("HBase %s running again: pid %d", hd.getFileName(), s.pid().orElse(-1));
    if (netns != null) {
      startHBaseForwarders();
    }
  }

  /** The engine of DC {@code dc}'s HBase: its regions, moves, splits, balancer. */
  synchronized org.paxoscp.store.hbase.RegionControl regionControl(String dc) {
    Path hd = hbaseDirs.get(dc);
    return regionControls.computeIfAbsent(hd, d -> org.paxoscp.store.hbase.RegionControl
        .connect(zkPorts.get(d), Duration.ofSeconds(60)));
  }

  /** The region servers of DC {@code dc}'s HBase, in processes of their own. */
  List<StandaloneHBase.RegionServer> regionServers(String dc) {
    return StandaloneHBase.regionServers(hbaseDirs.get(dc));
  }

  /** Kills region server {@code index} of DC {@code dc}'s HBase with kill -9. */
  void killRegionServer(String dc, int index) {
    StandaloneHBase.killRegionServer(hbaseDirs.get(dc), index);
  }

  /** Starts region server {@code index} of DC {@code dc}'s HBase again. */
  StandaloneHBase.RegionServer startRegionServer(String dc, int index) {
    return StandaloneHBase.startRegionServer(hbaseDirs.get(dc), index);
  }

  /** Starts {@code s} again; tries a second time if the first start fails. */
  void restart(ServiceProcess s) {
    try {
      s.start(START_TIMEOUT);
      log.log("restarted %s (pid %d)", s.name(), s.pid());
    } catch (IllegalStateException e) {
      log.log("restart of %s failed (%s); trying once more", s.name(), e.getMessage());
      s.start(START_TIMEOUT);
    }
  }

  /** Heals everything: the network, stopped HBase servers, frozen and dead services. */
  void healAll() {
    rules.heal();
    if (netns != null) {
      netns.healAll();
    }
    for (var e : zkPorts.entrySet()) {
      // A master busy recovering from engine faults may not answer the 2 s probe at once.
      long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
      while (StandaloneHBase.status(e.getKey()).state() == StandaloneHBase.State.UNRESPONSIVE
          && System.nanoTime() < deadline) {
        FaultSchedule.Clock.system().sleep(500);
      }
      if (StandaloneHBase.status(e.getKey()).state() == StandaloneHBase.State.NOT_RUNNING) {
        StandaloneHBase.start(e.getKey(), e.getValue(), Duration.ofSeconds(240),
            options.regionServers());
        if (netns != null) {
          startHBaseForwarders();
        }
      }
      for (StandaloneHBase.RegionServer rs : StandaloneHBase.regionServers(e.getKey())) {
        if (rs.pid().isEmpty()) {
          StandaloneHBase.startRegionServer(e.getKey(), rs.index());
          log.log("HBase %s: region server %d started again", e.getKey().getFileName(),
              rs.index());
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
      ServiceProcess fw = ServiceProcess.program("hbase-forwarder-" + dc, dc, netns.exec(dc),
          program, "forwarding", dir.resolve("logs").resolve("hbase-forwarder-" + dc + ".log"));
      fw.start(START_TIMEOUT);
      nsForwarders.add(fw);
    }
    forwardedPorts = ports;
    log.log("HBase ports %s forwarded into every DC's namespace", ports);
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

  /** Stops every service, proxy, forwarder, store and HBase server it started. Idempotent. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
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
    regionControls.values().forEach(org.paxoscp.store.hbase.RegionControl::close);
    for (KvStore s : stores.values()) {
      try {
        s.close();
      } catch (RuntimeException e) {
        // closing anyway
      }
    }
    for (Path hd : hbaseStarted) {
      try {
        StandaloneHBase.stop(hd, Duration.ofSeconds(60));
      } catch (RuntimeException e) {
        log.out().println("nemesis: stopping HBase " + hd + ": " + e);
      }
    }
    hbaseStarted.clear();
  }
}
