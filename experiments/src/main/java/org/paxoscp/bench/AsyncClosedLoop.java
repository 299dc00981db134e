package org.paxoscp.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryUsage;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;

/**
 * A closed loop of {@code inFlight} one-read-one-write transactions on groups drawn uniformly
 * from many, driven in one of two ways ({@link Mode}): by ONE application thread through the
 * client's asynchronous API (when a transaction finishes, that thread starts the next), or by
 * {@code inFlight} application threads through the blocking API. Besides the outcomes and
 * latencies it measures what the mode costs this JVM: threads alive, the heap after a full GC
 * and the resident set, before the mode's clients are opened, at the end of the measured window
 * (every transaction still in flight) and after the mode drained and closed its clients, and the
 * CPU time of the process and of the threads the mode added. Used by {@code paxoscp
 * bench-async}.
 *
 * <p>Only transactions that finish inside the measured window (after the warm-up) are counted
 * in the rates, outcomes and latencies; the {@link Live} counters count everything, for progress
 * lines.
 */
public final class AsyncClosedLoop {
  private AsyncClosedLoop() {}

  /** How the application drives the transactions. */
  public enum Mode {
    /** One application thread, the asynchronous API; N transactions in flight. */
    ASYNC("async"),
    /** N application threads, each running transactions one after another, blocking API. */
    BLOCKING("blocking");

    private final String label;

    Mode(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }

    /** {@code async} or {@code blocking}, any case. */
    public static Mode parse(String s) {
      for (Mode m : values()) {
        if (m.label.equalsIgnoreCase(s.trim())) {
          return m;
        }
      }
      throw new IllegalArgumentException("a mode is async or blocking, was '" + s + "'");
    }
  }

  /** Which calls make one transaction. */
  public enum Api {
    /**
     * {@code beginAsync}, {@code getAsync}, {@code put}, {@code commitAsync} (blocking:
     * {@code begin}, {@code get}, {@code put}, {@code commit}); no retry: an abort is counted
     * and the next transaction starts.
     */
    STEPS("steps"),
    /**
     * {@code runInTransactionAsync} (blocking: {@code runInTransaction}) with a body that reads
     * one key and puts one: the client re-runs aborted attempts with its back-off; each aborted
     * attempt is counted as an abort.
     */
    RUN("run");

    private final String label;

    Api(String label) {
      this.label = label;
    }

    public String label() {
      return label;
    }

    /** {@code steps} or {@code run}, any case. */
    public static Api parse(String s) {
      for (Api a : values()) {
        if (a.label.equalsIgnoreCase(s.trim())) {
          return a;
        }
      }
      throw new IllegalArgumentException("--api is steps or run, was '" + s + "'");
    }
  }

  /**
   * One mode's run.
   *
   * @param label the mode's name in the output ({@code async}, {@code blocking-2}, ...)
   * @param groupPrefix prefix of the mode's group names, so that each mode starts on fresh
   *     groups
   * @param groups how many groups the transactions are drawn from, uniformly
   * @param keysPerGroup the read key and the written key are drawn from this many per group
   * @param inFlight transactions in flight: the async mode's slots, the blocking mode's threads
   * @param warmup time from the start whose transactions are not counted
   * @param duration the measured window
   * @param drain how long to wait, after the window, for the transactions in flight to end
   */
  public record Spec(String label, Mode mode, Api api, String groupPrefix, long groups,
      int keysPerGroup, int valueBytes, int inFlight, Duration warmup, Duration duration,
      Duration drain) {
    public Spec {
      if (groups < 1 || keysPerGroup < 1 || valueBytes < 0 || inFlight < 1
          || warmup.isNegative() || duration.isZero() || duration.isNegative()
          || drain.isNegative()) {
        throw new IllegalArgumentException("need groups, keys and in-flight >= 1, value bytes, "
            + "warm-up and drain >= 0 and a positive duration");
      }
    }

    /** Application threads the mode runs. */
    public int appThreads() {
      return mode == Mode.ASYNC ? 1 : inFlight;
    }
  }

  /**
   * {@code modes} as the labels of their runs, in order: a mode named again is labelled with its
   * pass ({@code async, blocking, async-2, blocking-2}).
   */
  public static List<String> labels(List<Mode> modes) {
    Map<Mode, Integer> passes = new LinkedHashMap<>();
    List<String> out = new ArrayList<>();
    for (Mode m : modes) {
      int pass = passes.merge(m, 1, Integer::sum);
      out.add(m.label() + (pass > 1 ? "-" + pass : ""));
    }
    return out;
  }

