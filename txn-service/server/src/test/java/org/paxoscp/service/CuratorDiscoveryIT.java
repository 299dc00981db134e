package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.zookeeper.MiniZooKeeperCluster;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.InProcessTransport;

/**
 * Curator service discovery against a real ZooKeeper (HBase's mini ZooKeeper, the same server
 * version the embedded HBase runs): registration, lookup through the per-DC caches, and
 * unregistration.
 */
@Timeout(120)
class CuratorDiscoveryIT {
  private static final Duration WAIT = Duration.ofSeconds(20);

  @TempDir
  static Path dir;
  private static MiniZooKeeperCluster zk;
  private static String connect;

  @BeforeAll
  static void startZooKeeper() throws Exception {
    zk = new MiniZooKeeperCluster(HBaseConfiguration.create());
    int port = zk.startup(new File(dir.toFile(), "zk"));
    connect = "127.0.0.1:" + port;
  }

  @AfterAll
  static void stopZooKeeper() throws Exception {
    if (zk != null) {
      zk.shutdown();
    }
  }

  @Test
  void servicesAreFoundByDcAndDisappearWhenUnregistered() {
    String path = "/paxoscp-it-1";
    try (CuratorDiscovery a = CuratorDiscovery.start(connect, path, Duration.ofSeconds(10));
        CuratorDiscovery b = CuratorDiscovery.start(connect, path, Duration.ofSeconds(10));
        CuratorDiscovery client = CuratorDiscovery.start(connect, path, Duration.ofSeconds(10));
        Endpoints eps = client.endpoints(List.of("A", "B", "C"))) {
      CuratorDiscovery.Registration ra1 = a.register("A", new InetSocketAddress("127.0.0.1", 7001));
      a.register("A", new InetSocketAddress("127.0.0.1", 7011));
      b.register("B", new InetSocketAddress("127.0.0.1", 7002));

      Poll.until("both A services visible", WAIT, () -> ports(eps, "A").equals(Set.of(7001, 7011)));
      Poll.until("B's service visible", WAIT, () -> ports(eps, "B").equals(Set.of(7002)));
      assertEquals(List.of(), eps.of("C"));
      assertEquals(List.of(), eps.of("unknown"));

      ra1.close();
      ra1.close();
      Poll.until("A's first service gone", WAIT, () -> ports(eps, "A").equals(Set.of(7011)));

      b.close();
      Poll.until("B's service gone with its discovery", WAIT, () -> eps.of("B").isEmpty());
      assertEquals(Set.of(7011), ports(eps, "A"));
    }
  }

  @Test
  void registrationRefusesAddressesPeersCannotUse() {
    try (CuratorDiscovery d = CuratorDiscovery.start(connect, "/paxoscp-it-2",
        Duration.ofSeconds(10))) {
      assertThrows(IllegalArgumentException.class,
          () -> d.register("A", new InetSocketAddress("127.0.0.1", 0)));
      assertThrows(IllegalArgumentException.class,
          () -> d.register("A", new InetSocketAddress("0.0.0.0", 7001)));
    }
  }

  @Test
  void anUnreachableZooKeeperFailsWithinTheConnectTimeout() {
    long t0 = System.nanoTime();
    CuratorDiscovery.DiscoveryException e = assertThrows(CuratorDiscovery.DiscoveryException.class,
        () -> CuratorDiscovery.start("127.0.0.1:1", "/paxoscp", Duration.ofMillis(500)));
    assertTrue(e.getMessage().contains("127.0.0.1:1"), e.getMessage());
    assertTrue(Duration.ofNanos(System.nanoTime() - t0).compareTo(Duration.ofSeconds(10)) < 0);
  }

  @Test
  void aServiceRunnerRegistersItsBoundAddressWhileItRuns() {
    Map<String, String> props = ServiceRunnerTest.props("O");
    props.put("paxoscp.discovery.zk", connect);
    props.put("paxoscp.discovery.path", "/paxoscp-it-3");
    props.remove("paxoscp.dc.O.endpoints");
    props.put(ServiceConfig.BIND.name(), "127.0.0.1:0");
    ServiceConfig config = ServiceConfig.fromProperties(props);
    try (InProcessTransport.Network net = new InProcessTransport.Network();
        CuratorDiscovery client = CuratorDiscovery.start(connect, "/paxoscp-it-3",
            Duration.ofSeconds(10));
        Endpoints eps = client.endpoints(List.of("V", "O", "C"))) {
      ServiceRunner runner = ServiceRunner.start(config,
          (cluster, dc, bind, endpoints, handler, threads) -> {
            assertEquals(0, bind.getPort());
            net.register(dc, handler);
            return new ServiceTransportFactory.Bound(net.transport(dc),
                new InetSocketAddress("127.0.0.1", 17102));
          });
      try {
        Poll.until("O's service visible", WAIT, () -> ports(eps, "O").equals(Set.of(17102)));
      } finally {
        runner.close();
      }
      Poll.until("O's service gone after close", WAIT, () -> eps.of("O").isEmpty());
    }
  }

  private static Set<Integer> ports(Endpoints eps, String dc) {
    return eps.of(dc).stream().map(InetSocketAddress::getPort).collect(Collectors.toSet());
  }
}
