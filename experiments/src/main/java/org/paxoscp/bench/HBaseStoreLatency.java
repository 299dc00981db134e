package org.paxoscp.bench;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.function.LongConsumer;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.store.hbase.HBaseKvStore;

/**
 * Single-thread latency and throughput of the store operations against an embedded HBase, and
 * the embedded HBase's start-up time. A measurement to print, not a test.
 *
 * <p>Usage: {@code HBaseStoreLatency [ops-per-kind (default 5000)]}. Run with the HBase JVM flags.
 */
public final class HBaseStoreLatency {
  private HBaseStoreLatency() {}

  private static byte[] row(String prefix, long i) {
    return (prefix + String.format("%08d", i)).getBytes(java.nio.charset.StandardCharsets.UTF_8);
  }

  private static byte[] value(long i) {
    return ByteBuffer.allocate(64).putLong(i).array();
  }

  private static void measure(String name, int n, LongConsumer op) {
    for (int i = 0; i < Math.min(n, 2000); i++) {
      op.accept(1_000_000 + i); // warm-up on other rows
    }
    Histogram h = new Histogram(3_600_000_000L, 3);
    long t0 = System.nanoTime();
    for (int i = 0; i < n; i++) {
      long s = System.nanoTime();
      op.accept(i);
      h.recordValue((System.nanoTime() - s) / 1000);
    }
    double secs = (System.nanoTime() - t0) / 1e9;
    System.out.printf("%-28s n=%6d  %7.0f ops/s  mean %6.0f us  p50 %6d us  p99 %6d us  max %7d us%n",
        name, n, n / secs, h.getMean(), h.getValueAtPercentile(50), h.getValueAtPercentile(99),
        h.getMaxValue());
  }

  public static void main(String[] args) throws IOException {
    int n = args.length > 0 ? Integer.parseInt(args[0]) : 5000;
    Path dir = Files.createTempDirectory("paxoscp-bench-hbase");
    long t0 = System.nanoTime();
    try (EmbeddedHBase hbase = EmbeddedHBase.start(dir)) {
      System.out.printf("embedded HBase start-up: %d ms (cold JVM)%n",
          (System.nanoTime() - t0) / 1_000_000);
      long t1 = System.nanoTime();
      try (HBaseKvStore store = hbase.openStore("bench")) {
        System.out.printf("open store + create DC schema (3 tables): %d ms%n",
            (System.nanoTime() - t1) / 1_000_000);
        measure("write (data, new row)", n,
            i -> store.write(Table.DATA, row("w", i), 1, Map.of("d", value(i))));
        measure("read (data, existing row)", n,
            i -> store.read(Table.DATA, row("w", i % n), "d", 5).orElseThrow());
        measure("read (data, missing row)", n,
            i -> store.read(Table.DATA, row("missing", i), "d", KvStore.LATEST));
        measure("checkAndWrite ifNotExists", n,
            i -> check(store.checkAndWrite(Table.WAL, row("c", i), "n", null,
                KvStore.UNVERSIONED, Map.of("n", value(i)))));
        measure("checkAndWrite ifEquals", n,
            i -> check(store.checkAndWrite(Table.WAL, row("c", i % n), "n", value(i % n),
                KvStore.UNVERSIONED, Map.of("n", value(i % n)))));
        measure("readRow (wal)", n, i -> store.readRow(Table.WAL, row("c", i % n)));
      }
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }

  private static void check(boolean applied) {
    if (!applied) {
      throw new IllegalStateException("checkAndWrite unexpectedly refused");
    }
  }
}
