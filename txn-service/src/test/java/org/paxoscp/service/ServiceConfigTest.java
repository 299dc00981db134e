package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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
    p.put(ServiceConfig.DC, "O");
    return p;
  }

  @Test
  void defaultsComeFromTheClusterAndTheDc() {
    ServiceConfig c = ServiceConfig.fromProperties(base());
    assertEquals("O", c.dc());
    assertEquals(7002, c.bind().getPort());
    assertEquals(ServiceConfig.DEFAULT_THREADS, c.threads());
    assertEquals(ServiceConfig.StoreKind.HBASE, c.store());
    assertEquals(2182, c.hbase().orElseThrow().zkPort());
    assertEquals("O", c.hbase().orElseThrow().dc());
    assertEquals(Duration.ofSeconds(1), c.catchUpWait());
    assertEquals(ServiceConfig.DEFAULT_READ_MAX_KEYS, c.limits().maxReadKeys());
    assertEquals(Duration.ofMillis(500), c.catchUpSettings().learnTimeout());
    assertEquals(ServiceConfig.KEYS.keySet(), c.effectiveValues().keySet());
  }

  @Test
  void explicitValuesAreTaken() {
    Map<String, String> p = base();
    p.put(ServiceConfig.BIND, "127.0.0.1:7100");
    p.put(ServiceConfig.THREADS, "4");
    p.put(ServiceConfig.STORE, "memory");
    p.put(ServiceConfig.READ_MAX_KEYS, "10");
    p.put(ServiceConfig.CATCHUP_MAX_POSITIONS, "7");
    p.put(ServiceConfig.CATCHUP_WAIT_MS, "250");
    ServiceConfig c = ServiceConfig.fromProperties(p);
    assertEquals(7100, c.bind().getPort());
    assertEquals(4, c.threads());
    assertEquals(ServiceConfig.StoreKind.MEMORY, c.store());
    assertTrue(c.hbase().isEmpty());
    assertEquals(10, c.readMaxKeys());
    assertEquals(7, c.catchUpSettings().maxPositionsPerRun());
    assertEquals(Duration.ofMillis(250), c.limits().catchUpWait());
  }

  @Test
  void anEphemeralPortNeedsDiscovery() {
    Map<String, String> p = base();
    p.put(ServiceConfig.BIND, "127.0.0.1:0");
    assertRejected(p, ServiceConfig.BIND);
    p.put("paxoscp.discovery.zk", "127.0.0.1:2181");
    assertEquals(0, ServiceConfig.fromProperties(p).bind().getPort());
    p.remove(ServiceConfig.BIND);
    p.remove("paxoscp.dc.O.endpoints");
    assertEquals(0, ServiceConfig.fromProperties(p).bind().getPort());
  }

  @Test
  void badValuesAreRejectedNamingTheKey() {
    for (var bad : Map.of(ServiceConfig.DC, "X", ServiceConfig.THREADS, "0",
        ServiceConfig.STORE, "disk", ServiceConfig.BIND, "nohost", ServiceConfig.READ_MAX_KEYS,
        "many", ServiceConfig.CATCHUP_WAIT_MS, "-1", "paxoscp.service.colour", "blue",
        "paxoscp.dc.O.hbase.zk.prt", "1").entrySet()) {
      Map<String, String> p = base();
      p.put(bad.getKey(), bad.getValue());
      assertRejected(p, bad.getKey().startsWith("paxoscp.dc.") ? "zk.prt" : bad.getKey());
    }
    Map<String, String> p = base();
    p.remove(ServiceConfig.DC);
    assertRejected(p, ServiceConfig.DC);
  }

  private static void assertRejected(Map<String, String> p, String key) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ServiceConfig.fromProperties(p));
    assertTrue(e.getMessage().contains(key), e.getMessage());
  }
}