  /** How a transaction ended. */
  public enum Outcome { COMMITTED, ABORTED, UNKNOWN, UNAVAILABLE, ERROR }

  /** The outcome a transaction that ended with {@code t} had (null: it committed). */
  public static Outcome outcome(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    if (c == null) {
      return Outcome.COMMITTED;
    }
    if (c instanceof TransactionAbortedException) {
      return Outcome.ABORTED;
    }
    if (c instanceof OutcomeUnknownException) {
      return Outcome.UNKNOWN;
    }
    if (c instanceof UnavailableException) {
      return Outcome.UNAVAILABLE;
    }
    return Outcome.ERROR;
  }

  /**
   * A thread's name with its trailing sequence number replaced by {@code #}, so that a pool's
   * threads count together: {@code paxoscp-client-callbacks-O-17} is {@code
   * paxoscp-client-callbacks-O-#}; {@code wan-V1} keeps its DC's digit.
   */
  public static String threadKind(String name) {
    return name.replaceAll("(?<=[-_ #])\\d+$", "#");
  }

  /** {@code t} unwrapped, its class and message on one line. */
  static String oneLine(Throwable t) {
    Throwable c = t;
    while ((c instanceof CompletionException || c instanceof ExecutionException)
        && c.getCause() != null) {
      c = c.getCause();
    }
    return (c.getClass().getSimpleName() + ": " + c.getMessage())
        .replaceAll("\\s*\\R\\s*", " ");
  }

  /** The resident set in bytes from the text of {@code /proc/self/status}; -1 if absent. */
  public static long parseRssBytes(String procStatus) {
    for (String line : procStatus.split("\n")) {
      if (line.startsWith("VmRSS:")) {
        String[] parts = line.substring(6).trim().split("\\s+");
        try {
          return Long.parseLong(parts[0]) * 1024;
        } catch (NumberFormatException e) {
          return -1;
        }
      }
    }
    return -1;
  }

  /** Counts of the whole run (warm-up and drain included), read from any thread. */
  public static final class Live {
    private final LongAdder started = new LongAdder();
    private final LongAdder committed = new LongAdder();
    private final LongAdder notCommitted = new LongAdder();
    private final AtomicInteger inFlight = new AtomicInteger();

    public long started() {
      return started.sum();
    }

    public long committed() {
      return committed.sum();
    }

    /** Aborted, unknown, unavailable or failed with an error. */
    public long notCommitted() {
      return notCommitted.sum();
    }

    /** Transactions started and not yet ended. */
    public int inFlight() {
      return inFlight.get();
    }
  }

  /**
   * The JVM's threads, heap and resident set at one moment: the resident set and the committed
   * heap just before a full GC, the heap used just after it.
   */
  public record Resources(int threads, long heapUsedBytes, long heapCommittedBytes,
      long rssBytes) {
    public double heapUsedMb() {
      return heapUsedBytes / (1024.0 * 1024.0);
    }

    public double rssMb() {
      return rssBytes < 0 ? -1 : rssBytes / (1024.0 * 1024.0);
    }

    /**
     * The resident set outside the committed Java heap (thread stacks, metaspace, code, direct
     * buffers, ...), in MB; -1 if the resident set is unknown.
     */
    public double nativeMb() {
      return rssBytes < 0 ? -1 : (rssBytes - heapCommittedBytes) / (1024.0 * 1024.0);
    }
  }

  /** Threads of one kind ({@link #threadKind}) the mode added, and their CPU in the window. */
  public record ThreadKind(String kind, int alive, long cpuNanos) {}

