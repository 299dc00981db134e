package org.paxoscp.nemesis;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.HistoryRecorder;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.ycsb.Transfer;

/**
 * The nemesis' workload: one client thread per (home DC, commit protocol), each with its own
 * {@link TxnClient} recording its history, running transactions of two shapes back to back:
 *
 * <ul>
 *   <li><b>attribute</b> (the paper's workload): read two of a group's attributes, write two,
 *       each write a value no other transaction writes;
 *   <li><b>closed economy</b> (YCSB+T): move an amount between two accounts of a group
 *       ({@link Transfer}), or audit every account of the group in a read-only transaction, whose
 *       total must equal the initial total;
 *   <li><b>closed economy across groups</b>, on groups of its own ({@code xbank-*}, as many as
 *       the closed economy has, when it has two or more): move an amount between accounts of two
 *       of them in one transaction across both, or audit every account of all of them in one
 *       read-only transaction across all, whose sum must equal the initial sum.
 * </ul>
 *
 * <p>Each transaction is tried once; its outcome is counted. A client crash ({@link
 * #crashClientMidCommit}) closes a client while one of its commits is in flight: nothing more is
 * sent for it, the commit ends UNKNOWN, and the thread goes on with a new client (a new process
 * would, with a new session).
 */
final class NemesisWorkload {

  /** What a transaction attempt ended as, from the application's side. */
  enum Outcome { COMMITTED, ABORTED, UNKNOWN, UNAVAILABLE }

  static final int ATTRIBUTES = 20;
  static final int ACCOUNTS = 8;
  static final long INITIAL_BALANCE = 100;
  static final long MAX_TRANSFER = 30;

  private final ClusterConfig config;
  private final Path historyDir;
  private final List<String> attrGroups;
  private final List<String> bankGroups;
  private final List<String> xgGroups;
  private final long seed;
  private final Map<Outcome, AtomicLong> outcomes = new EnumMap<>(Outcome.class);

  /**
   * One transaction of a worker, as the engine-fault report reads them.
   *
   * @param endNanos when it ended ({@link System#nanoTime})
   * @param dc its client's home DC
   * @param micros how long it took, begin to outcome
   * @param readWrite whether it wrote (an audit only reads)
   */
  record Event(long endNanos, String dc, Outcome outcome, long micros, boolean readWrite) {}

  private final java.util.Queue<Event> events = new java.util.concurrent.ConcurrentLinkedQueue<>();
  private final Map<String, AtomicLong> byShape = new ConcurrentHashMap<>();
  private final List<String> violations = new CopyOnWriteArrayList<>();
  private final List<Worker> workers = new ArrayList<>();
  private final List<HistoryRecorder> recorders = new CopyOnWriteArrayList<>();
  private final AtomicBoolean running = new AtomicBoolean();
  private final AtomicInteger clientSerial = new AtomicInteger();
  private final AtomicLong readWriteCommits = new AtomicLong();

  NemesisWorkload(ClusterConfig config, Path historyDir, int attrGroups, int bankGroups,
      long seed) {
    this.config = config;
    this.historyDir = historyDir;
    this.attrGroups = new ArrayList<>();
    for (int i = 0; i < attrGroups; i++) {
      this.attrGroups.add("attr-" + i);
    }
    this.bankGroups = new ArrayList<>();
    for (int i = 0; i < bankGroups; i++) {
      this.bankGroups.add("bank-" + i);
    }
    this.xgGroups = new ArrayList<>();
    for (int i = 0; bankGroups >= 2 && i < bankGroups; i++) {
      this.xgGroups.add("xbank-" + i);
    }
    this.seed = seed;
    for (Outcome o : Outcome.values()) {
      outcomes.put(o, new AtomicLong());
    }
  }

  List<String> groups() {
    List<String> all = new ArrayList<>(attrGroups);
    all.addAll(bankGroups);
    all.addAll(xgGroups);
    return all;
  }

  List<String> bankGroups() {
    return bankGroups;
  }

  /** The groups of the closed economy across groups (none with fewer than two bank groups). */
  List<String> xgGroups() {
    return xgGroups;
  }

  /** The sum over every group of the economy across groups. */
  long xgTotal() {
    return total() * xgGroups.size();
  }

  static String account(int i) {
    return "acct-" + i;
  }

  /** The total every bank group holds. */
  static long total() {
    return ACCOUNTS * INITIAL_BALANCE;
  }

