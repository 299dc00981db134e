package org.paxoscp.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.service.ServiceRunner;
import org.paxoscp.service.ServiceTransportFactory;
import org.paxoscp.store.CountingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.HBaseKvStore;

/**
 * A Transaction Service process for {@code paxoscp bench-groups}: what {@code paxoscp service
 * --config FILE} runs ({@link ServiceRunner} on UDP, the store its configuration names), with the
 * store wrapped in a {@link CountingKvStore} whose counters this process writes to a file every
 * {@value #EVERY_MS} ms, so that the benchmark, in another process, can count store requests per
 * commit without any change to the service.
 *
 * <p>Usage: {@code CountingServiceMain CONFIG COUNTS_FILE}. The counts file holds one line,
 * {@code <wall-clock ms> <reads> <row reads> <writes> <check-and-writes> <store nanos>
 * <requests refused OVERLOADED>}, replaced
 * atomically (written to a sibling file, then renamed). The process prints {@code serving on udp}
 * once it serves, and runs until SIGTERM (a clean close) or SIGKILL.
 */
public final class CountingServiceMain {
  static final long EVERY_MS = 200;

  private CountingServiceMain() {}

  public static void main(String[] args) throws InterruptedException {
    if (args.length != 2) {
      System.err.println("usage: CountingServiceMain CONFIG COUNTS_FILE");
      System.exit(2);
    }
    ServiceConfig config = ServiceConfig.fromProperties(KeyFiles.read(Path.of(args[0])));
    Path countsFile = Path.of(args[1]);
    KvStore inner = config.store() == ServiceConfig.StoreKind.MEMORY
        ? new InMemoryKvStore(config.memoryNew())
        : HBaseKvStore.open(config.hbase().orElseThrow());
    CountingKvStore store = new CountingKvStore(inner);
    ServiceRunner runner;
    try {
      runner = ServiceRunner.start(config, ServiceTransportFactory.UDP, store);
    } catch (RuntimeException e) {
      store.close();
      throw e;
    }
    ScheduledExecutorService writer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "store-counts-writer");
      t.setDaemon(true);
      return t;
    });
    writer.scheduleAtFixedRate(() -> writeCounts(store, runner, countsFile), 0, EVERY_MS,
        TimeUnit.MILLISECONDS);
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      writer.shutdownNow();
      runner.close();
      store.close();
      stopped.countDown();
    }, "counting-service-shutdown"));
    InetSocketAddress a = runner.boundAddress();
    System.out.printf(Locale.ROOT, "service: DC %s serving on udp %s:%d (store %s, counted in "
        + "%s)%n", config.dc(), a.getHostString(), a.getPort(),
        config.store().name().toLowerCase(Locale.ROOT), countsFile);
    System.out.flush();
    stopped.await();
  }

  private static void writeCounts(CountingKvStore store, ServiceRunner runner, Path file) {
    CountingKvStore.Counts c = store.counts();
    String line = String.format(Locale.ROOT, "%d %d %d %d %d %d %d%n", System.currentTimeMillis(),
        c.reads(), c.rowReads(), c.writes(), c.checkAndWrites(), c.nanos(),
        runner.overloadRefusals());
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try {
      Files.writeString(tmp, line, StandardCharsets.UTF_8);
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      // The benchmark then sees stale counts and reports them as missing; keep serving.
      System.err.println("store counts: cannot write " + file + ": " + e);
    }
  }

  /**
   * The counts file's content: wall-clock ms when written, then the counters.
   *
   * @throws IllegalArgumentException if the line is malformed
   */
  static StoreCounts parse(String line) {
    String[] f = line.trim().split("\\s+");
    if (f.length != 6 && f.length != 7) {
      throw new IllegalArgumentException("store counts: expected 6 or 7 fields, was '" + line
          + "'");
    }
    long[] v = new long[7];
    for (int i = 0; i < f.length; i++) {
      v[i] = Long.parseLong(f[i]);
    }
    return new StoreCounts(v[0], new CountingKvStore.Counts(v[1], v[2], v[3], v[4], v[5]),
        v[6]);
  }

  /** Reads a counts file; throws {@link UncheckedIOException} if it cannot be read. */
  static StoreCounts read(Path file) {
    try {
      return parse(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * One sample of a service's store counters, and of the requests it refused OVERLOADED, taken
   * at {@code atMillis} (wall clock).
   */
  record StoreCounts(long atMillis, CountingKvStore.Counts counts, long overloaded) {}
}
