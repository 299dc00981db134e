package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.transport.ClusterConfig;

@Timeout(30)
class ServiceConfigTest {

  private static Map<String, String> base() {
    Map<String, String> p = new HashMap<>();
    p.put("paxoscp.dcs", "V,O,C");
    p.put("paxoscp.key", "00112233445566778899aabbccddeeff");
    p.put("paxoscp.dc.V.endpoints", "127.0.0.1:7001");
    p.put("paxoscp.dc.O.endpoints", "127.0.0.1:7002");
    p.put("paxoscp.dc.C.endpoints", "127.0.0.1:7003");
    p.put("paxoscp.dc.O.hbase.zk.port", "2182");
    p.put("paxoscp.request.timeout.ms", "500");
    p.put(ServiceConfig.DC.name(), "O");
    return p;
  }

  @Test
  void defaultsComeFromTheClusterAndTheDc() {
    ServiceConfig c = ServiceConfig.fromProperties(base());
    assertEquals("O", c.dc());
    assertEquals(7002, c.bind().getPort());
    assertEquals(ServiceConfig.THREADS.defaultValue(), c.threads());
    assertEquals(ServiceConfig.StoreKind.HBASE, c.store());
    assertEquals(2182, c.hbase().orElseThrow().zkPort());
    assertEquals("O", c.hbase().orElseThrow().dc());
    // The client's request timeout (500 ms here) no longer feeds the service's own timeouts.
    assertEquals(ServiceConfig.CATCHUP_WAIT.defaultValue(), c.catchUpWait());
    assertEquals(ServiceConfig.READ_MAX_KEYS.defaultValue(), c.limits().maxReadKeys());
    assertEquals(ServiceConfig.LEARN_TIMEOUT.defaultValue(), c.catchUpSettings().learnTimeout());
    assertEquals(ServiceConfig.LEARNER_TIMEOUT.defaultValue(),
        c.catchUpSettings().learnerTimeout());
    assertEquals(ServiceConfig.GC_PEER_TIMEOUT.defaultValue(),
        c.gcSettings().orElseThrow().peerTimeout());
    assertEquals(LeaderCombiner.Options.DEFAULT_HOLD_SHARE, c.leaderHoldShare());
    assertEquals(ServiceConfig.KEYS.names(), List.copyOf(c.effectiveValues().keySet()));
  }