  private TxnClient newClient(String dc, CommitProtocol protocol) {
    String name = dc + "-" + protocol.name().toLowerCase(java.util.Locale.ROOT) + "-"
        + clientSerial.incrementAndGet();
    HistoryRecorder rec = HistoryRecorder.append(historyDir.resolve(name + ".jsonl"));
    recorders.add(rec);
    return TxnClient.builder(config, dc, protocol).recordHistory(rec).maxAttempts(1).build();
  }

  /**
   * Gives every account of every bank group its initial balance, in one transaction per group,
   * retried until it commits (an UNKNOWN outcome is settled by reading).
   */
  void initialise(java.time.Duration timeout) {
    String dc = config.dcNames().get(0);
    long deadline = System.nanoTime() + timeout.toNanos();
    List<String> economies = new ArrayList<>(bankGroups);
    economies.addAll(xgGroups);
    try (TxnClient c = newClient(dc, CommitProtocol.BASIC)) {
      for (String g : economies) {
        while (true) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("could not initialise " + g + " in " + timeout);
          }
          try {
            Transaction t = c.begin(g);
            if (t.getString(account(0)).isPresent()) {
              t.abort();
              break;
            }
            for (int i = 0; i < ACCOUNTS; i++) {
              t.put(account(i), Long.toString(INITIAL_BALANCE));
            }
            t.commit();
            break;
          } catch (TransactionException e) {
            sleep(200);
          }
        }
      }
    }
  }

  /** Starts one thread per (DC, protocol). */
  void start() {
    running.set(true);
    int n = 0;
    for (String dc : config.dcNames()) {
      for (CommitProtocol p : CommitProtocol.values()) {
        Worker w = new Worker(dc, p, new SplittableRandom(seed * 1_000_003L + n++));
        workers.add(w);
        w.thread.start();
      }
    }
  }

  /** Stops the threads (each finishes its transaction) and closes the clients and recorders. */
  void stop() {
    if (!running.getAndSet(false) && workers.stream().noneMatch(w -> w.thread.isAlive())) {
      for (Worker w : workers) {
        w.client.get().close();
      }
      return;
    }
    for (Worker w : workers) {
      try {
        w.thread.join(60_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      if (w.thread.isAlive()) {
        w.thread.interrupt();
      }
      w.client.get().close();
    }
    for (HistoryRecorder r : recorders) {
      r.close();
    }
  }

  /**
   * After {@link #stop}: resolves every transaction across groups that a crashed client left
   * prepared, by auditing all of the economy's groups in one read-only transaction across them
   * from DC {@code dc} (a read that meets a prepared key helps resolve it, then the audit is
   * re-run), so that each group's data holds every decided transfer. The audit's sum must be the
   * initial sum.
   *
   * @return a violation, or a failure to settle within {@code timeout}; empty when settled
   */
  Optional<String> settleAcrossGroups(String dc, java.time.Duration timeout) {
    if (xgGroups.isEmpty()) {
      return Optional.empty();
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    String last = "";
    try (TxnClient c = TxnClient.builder(config, dc, CommitProtocol.CP).build()) {
      while (System.nanoTime() < deadline) {
        try {
          MultiTransaction t = c.beginMulti();
          long sum = 0;
          for (String g : xgGroups) {
            for (int i = 0; i < ACCOUNTS; i++) {
              sum += t.getString(g, account(i)).map(Long::parseLong).orElse(0L);
            }
          }
          t.commit();
          return sum == xgTotal() ? Optional.empty() : Optional.of(String.format(
              "the final audit across groups %s at DC %s saw a sum of %d, not %d", xgGroups, dc,
              sum, xgTotal()));
        } catch (TransactionException e) {
          last = e.getMessage();
          sleep(200);
        }
      }
    }
    return Optional.of("liveness: the economy across groups " + xgGroups + " could not be "
        + "audited at DC " + dc + " within " + timeout.toSeconds() + " s after the run: " + last);
  }

  /**
   * Crashes the client of a worker chosen by {@code random} in the middle of its next read-write
   * commit: the client is closed {@code delayMs} after the commit began.
   *
   * @return a description of what was crashed, once it happened; empty if no commit started
   *     within {@code timeout}, or if the commit had already returned when the client closed
   */
  Optional<String> crashClientMidCommit(SplittableRandom random, long delayMs,
      java.time.Duration timeout) {
    Worker w = workers.get(random.nextInt(workers.size()));
    CountDownLatch done = new CountDownLatch(1);
    AtomicReference<String> what = new AtomicReference<>();
    AtomicBoolean inFlight = new AtomicBoolean();
    w.crash.set(new Crash(delayMs, done, what, inFlight));
    try {
      if (!done.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        w.crash.set(null);
        return Optional.empty();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Optional.empty();
    }
    return inFlight.get() ? Optional.of(what.get()) : Optional.empty();
  }

  private record Crash(long delayMs, CountDownLatch done, AtomicReference<String> what,
      AtomicBoolean inFlight) {}

  /** Read-write transactions committed so far (each needed a majority of DCs). */
  long readWriteCommits() {
    return readWriteCommits.get();
  }

  Map<Outcome, Long> outcomes() {
    Map<Outcome, Long> m = new EnumMap<>(Outcome.class);
    outcomes.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  Map<String, Long> byShape() {
    Map<String, Long> m = new java.util.TreeMap<>();
    byShape.forEach((k, v) -> m.put(k, v.get()));
    return m;
  }

  /** Every transaction the workers finished so far, in no particular order. */
  List<Event> events() {
    return List.copyOf(events);
  }

  /** Violations the workload itself saw (an audit with a wrong total). */
  List<String> violations() {
    return List.copyOf(violations);
  }

  private final class Worker {
    final String dc;
    final CommitProtocol protocol;
    final SplittableRandom random;
    final AtomicReference<TxnClient> client = new AtomicReference<>();
    final AtomicReference<Crash> crash = new AtomicReference<>();
    final Thread thread;

    Worker(String dc, CommitProtocol protocol, SplittableRandom random) {
      this.dc = dc;
      this.protocol = protocol;
      this.random = random;
      this.client.set(newClient(dc, protocol));
      this.thread = new Thread(this::loop, "nemesis-client-" + dc + "-" + protocol);
      this.thread.setDaemon(true);
    }

    void loop() {
      while (running.get()) {
        long t0 = System.nanoTime();
        Outcome o;
        String shape;
        boolean attr = bankGroups.isEmpty() || (!attrGroups.isEmpty() && random.nextBoolean());
        try {
          if (attr) {
            shape = "attribute";
            o = attribute(attrGroups.get(random.nextInt(attrGroups.size())));
          } else if (!xgGroups.isEmpty() && random.nextBoolean()) {
            if (random.nextInt(5) == 0) {
              shape = "xg-audit";
              o = auditAcross();
            } else {
              shape = "xg-transfer";
              o = transferAcross();
            }
          } else if (random.nextInt(5) == 0) {
            shape = "audit";
            o = audit(bankGroups.get(random.nextInt(bankGroups.size())));
          } else {
            shape = "transfer";
            o = transfer(bankGroups.get(random.nextInt(bankGroups.size())));
          }
        } catch (RuntimeException e) {
          // A client closed under a crash throws IllegalStateException on its next call.
          shape = "error";
          o = Outcome.UNAVAILABLE;
        }
        if (o != null) {
          outcomes.get(o).incrementAndGet();
          if (o == Outcome.COMMITTED && !shape.endsWith("audit")) {
            readWriteCommits.incrementAndGet();
          }
          byShape.computeIfAbsent(shape + " " + o, k -> new AtomicLong()).incrementAndGet();
          long t1 = System.nanoTime();
          events.add(new Event(t1, dc, o, (t1 - t0) / 1000, !shape.endsWith("audit")));
        }
        if (o == Outcome.UNAVAILABLE) {
          sleep(100); // nothing answers: do not spin
        }
      }
    }

    Outcome attribute(String group) {
      Transaction t;
      try {
        t = client.get().begin(group);
        for (int i = 0; i < 2; i++) {
          t.get("attr-" + random.nextInt(ATTRIBUTES));
        }
        for (int i = 0; i < 2; i++) {
          t.put("attr-" + random.nextInt(ATTRIBUTES), t.txnId() + "/" + i);
        }
      } catch (UnavailableException e) {
        return Outcome.UNAVAILABLE;
      } catch (TransactionException e) {
        return Outcome.ABORTED;
      }
      return commit(t);
    }

    Outcome transfer(String group) {
      Transaction t;
      try {
        t = client.get().begin(group);
        int[] ft = Transfer.accounts(ACCOUNTS, random);
        long from = balance(t, ft[0]);
        long to = balance(t, ft[1]);
        long amount = Transfer.amount(from, MAX_TRANSFER, random);
        if (amount == 0) {
          t.abort();
          return Outcome.ABORTED;
        }
        t.put(account(ft[0]), Long.toString(from - amount));
        t.put(account(ft[1]), Long.toString(to + amount));
      } catch (UnavailableException e) {
        return Outcome.UNAVAILABLE;
      } catch (TransactionException e) {
        return Outcome.ABORTED;
      }
      return commit(t);
    }

    Outcome audit(String group) {
      try {
        Transaction t = client.get().begin(group);
        long sum = 0;
        boolean absent = true;
        for (int i = 0; i < ACCOUNTS; i++) {
          absent &= t.get(account(i)).isEmpty();
          sum += balance(t, i);
        }
        t.commit();
        if (sum != total() && !(sum == 0 && absent)) {
          violations.add(String.format("audit of %s by client %s at read position %d saw total "
              + "%d, not %d", group, dc + "/" + protocol, t.readPosition(), sum, total()));
        }
        return Outcome.COMMITTED;
      } catch (UnavailableException e) {
        return Outcome.UNAVAILABLE;
      } catch (TransactionException e) {
        return Outcome.ABORTED;
      }
    }

    /** A transfer between accounts of two groups of the economy across groups. */
    Outcome transferAcross() {
      int a = random.nextInt(xgGroups.size());
      int b = random.nextInt(xgGroups.size() - 1);
      String fromGroup = xgGroups.get(a);
      String toGroup = xgGroups.get(b >= a ? b + 1 : b);
      String fromAccount = account(random.nextInt(ACCOUNTS));
      String toAccount = account(random.nextInt(ACCOUNTS));
      MultiTransaction t;
      try {
        t = client.get().beginMulti();
        long from = t.getString(fromGroup, fromAccount).map(Long::parseLong).orElse(0L);
        long to = t.getString(toGroup, toAccount).map(Long::parseLong).orElse(0L);
        long amount = Transfer.amount(from, MAX_TRANSFER, random);
        if (amount == 0) {
          t.abort();
          return Outcome.ABORTED;
        }
        t.put(fromGroup, fromAccount, Long.toString(from - amount));
        t.put(toGroup, toAccount, Long.toString(to + amount));
      } catch (UnavailableException e) {
        return Outcome.UNAVAILABLE;
      } catch (TransactionException e) {
        return Outcome.ABORTED;
      }
      return commit(t.txnId(), t::commit);
    }

    /** A read-only audit of every account of every group of the economy across groups. */
    Outcome auditAcross() {
      try {
        MultiTransaction t = client.get().beginMulti();
        long sum = 0;
        for (String g : xgGroups) {
          for (int i = 0; i < ACCOUNTS; i++) {
            sum += t.getString(g, account(i)).map(Long::parseLong).orElse(0L);
          }
        }
        t.commit();
        if (sum != xgTotal()) {
          violations.add(String.format("audit across groups %s by client %s at read positions "
              + "%s saw a sum of %d, not %d", xgGroups, dc + "/" + protocol,
              xgGroups.stream().map(g -> t.readPosition(g).orElse(-1L)).toList(), sum,
              xgTotal()));
        }
        return Outcome.COMMITTED;
      } catch (UnavailableException e) {
        return Outcome.UNAVAILABLE;
      } catch (TransactionException e) {
        return Outcome.ABORTED;
      }
    }

    long balance(Transaction t, int account) {
      Optional<byte[]> v = t.get(account(account));
      return v.map(b -> Long.parseLong(new String(b, StandardCharsets.UTF_8))).orElse(0L);
    }

    Outcome commit(Transaction t) {
      return commit(t.txnId(), t::commit);
    }

    /** Runs {@code commit}, closing the client in the middle of it if a crash is due. */
    Outcome commit(String txnId, Supplier<?> commit) {
      Crash c = crash.getAndSet(null);
      Thread killer = null;
      TxnClient victim = client.get();
      AtomicBoolean committing = new AtomicBoolean(true);
      if (c != null) {
        killer = new Thread(() -> {
          sleep(c.delayMs());
          synchronized (committing) {
            c.inFlight().set(committing.get());
            victim.close();
          }
        }, "nemesis-client-crash");
        killer.start();
      }
      Outcome o;
      try {
        commit.get();
        o = Outcome.COMMITTED;
      } catch (TransactionAbortedException e) {
        o = Outcome.ABORTED;
      } catch (OutcomeUnknownException e) {
        o = Outcome.UNKNOWN;
      } catch (UnavailableException e) {
        o = Outcome.UNAVAILABLE;
      } catch (IllegalStateException e) {
        o = Outcome.UNKNOWN; // closed by the crash before the commit got going: never recorded
      }
      synchronized (committing) {
        committing.set(false);
      }
      if (c != null) {
        try {
          killer.join();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        c.what().set(String.format("client %s/%s closed %d ms into the commit of %s%s: %s", dc,
            protocol, c.delayMs(), txnId, c.inFlight().get() ? "" : " (it had returned)",
            o));
        client.set(newClient(dc, protocol));
        c.done().countDown();
      }
      return o;
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
