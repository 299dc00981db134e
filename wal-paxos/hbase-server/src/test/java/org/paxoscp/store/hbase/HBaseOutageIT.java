package org.paxoscp.store.hbase;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreUnavailableException;

/**
 * A down or silent HBase must turn into {@link StoreUnavailableException} within the configured
 * deadline, never into a hang: at connect time (nothing listening on the ZooKeeper port, or a
 * ZooKeeper that accepts and never answers) and for every operation of an open store whose HBase
 * went away.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HBaseOutageIT {
  private static final Duration DEADLINE = Duration.ofSeconds(2);
  /** Generous: thread scheduling, connection teardown and JIT on a loaded 2-core machine. */
  private static final Duration SLACK = Duration.ofMillis(1500);

  /**
   * Loads the HBase client's classes once, untimed (an open that fails the same way as the
   * first test's), so that no measured call pays for loading them on a slow machine.
   */
  @BeforeAll
  static void loadClientClasses() throws IOException {
    HBaseStoreConfig c = HBaseStoreConfig.builder("warm").zkQuorum("127.0.0.1").zkPort(freePort())
        .deadline(DEADLINE).build();
    assertThrows(StoreUnavailableException.class, () -> HBaseKvStore.open(c));
  }

  private static long elapsedMillis(Runnable r) {
    long t0 = System.nanoTime();
    r.run();
    return (System.nanoTime() - t0) / 1_000_000;
  }

  private static void assertUnavailableWithinDeadline(String what, Runnable call) {
    long t0 = System.nanoTime();
    StoreUnavailableException e = assertThrows(StoreUnavailableException.class, call::run, what);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    System.out.printf("%s: unavailable after %d ms: %s%n", what, ms, e.getMessage());
    assertTrue(ms <= DEADLINE.plus(SLACK).toMillis(),
        what + " took " + ms + " ms, deadline " + DEADLINE.toMillis() + " ms");
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void connectToDeadZooKeeperFailsWithinDeadline() throws IOException {
    HBaseStoreConfig c = HBaseStoreConfig.builder("dead").zkQuorum("127.0.0.1").zkPort(freePort())
        .deadline(DEADLINE).build();
    assertUnavailableWithinDeadline("open against a closed port", () -> HBaseKvStore.open(c));
  }

  /** A ZooKeeper that accepts connections and then says nothing (a hung or overloaded server). */
  @Test
  void connectToSilentZooKeeperFailsWithinDeadline() throws Exception {
    List<Socket> accepted = new ArrayList<>();
    try (ServerSocket silent = new ServerSocket()) {
      silent.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
      Thread acceptor = new Thread(() -> {
        while (!silent.isClosed()) {
          try {
            Socket s = silent.accept();
            synchronized (accepted) {
              accepted.add(s);
            }
          } catch (IOException e) {
            return; // server socket closed at the end of the test
          }
        }
      }, "silent-zookeeper");
      acceptor.setDaemon(true);
      acceptor.start();
      HBaseStoreConfig c = HBaseStoreConfig.builder("silent").zkQuorum("127.0.0.1")
          .zkPort(silent.getLocalPort()).deadline(DEADLINE).build();
      assertUnavailableWithinDeadline("open against a silent ZooKeeper", () -> HBaseKvStore.open(c));
    } finally {
      synchronized (accepted) {
        for (Socket s : accepted) {
          s.close();
        }
      }
    }
  }

  @Test
  void everyOperationFailsWithinDeadlineOnceHBaseIsDown(@TempDir Path dir) {
    EmbeddedHBase hbase = EmbeddedHBase.start(dir);
    HBaseKvStore store;
    try {
      store = HBaseKvStore.open(hbase.storeConfig("down").deadline(DEADLINE).build());
      byte[] row = "r".getBytes(UTF_8);
      store.write(Table.WAL, row, KvStore.UNVERSIONED, Map.of("n", "1".getBytes(UTF_8)));
      store.read(Table.WAL, row, "n", KvStore.LATEST).orElseThrow();
      long warm = elapsedMillis(() -> store.readRow(Table.WAL, row));
      System.out.println("readRow while up: " + warm + " ms");
    } finally {
      hbase.close();
    }
    try (store) {
      byte[] row = "r".getBytes(UTF_8);
      Map<String, Supplier<Object>> calls = Map.of(
          "read", () -> store.read(Table.WAL, row, "n", KvStore.LATEST),
          "readRow", () -> store.readRow(Table.DATA, row),
          "write", () -> {
            store.write(Table.DATA, row, 3, Map.of("d", "x".getBytes(UTF_8)));
            return null;
          },
          "checkAndWrite", () -> store.checkAndWrite(Table.WAL, row, "n", "1".getBytes(UTF_8),
              KvStore.UNVERSIONED, Map.of("n", "2".getBytes(UTF_8))));
      for (var call : calls.entrySet()) {
        assertUnavailableWithinDeadline(call.getKey() + " after HBase stopped",
            () -> call.getValue().get());
      }
    }
  }
}
