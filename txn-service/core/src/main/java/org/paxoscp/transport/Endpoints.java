package org.paxoscp.transport;

import java.net.InetSocketAddress;
import java.util.List;

/**
 * Where a DC's Transaction Services listen: static addresses from the {@link ClusterConfig}, or
 * the instances registered in ZooKeeper (Curator service discovery). Thread-safe.
 */
public interface Endpoints extends AutoCloseable {
  /** The live endpoints of DC {@code dc}; empty when none is known. Never blocks for long. */
  List<InetSocketAddress> of(String dc);

  /** The endpoints listed in the cluster config, resolved. */
  static Endpoints fromConfig(ClusterConfig config) {
    java.util.Map<String, List<InetSocketAddress>> m = new java.util.HashMap<>();
    for (ClusterConfig.Dc d : config.dcs()) {
      m.put(d.name(), d.endpoints().stream()
          .map(a -> new InetSocketAddress(a.getHostString(), a.getPort())).toList());
    }
    return dc -> m.getOrDefault(dc, List.of());
  }

  @Override
  default void close() {}
}
