package org.paxoscp.store.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;

/** Validation of the store config and the HBase client settings derived from it. */
class HBaseStoreConfigTest {

  @Test
  void defaults() {
    HBaseStoreConfig c = HBaseStoreConfig.builder("dc1").build();
    assertEquals("127.0.0.1", c.zkQuorum());
    assertEquals(2181, c.zkPort());
    assertEquals(Duration.ofSeconds(3), c.operationDeadline());
    assertEquals(Duration.ofSeconds(1), c.rpcTimeout());
    assertTrue(c.createSchema());
    assertEquals(c.effectiveValues(), c.toBuilder().build().effectiveValues());
  }

  @Test
  void fromPropertiesReadsEveryKeyAndIgnoresOtherComponents() {
    HBaseStoreConfig c = HBaseStoreConfig.fromProperties("V", Map.of(
        HBaseStoreConfig.ZK_QUORUM.name(), "zk1,zk2:2182",
        HBaseStoreConfig.ZK_PORT.name(), "2222",
        HBaseStoreConfig.OPERATION_DEADLINE.name(), "5000",
        HBaseStoreConfig.RPC_TIMEOUT.name(), "2000",
        HBaseStoreConfig.CREATE_SCHEMA.name(), "false",
        "paxoscp.service.port", "7000"));
    assertEquals("zk1,zk2:2182", c.zkQuorum());
    assertEquals(2222, c.zkPort());
    assertEquals(Duration.ofSeconds(5), c.operationDeadline());
    assertFalse(c.createSchema());
  }

  @Test
  void badValuesNameTheirKey() {
    assertMessage(HBaseStoreConfig.PREFIX + "zk.prot", () -> HBaseStoreConfig.fromProperties("dc",
        Map.of(HBaseStoreConfig.PREFIX + "zk.prot", "1")));
    assertMessage(HBaseStoreConfig.ZK_PORT.name(), () -> HBaseStoreConfig.fromProperties("dc",
        Map.of(HBaseStoreConfig.ZK_PORT.name(), "70000")));
    assertMessage(HBaseStoreConfig.RPC_TIMEOUT.name(), () -> HBaseStoreConfig.fromProperties("dc",
        Map.of(HBaseStoreConfig.RPC_TIMEOUT.name(), "5000")));
    assertMessage(HBaseStoreConfig.OPERATION_DEADLINE.name(), () -> HBaseStoreConfig.fromProperties(
        "dc", Map.of(HBaseStoreConfig.OPERATION_DEADLINE.name(), "0")));
    assertMessage(HBaseStoreConfig.CREATE_SCHEMA.name(), () -> HBaseStoreConfig.fromProperties("dc",
        Map.of(HBaseStoreConfig.CREATE_SCHEMA.name(), "yes")));
    assertMessage("DC name", () -> HBaseStoreConfig.builder("us-east").build());
    assertMessage("DC name", () -> HBaseStoreConfig.builder("").build());
  }

  private static void assertMessage(String part, Runnable r) {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, r::run);
    assertTrue(e.getMessage().contains(part), e.getMessage());
  }

  /** The client settings that bound every store call by the configured deadline. */
  @Test
  void clientSettingsFollowTheDeadlines() {
    HBaseStoreConfig c = HBaseStoreConfig.builder("dc").zkPort(2200)
        .operationDeadline(Duration.ofMillis(2500)).rpcTimeout(Duration.ofMillis(800))
        .retryPause(Duration.ofMillis(40)).connectDeadline(Duration.ofMillis(1500)).build();
    Configuration conf = HBaseClientSettings.create(c);
    assertEquals("127.0.0.1", conf.get("hbase.zookeeper.quorum"));
    assertEquals(2200, conf.getInt("hbase.zookeeper.property.clientPort", 0));
    assertEquals(2500, conf.getLong("hbase.client.operation.timeout", 0));
    assertEquals(2500, conf.getLong("hbase.client.meta.operation.timeout", 0));
    assertEquals(800, conf.getLong("hbase.rpc.timeout", 0));
    assertEquals(800, conf.getLong("hbase.rpc.read.timeout", 0));
    assertEquals(800, conf.getLong("hbase.rpc.write.timeout", 0));
    assertEquals(800, conf.getLong("hbase.ipc.client.socket.timeout.connect", 0));
    assertEquals(40, conf.getLong("hbase.client.pause", 0));
    assertEquals(HBaseClientSettings.RETRIES, conf.getInt("hbase.client.retries.number", 0));
    assertEquals(1500, conf.getInt("zookeeper.session.timeout", 0));
    assertEquals(HBaseClientSettings.ZK_RETRIES, conf.getInt("zookeeper.recovery.retry", 0));
  }

  @Test
  void deadlineShortcutScalesTheOtherBounds() {
    HBaseStoreConfig c = HBaseStoreConfig.builder("dc").deadline(Duration.ofSeconds(2)).build();
    assertEquals(Duration.ofSeconds(2), c.operationDeadline());
    assertEquals(Duration.ofSeconds(2), c.connectDeadline());
    assertEquals(Duration.ofMillis(666), c.rpcTimeout());
    assertTrue(c.retryPause().compareTo(c.operationDeadline()) < 0);
  }
}
