package org.paxoscp.store.hbase;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.HConstants;

/**
 * The HBase client configuration of a store. HBase's defaults suit batch jobs, not a commit path:
 * 20 minutes of operation timeout, 16 retries starting at 100 ms, 30 ZooKeeper retries one second
 * apart and a 10 s connect timeout. Here every bound derives from {@link HBaseStoreConfig}, so a
 * dead or slow HBase turns into an error within the configured deadline. The store additionally
 * waits on every call for at most the deadline itself, so the bound holds even on code paths
 * whose timeouts HBase does not enforce.
 */
final class HBaseClientSettings {

  /** ZooKeeper retries of one read (cluster id, meta location) and their interval. */
  static final int ZK_RETRIES = 3;
  static final int ZK_RETRY_INTERVAL_MS = 200;

  /**
   * Attempts of one operation. The operation timeout ends retrying first in practice (50 ms
   * pause with HBase's back-off 1, 2, 3, 5, 10, 20, 40... reaches 3 s after 7 attempts); the
   * count only bounds the work done for a fast-failing server.
   */
  static final int RETRIES = 10;

  private HBaseClientSettings() {}

  static Configuration create(HBaseStoreConfig c) {
    Configuration conf = HBaseConfiguration.create();
    apply(conf, c);
    return conf;
  }

  static void apply(Configuration conf, HBaseStoreConfig c) {
    long deadline = c.operationDeadline().toMillis();
    long rpc = c.rpcTimeout().toMillis();
    long pause = c.retryPause().toMillis();
    long connect = c.connectDeadline().toMillis();

    conf.set(HConstants.ZOOKEEPER_QUORUM, c.zkQuorum());
    conf.setInt(HConstants.ZOOKEEPER_CLIENT_PORT, c.zkPort());
    conf.set(HConstants.ZOOKEEPER_ZNODE_PARENT, c.znodeParent());

    // Whole operation, retries and region look-ups included.
    conf.setLong(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT, deadline);
    conf.setLong(HConstants.HBASE_CLIENT_META_OPERATION_TIMEOUT, deadline);
    conf.setLong(HConstants.HBASE_CLIENT_SCANNER_TIMEOUT_PERIOD, deadline);
    conf.setLong("hbase.client.meta.scanner.timeout.period", deadline);
    // One RPC attempt.
    conf.setLong(HConstants.HBASE_RPC_TIMEOUT_KEY, rpc);
    conf.setLong(HConstants.HBASE_RPC_READ_TIMEOUT_KEY, rpc);
    conf.setLong(HConstants.HBASE_RPC_WRITE_TIMEOUT_KEY, rpc);
    conf.setLong("hbase.client.meta.read.rpc.timeout", rpc);
    conf.setLong("hbase.ipc.client.socket.timeout.connect", Math.min(rpc, connect));
    // Retries.
    conf.setInt(HConstants.HBASE_CLIENT_RETRIES_NUMBER, RETRIES);
    conf.setLong(HConstants.HBASE_CLIENT_PAUSE, pause);
    conf.setLong("hbase.client.pause.server.overloaded", Math.max(pause, 100));
    // ZooKeeper (cluster id and meta location come from there).
    conf.setInt(HConstants.ZK_SESSION_TIMEOUT, (int) connect);
    conf.setInt("zookeeper.recovery.retry", ZK_RETRIES);
    conf.setInt("zookeeper.recovery.retry.intervalmill", ZK_RETRY_INTERVAL_MS);
  }
}