  /**
   * What one mode measured.
   *
   * @param seconds the measured window
   * @param aborted aborted transactions (with {@link Api#RUN}: aborted attempts)
   * @param errors transactions that failed otherwise (an unexpected exception)
   * @param commitMicros the commit call of committed transactions (with {@link Api#RUN}: from
   *     the body's end to the result)
   * @param txnMicros a committed transaction from its begin (with {@link Api#RUN}: its first
   *     attempt's) to the commit's result
   * @param before before the mode's clients were opened
   * @param during at the end of the measured window, transactions still in flight
   * @param inFlightAtEnd transactions in flight at that moment
   * @param peakThreads the most threads alive at once since {@code before}
   * @param after after the mode drained and closed its clients
   * @param added the threads alive at the end of the window that were not alive before, by kind
   * @param processCpuNanos CPU time of the whole process (services and HBase included) in the
   *     window
   * @param unfinished transactions still in flight when the drain timed out (0 normally)
   */
  public record Result(Spec spec, double seconds, long committed, long aborted, long unknown,
      long unavailable, long errors, Histogram commitMicros, Histogram txnMicros,
      Resources before, Resources during, int inFlightAtEnd, int peakThreads, Resources after,
      List<ThreadKind> added, long processCpuNanos, long unfinished) {

    public double commitsPerSecond() {
      return committed / seconds;
    }

    /** Threads alive at the end of the window that were not alive before the mode. */
    public int addedThreads() {
      return added.stream().mapToInt(ThreadKind::alive).sum();
    }

    /** CPU time of the threads the mode added, in the window. */
    public long addedCpuNanos() {
      return added.stream().mapToLong(ThreadKind::cpuNanos).sum();
    }
  }

  /** Outcomes and latencies of the transactions that ended in the window. */
  private static final class Window {
    final LongAdder committed = new LongAdder();
    final LongAdder aborted = new LongAdder();
    final LongAdder unknown = new LongAdder();
    final LongAdder unavailable = new LongAdder();
    final LongAdder errors = new LongAdder();
    final Histogram commitMicros = new ConcurrentHistogram(3);
    final Histogram txnMicros = new ConcurrentHistogram(3);
  }

  /** The run's clock and stop switch, and where transactions are counted. */
  private static final class Run {
    final Spec spec;
    final List<TxnClient> clients;
    final Live live;
    final Window window = new Window();
    final byte[] value;
    final Consumer<String> log;
    /** How many transactions that ended with each outcome were logged. */
    final Map<Outcome, AtomicInteger> logged = new java.util.concurrent.ConcurrentHashMap<>();
    /** One count per slot (async) or thread (blocking), counted down when it stops. */
    final CountDownLatch stopped;
    volatile long measureFrom = Long.MAX_VALUE;
    volatile long end = Long.MAX_VALUE;
    volatile boolean stop;

    Run(Spec spec, List<TxnClient> clients, Live live, Consumer<String> log) {
      this.spec = spec;
      this.clients = clients;
      this.live = live;
      this.log = log;
      this.value = new byte[spec.valueBytes()];
      Arrays.fill(value, (byte) 'v');
      this.stopped = new CountDownLatch(spec.inFlight());
    }

    String group(ThreadLocalRandom rnd) {
      return spec.groupPrefix() + "g" + rnd.nextLong(spec.groups());
    }

    String key(ThreadLocalRandom rnd) {
      return "k" + rnd.nextInt(spec.keysPerGroup());
    }

    /**
     * Counts a transaction that ended now.
     *
     * @param commitStart when the commit call started (0 if it never did)
     * @param abortedAttempts with {@link Api#RUN}, attempts aborted before the last one
     */
    void ended(long begin, long commitStart, Throwable error, int abortedAttempts) {
      long now = System.nanoTime();
      live.inFlight.decrementAndGet();
      Outcome o = outcome(error);
      if (o == Outcome.COMMITTED) {
        live.committed.increment();
      } else {
        live.notCommitted.increment();
      }
      if (o != Outcome.COMMITTED && o != Outcome.ABORTED
          && logged.computeIfAbsent(o, x -> new AtomicInteger()).incrementAndGet() <= 2) {
        // The first two of each kind, to say what went wrong.
        log.accept(spec.label() + ": " + o.name().toLowerCase(Locale.ROOT) + ": "
            + oneLine(error));
      }
      if (now < measureFrom || now >= end) {
        return;
      }
      window.aborted.add(abortedAttempts);
      switch (o) {
        case COMMITTED -> {
          window.committed.increment();
          window.commitMicros.recordValue(Math.max(1, (now - commitStart) / 1000));
          window.txnMicros.recordValue(Math.max(1, (now - begin) / 1000));
        }
        case ABORTED -> window.aborted.increment();
        case UNKNOWN -> window.unknown.increment();
        case UNAVAILABLE -> window.unavailable.increment();
        case ERROR -> window.errors.increment();
        default -> throw new AssertionError(o);
      }
    }

    /** A slot or thread stops for good (a transaction it could not even start, or the stop). */
    void slotStopped() {
      stopped.countDown();
    }
  }

