package org.paxoscp.store.hbase;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;

/**
 * A single in-process ZooKeeper server on loopback, for a local cluster that keeps its stores in
 * memory but still registers and discovers its services through ZooKeeper. (With HBase, the
 * ZooKeeper of {@link EmbeddedHBase} serves both.) Idempotent {@link #close()}.
 */
public final class EmbeddedZooKeeper implements AutoCloseable {
  private final MiniZooKeeperCluster zk;
  private final int port;
  private boolean closed;

  private EmbeddedZooKeeper(MiniZooKeeperCluster zk, int port) {
    this.zk = zk;
    this.port = port;
  }

  /** Starts a server keeping its data under {@code dir}; blocks until it serves. */
  public static EmbeddedZooKeeper start(Path dir) {
    MiniZooKeeperCluster zk = new MiniZooKeeperCluster(HBaseConfiguration.create());
    try {
      int port = zk.startup(dir.toAbsolutePath().toFile());
      return new EmbeddedZooKeeper(zk, port);
    } catch (IOException e) {
      throw new UncheckedIOException("could not start ZooKeeper in " + dir, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while starting ZooKeeper", e);
    }
  }

  /** {@code 127.0.0.1:<port>}. */
  public String connectString() {
    return "127.0.0.1:" + port;
  }

  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    try {
      zk.shutdown();
    } catch (IOException e) {
      throw new UncheckedIOException("could not stop ZooKeeper", e);
    }
  }
}
