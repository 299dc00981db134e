package org.paxoscp.ycsb;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
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
import org.paxoscp.client.InvalidArgumentException;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.ScanResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.client.UpdateRefusedException;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.version.VersionNotActiveException;
import org.paxoscp.wal.KeyRange;
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
 * {@code scan}, {@code update}, {@code insert} and {@code delete} read and buffer writes in that
 * transaction's entity group (the {@code table} argument is ignored); the transactional workloads
 * of this module work this way. Inside one opened with {@link #beginMulti}, the {@code table}
 * argument names the entity group of each operation, and the transaction may span groups (a
 * {@link MultiTransaction}). Outside both, every operation is its own transaction, reads and scans
 * read-only ones: YCSB's core workloads A–F run this way. Their entity group is set by
 * {@value #GROUPING}: {@code record} (the default) puts each record in a group of its own,
 * {@code table + ":" + key}, so that operations on different records never contend, and
 * {@code scan}, which spans records, answers {@link Status#NOT_IMPLEMENTED}; {@code table} puts
 * every record of a table in the one group {@code table}, where a scan is one range read.
 * A record's field {@code f} is the group's item {@code key + "." + f}.
 *
 * <p><b>Scans.</b> {@code scan(table, startkey, n, fields, result)} is a range read
 * ({@link Transaction#scan(KeyRange, int, boolean)}) of the group from item key {@code startkey}
 * on, in key order (UTF-8 byte order), paged until it has the items of the first {@code n}
 * records (a record's items are adjacent: its key, a dot, a field name); each record's fields
 * are filtered like {@code read}'s (all fields found when {@code fields} is null). In a
 * transaction the range read joins its read set, so a concurrent insert into it makes a
 * read-write transaction abort; the transaction's own buffered writes show in the result. A
 * scan needs cluster version 4 ({@code range-reads}); below it the scan answers
 * {@code VERSION_NOT_ACTIVE} and nothing is sent.
 *
 * <p><b>Properties.</b> {@value #CONFIG} (required): the cluster's client configuration, as
 * {@code ./paxoscp cluster} writes it; it holds the cluster key, so it is refused when group or
 * others may read it ({@link KeyFiles}). {@value #DC}: the home DC, or a comma-separated list that
 * the client threads take in turn (default: every DC of the cluster, in turn). {@value #PROTOCOL}:
 * the commit mode, a {@link CommitProtocol} name (default {@code cp}). {@value #GROUPING}:
 * {@code record} (default) or {@code table}, above.
 *
 * <p><b>Counters.</b> Beyond YCSB's operations, {@link #add} buffers a commutative add to a
 * record's field as a 64-bit counter ({@link Transaction#add}: it does not read the item, so
 * transactions that only add to it never conflict), and {@link #readCounter} reads one
 * ({@link Transaction#getCounter}: the item joins the read set). Both work in the three modes
 * above and need cluster version 5 ({@code commutative-updates}) for the add. A counter is stored
 * as its decimal digits, so {@code read} returns it as text. A transaction whose add could not
 * apply where it landed in the log (the counter would leave the 64-bit range, or the value is not
 * a counter) has no effect: its commit is {@link Outcome#REFUSED}.
 *
 * <p><b>Measurements</b> go to YCSB's own measurement system, next to its per-operation lines:
 * {@code COMMIT} (committed read-write transactions), {@code COMMIT-R<n>} (committed after n
 * promotions), {@code COMMIT-XG} (read-write, committed across groups), {@code READ-ONLY-COMMIT},
 * {@code ABORT}, {@code UNKNOWN}, {@code UNAVAILABLE} and {@code REFUSED}, each with the latency
 * of the {@code commit()} call; {@code ADD} and {@code READ-COUNTER} with their own latency and
 * return status, as YCSB measures its operations.
 *
 * <p>YCSB gives each client thread its own {@code DB}; an instance is used by one thread.
 */
public class PaxosCpDB extends DB {
  public static final String CONFIG = "paxoscp.config";
  public static final String DC = "paxoscp.dc";
  public static final String PROTOCOL = "paxoscp.protocol";
  /** The entity group of an operation outside a transaction: {@code record} or {@code table}. */
  public static final String GROUPING = "paxoscp.grouping";

  /** The entity groups of operations outside a transaction ({@value #GROUPING}). */
  public enum Grouping {
    /** Each record is an entity group of its own, {@code table + ":" + key}. */
    RECORD,
    /** Every record of a table is in the entity group named by the table. */
    TABLE
  }

  /** The field that the transactional workloads store their values in. */
  public static final String VALUE_FIELD = "v";

  private static final ThreadLocal<PaxosCpDB> CURRENT = new ThreadLocal<>();
  private static final AtomicInteger INSTANCES = new AtomicInteger();

  /**
   * The outcome of a {@link #commit}: {@code REFUSED} is a transaction in the log whose
   * commutative update could not apply there, so that it has no effect
   * ({@link UpdateRefusedException}).
   */
  public enum Outcome { COMMITTED, ABORTED, UNKNOWN, UNAVAILABLE, REFUSED }

  /**
   * A commit's result.
   *
   * @param promotions how often Paxos-CP moved the transaction to a later position (0 otherwise)
   * @param readOnly whether the transaction wrote nothing (committed without the log)
   * @param position the log position a one-group transaction committed at (its read position
   *     when read-only), or -1: not committed, or committed across groups
   * @param lostTo for an aborted transaction, the position it lost to an entry chosen there that
   *     it could not follow (in Paxos-CP: a conflict with that entry, or the promotion cap); -1
   *     when it aborted otherwise (competing proposers, a key held by a cross-group transaction,
   *     a read position collected) or did not abort
   */
  public record CommitInfo(Outcome outcome, int promotions, boolean readOnly, long latencyMicros,
      long position, long lostTo) {
    /** A result that lost no position to another entry. */
    public CommitInfo(Outcome outcome, int promotions, boolean readOnly, long latencyMicros,
        long position) {
      this(outcome, promotions, readOnly, latencyMicros, position, -1);
    }

    /** A result without a position. */
    public CommitInfo(Outcome outcome, int promotions, boolean readOnly, long latencyMicros) {
      this(outcome, promotions, readOnly, latencyMicros, -1, -1);
    }
  }

  /**
   * What {@link #readCounter} found: the status, and the counter when it is OK (0 for an item
   * without a value).
   */
  public record CounterRead(Status status, long value) {}

  /** Outcomes of every binding of this JVM, for the workloads' summary lines. */
  static final class Counters {
    final LongAdder committed = new LongAdder();
    final LongAdder readOnly = new LongAdder();
    final LongAdder aborted = new LongAdder();
    final LongAdder unknown = new LongAdder();
    final LongAdder unavailable = new LongAdder();
    final LongAdder refused = new LongAdder();
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
        case REFUSED -> refused.increment();
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
      out.println("[TRANSACTIONS], Refused, " + refused.sum());
    }
  }

  static final Counters COUNTERS = new Counters();

  private TxnClient client;
  private String homeDc;
  private CommitProtocol protocol;
  private Grouping grouping;
  private List<String> fieldNames;
  private Transaction txn;
  private MultiTransaction multi;
  private boolean multiWrote;
  /** The unknown outcome of the last one-group commit, for {@link #settle}; or null. */
  private OutcomeUnknownException lastUnknown;

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
    ClusterConfig cluster = clusterConfig(p);
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
    grouping = parseGrouping(p.getProperty(GROUPING, "record"));
    int fieldCount = Integer.parseInt(p.getProperty("fieldcount", "10"));
    String prefix = p.getProperty("fieldnameprefix", "field");
    fieldNames = new ArrayList<>();
    for (int i = 0; i < fieldCount; i++) {
      fieldNames.add(prefix + i);
    }
    try {
      client = openClient(cluster, homeDc, protocol);
    } catch (RuntimeException e) {
      throw new DBException("cannot start a client of DC " + homeDc + ": " + e.getMessage(), e);
    }
    CURRENT.set(this);
  }

  /**
   * The cluster this binding talks to: read from the file {@value #CONFIG} names. Tests override
   * it (and {@link #openClient}) to run the binding against a cluster in their own process.
   */
  protected ClusterConfig clusterConfig(Properties p) throws DBException {
    String file = p.getProperty(CONFIG);
    if (file == null || file.isBlank()) {
      throw new DBException(CONFIG + " must name the cluster's client configuration file"
          + " (for example ./paxoscp-data/cluster/cluster.properties)");
    }
    try {
      return ClusterConfig.fromProperties(KeyFiles.read(Path.of(file)));
    } catch (IllegalArgumentException | UncheckedIOException e) {
      throw new DBException("bad cluster configuration " + file + ": " + e.getMessage(), e);
    }
  }

  /** The client of this binding's thread, homed at {@code homeDc}; closed with the binding. */
  protected TxnClient openClient(ClusterConfig cluster, String homeDc, CommitProtocol protocol) {
    return TxnClient.builder(cluster, homeDc, protocol).build();
  }

  /**
   * Parses {@value #GROUPING}: {@code record} or {@code table}, case-insensitive.
   *
   * @throws DBException naming both
   */
  public static Grouping parseGrouping(String name) throws DBException {
    for (Grouping g : Grouping.values()) {
      if (g.name().equalsIgnoreCase(name.trim())) {
        return g;
      }
    }
    throw new DBException(GROUPING + ": unknown grouping '" + name + "'; one of [record, table]");
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

  /** The entity groups of this binding's operations outside a transaction. */
  public Grouping grouping() {
    return grouping;
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
    } catch (InvalidArgumentException e) {
      throw e; // An invalid group name is the workload's error, not an unavailable cluster.
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
    lastUnknown = null;
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
        info = new CommitInfo(Outcome.COMMITTED, r.promotions(), readOnly, micros(start),
            r.position());
      } else {
        CommitResult r = m.commit();
        info = new CommitInfo(Outcome.COMMITTED, r.promotions(), !multiWrote, micros(start),
            m.groups().size() == 1 && multiWrote ? r.position() : -1);
        if (m.groups().size() > 1 && multiWrote) {
          COUNTERS.crossGroup.increment();
          measure("COMMIT-XG", (int) Math.min(Integer.MAX_VALUE, info.latencyMicros()));
        }
      }
    } catch (TransactionAbortedException e) {
      info = aborted(e, micros(start));
    } catch (OutcomeUnknownException e) {
      if (t != null) {
        lastUnknown = e;
      }
      info = new CommitInfo(Outcome.UNKNOWN, 0, false, micros(start));
    } catch (UnavailableException e) {
      info = new CommitInfo(Outcome.UNAVAILABLE, 0, false, micros(start));
    } catch (UpdateRefusedException e) {
      info = new CommitInfo(Outcome.REFUSED, 0, false, micros(start), e.position().orElse(-1));
    }
    record(info);
    return info;
  }

  private static CommitInfo aborted(TransactionAbortedException e, long latencyMicros) {
    // A decided position is known only when the commit lost to an entry chosen there.
    long lost = e.decidedPosition() > 0 ? e.decidedPosition() : -1;
    return new CommitInfo(Outcome.ABORTED, 0, false, latencyMicros, -1, lost);
  }

  /**
   * Settles the unknown outcome of this binding's last commit, when that was a one-group
   * transaction ({@link TxnClient#settle}): decides the positions where it can still be chosen.
   * Blocks for the answer. The outcome is not counted again in the summary.
   *
   * @return COMMITTED (with its position), ABORTED (certainly not in the log), REFUSED (in the
   *     log without effect), UNKNOWN (still no majority; {@code settle} may be called again) or
   *     UNAVAILABLE
   * @throws IllegalStateException if the last commit's outcome was not unknown, or was a
   *     transaction across groups
   */
  public CommitInfo settle() {
    OutcomeUnknownException e = lastUnknown;
    if (e == null) {
      throw new IllegalStateException("the last commit of this binding has no unknown outcome "
          + "to settle");
    }
    long start = System.nanoTime();
    try {
      CommitResult r = client.settle(e);
      lastUnknown = null;
      return new CommitInfo(Outcome.COMMITTED, r.promotions(), false, micros(start),
          r.position());
    } catch (TransactionAbortedException x) {
      lastUnknown = null;
      return aborted(x, micros(start));
    } catch (UpdateRefusedException x) {
      lastUnknown = null;
      return new CommitInfo(Outcome.REFUSED, 0, false, micros(start), x.position().orElse(-1));
    } catch (OutcomeUnknownException x) {
      lastUnknown = x;
      return new CommitInfo(Outcome.UNKNOWN, 0, false, micros(start));
    } catch (UnavailableException x) {
      return new CommitInfo(Outcome.UNAVAILABLE, 0, false, micros(start));
    }
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
      case REFUSED -> measure("REFUSED", us);
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
      t = client.begin(group(table, key));
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
    if (openButFinished()) {
      return FINISHED;
    }
    if (recordcount < 1) {
      return new Status("BAD_REQUEST", "a scan asks for at least one record, not " + recordcount);
    }
    if (multi != null) {
      return scanRecords((range, limit) -> multi.scan(table, range, limit, false), startkey,
          recordcount, fields, result);
    }
    if (txn != null) {
      Transaction t = txn;
      return scanRecords((range, limit) -> t.scan(range, limit, false), startkey, recordcount,
          fields, result);
    }
    if (grouping == Grouping.RECORD) {
      // Each record is a group of its own: no range read of one group spans records.
      return new Status("NOT_IMPLEMENTED", "a scan outside a transaction needs "
          + GROUPING + "=table (each record is an entity group of its own)");
    }
    Transaction t;
    try {
      t = client.begin(table);
    } catch (TransactionException e) {
      return unavailable(e);
    }
    Status s = scanRecords((range, limit) -> t.scan(range, limit, false), startkey, recordcount,
        fields, result);
    if (t.isActive()) {
      // Read-only: commits at once, outside the log.
      t.commit();
    }
    return s;
  }

  private static final Status SCAN_ABORTED = new Status("ABORTED", "the transaction aborted in "
      + "a scan: a cross-group transaction not resolved yet writes in the range, or the read "
      + "position was collected");

  /** One page of a range read in the open transaction or group. */
  @FunctionalInterface
  private interface Pager {
    ScanResult page(KeyRange range, int limit);
  }

  /**
   * The records from {@code startkey} on, {@code recordcount} of them at most, paged: a record is
   * complete once an item of the next record (or the group's end) was seen, so the scan reads one
   * item past the last record returned.
   */
  private Status scanRecords(Pager pager, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    KeyRange range;
    try {
      range = new KeyRange(startkey, null);
    } catch (IllegalArgumentException e) {
      return new Status("BAD_REQUEST", e.getMessage());
    }
    Map<String, HashMap<String, ByteIterator>> records = new LinkedHashMap<>();
    int perRecord = Math.max(1, fieldNames.size());
    try {
      boolean done = false;
      while (!done) {
        long want = (long) (recordcount - records.size()) * perRecord + 1;
        ScanResult page = pager.page(range, (int) Math.min(Transaction.MAX_SCAN_LIMIT, want));
        for (ScanResult.Entry e : page.entries()) {
          int dot = e.key().lastIndexOf('.');
          if (dot <= 0) {
            continue; // not an item of a record of this binding
          }
          String record = e.key().substring(0, dot);
          String field = e.key().substring(dot + 1);
          HashMap<String, ByteIterator> r = records.get(record);
          if (r == null) {
            if (records.size() == recordcount) {
              done = true;
              break;
            }
            r = new HashMap<>();
            records.put(record, r);
          }
          if (fields == null || fields.contains(field)) {
            r.put(field, new StringByteIterator(e.valueString()));
          }
        }
        if (!page.hasMore()) {
          break;
        }
        range = page.rest().orElseThrow();
      }
    } catch (TransactionAbortedException e) {
      // One description for all, so that YCSB counts them on one line.
      return SCAN_ABORTED;
    } catch (InvalidArgumentException e) {
      // Too many separate ranges, or an entry too large for one datagram: nothing recorded.
      return new Status("BAD_REQUEST", e.getMessage());
    } catch (TransactionException e) {
      return unavailable(e);
    } catch (VersionNotActiveException e) {
      return new Status("VERSION_NOT_ACTIVE", e.getMessage());
    }
    result.addAll(records.values());
    return Status.OK;
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

  // ---- counters --------------------------------------------------------------------------------

  /**
   * Adds {@code delta} to field {@code field} of record {@code key} as a 64-bit counter (no value
   * counts as 0): buffered in the open transaction, or its own transaction outside one. It does
   * not read the item, so transactions that only add to it never conflict with each other
   * ({@link Transaction#add}); in a transaction that commits across groups the add becomes a read
   * and a put ({@link MultiTransaction#add}).
   *
   * @return OK; {@code BAD_REQUEST} when the transaction's own writes of the item are not a
   *     counter, or its adds sum past the 64-bit range, or it grew too large (nothing buffered);
   *     {@code VERSION_NOT_ACTIVE} below cluster version 5; {@code ABORTED} or
   *     {@code UNAVAILABLE} when a transaction across groups could not join the group; outside
   *     a transaction, the commit's outcome as {@code update} gives it, or {@code REFUSED}
   */
  public Status add(String table, String key, String field, long delta) {
    long start = System.nanoTime();
    Status s = addIn(table, key, field, delta);
    measured("ADD", start, s);
    return s;
  }

  private Status addIn(String table, String key, String field, long delta) {
    if (openButFinished()) {
      return FINISHED;
    }
    String item = item(key, field);
    try {
      if (multi != null) {
        return inMulti(() -> multi.add(table, item, delta));
      }
      if (txn != null) {
        txn.add(item, delta);
        return Status.OK;
      }
    } catch (VersionNotActiveException e) {
      return new Status("VERSION_NOT_ACTIVE", e.getMessage());
    } catch (InvalidArgumentException e) {
      return new Status("BAD_REQUEST", e.getMessage());
    }
    if (!begin(group(table, key))) {
      return Status.SERVICE_UNAVAILABLE;
    }
    try {
      txn.add(item, delta);
    } catch (VersionNotActiveException e) {
      abort();
      return new Status("VERSION_NOT_ACTIVE", e.getMessage());
    } catch (InvalidArgumentException e) {
      abort();
      return new Status("BAD_REQUEST", e.getMessage());
    }
    return outcomeStatus(commit());
  }

  /**
   * The counter in field {@code field} of record {@code key} ({@link Transaction#getCounter}):
   * read in the open transaction (the item joins its read set, with the transaction's own adds
   * applied), or in a read-only transaction of its own outside one.
   *
   * @return OK and the counter (0 for no value); {@code BAD_REQUEST} when the value is not a
   *     counter; {@code ABORTED} or {@code UNAVAILABLE} as for {@code read}
   */
  public CounterRead readCounter(String table, String key, String field) {
    long start = System.nanoTime();
    CounterRead r = readCounterIn(table, key, field);
    measured("READ-COUNTER", start, r.status());
    return r;
  }

  private CounterRead readCounterIn(String table, String key, String field) {
    if (openButFinished()) {
      return new CounterRead(FINISHED, 0);
    }
    String item = item(key, field);
    Transaction own = null;
    try {
      long v;
      if (multi != null) {
        v = multi.getCounter(table, item);
      } else if (txn != null) {
        v = txn.getCounter(item);
      } else {
        own = client.begin(group(table, key));
        v = own.getCounter(item);
        // Read-only: commits at once, outside the log.
        own.commit();
      }
      return new CounterRead(Status.OK, v);
    } catch (TransactionAbortedException e) {
      return new CounterRead(new Status("ABORTED", e.getMessage()), 0);
    } catch (InvalidArgumentException e) {
      return new CounterRead(new Status("BAD_REQUEST", e.getMessage()), 0);
    } catch (TransactionException e) {
      return new CounterRead(unavailable(e), 0);
    } finally {
      if (own != null && own.isActive()) {
        own.abort();
      }
    }
  }

  private static void measured(String operation, long startNanos, Status s) {
    Measurements m = Measurements.getMeasurements();
    m.measure(operation, (int) Math.min(Integer.MAX_VALUE, micros(startNanos)));
    m.reportStatus(operation, s);
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
    if (!begin(group(table, key))) {
      return Status.SERVICE_UNAVAILABLE;
    }
    body.accept(txn);
    return outcomeStatus(commit());
  }

  /** The status of an operation that was its own transaction, from the commit's outcome. */
  private static Status outcomeStatus(CommitInfo info) {
    return switch (info.outcome()) {
      case COMMITTED -> Status.OK;
      case ABORTED -> new Status("ABORTED", "the transaction aborted; not in the log");
      case UNKNOWN -> new Status("UNKNOWN", "the outcome is unknown; it may be in the log");
      case UNAVAILABLE -> Status.SERVICE_UNAVAILABLE;
      case REFUSED -> new Status("REFUSED", "in the log, but an update could not apply there; "
          + "no effect");
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

  /** The entity group of an operation on record {@code key} outside a transaction. */
  private String group(String table, String key) {
    return grouping == Grouping.TABLE ? table : recordGroup(table, key);
  }
}