  /**
   * Runs one mode: measures the JVM, opens the mode's clients, runs the load for the warm-up
   * and the window (a progress line every {@code progressEvery}), measures the JVM again with
   * every transaction still in flight, stops starting transactions, waits at most {@code
   * spec.drain()} for those in flight, closes the clients and measures the JVM a third time.
   *
   * @param open opens the mode's clients (the transactions take them in turn)
   */
  public static Result run(Spec spec, Supplier<List<TxnClient>> open, Live live,
      Consumer<String> progress, Duration progressEvery) throws InterruptedException {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    Resources before = measure();
    Set<Long> baseline = new HashSet<>();
    for (long id : threads.getAllThreadIds()) {
      baseline.add(id);
    }
    threads.resetPeakThreadCount();
    List<TxnClient> clients = open.get();
    Run run = new Run(spec, clients, live, progress);
    Driver driver = spec.mode() == Mode.ASYNC ? new AsyncDriver(run) : new BlockingDriver(run);
    Resources during;
    int inFlightAtEnd;
    int peak;
    List<ThreadKind> added;
    long processCpu;
    long unfinished;
    try {
      driver.prepare();
      long start = System.nanoTime();
      run.measureFrom = start + spec.warmup().toNanos();
      run.end = run.measureFrom + spec.duration().toNanos();
      driver.start();
      Map<Long, Long> cpuAtWindow = null;
      long processCpuAtWindow = 0;
      long nextProgress = start + progressEvery.toNanos();
      long lastCommitted = 0;
      long lastAt = start;
      while (true) {
        long now = System.nanoTime();
        if (cpuAtWindow == null && now >= run.measureFrom) {
          cpuAtWindow = addedThreadsCpu(threads, baseline);
          processCpuAtWindow = processCpuNanos();
        }
        if (now >= run.end) {
          break;
        }
        if (now >= nextProgress) {
          long c = live.committed();
          progress.accept(String.format(Locale.ROOT, "%s %3d/%d s%s: in flight %,d, %,d "
                  + "committed, %,d not; last %.0f s %.1f commits/s; JVM threads %,d",
              spec.label(), (now - start) / 1_000_000_000L,
              spec.warmup().plus(spec.duration()).toSeconds(),
              now < run.measureFrom ? " (warm-up)" : "", live.inFlight(), c,
              live.notCommitted(), (now - lastAt) / 1e9, (c - lastCommitted) / ((now - lastAt)
                  / 1e9), threads.getThreadCount()));
          lastCommitted = c;
          lastAt = now;
          nextProgress += progressEvery.toNanos();
        }
        long wake = Math.min(nextProgress, run.end);
        if (cpuAtWindow == null) {
          wake = Math.min(wake, run.measureFrom);
        }
        TimeUnit.NANOSECONDS.sleep(Math.max(1, wake - System.nanoTime()));
      }
      // The end of the window: every transaction still in flight. Threads and CPU first, then
      // the heap (its full GC stalls the load, whose transactions are no longer counted).
      processCpu = processCpuNanos() - processCpuAtWindow;
      inFlightAtEnd = live.inFlight();
      peak = threads.getPeakThreadCount();
      added = addedThreads(threads, baseline, cpuAtWindow == null ? Map.of() : cpuAtWindow);
      during = measure();
      run.stop = true;
      long drainUntil = System.nanoTime() + spec.drain().toNanos();
      while (!run.stopped.await(Math.min(progressEvery.toNanos(),
          Math.max(1, drainUntil - System.nanoTime())), TimeUnit.NANOSECONDS)) {
        if (System.nanoTime() >= drainUntil) {
          break;
        }
        progress.accept(String.format(Locale.ROOT, "%s draining: %,d in flight", spec.label(),
            live.inFlight()));
      }
      unfinished = run.stopped.getCount();
      if (unfinished > 0) {
        progress.accept(String.format(Locale.ROOT, "%s: %,d transactions still in flight "
            + "after %d s; closing the clients", spec.label(), unfinished,
            spec.drain().toSeconds()));
      }
    } finally {
      run.stop = true;
      for (TxnClient c : clients) {
        try {
          c.close();
        } catch (RuntimeException e) {
          progress.accept("closing a client: " + e);
        }
      }
      driver.shutdown();
    }
    Resources after = measure();
    Window w = run.window;
    return new Result(spec, spec.duration().toNanos() / 1e9, w.committed.sum(),
        w.aborted.sum(), w.unknown.sum(), w.unavailable.sum(), w.errors.sum(), w.commitMicros,
        w.txnMicros, before, during, inFlightAtEnd, peak, after, added, processCpu, unfinished);
  }

