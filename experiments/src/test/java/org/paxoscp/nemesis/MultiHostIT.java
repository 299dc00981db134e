package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.local.ServiceProcess;
import org.paxoscp.transport.ClusterConfig;

/**
 * Every DC on a host of its own: each DC's service process runs in a network namespace with its
 * own address, and the client — an application server elsewhere — runs in this JVM in the root
 * namespace, reaching them over real interfaces (veth links on a bridge). It commits, reads its
 * writes, and fails over when its home DC's namespace is cut off. Skipped, saying why, where
 * network namespaces cannot be made (not root, no {@code ip}).
 */
@Timeout(180)
class MultiHostIT {
  private static final List<String> DCS = List.of("V1", "V2", "O");
  private static final int PORT = 7101;

  private NetNamespaces hosts;
  private final List<ServiceProcess> services = new ArrayList<>();

  @AfterEach
  void tearDown() {
    for (ServiceProcess s : services) {
      s.stop(Duration.ofSeconds(5));
    }
    if (hosts != null) {
      hosts.close();
    }
  }

  private Map<String, String> cluster() {
    Map<String, String> p = new LinkedHashMap<>();
    p.put("paxoscp.dcs", String.join(",", DCS));
    p.put("paxoscp.key", HexFormat.of().formatHex(new byte[16]).replace('0', '7'));
    p.put("paxoscp.request.timeout.ms", "700");
    p.put("paxoscp.proposer.phase.timeout.ms", "700");
    for (String dc : DCS) {
      p.put("paxoscp.dc." + dc + ".endpoints", hosts.address(dc) + ":" + PORT);
    }
    return p;
  }

  private void startServices(Path dir) throws IOException {
    for (String dc : DCS) {
      Map<String, String> p = cluster();
      p.put("paxoscp.service.dc", dc);
      p.put("paxoscp.service.bind", hosts.address(dc) + ":" + PORT);
      p.put("paxoscp.service.store", "memory");
      Path file = dir.resolve(dc + ".properties");
      KeyFiles.writePrivate(file, p, "service of " + dc + " in its own network namespace");
      ServiceProcess s = ServiceProcess.service("service-" + dc, dc, file,
          dir.resolve("service-" + dc + ".log"), hosts.exec(dc), true);
      services.add(s);
      s.start(Duration.ofSeconds(60));
    }
  }

  @Test
  void aClientOnAnotherHostCommitsReadsItsWritesAndFailsOver(@TempDir Path dir)
      throws Exception {
    String why = NetNamespaces.unavailableReason();
    Assumptions.assumeTrue(why == null, "multi-host test skipped: " + why);
    hosts = new NetNamespaces(DCS);
    hosts.create();
    startServices(dir);
    ClusterConfig config = ClusterConfig.fromProperties(cluster());

    try (TxnClient client = TxnClient.builder(config, "V1", CommitProtocol.CP).build()) {
      Transaction t = client.begin("accounts");
      t.put("alice", "100");
      long p = t.commit().position();
      Transaction read = client.begin("accounts");
      assertTrue(read.readPosition() >= p);
      assertEquals(Optional.of("100"), read.getString("alice"));
      read.commit();

      // The home DC's host drops off the network: begins and reads fail over, and V2 and O are
      // a majority for the commit.
      hosts.cut("V1");
      Transaction during = client.begin("accounts");
      assertEquals(Optional.of("100"), during.getString("alice"));
      during.put("alice", "90");
      assertTrue(during.commit().committed(), "V2 and O are a majority");
      hosts.healAll();
      assertEquals(Optional.of("90"), client.begin("accounts").getString("alice"));
    }

    // A client bound to loopback cannot reach another host: the error names the cause at once.
    Map<String, String> loopback = new LinkedHashMap<>(cluster());
    loopback.put("paxoscp.client.bind", "127.0.0.1");
    try (TxnClient client = TxnClient.builder(ClusterConfig.fromProperties(loopback), "V1",
        CommitProtocol.CP).build()) {
      long start = System.nanoTime();
      UnavailableException e = assertThrows(UnavailableException.class,
          () -> client.begin("accounts"));
      assertTrue(e.getMessage().contains("cannot send"), e.getMessage());
      assertTrue(e.getMessage().contains("Invalid argument"), e.getMessage());
      assertTrue(System.nanoTime() - start < Duration.ofMillis(700).toNanos(),
          "failed at once, not after a request timeout per DC");
    }
  }
}
