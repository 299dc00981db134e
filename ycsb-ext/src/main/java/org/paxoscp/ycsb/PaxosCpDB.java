package org.paxoscp.ycsb;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Consumer;
import java.util.function.Function;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;
import site.ycsb.measurements.Measurements;

/**
 * The YCSB binding of paxoscp: a {@link DB} over one {@link TxnClient}, with the transaction
 * boundary YCSB's {@code DB} lacks ({@link #begin}, {@link #commit}, {@link #abort}, as YCSB+T
 * added them).
 *
 * <p><b>Three modes.</b> Inside a transaction opened with {@link #begin}, {@code read},
 * {@code update}, {@code insert} and {@code delete} read and buffer writes in that transaction's
 * entity group (the {@code table} argument is ignored); the transactional workloads of this module
 * work this way. Inside one opened with {@link #beginMulti}, the {@code table} argument names the
 * entity group of each operation, and the transaction may span groups (a {@link
 * MultiTransaction}). Outside both, every operation is its own transaction on the entity group
 * {@code table + ":" + key} (one group per record), reads as read-only transactions: YCSB's core
 * workloads A–F run this way. A record's field {@code f} is the group's item {@code key + "." + f}.
 * {@code scan} spans records, hence groups, and is not offered ({@link Status#NOT_IMPLEMENTED}).
 *
 * <p><b>Properties.</b> {@value #CONFIG} (required): the cluster's client configuration, as
 * {@code ./paxoscp cluster} writes it; it holds the cluster key, so it is refused when group or
 * others may read it ({@link KeyFiles}). {@value #DC}: the home DC, or a comma-separated list that
 * the client threads take in turn (default: every DC of the cluster, in turn). {@value #PROTOCOL}:
 * the commit mode, a {@link CommitProtocol} name (default {@code cp}).
 *
 * <p><b>Measurements</b> go to YCSB's own measurement system, next to its per-operation lines:
 * {@code COMMIT} (committed read-write transactions), {@code COMMIT-R<n>} (committed after n
 * promotions), {@code COMMIT-XG} (read-write, committed across groups), {@code READ-ONLY-COMMIT},
 * {@code ABORT}, {@code UNKNOWN} and {@code UNAVAILABLE}, each with the latency of the
 * {@code commit()} call.
 *
 * <p>YCSB gives each client thread its own {@code DB}; an instance is used by one thread.
 */
public class PaxosCpDB extends DB {
  public static final String CONFIG = "paxoscp.config";
  public static final String DC = "paxoscp.dc";
  public static final String PROTOCOL = "paxoscp.protocol";

  /** The field that the transactional workloads store their values in. */
  public static final String VALUE_FIELD = "v";

  private static final ThreadLocal<PaxosCpDB> CURRENT = new ThreadLocal<>();
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  /** The outcome of a {@link #commit}. */
  public enum Outcome { COMMITTED, ABORTED, UNKNOWN, UNAVAILABLE }

  /**
   * A commit's result.
   *
   * @param promotions how often Paxos-CP moved the transaction to a later position (0 otherwise)
   * @param readOnly whether the transaction wrote nothing (committed without the log)
   */
  public record CommitInfo(Outcome outcome, int promotions, boolean readOnly, long latencyMicros) {}

  /** Outcomes of every binding of this JVM, for the workloads' summary lines. */
  static final class Counters {
    final LongAdder committed = new LongAdder();
    final LongAdder readOnly = new LongAdder();
    final LongAdder aborted = new LongAdder();
    final LongAdder unknown = new LongAdder();
    final LongAdder unavailable = new LongAdder();
    final LongAdder crossGroup = new LongAdder();
    final ConcurrentSkipListMap<Integer, LongAdder>
        byRound = new ConcurrentSkipListMap<>();

    void add(CommitInfo info) {
      switch (info.outcome()) {
        case COMMITTED -> {
          if (info.readOnly()) {
            readOnly.increment();
          } else {
            committed.increment();
            byRound.computeIfAbsent(info.promotions(),
                r -> new LongAdder()).increment();
          }
        }
        case ABORTED -> aborted.increment();
        case UNKNOWN -> unknown.increment();
        case UNAVAILABLE -> unavailable.increment();
        default -> throw new AssertionError(info.outcome());
      }
    }

