package org.paxoscp.store.hbase;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.hbase.StandaloneHBase.State;
import org.paxoscp.store.hbase.StandaloneHBase.Status;

/**
 * A real HBase server process: start it, write through a store in this JVM, stop it cleanly,
 * restart it on the same directory and read the data back.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class StandaloneHBaseIT {
  @TempDir
  Path dir;

  @AfterEach
  void stopServer() {
    // Never leave a server process behind, even when an assertion failed half-way.
    StandaloneHBase.stop(dir);
  }

  /** A free TCP port on loopback (for a ZooKeeper to listen on). */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void dataSurvivesStopAndRestart() throws IOException {
    int zk = freePort();
    assertEquals(State.NOT_RUNNING, StandaloneHBase.status(dir).state());

    Status started = StandaloneHBase.start(dir, zk);
    System.out.println("first start: " + started.detail());
    assertTrue(started.running());
    assertTrue(Files.exists(StandaloneHBase.pidFile(dir.toAbsolutePath())));
    assertEquals("already running", StandaloneHBase.start(dir, zk).detail());
    assertEquals(State.RUNNING, StandaloneHBase.status(dir).state());

    HBaseStoreConfig config = HBaseStoreConfig.builder("standalone").zkPort(zk).build();
    byte[] row = "item".getBytes(UTF_8);
    try (HBaseKvStore store = HBaseKvStore.open(config)) {
      store.write(Table.DATA, row, 1, Map.of("d", "one".getBytes(UTF_8)));
      store.write(Table.DATA, row, 2, Map.of("d", "two".getBytes(UTF_8)));
      assertTrue(store.checkAndWrite(Table.WAL, row, "n", null, KvStore.UNVERSIONED,
          Map.of("n", "promise".getBytes(UTF_8))));
    }

    Status stopped = StandaloneHBase.stop(dir);
    System.out.println("stop: " + stopped.detail());
    assertEquals(State.NOT_RUNNING, stopped.state());
    assertTrue(stopped.detail().contains("clean shutdown"), stopped.detail());
    assertFalse(Files.exists(StandaloneHBase.pidFile(dir.toAbsolutePath())));
    assertEquals(State.NOT_RUNNING, StandaloneHBase.status(dir).state());

    Status restarted = StandaloneHBase.start(dir, zk);
    System.out.println("restart: " + restarted.detail());
    assertTrue(restarted.running());
    try (HBaseKvStore store = HBaseKvStore.open(config.toBuilder().createSchema(false).build())) {
      assertEquals(Optional.of("one"), store.read(Table.DATA, row, "d", 1)
          .map(c -> new String(c.value(), UTF_8)));
      assertEquals(Optional.of("two"), store.read(Table.DATA, row, "d", KvStore.LATEST)
          .map(c -> new String(c.value(), UTF_8)));
      assertFalse(store.checkAndWrite(Table.WAL, row, "n", null, KvStore.UNVERSIONED,
          Map.of("n", "other".getBytes(UTF_8))), "the promise survived the restart");
    }
    System.out.println("second stop: " + StandaloneHBase.stop(dir).detail());
    assertEquals("was not running", StandaloneHBase.stop(dir).detail());
  }
}
