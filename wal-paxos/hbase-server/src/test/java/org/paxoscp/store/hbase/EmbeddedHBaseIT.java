package org.paxoscp.store.hbase;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;

/** Embedded HBase life cycle: several instances in one JVM, and a restart keeping the data. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class EmbeddedHBaseIT {

  private static Optional<String> read(KvStore s, String row) {
    return s.read(Table.META, row.getBytes(UTF_8), "a", KvStore.LATEST)
        .map(c -> new String(c.value(), UTF_8));
  }

  private static void write(KvStore s, String row, String v) {
    s.write(Table.META, row.getBytes(UTF_8), KvStore.UNVERSIONED, Map.of("a", v.getBytes(UTF_8)));
  }

  @Test
  void twoInstancesInOneJvmAreIndependent(@TempDir Path a, @TempDir Path b) {
    try (EmbeddedHBase first = EmbeddedHBase.start(a);
        EmbeddedHBase second = EmbeddedHBase.start(b);
        HBaseKvStore x = first.openStore("X");
        HBaseKvStore y = second.openStore("X")) {
      System.out.printf("start-up: first %d ms, second %d ms%n",
          first.startupTime().toMillis(), second.startupTime().toMillis());
      assertNotEquals(first.zkPort(), second.zkPort());
      write(x, "g", "in-first");
      assertEquals(Optional.empty(), read(y, "g"));
      write(y, "g", "in-second");
      assertEquals(Optional.of("in-first"), read(x, "g"));
    }
  }

  @Test
  void restartOnTheSameDirectoryKeepsTheData(@TempDir Path dir) {
    try (EmbeddedHBase hbase = EmbeddedHBase.start(dir); HBaseKvStore s = hbase.openStore("R")) {
      write(s, "g", "kept");
    }
    try (EmbeddedHBase hbase = EmbeddedHBase.start(dir);
        HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("R").createSchema(false).build())) {
      System.out.printf("restart: %d ms%n", hbase.startupTime().toMillis());
      assertEquals(Optional.of("kept"), read(s, "g"));
    }
  }
}
