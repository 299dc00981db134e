package org.paxoscp.ycsb;

import java.util.Properties;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.transport.ClusterConfig;

/**
 * The binding over the test's {@link InProcessCluster} (DCs A, B, C, real services, in-memory
 * stores) instead of a cluster file and UDP: set {@link #cluster} before {@code init}.
 */
public class InProcessPaxosCpDB extends PaxosCpDB {
  static volatile InProcessCluster cluster;

  @Override
  protected ClusterConfig clusterConfig(Properties p) {
    return cluster.config;
  }

  @Override
  protected TxnClient openClient(ClusterConfig config, String homeDc, CommitProtocol protocol) {
    return client(homeDc, protocol);
  }

  /** A client of {@link #cluster} homed at {@code homeDc}. */
  static TxnClient client(String homeDc, CommitProtocol protocol) {
    return TxnClient.builder(cluster.config, homeDc, protocol)
        .transport(cluster.network.transport(homeDc)).build();
  }
}