    /** The summary in YCSB's output format: {@code [TRANSACTIONS], <what>, <count>}. */
    void print(PrintStream out) {
      out.println("[TRANSACTIONS], Committed, " + committed.sum());
      byRound.forEach((r, n) -> out.println("[TRANSACTIONS], Committed after " + r
          + " promotions, " + n.sum()));
      out.println("[TRANSACTIONS], Committed read-only, " + readOnly.sum());
      out.println("[TRANSACTIONS], Committed across groups, " + crossGroup.sum());
      out.println("[TRANSACTIONS], Aborted, " + aborted.sum());
      out.println("[TRANSACTIONS], Unknown, " + unknown.sum());
      out.println("[TRANSACTIONS], Unavailable, " + unavailable.sum());
    }
  }

  static final Counters COUNTERS = new Counters();

  private TxnClient client;
  private String homeDc;
  private CommitProtocol protocol;
  private List<String> fieldNames;
  private Transaction txn;
  private MultiTransaction multi;
  private boolean multiWrote;

  /**
   * The binding that YCSB initialised on the calling thread (YCSB calls {@code DB.init} and then
   * {@code Workload.initThread} on each client thread), so that a workload can reach the
   * transaction boundary behind YCSB's measuring wrapper.
   */
  public static Optional<PaxosCpDB> current() {
    return Optional.ofNullable(CURRENT.get());
  }

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String file = p.getProperty(CONFIG);
    if (file == null || file.isBlank()) {
      throw new DBException(CONFIG + " must name the cluster's client configuration file"
          + " (for example ./paxoscp-data/cluster/cluster.properties)");
    }
    ClusterConfig cluster;
    try {
      cluster = ClusterConfig.fromProperties(KeyFiles.read(Path.of(file)));
    } catch (IllegalArgumentException | UncheckedIOException e) {
      throw new DBException("bad cluster configuration " + file + ": " + e.getMessage(), e);
    }
    List<String> homes = new ArrayList<>();
    for (String dc : p.getProperty(DC, String.join(",", cluster.dcNames())).split(",")) {
      if (!dc.isBlank()) {
        homes.add(dc.trim());
      }
    }
    for (String dc : homes) {
      if (!cluster.dcNames().contains(dc)) {
        throw new DBException(DC + ": unknown DC " + dc + "; the cluster has " + cluster.dcNames());
      }
    }
    if (homes.isEmpty()) {
      throw new DBException(DC + " names no DC");
    }
    homeDc = homes.get(Math.floorMod(INSTANCES.getAndIncrement(), homes.size()));
    protocol = parseProtocol(p.getProperty(PROTOCOL, "cp"));
    int fieldCount = Integer.parseInt(p.getProperty("fieldcount", "10"));
    String prefix = p.getProperty("fieldnameprefix", "field");
    fieldNames = new ArrayList<>();
    for (int i = 0; i < fieldCount; i++) {
      fieldNames.add(prefix + i);
    }
    try {
      client = TxnClient.builder(cluster, homeDc, protocol).build();
    } catch (RuntimeException e) {
      throw new DBException("cannot start a client of DC " + homeDc + ": " + e.getMessage(), e);
    }
    CURRENT.set(this);
  }

  /**
   * Parses a commit mode name: any {@link CommitProtocol} constant, case-insensitive.
   *
   * @throws DBException naming the modes on offer
   */
  public static CommitProtocol parseProtocol(String name) throws DBException {
    for (CommitProtocol c : CommitProtocol.values()) {
      if (c.name().equalsIgnoreCase(name.trim())) {
        return c;
      }
    }
    List<String> names = new ArrayList<>();
    for (CommitProtocol c : CommitProtocol.values()) {
      names.add(c.name().toLowerCase(Locale.ROOT));
    }
    throw new DBException(PROTOCOL + ": unknown commit mode '" + name + "'; one of " + names);
  }

  @Override
  public void cleanup() throws DBException {
    abort();
    if (client != null) {
      client.close();
    }
    CURRENT.remove();
  }

  /** This binding's home DC. */
  public String homeDc() {
    return homeDc;
  }

  /** This binding's commit mode. */
  public CommitProtocol protocol() {
    return protocol;
  }

  // ---- the transaction boundary -----------------------------------------------------------

  /**
   * Begins a transaction on {@code group}; the following operations run in it until
   * {@link #commit} or {@link #abort}.
   *
   * @return false when no DC could give a read position (counted as {@code UNAVAILABLE})
   * @throws IllegalStateException if a transaction is already open
   */
  public boolean begin(String group) {
    requireNoneOpen();
    try {
      txn = client.begin(group);
      return true;
    } catch (TransactionException e) {
      record(new CommitInfo(Outcome.UNAVAILABLE, 0, false, 0));
      return false;
    }
  }

  /**
   * Begins a transaction that may span entity groups: the following operations run in it, each
   * in the group its {@code table} argument names, until {@link #commit} or {@link #abort}.
   * Nothing is sent until the first operation; a group that cannot be joined then fails that
   * operation ({@code UNAVAILABLE}).
   *
   * @throws IllegalStateException if a transaction is already open
   */
  public void beginMulti() {
    requireNoneOpen();
    multi = client.beginMulti();
    multiWrote = false;
  }

  private void requireNoneOpen() {
    if (txn != null) {
      throw new IllegalStateException("a transaction is already open on " + txn.group());
    }
    if (multi != null) {
      throw new IllegalStateException("a transaction is already open on " + multi.groups());
    }
  }

  /** Whether a transaction is open. */
  public boolean inTransaction() {
    return txn != null || multi != null;
  }

  /**
   * Commits the open transaction and records the outcome and the commit latency in YCSB's
   * measurements. A transaction whose reads failed is aborted instead (counted as ABORT).
   */
  public CommitInfo commit() {
    Transaction t = txn;
    MultiTransaction m = multi;
    if (t == null && m == null) {
      throw new IllegalStateException("no transaction is open");
    }
    txn = null;
    multi = null;
    long start = System.nanoTime();
    CommitInfo info;
    try {
      if (t != null ? !t.isActive() : !m.isActive()) {
        // A read inside the transaction failed and aborted it.
        info = new CommitInfo(Outcome.ABORTED, 0, false, 0);
      } else if (t != null) {
        CommitResult r = t.commit();
        // A read-only transaction commits at its read position, outside the log; a read-write
        // one at a later position.
        boolean readOnly = r.position() == t.readPosition();
        info = new CommitInfo(Outcome.COMMITTED, r.promotions(), readOnly, micros(start));
      } else {
        CommitResult r = m.commit();
        info = new CommitInfo(Outcome.COMMITTED, r.promotions(), !multiWrote, micros(start));
        if (m.groups().size() > 1 && multiWrote) {
          COUNTERS.crossGroup.increment();
          measure("COMMIT-XG", (int) Math.min(Integer.MAX_VALUE, info.latencyMicros()));
        }
      }
    } catch (TransactionAbortedException e) {
      info = new CommitInfo(Outcome.ABORTED, 0, false, micros(start));
    } catch (OutcomeUnknownException e) {
      info = new CommitInfo(Outcome.UNKNOWN, 0, false, micros(start));
    } catch (UnavailableException e) {
      info = new CommitInfo(Outcome.UNAVAILABLE, 0, false, micros(start));
    }
    record(info);
    return info;
  }

  private static long micros(long startNanos) {
    return (System.nanoTime() - startNanos) / 1000;
  }

  /** Abandons the open transaction, if any. */
  public void abort() {
    if (txn != null && txn.isActive()) {
      txn.abort();
    }
    txn = null;
    if (multi != null) {
      multi.abort();
    }
    multi = null;
  }

  private static void record(CommitInfo info) {
    COUNTERS.add(info);
    int us = (int) Math.min(Integer.MAX_VALUE, info.latencyMicros());
    switch (info.outcome()) {
      case COMMITTED -> {
        if (info.readOnly()) {
          measure("READ-ONLY-COMMIT", us);
        } else {
          measure("COMMIT", us);
          measure("COMMIT-R" + info.promotions(), us);
        }
      }
      case ABORTED -> measure("ABORT", us);
      case UNKNOWN -> measure("UNKNOWN", us);
      case UNAVAILABLE -> measure("UNAVAILABLE", us);
      default -> throw new AssertionError(info.outcome());
    }
  }

  private static void measure(String name, int micros) {
    Measurements.getMeasurements().measure(name, micros);
  }

  // ---- YCSB's operations ----------------------------------------------------------------------

  @Override
  public Status read(String table, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    if (openButFinished()) {
      return FINISHED;
    }
    if (multi != null) {
      return readFields(f -> multi.get(table, item(key, f)), fields, result);
    }
    if (txn != null) {
      return readIn(txn, key, fields, result);
    }
    Transaction t;
    try {
      t = client.begin(recordGroup(table, key));
    } catch (TransactionException e) {
      return unavailable(e);
    }
    Status s = readIn(t, key, fields, result);
    if (t.isActive()) {
      // Read-only: commits at once, outside the log.
      t.commit();
    }
    return s;
  }

  private Status readIn(Transaction t, String key, Set<String> fields,
      Map<String, ByteIterator> result) {
    return readFields(f -> t.get(item(key, f)), fields, result);
  }

  private Status readFields(Function<String, Optional<byte[]>> get, Set<String> fields,
      Map<String, ByteIterator> result) {
    boolean found = false;
    try {
      for (String f : fields == null ? fieldNames : fields) {
        Optional<byte[]> v = get.apply(f);
        if (v.isPresent()) {
          found = true;
          result.put(f, new StringByteIterator(new String(v.get(), StandardCharsets.UTF_8)));
        }
      }
    } catch (TransactionAbortedException e) {
      return new Status("ABORTED", e.getMessage());
    } catch (TransactionException e) {
      return unavailable(e);
    }
    return found ? Status.OK : Status.NOT_FOUND;
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    // A scan spans records, and each record is an entity group of its own: no transaction of
    // this system covers it.
    return Status.NOT_IMPLEMENTED;
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    return write(table, key, values);
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    return write(table, key, values);
  }

  @Override
  public Status delete(String table, String key) {
    if (openButFinished()) {
      return FINISHED;
    }
    if (multi != null) {
      return inMulti(() -> fieldNames.forEach(f -> multi.delete(table, item(key, f))));
    }
    if (txn != null) {
      fieldNames.forEach(f -> txn.delete(item(key, f)));
      return Status.OK;
    }
    return autocommit(table, key, t -> fieldNames.forEach(f -> t.delete(item(key, f))));
  }

  private Status write(String table, String key, Map<String, ByteIterator> values) {
    if (openButFinished()) {
      return FINISHED;
    }
    if (multi != null) {
      return inMulti(() -> values.forEach((f, v) -> multi.put(table, item(key, f),
          v.toString())));
    }
    if (txn != null) {
      values.forEach((f, v) -> txn.put(item(key, f), v.toString()));
      return Status.OK;
    }
    Map<String, String> copy = new HashMap<>();
    values.forEach((f, v) -> copy.put(f, v.toString()));
    return autocommit(table, key, t -> copy.forEach((f, v) -> t.put(item(key, f), v)));
  }

  private Status autocommit(String table, String key,
      Consumer<Transaction> body) {
    if (!begin(recordGroup(table, key))) {
      return Status.SERVICE_UNAVAILABLE;
    }
    body.accept(txn);
    CommitInfo info = commit();
    return switch (info.outcome()) {
      case COMMITTED -> Status.OK;
      case ABORTED -> new Status("ABORTED", "the transaction aborted; not in the log");
      case UNKNOWN -> new Status("UNKNOWN", "the outcome is unknown; it may be in the log");
      case UNAVAILABLE -> Status.SERVICE_UNAVAILABLE;
    };
  }

  /**
   * Whether the open transaction already ended: a read aborted it (it met a key that a
   * cross-group transaction holds, or its read position was collected). Its later operations
   * answer {@link #FINISHED}, and {@link #commit} counts it as aborted.
   */
  private boolean openButFinished() {
    return (txn != null && !txn.isActive()) || (multi != null && !multi.isActive());
  }

  private static final Status FINISHED = new Status("ABORTED",
      "the transaction aborted on an earlier read");

  /** A write in the open cross-group transaction; joining its group may fail. */
  private Status inMulti(Runnable body) {
    try {
      body.run();
      multiWrote = true;
      return Status.OK;
    } catch (TransactionAbortedException e) {
      return new Status("ABORTED", e.getMessage());
    } catch (TransactionException e) {
      return unavailable(e);
    }
  }

  private static Status unavailable(TransactionException e) {
    return new Status("UNAVAILABLE", e.getMessage());
  }

  /** The item of the group that holds field {@code field} of record {@code key}. */
  public static String item(String key, String field) {
    return key + "." + field;
  }

  /** The entity group of one YCSB record (core workloads): one group per record. */
  static String recordGroup(String table, String key) {
    return table + ":" + key;
  }
}
