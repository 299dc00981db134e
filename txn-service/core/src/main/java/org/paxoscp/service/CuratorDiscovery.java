package org.paxoscp.service;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.x.discovery.ServiceCache;
import org.apache.curator.x.discovery.ServiceDiscovery;
import org.apache.curator.x.discovery.ServiceDiscoveryBuilder;
import org.apache.curator.x.discovery.ServiceInstance;
import org.paxoscp.transport.Endpoints;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Service discovery through ZooKeeper with Apache Curator (docs/architecture.md section 6): a
 * service registers itself as an instance of the service named after its DC under the cluster's
 * discovery path (an ephemeral node, gone when its session ends), and services and clients find a
 * DC's live instances through {@link #endpoints}, backed by one watched cache per DC.
 *
 * <p>Curator types stay inside this class. Thread-safe. {@link #start} and {@link #register}
 * block on ZooKeeper (bounded by the connect timeout and Curator's retry policy);
 * {@link Endpoints#of} never blocks (it reads the cache).
 */
public final class CuratorDiscovery implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(CuratorDiscovery.class);

  private final String connect;
  private final String basePath;
  private final CuratorFramework client;
  private final ServiceDiscovery<Void> discovery;
  private final List<AutoCloseable> caches = new ArrayList<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  private CuratorDiscovery(String connect, String basePath, CuratorFramework client,
      ServiceDiscovery<Void> discovery) {
    this.connect = connect;
    this.basePath = basePath;
    this.client = client;
    this.discovery = discovery;
  }

  /** ZooKeeper or Curator failed, or did not answer in time. */
  public static final class DiscoveryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DiscoveryException(String message, Throwable cause) {
      super(message, cause);
    }
  }

  /**
   * Connects to ZooKeeper and starts discovery under {@code basePath}
   * ({@code ClusterConfig.discoveryPath()}).
   *
   * @param connectTimeout how long to wait for the first connection (also Curator's connection
   *     timeout)
   * @throws DiscoveryException when ZooKeeper cannot be reached within {@code connectTimeout}
   */
  public static CuratorDiscovery start(String zkConnect, String basePath,
      Duration connectTimeout) {
    Objects.requireNonNull(zkConnect);
    if (basePath == null || !basePath.startsWith("/")) {
      throw new IllegalArgumentException("discovery path must start with '/': " + basePath);
    }
    int timeoutMs = (int) Math.min(Integer.MAX_VALUE, connectTimeout.toMillis());
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(zkConnect)
        .connectionTimeoutMs(timeoutMs)
        .sessionTimeoutMs(Math.max(timeoutMs * 3, 6_000))
        .retryPolicy(new ExponentialBackoffRetry(100, 3, 1_000))
        .build();
    ServiceDiscovery<Void> discovery = null;
    try {
      client.start();
      if (!client.blockUntilConnected(timeoutMs, TimeUnit.MILLISECONDS)) {
        throw new IOException("no connection to ZooKeeper " + zkConnect + " within "
            + timeoutMs + " ms");
      }
      discovery = ServiceDiscoveryBuilder.builder(Void.class).client(client).basePath(basePath)
          .build();
      discovery.start();
      LOG.info("discovery started: ZooKeeper {}, path {}", zkConnect, basePath);
      return new CuratorDiscovery(zkConnect, basePath, client, discovery);
    } catch (Exception e) {
      closeQuietly(discovery);
      client.close();
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new DiscoveryException("discovery on ZooKeeper " + zkConnect + basePath
          + " failed to start: " + e, e);
    }
  }

  /** A registered service instance; {@link #close()} unregisters it (idempotent). */
  public final class Registration implements AutoCloseable {
    private final ServiceInstance<Void> instance;
    private final AtomicBoolean done = new AtomicBoolean();

    private Registration(ServiceInstance<Void> instance) {
      this.instance = instance;
    }

    /** The instance id (unique per registration). */
    public String id() {
      return instance.getId();
    }

    /** Unregisters the instance; peers stop seeing it once their caches update. */
    @Override
    public void close() {
      if (!done.compareAndSet(false, true) || closed.get()) {
        return;
      }
      try {
        discovery.unregisterService(instance);
        LOG.info("unregistered {} {}:{}", instance.getName(), instance.getAddress(),
            instance.getPort());
      } catch (Exception e) {
        // The node is ephemeral: it goes when the session ends even if this failed.
        LOG.warn("unregistering {} from {} failed: {}", instance.getName(), connect, e.toString());
      }
    }
  }

  /**
   * Registers a service of DC {@code dc} listening on {@code address} (its host string and
   * port, as peers should use them; not a wildcard address).
   *
   * @throws DiscoveryException when ZooKeeper does not take the registration
   */
  public Registration register(String dc, InetSocketAddress address) {
    if (address.getPort() <= 0) {
      throw new IllegalArgumentException("register the bound port, not " + address.getPort());
    }
    if (!address.isUnresolved() && address.getAddress().isAnyLocalAddress()) {
      throw new IllegalArgumentException("register a reachable address, not the wildcard "
          + address);
    }
    try {
      ServiceInstance<Void> instance = ServiceInstance.<Void>builder().name(dc)
          .address(address.getHostString()).port(address.getPort()).build();
      discovery.registerService(instance);
      LOG.info("registered DC {} service at {}:{} under {}", dc, address.getHostString(),
          address.getPort(), basePath);
      return new Registration(instance);
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new DiscoveryException("registering DC " + dc + " at " + address + " failed: " + e,
          e);
    }
  }

  /**
   * Endpoints of {@code dcs} from ZooKeeper: one cache per DC, kept current by watches. Closed
   * with this object (or by its own {@code close}).
   *
   * @throws DiscoveryException when a cache cannot load
   */
  public Endpoints endpoints(List<String> dcs) {
    Map<String, ServiceCache<Void>> byDc = new HashMap<>();
    try {
      for (String dc : dcs) {
        ServiceCache<Void> cache = discovery.serviceCacheBuilder().name(dc).build();
        byDc.put(dc, cache);
        cache.start();
      }
    } catch (Exception e) {
      byDc.values().forEach(CuratorDiscovery::closeQuietly);
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new DiscoveryException("loading service caches for " + dcs + " failed: " + e, e);
    }
    AtomicBoolean cachesClosed = new AtomicBoolean();
    Endpoints endpoints = new Endpoints() {
      @Override
      public List<InetSocketAddress> of(String dc) {
        ServiceCache<Void> cache = byDc.get(dc);
        if (cache == null) {
          return List.of();
        }
        List<InetSocketAddress> out = new ArrayList<>();
        for (ServiceInstance<Void> i : cache.getInstances()) {
          if (i.getAddress() != null && i.getPort() != null) {
            out.add(new InetSocketAddress(i.getAddress(), i.getPort()));
          }
        }
        return out;
      }

      @Override
      public void close() {
        if (cachesClosed.compareAndSet(false, true)) {
          byDc.values().forEach(CuratorDiscovery::closeQuietly);
        }
      }
    };
    synchronized (caches) {
      caches.add(endpoints);
    }
    return endpoints;
  }

  /** Closes the caches, unregisters every instance registered here, disconnects. Idempotent. */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    synchronized (caches) {
      caches.forEach(CuratorDiscovery::closeQuietly);
      caches.clear();
    }
    closeQuietly(discovery);
    client.close();
  }

  private static void closeQuietly(AutoCloseable c) {
    if (c == null) {
      return;
    }
    try {
      c.close();
    } catch (Exception e) {
      LOG.warn("closing {} failed: {}", c.getClass().getSimpleName(), e.toString());
    }
  }
}
