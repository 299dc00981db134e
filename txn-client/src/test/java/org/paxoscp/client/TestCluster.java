package org.paxoscp.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.service.ObservedService;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.wal.LogValue;

/** The test kit's {@link InProcessCluster} of three real services, with clients of it. */
final class TestCluster implements AutoCloseable {
  static final List<String> DCS = InProcessCluster.DCS;

  private final InProcessCluster cluster;
  final ClusterConfig config;
  final InProcessTransport.Network network;
  final Map<String, InMemoryKvStore> stores;
  final Map<String, ObservedService> services;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  TestCluster(Duration requestTimeout) {
    this(requestTimeout, 60_000);
  }

  TestCluster(Duration requestTimeout, int maxDatagramBytes) {
    this.cluster = new InProcessCluster(requestTimeout, maxDatagramBytes);
    this.config = cluster.config;
    this.network = cluster.network;
    this.stores = cluster.stores;
    this.services = cluster.services;
  }

  /** A client builder over the in-process transport of {@code home}. */
  TxnClient.Builder client(String home, CommitProtocol protocol) {
    return TxnClient.builder(config, home, protocol).transport(network.transport(home));
  }

  /** Registers something to close with the cluster (clients first, in reverse order). */
  <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  void setDown(String dc, boolean down) {
    cluster.setDown(dc, down);
  }

  SortedMap<Long, LogValue> log(String dc, String group, long upTo) {
    return cluster.log(dc, group, upTo);
  }

  Map<String, SortedMap<Long, LogValue>> logs(String group, long upTo) {
    return cluster.logs(group, upTo);
  }

  @Override
  public void close() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    cluster.close();
  }
}