  @Test
  void leaderCombinationTakesRoundTripsFromTheEmulatedWanOrMeasuresThem() {
    for (String wan : List.of("true", "false")) {
      for (ServiceConfig.LeaderRtts rtts : ServiceConfig.LeaderRtts.values()) {
        Map<String, String> p = base();
        p.put(ClusterConfig.WAN_ENABLED.name(), wan);
        p.put(ServiceConfig.LEADER_RTTS.name(), rtts.name().toLowerCase(java.util.Locale.ROOT));
        p.put(ServiceConfig.RTT_PROBE.name(), "250");
        LeaderCombiner.Options o = ServiceConfig.fromProperties(p).leaderOptions();
        boolean emulated = wan.equals("true") && rtts != ServiceConfig.LeaderRtts.MEASURED;
        String what = "wan " + wan + ", " + rtts;
        assertEquals(emulated, !o.leaderCosts().isEmpty(), what);
        assertEquals(emulated, o.latency() != null, what);
        assertEquals(rtts == ServiceConfig.LeaderRtts.OFF ? null : Duration.ofMillis(250),
            o.rttProbe(), what);
      }
    }
    Map<String, String> p = base();
    p.put(ServiceConfig.LEADER_RTTS.name(), "sometimes");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ServiceConfig.fromProperties(p));
    assertTrue(e.getMessage().contains(ServiceConfig.LEADER_RTTS.name()), e.getMessage());
  }

  @Test
  void explicitValuesAreTaken() {
    Map<String, String> p = base();
    p.put(ServiceConfig.BIND.name(), "127.0.0.1:7100");
    p.put(ServiceConfig.THREADS.name(), "4");
    p.put(ServiceConfig.STORE.name(), "memory");
    p.put(ServiceConfig.READ_MAX_KEYS.name(), "10");
    p.put(ServiceConfig.CATCHUP_MAX_POSITIONS.name(), "7");
    p.put(ServiceConfig.CATCHUP_WAIT.name(), "250");
    p.put(ServiceConfig.LEARN_TIMEOUT.name(), "300");
    p.put(ServiceConfig.LEARNER_TIMEOUT.name(), "900");
    p.put(ServiceConfig.LEADER_HOLD_SHARE.name(), "0");
    ServiceConfig c = ServiceConfig.fromProperties(p);
    assertEquals(Duration.ofMillis(300), c.catchUpSettings().learnTimeout());
    assertEquals(Duration.ofMillis(900), c.catchUpSettings().learnerTimeout());
    assertEquals(7100, c.bind().getPort());
    assertEquals(4, c.threads());
    assertEquals(ServiceConfig.StoreKind.MEMORY, c.store());
    assertTrue(c.hbase().isEmpty());
    assertEquals(10, c.readMaxKeys());
    assertEquals(7, c.catchUpSettings().maxPositionsPerRun());
    assertEquals(Duration.ofMillis(250), c.limits().catchUpWait());
    assertEquals(0.0, c.leaderHoldShare());
  }

  @Test
  void anEphemeralPortNeedsDiscovery() {
    Map<String, String> p = base();
    p.put(ServiceConfig.BIND.name(), "127.0.0.1:0");
    assertRejected(p, ServiceConfig.BIND.name());
    p.put("paxoscp.discovery.zk", "127.0.0.1:2181");
    assertEquals(0, ServiceConfig.fromProperties(p).bind().getPort());
    p.remove(ServiceConfig.BIND.name());
    p.remove("paxoscp.dc.O.endpoints");
    assertEquals(0, ServiceConfig.fromProperties(p).bind().getPort());
  }

  @Test
  void badValuesAreRejectedNamingTheKey() {
    for (var bad : Map.of(ServiceConfig.DC.name(), "X", ServiceConfig.THREADS.name(), "0",
        ServiceConfig.STORE.name(), "disk", ServiceConfig.BIND.name(), "nohost",
        ServiceConfig.READ_MAX_KEYS.name(), "many", ServiceConfig.CATCHUP_WAIT.name(), "-1",
        "paxoscp.service.colour", "blue", "paxoscp.dc.O.hbase.zk.prt", "1",
        ProposerConfig.PHASE_TIMEOUT.name(), "0", ServiceConfig.LEADER_HOLD_SHARE.name(), "1.5")
        .entrySet()) {
      Map<String, String> p = base();
      p.put(bad.getKey(), bad.getValue());
      assertRejected(p, bad.getKey().startsWith("paxoscp.dc.") ? "zk.prt" : bad.getKey());
    }
    Map<String, String> p = base();
    p.remove(ServiceConfig.DC.name());
    assertRejected(p, ServiceConfig.DC.name());
  }

  @Test
  void theWireKeysAreReadAndWrittenBack() {
    Map<String, String> p = base();
    assertTrue(ServiceConfig.fromProperties(p).cluster().wireEncrypt(), "encrypted by default");
    assertEquals(List.of(), ServiceConfig.fromProperties(p).cluster().acceptedKeys());
    p.put("paxoscp.key.accept",
        "ffeeddccbbaa99887766554433221100, 0123456789abcdef0123456789abcdef");
    p.put("paxoscp.wire.encrypt", "false");
    p.put("paxoscp.wire.require.encrypted", "false");
    ClusterConfig c = ServiceConfig.fromProperties(p).cluster();
    assertEquals(2, c.acceptedKeys().size());
    assertEquals("ffeeddccbbaa99887766554433221100",
        java.util.HexFormat.of().formatHex(c.acceptedKeys().get(0)));
    assertFalse(c.wireEncrypt());
    ClusterConfig back = ClusterConfig.fromProperties(c.toProperties());
    assertEquals(2, back.acceptedKeys().size());
    assertFalse(back.wireEncrypt());
    for (String bad : List.of("not-hex", "0011223344")) {
      Map<String, String> q = base();
      q.put("paxoscp.key.accept", bad);
      assertRejected(q, "paxoscp.key.accept");
    }
    Map<String, String> q = base();
    q.put("paxoscp.wire.encrypt", "maybe");
    assertRejected(q, "paxoscp.wire.encrypt");
  }

  @Test
  void theClusterVersionRangeRolesAndFreshnessAreReadAndChecked() {
    ClusterConfig d = ServiceConfig.fromProperties(base()).cluster();
    assertEquals(new org.paxoscp.version.ClusterVersion.Range(1,
        org.paxoscp.version.ClusterVersion.LATEST), d.versionRange());
    assertEquals(java.time.Duration.ofSeconds(5), d.versionPoll());
    assertTrue(d.wireRequireEncrypted());
    assertEquals(java.time.Duration.ofSeconds(30), d.wireFreshness());
    assertTrue(d.keyRole().isEmpty(), "a service's file holds the cluster key");

    Map<String, String> clear = base();
    clear.put("paxoscp.wire.encrypt", "false");
    assertRejected(clear, "paxoscp.wire.require.encrypted");
    // A file written by the build before cluster versions still starts this one.
    Map<String, String> earlier = base();
    earlier.put("paxoscp.wire.version", "4");
    earlier.put("paxoscp.wire.accept.v3", "false");
    assertEquals(d.versionRange(), ServiceConfig.fromProperties(earlier).cluster().versionRange());
    Map<String, String> beyond = base();
    beyond.put("paxoscp.cluster.version.max",
        Integer.toString(org.paxoscp.version.ClusterVersion.LATEST + 1));
    assertRejected(beyond, "paxoscp.cluster.version.max");

    // An application host's file: the client key, derived from the cluster key.
    ClusterConfig client = d.withRoleKey(org.paxoscp.transport.Role.CLIENT);
    Map<String, String> props = client.toProperties();
    assertTrue(props.get("paxoscp.key").startsWith("client:"), props.get("paxoscp.key"));
    ClusterConfig back = ClusterConfig.fromProperties(props);
    assertEquals(java.util.Optional.of(org.paxoscp.transport.Role.CLIENT), back.keyRole());
    assertEquals(java.util.HexFormat.of().formatHex(
        org.paxoscp.transport.Role.CLIENT.keyFrom(d.key())),
        java.util.HexFormat.of().formatHex(back.key()));
    assertEquals(2, back.versionRange().min(), "a role key cannot seal wire version 3");
    Map<String, String> v3 = new java.util.HashMap<>(props);
    v3.put("paxoscp.cluster.version.max", "1");
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> ClusterConfig.fromProperties(v3));
    assertTrue(e.getMessage().contains("needs the cluster key"), e.getMessage());
    Map<String, String> service = base();
    service.put("paxoscp.key", "service:" + service.get("paxoscp.key"));
    assertRejected(service, "paxoscp.key");
    Map<String, String> mixed = new java.util.HashMap<>(props);
    mixed.put("paxoscp.key.accept", "0123456789abcdef0123456789abcdef");
    e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> ClusterConfig.fromProperties(mixed));
    assertTrue(e.getMessage().contains("paxoscp.key.accept"), e.getMessage());
  }

  @Test
  void metricsAreOnWithoutHttpUntilAPortIsGiven() {
    ServiceConfig.Metrics m = ServiceConfig.fromProperties(base()).metrics();
    assertTrue(m.enabled());
    assertTrue(m.jmx());
    assertTrue(m.http().isEmpty(), "no HTTP server by default");
    assertEquals("127.0.0.1", m.bindHost(), "the service's own host by default");

    Map<String, String> p = base();
    p.put(ServiceConfig.METRICS_PORT.name(), "9100");
    p.put(ServiceConfig.METRICS_BIND.name(), "0.0.0.0");
    ServiceConfig c = ServiceConfig.fromProperties(p);
    assertEquals(9100, c.metrics().http().orElseThrow().getPort());
    assertEquals("0.0.0.0", c.metrics().http().orElseThrow().getHostString());
    assertEquals("9100", c.effectiveValues().get(ServiceConfig.METRICS_PORT.name()));

    Map<String, String> off = base();
    off.put(ServiceConfig.METRICS.name(), "false");
    assertFalse(ServiceConfig.fromProperties(off).metrics().enabled());
    assertFalse(ServiceConfig.fromProperties(off).metrics().jmx(), "nothing to publish");
    off.put(ServiceConfig.METRICS_PORT.name(), "9100");
    assertRejected(off, ServiceConfig.METRICS_PORT.name());

    for (String bad : List.of("-1", "65536", "http")) {
      Map<String, String> q = base();
      q.put(ServiceConfig.METRICS_PORT.name(), bad);
      assertRejected(q, ServiceConfig.METRICS_PORT.name());
    }
    Map<String, String> q = base();
    q.put(ServiceConfig.METRICS.name(), "yes please");
    assertRejected(q, ServiceConfig.METRICS.name());
  }

  private static void assertRejected(Map<String, String> p, String key) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ServiceConfig.fromProperties(p));
    assertTrue(e.getMessage().contains(key), e.getMessage());
  }
}
