package org.paxoscp.service;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.paxoscp.service.metrics.ServiceMetrics;
import org.paxoscp.service.metrics.StatusHandler;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.ThreadScheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.WanTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One running Transaction Service process: opens the DC's store, starts discovery when the
 * cluster has a ZooKeeper, opens the transport with a {@link TransactionService} as its handler,
 * and registers the bound address. {@link #close()} undoes it in reverse order.
 *
 * <p>Start-up order matters: the transport is listening before the service exists (the service's
 * catch-up sends through the transport), so requests that arrive in between get no reply, as if
 * the datagram were lost; the service registers with discovery only once it serves.
 *
 * <p>Thread-safe. {@link #start} blocks until the service serves or fails (closing whatever it
 * opened); {@link #close()} is idempotent and bounded.
 */
public final class ServiceRunner implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceRunner.class);
  /** Workers for catch-up's store work and for requests that waited for catch-up. */
  private static final int CATCH_UP_WORKERS = 4;

  private final ServiceConfig config;
  private final TransactionService service;
  private final CatchUp catchUp;
  private final InetSocketAddress boundAddress;
  private final ServiceMetrics metrics;
  private final Deque<AutoCloseable> resources;
  /** The UDP transport under the service's, or null (a test's in-process transport). */
  private final UdpTransport udp;
  private final AtomicBoolean closed = new AtomicBoolean();

  private ServiceRunner(ServiceConfig config, TransactionService service, CatchUp catchUp,
      InetSocketAddress boundAddress, ServiceMetrics metrics, Deque<AutoCloseable> resources,
      UdpTransport udp) {
    this.udp = udp;
    this.metrics = metrics;
    this.config = config;
    this.service = service;
    this.catchUp = catchUp;
    this.boundAddress = boundAddress;
    this.resources = resources;
  }

  /**
   * Starts a service as {@code config} says, with the transport {@code transports} opens.
   *
   * @throws RuntimeException when the store, discovery or transport cannot start (the store's
   *     {@code StoreUnavailableException}, {@link CuratorDiscovery.DiscoveryException}, ...);
   *     everything opened so far is closed again
   */
  public static ServiceRunner start(ServiceConfig config, ServiceTransportFactory transports) {
    KvStore store = config.store() == ServiceConfig.StoreKind.MEMORY
        ? new InMemoryKvStore(config.memoryNew())
        : HBaseKvStore.open(config.hbase().orElseThrow());
    try {
      return start(config, transports, store, true);
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
  }

  /**
   * Starts a service over a store the caller opened and keeps (it outlives the service: a local
   * cluster restarts a DC's service over the same store). The config's store settings are not
   * used.
   */
  public static ServiceRunner start(ServiceConfig config, ServiceTransportFactory transports,
      KvStore store) {
    return start(config, transports, Objects.requireNonNull(store), false);
  }

  private static ServiceRunner start(ServiceConfig config, ServiceTransportFactory transports,
      KvStore store, boolean ownsStore) {
    Objects.requireNonNull(transports);
    config.logEffectiveValues();
    ClusterConfig cluster = config.cluster();
    String dc = config.dc();
    Deque<AutoCloseable> opened = new ArrayDeque<>();
    try {
      if (ownsStore) {
        opened.push(store);
      }
      ServiceMetrics metrics = null;
      if (config.metrics().enabled()) {
        metrics = new ServiceMetrics(dc, config.metrics().jmx());
        opened.push(metrics);
        // Every store request of the service, its catch-up and GC is timed.
        store = metrics.meter(store);
      }

      Endpoints endpoints = Endpoints.fromConfig(cluster);
      CuratorDiscovery discovery = null;
      if (cluster.discoveryZk().isPresent()) {
        discovery = CuratorDiscovery.start(cluster.discoveryZk().get(), cluster.discoveryPath(),
            connectTimeout(cluster));
        opened.push(discovery);
        Endpoints discovered = discovery.endpoints(cluster.dcNames());
        opened.push(discovered);
        endpoints = preferDiscovered(discovered, endpoints);
      }

      // The handler is set once the service exists; until then requests are dropped.
      AtomicReference<RequestHandler> handler = new AtomicReference<>();
      RequestHandler deferred = (from, m) -> {
        RequestHandler h = handler.get();
        return h == null ? CompletableFuture.completedFuture(null) : h.handle(from, m);
      };
      ServiceTransportFactory.Bound bound = transports.open(cluster, dc, config.bind(),
          endpoints, deferred, config.threads(), config.admission());
      opened.push(bound.transport());

      // Closed after the catch-up (the deque closes in reverse order of opening).
      ThreadScheduler scheduler = new ThreadScheduler("service-" + dc, CATCH_UP_WORKERS);
      opened.push(scheduler);
      CatchUp catchUp = new CatchUp(dc, cluster.dcNames(), store, bound.transport(),
          config.catchUpSettings(), scheduler, config.cacheGroups());
      opened.push(catchUp);
      GroupCollector collector = null;
      if (config.gcSettings().isPresent()) {
        collector = new GroupCollector(dc, cluster.dcNames(), store, bound.transport(),
            config.gcSettings().get(), scheduler, null, config.cacheGroups());
        opened.push(collector);
      }
      TransactionService service = new TransactionService(dc, cluster.dcNames(), store, catchUp,
          config.limits(), scheduler, collector, config.leaderOptions());
      RequestHandler served = metrics == null ? service : metrics.meter(service);
      // The cluster version is known (or the start refused) before any request is served.
      UdpTransport udp = udpOf(bound.transport());
      ClusterVersions versions = new ClusterVersions(dc, cluster.dcNames().stream()
          .filter(d -> !d.equals(dc)).toList(), store, bound.transport(), cluster.versionRange(),
          cluster.requestTimeout(), udp == null ? java.util.Optional::empty : udp::lastWire3);
      opened.push(versions);
      versions.start(cluster.versionPoll());
      service.followClusterVersion(versions::active);
      handler.set(new StatusHandler(served, service, versions, bound::boundAddress,
          metrics == null ? null : metrics.registry()));
      if (metrics != null) {
        metrics.bind(service, catchUp, collector, bound.transport());
        if (config.metrics().http().isPresent()) {
          metrics.serve(config.metrics().http().get());
        }
      }

      if (discovery != null) {
        opened.push(discovery.register(dc, advertised(bound.boundAddress())));
      }
      // Visible to an operator's survey now: a fence set since the row was read stops it here.
      versions.checkFence();
      LOG.info("Transaction Service of DC {} serving on {} (store {})", dc, bound.boundAddress(),
          config.store().name().toLowerCase(java.util.Locale.ROOT));
      return new ServiceRunner(config, service, catchUp, bound.boundAddress(), metrics, opened,
          udp);
    } catch (RuntimeException e) {
      closeAll(opened);
      throw e;
    }
  }

  /** The UDP transport under {@code t} (a WAN emulator wraps one); null if there is none. */
  private static UdpTransport udpOf(Transport t) {
    while (t instanceof WanTransport w) {
      t = w.inner();
    }
    return t instanceof UdpTransport u ? u : null;
  }

  /** The address the transport listens on. */
  public InetSocketAddress boundAddress() {
    return boundAddress;
  }

  public ServiceConfig config() {
    return config;
  }

  /** The running service (for its counters). */
  public TransactionService service() {
    return service;
  }

  /** The service's metrics, unless {@link ServiceConfig#METRICS} is off. */
  public java.util.Optional<ServiceMetrics> metrics() {
    return java.util.Optional.ofNullable(metrics);
  }

  /**
   * Requests this service refused with OVERLOADED before any handler saw them ({@link
   * ServiceConfig#QUEUE_MAX_REQUESTS}, {@link ServiceConfig#QUEUE_MAX_WAIT}); 0 on a transport
   * other than UDP.
   */
  public long overloadRefusals() {
    return udp == null ? 0 : udp.overloadedCount();
  }

  /** The service's catch-up (for its counters). */
  public CatchUp catchUp() {
    return catchUp;
  }

  /**
   * Unregisters from discovery, then closes the catch-up, the transport, discovery and the store,
   * in that order. Idempotent.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      closeAll(resources);
      LOG.info("Transaction Service of DC {} stopped", config.dc());
    }
  }

  private static void closeAll(Deque<AutoCloseable> opened) {
    while (!opened.isEmpty()) {
      AutoCloseable c = opened.pop();
      try {
        c.close();
      } catch (Exception e) {
        LOG.warn("closing {} failed: {}", c.getClass().getSimpleName(), e.toString());
      }
    }
  }

  private static Duration connectTimeout(ClusterConfig cluster) {
    return cluster.discoveryConnectTimeout();
  }

  /** Discovered instances when there are any, else the DC's static endpoints. */
  private static Endpoints preferDiscovered(Endpoints discovered, Endpoints configured) {
    return dc -> {
      List<InetSocketAddress> found = discovered.of(dc);
      return found.isEmpty() ? configured.of(dc) : found;
    };
  }

  /**
   * The address peers should use: the bound one, or this host's address when bound to the
   * wildcard address (which nobody can send to).
   */
  private static InetSocketAddress advertised(InetSocketAddress bound) {
    if (bound.isUnresolved() || !bound.getAddress().isAnyLocalAddress()) {
      return bound;
    }
    try {
      return new InetSocketAddress(InetAddress.getLocalHost().getHostAddress(), bound.getPort());
    } catch (UnknownHostException e) {
      throw new IllegalStateException("bound to " + bound + " but this host has no address to "
          + "advertise; set " + ServiceConfig.BIND.name() + " to a reachable address", e);
    }
  }
}
