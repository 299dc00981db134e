package org.paxoscp.store.hbase;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.LocalHBaseCluster;
import org.apache.hadoop.hbase.master.HMaster;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.apache.hadoop.metrics2.lib.DefaultMetricsSystem;
import org.paxoscp.store.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An HBase inside this JVM: an embedded ZooKeeper, one master and one region server on the local
 * filesystem under a directory, all on loopback with random ports. It is the default store of a
 * local cluster and the HBase of the integration tests; it starts in about 5 s.
 *
 * <p>All DCs of a local cluster may share one instance (a namespace per DC, each DC's store with a
 * connection of its own), or each DC may have its own instance; several instances can run in one
 * JVM. Data survives {@link #close()} and a later {@link #start} on the same directory.
 *
 * <p>{@link #start} blocks until the master is initialized. {@link #close()} shuts the cluster
 * down (region servers flush their memstores) and is idempotent. Thread-safe.
 */
public final class EmbeddedHBase implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(EmbeddedHBase.class);

  /** Default bound of {@link #start(Path)}. */
  public static final Duration DEFAULT_START_TIMEOUT = Duration.ofSeconds(90);

  /** Bound of waiting for the master and region server threads in {@link #close()}. */
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

  private final Path dir;
  private final MiniZooKeeperCluster zk;
  private final LocalHBaseCluster cluster;
  private final int zkPort;
  private final Duration startupTime;
  private final AtomicBoolean closed = new AtomicBoolean();

  private EmbeddedHBase(Path dir, MiniZooKeeperCluster zk, LocalHBaseCluster cluster, int zkPort,
      Duration startupTime) {
    this.dir = dir;
    this.zk = zk;
    this.cluster = cluster;
    this.zkPort = zkPort;
    this.startupTime = startupTime;
  }

  /** Starts an instance with its data under {@code dir}; see {@link #start(Path, Duration)}. */
  public static EmbeddedHBase start(Path dir) {
    return start(dir, DEFAULT_START_TIMEOUT);
  }

  /**
   * Starts ZooKeeper, a master and a region server with their data under {@code dir} (created if
   * needed; an existing HBase directory is reopened with its data) and waits until the master is
   * initialized.
   *
   * @throws StoreUnavailableException if HBase does not come up within {@code timeout}
   */
  public static EmbeddedHBase start(Path dir, Duration timeout) {
    long t0 = System.nanoTime();
    Path abs = dir.toAbsolutePath().normalize();
    // Metrics sources are JVM-global; without this a second instance's region server dies on
    // "Metrics source ... already exists".
    DefaultMetricsSystem.setMiniClusterMode(true);
    Configuration conf = HBaseConfiguration.create();
    HBaseServerSettings.settings(abs, 0, 0, 0).forEach(conf::set);
    conf.setBoolean(LocalHBaseCluster.ASSIGN_RANDOM_PORTS, true);
    conf.set("hbase.master.start.timeout.localHBaseCluster", Long.toString(timeout.toMillis()));
    conf.set("hbase.master.init.timeout.localHBaseCluster", Long.toString(timeout.toMillis()));

    MiniZooKeeperCluster zk = new MiniZooKeeperCluster(conf);
    LocalHBaseCluster cluster = null;
    try {
      Files.createDirectories(abs);
      int port = zk.startup(abs.resolve("zookeeper").toFile());
      if (port <= 0) {
        throw new IOException("embedded ZooKeeper found no free port");
      }
      conf.setInt("hbase.zookeeper.property.clientPort", port);
      cluster = new LocalHBaseCluster(conf, 1, 1);
      // Returns once the active master is initialized (meta and namespace tables online).
      cluster.startup();
      HMaster master = cluster.getActiveMaster();
      if (master == null || !master.isInitialized()) {
        throw new IOException("master not initialized after start-up");
      }
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      LOG.info("Embedded HBase up in {} ms: ZooKeeper {}:{}, data {}", took.toMillis(),
          HBaseServerSettings.LOOPBACK, port, abs);
      return new EmbeddedHBase(abs, zk, cluster, port, took);
    } catch (IOException | RuntimeException e) {
      stopQuietly(cluster, zk);
      if (e instanceof InterruptedIOException) {
        Thread.currentThread().interrupt();
      }
      throw new StoreUnavailableException("embedded HBase in " + abs + " failed to start: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stopQuietly(cluster, zk);
      throw new StoreUnavailableException("interrupted while starting embedded HBase", e);
    }
  }

  /** ZooKeeper host(s) for {@link HBaseStoreConfig.Builder#zkQuorum}. */
  public String zkQuorum() {
    return HBaseServerSettings.LOOPBACK;
  }

  /** ZooKeeper client port (chosen at start). */
  public int zkPort() {
    return zkPort;
  }

  /** The data directory. */
  public Path dir() {
    return dir;
  }

  /** How long {@link #start} took. */
  public Duration startupTime() {
    return startupTime;
  }

  /** A store config for DC {@code dc} on this instance, with default deadlines. */
  public HBaseStoreConfig.Builder storeConfig(String dc) {
    return HBaseStoreConfig.builder(dc).zkQuorum(zkQuorum()).zkPort(zkPort);
  }

  /** Opens DC {@code dc}'s store on this instance, creating its tables if needed. */
  public HBaseKvStore openStore(String dc) {
    return HBaseKvStore.open(storeConfig(dc).build());
  }

  /**
   * Shuts the cluster down (waiting at most about 30 s for its threads) and then ZooKeeper.
   * Idempotent; stores opened on this instance become unavailable.
   */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      long t0 = System.nanoTime();
      stopQuietly(cluster, zk);
      LOG.info("Embedded HBase in {} stopped in {} ms", dir,
          (System.nanoTime() - t0) / 1_000_000);
    }
  }

  private static void stopQuietly(LocalHBaseCluster cluster, MiniZooKeeperCluster zk) {
    if (cluster != null) {
      try {
        cluster.shutdown();
        // LocalHBaseCluster.shutdown() waits for the region server threads but not for the
        // master's (it checks the HMaster object, which is not the thread running it). Wait for
        // both here, bounded, so that ZooKeeper is still up while the master deregisters.
        long end = System.nanoTime() + STOP_TIMEOUT.toNanos();
        List<Thread> threads = new ArrayList<>(cluster.getMasters());
        threads.addAll(cluster.getRegionServers());
        for (Thread t : threads) {
          long left = end - System.nanoTime();
          if (left > 0) {
            t.join(Math.max(1, left / 1_000_000));
          }
          if (t.isAlive()) {
            LOG.warn("HBase thread {} still running {} s after shutdown", t.getName(),
                STOP_TIMEOUT.toSeconds());
          }
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        LOG.warn("Interrupted while waiting for embedded HBase to stop");
      } catch (RuntimeException e) {
        LOG.warn("Embedded HBase shutdown failed", e);
      }
    }
    try {
      zk.shutdown();
    } catch (IOException | RuntimeException e) {
      LOG.warn("Embedded ZooKeeper shutdown failed", e);
    }
  }
}