  /**
   * Threads, the resident set and the committed heap (read together, before the collection,
   * which may uncommit heap the resident set still counts), then the heap used after a full GC.
   */
  public static Resources measure() {
    int n = ManagementFactory.getThreadMXBean().getThreadCount();
    long rss = -1;
    try {
      Path status = Path.of("/proc/self/status");
      if (Files.isReadable(status)) {
        rss = parseRssBytes(Files.readString(status));
      }
    } catch (IOException e) {
      rss = -1;
    }
    long committed = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getCommitted();
    System.gc();
    MemoryUsage heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
    return new Resources(n, heap.getUsed(), committed, rss);
  }

  private static long processCpuNanos() {
    if (ManagementFactory.getOperatingSystemMXBean()
        instanceof com.sun.management.OperatingSystemMXBean os) {
      return os.getProcessCpuTime();
    }
    return -1;
  }

  /** CPU time of every thread alive now that was not in {@code baseline}. */
  private static Map<Long, Long> addedThreadsCpu(ThreadMXBean threads, Set<Long> baseline) {
    Map<Long, Long> cpu = new LinkedHashMap<>();
    for (long id : threads.getAllThreadIds()) {
      if (!baseline.contains(id)) {
        long t = threads.getThreadCpuTime(id);
        if (t >= 0) {
          cpu.put(id, t);
        }
      }
    }
    return cpu;
  }

  /**
   * The threads alive now that were not in {@code baseline}, by kind, with their CPU time since
   * {@code cpuAtWindow} (a thread started after it counts from 0), most threads first.
   */
  private static List<ThreadKind> addedThreads(ThreadMXBean threads, Set<Long> baseline,
      Map<Long, Long> cpuAtWindow) {
    Map<String, long[]> kinds = new LinkedHashMap<>();
    long[] ids = Arrays.stream(threads.getAllThreadIds()).filter(id -> !baseline.contains(id))
        .toArray();
    ThreadInfo[] infos = threads.getThreadInfo(ids);
    for (int i = 0; i < ids.length; i++) {
      if (infos[i] == null) {
        continue; // ended meanwhile
      }
      long cpu = threads.getThreadCpuTime(ids[i]);
      long since = cpu < 0 ? 0 : Math.max(0, cpu - cpuAtWindow.getOrDefault(ids[i], 0L));
      long[] k = kinds.computeIfAbsent(threadKind(infos[i].getThreadName()), x -> new long[2]);
      k[0]++;
      k[1] += since;
    }
    List<ThreadKind> out = new ArrayList<>();
    kinds.forEach((k, v) -> out.add(new ThreadKind(k, (int) v[0], v[1])));
    out.sort((a, b) -> a.alive() != b.alive() ? Integer.compare(b.alive(), a.alive())
        : a.kind().compareTo(b.kind()));
    return out;
  }

  /** One way of driving the load. */
  private interface Driver {
    /** Creates what runs the load; nothing starts yet. */
    void prepare();

    /** Starts the load (the run's clock is set). */
    void start();

    /** Stops the driver's own threads (the clients are closed by then). */
    void shutdown();
  }

  /**
   * ONE application thread ({@code bench-async-app}) runs every step of the application: it
   * starts {@code inFlight} transactions, each step's continuation runs on it (the client's
   * futures complete on the client's worker threads and hand over to it), and when a transaction
   * ends it starts the next one in the same slot.
   */
  private static final class AsyncDriver implements Driver {
    private final Run run;
    private ExecutorService app;
    private long sequence;

    AsyncDriver(Run run) {
      this.run = run;
    }

