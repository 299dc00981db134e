package org.paxoscp.store.hbase;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * One embedded HBase per test JVM, for integration tests that only need a store of their own
 * (each opens its DCs under names no other test uses). Started on first use, stopped and its
 * files deleted when the JVM exits. Tests that stop, restart or inspect the server itself start
 * their own.
 *
 * <p>{@code -Dpaxoscp.it.hbase.shared=false} gives every test class that asks an HBase of its
 * own instead (the previous one stopped), to measure what sharing saves.
 */
public final class SharedHBase {
  private static EmbeddedHBase hbase;

  private SharedHBase() {}

  /** The JVM's shared HBase, started on the first call. */
  public static synchronized EmbeddedHBase get() {
    boolean shared = Boolean.parseBoolean(System.getProperty("paxoscp.it.hbase.shared", "true"));
    if (hbase != null && !shared) {
      hbase.close(); // test classes run one after another: the previous one is done with it
      hbase = null;
    }
    if (hbase == null) {
      Path dir;
      try {
        dir = Files.createTempDirectory("paxoscp-shared-hbase");
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      EmbeddedHBase started = EmbeddedHBase.start(dir);
      Runtime.getRuntime().addShutdownHook(new Thread(() -> {
        started.close();
        delete(dir);
      }, "shared-hbase-stop"));
      hbase = started;
    }
    return hbase;
  }

  private static void delete(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // Best effort at JVM exit; the directory is under the system's temporary directory.
    }
  }
}