    @Override
    public void prepare() {
      app = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "bench-async-app");
        t.setDaemon(true);
        return t;
      });
    }

    @Override
    public void start() {
      app.execute(() -> {
        for (int i = 0; i < run.spec.inFlight(); i++) {
          next();
        }
      });
    }

    /** On the application thread: starts the slot's next transaction, or stops the slot. */
    private void next() {
      if (run.stop) {
        run.slotStopped();
        return;
      }
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      TxnClient client = run.clients.get((int) (sequence++ % run.clients.size()));
      String group = run.group(rnd);
      String readKey = run.key(rnd);
      String writeKey = run.key(rnd);
      long begin = System.nanoTime();
      AtomicLong commitStart = new AtomicLong();
      AtomicInteger attempts = new AtomicInteger();
      Transaction[] txn = new Transaction[1];
      run.live.started.increment();
      run.live.inFlight.incrementAndGet();
      CompletableFuture<?> f;
      try {
        if (run.spec.api() == Api.STEPS) {
          attempts.set(1);
          f = client.beginAsync(group)
              .thenComposeAsync(t -> {
                txn[0] = t;
                return t.getAsync(readKey);
              }, app)
              .thenComposeAsync(v -> {
                txn[0].put(writeKey, run.value);
                commitStart.set(System.nanoTime());
                return txn[0].commitAsync();
              }, app);
        } else {
          // The body is called on a client worker thread (runInTransactionAsync's contract);
          // it only starts the read and buffers the write.
          f = client.runInTransactionAsync(group, t -> {
            attempts.incrementAndGet();
            return t.getAsync(readKey).thenApply(v -> {
              t.put(writeKey, run.value);
              commitStart.set(System.nanoTime());
              return null;
            });
          });
        }
      } catch (RuntimeException e) {
        // The client failed the call itself (it should fail the future instead): count it and
        // give up the slot rather than spin.
        run.ended(begin, 0, e, 0);
        run.slotStopped();
        return;
      }
      f.whenCompleteAsync((r, t) -> {
        if (txn[0] != null && txn[0].isActive()) {
          txn[0].abort();
        }
        // With runInTransactionAsync, the attempts before the last one each aborted.
        run.ended(begin, commitStart.get(), t, Math.max(0, attempts.get() - 1));
        next();
      }, app);
    }

    @Override
    public void shutdown() {
      if (app != null) {
        app.shutdownNow();
      }
    }
  }

  /**
   * {@code inFlight} application threads ({@code bench-async-blocking-<i>}), each running its
   * transactions one after another with the blocking API.
   */
  private static final class BlockingDriver implements Driver {
    private final Run run;
    private final CountDownLatch go = new CountDownLatch(1);
    private final List<Thread> threads = new ArrayList<>();

    BlockingDriver(Run run) {
      this.run = run;
    }

    @Override
    public void prepare() {
      for (int i = 0; i < run.spec.inFlight(); i++) {
        TxnClient client = run.clients.get(i % run.clients.size());
        Thread t = new Thread(() -> loop(client), "bench-async-blocking-" + i);
        t.setDaemon(true);
        threads.add(t);
        try {
          t.start();
        } catch (OutOfMemoryError e) {
          // "unable to create native thread": say how far it got.
          throw new IllegalStateException("could not start application thread " + (i + 1)
              + " of " + run.spec.inFlight() + ": " + e, e);
        }
      }
    }

    @Override
    public void start() {
      go.countDown();
    }

    private void loop(TxnClient client) {
      try {
        go.await();
        ThreadLocalRandom rnd = ThreadLocalRandom.current();
        while (!run.stop) {
          String group = run.group(rnd);
          String readKey = run.key(rnd);
          String writeKey = run.key(rnd);
          long begin = System.nanoTime();
          long[] commitStart = new long[1];
          int[] attempts = new int[1];
          Throwable error = null;
          run.live.started.increment();
          run.live.inFlight.incrementAndGet();
          if (run.spec.api() == Api.STEPS) {
            attempts[0] = 1;
            Transaction t = null;
            try {
              t = client.begin(group);
              t.get(readKey);
              t.put(writeKey, run.value);
              commitStart[0] = System.nanoTime();
              t.commit();
            } catch (RuntimeException e) {
              error = e;
            } finally {
              if (t != null && t.isActive()) {
                t.abort();
              }
            }
          } else {
            try {
              client.runInTransaction(group, t -> {
                attempts[0]++;
                t.get(readKey);
                t.put(writeKey, run.value);
                commitStart[0] = System.nanoTime();
                return null;
              });
            } catch (RuntimeException e) {
              error = e;
            }
          }
          run.ended(begin, commitStart[0], error, Math.max(0, attempts[0] - 1));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        run.slotStopped();
      }
    }

    @Override
    public void shutdown() {
      // Threads still in a transaction end when their (closed) client fails it.
      for (Thread t : threads) {
        t.interrupt();
      }
    }
  }
}
