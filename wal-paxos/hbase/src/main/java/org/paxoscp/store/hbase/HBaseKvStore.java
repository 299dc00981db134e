package org.paxoscp.store.hbase;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.AdvancedScanResultConsumer;
import org.apache.hadoop.hbase.client.AsyncAdmin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.AsyncTable;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.util.Bytes;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One DC's {@link KvStore} on HBase 2.6 (docs/architecture.md section 3): tables {@code wal},
 * {@code data} and {@code meta} in the DC's namespace ({@link HBaseSchema}), one column family
 * each; a column of the store is a qualifier, a version is an HBase cell timestamp.
 *
 * <ul>
 *   <li>{@code read(row, column, maxTs)} is a Get with time range [0, maxTs + 1) and one version
 *       ({@link KvStore#LATEST} reads the newest).</li>
 *   <li>{@code write} is one Put with an explicit timestamp for every cell; a Put at an existing
 *       timestamp replaces that version.</li>
 *   <li>{@code checkAndWrite} is one CheckAndMutate: {@code ifNotExists} for a null expected
 *       value, {@code ifEquals} otherwise (it compares the newest version).</li>
 * </ul>
 *
 * <p>Timestamps must be in [0, {@link KvStore#LATEST}): HBase reserves {@code Long.MAX_VALUE} for
 * "now", which would silently break the log-position-as-version scheme. Rows and values must be
 * non-empty: HBase's check-and-mutate treats an empty value as absent (both {@code ifNotExists}
 * and {@code ifEquals} with an empty value match it), so the store refuses empty values instead
 * of guessing.
 *
 * <p>Thread-safe; every call blocks for at most {@link HBaseStoreConfig#operationDeadline()} and
 * then throws {@link StoreUnavailableException} naming the DC, table, operation and row. The
 * store owns its own HBase connection: every DC's store is treated as a separate cluster even when
 * several share one HBase process.
 */
public final class HBaseKvStore implements KvStore {
  private static final Logger LOG = LoggerFactory.getLogger(HBaseKvStore.class);
  private static final byte[] FAMILY = HBaseSchema.FAMILY;

  private final HBaseStoreConfig config;
  private final AsyncConnection connection;
  private final Map<Table, AsyncTable<AdvancedScanResultConsumer>> tables = new EnumMap<>(Table.class);
  private final Duration deadline;
  private final AtomicBoolean closed = new AtomicBoolean();

  private HBaseKvStore(HBaseStoreConfig config, AsyncConnection connection) {
    this.config = config;
    this.connection = connection;
    this.deadline = config.operationDeadline();
    for (Table t : Table.values()) {
      tables.put(t, connection.getTableBuilder(HBaseSchema.tableName(config.dc(), t))
          .setOperationTimeout(deadline.toMillis(), TimeUnit.MILLISECONDS)
          .setRpcTimeout(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .setReadRpcTimeout(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .setWriteRpcTimeout(config.rpcTimeout().toMillis(), TimeUnit.MILLISECONDS)
          .setRetryPause(config.retryPause().toMillis(), TimeUnit.MILLISECONDS)
          .setMaxAttempts(HBaseClientSettings.RETRIES + 1)
          .build());
    }
  }

  /**
   * Connects to the DC's HBase, then creates its schema where missing
   * ({@link HBaseStoreConfig#createSchema()}) or only verifies it.
   *
   * @throws StoreUnavailableException if HBase cannot be reached within the connect or admin
   *     deadline
   * @throws IncompatibleSchemaException if the DC's existing tables do not match this version
   */
  public static HBaseKvStore open(HBaseStoreConfig config) {
    LOG.info("Opening HBase store of DC {} with {}", config.dc(), config.effectiveValues());
    AsyncConnection c = connect(config);
    try {
      AsyncAdmin admin = c.getAdminBuilder()
          .setOperationTimeout(config.adminDeadline().toMillis(), TimeUnit.MILLISECONDS)
          .build();
      boolean created = false;
      if (config.createSchema()) {
        created = HBaseSchema.ensure(admin, config.dc(), config.adminDeadline(), config.regions());
      } else {
        HBaseSchema.verify(admin, config.dc(), config.adminDeadline());
      }
      HBaseKvStore store = new HBaseKvStore(config, c);
      if (created && config.newStore()) {
        // A store created empty now is a new DC's (docs/architecture.md section 12), unless it
        // replaces a lost one; one whose tables were there keeps its marker, or has none because it
        // lost its rows.
        org.paxoscp.store.StoreMarker.initialize(store);
      } else if (created) {
        LOG.warn("Store of DC {} created without a marker ({}=false): it serves no group until "
            + "it is rebuilt (paxoscp dc rebuild)", config.dc(), HBaseStoreConfig.NEW_STORE.name());
      } else {
        switch (org.paxoscp.store.StoreMarker.initializeIfFromEarlierVersion(store,
            org.paxoscp.paxos.WalLayout.MARKED_META_COLUMNS)) {
          case MARKED_NOW -> LOG.info("Store of DC {} had groups and no store marker (written "
              + "by a version without markers): marked serving", config.dc());
          case LOST -> LOG.error("Store of DC {} has no store marker but holds meta rows written "
              + "by a version with markers: it lost its contents (the rows were written after "
              + "the loss by a service that had not noticed it). It serves no group until it is "
              + "rebuilt: paxoscp dc rebuild --dc {} --all (docs/rebuilding.md)", config.dc(),
              config.dc());
          case EMPTY -> LOG.warn("Store of DC {} has no store marker: it lost its contents, or "
              + "its tables were created without one. It serves no group until it is rebuilt: "
              + "paxoscp dc rebuild --dc {} --all (docs/rebuilding.md)", config.dc(),
              config.dc());
          case MARKED -> { }
        }
      }
      return store;
    } catch (RuntimeException | Error e) {
      closeQuietly(c, "connection of DC " + config.dc());
      throw e;
    }
  }

  /** Opens a connection within the connect deadline; a connection that arrives late is closed. */
  static AsyncConnection connect(HBaseStoreConfig config) {
    Configuration conf = HBaseClientSettings.create(config);
    Supplier<String> what = () -> "HBase store of DC " + config.dc() + ": connect via ZooKeeper "
        + config.zkQuorum() + " (port " + config.zkPort() + ")";
    CompletableFuture<AsyncConnection> f;
    try {
      f = ConnectionFactory.createAsyncConnection(conf);
    } catch (RuntimeException e) {
      throw Await.translate(e, what);
    }
    try {
      return Await.get(f, config.connectDeadline(), what);
    } catch (RuntimeException e) {
      f.thenAccept(late -> closeQuietly(late, "late connection of DC " + config.dc()));
      throw e;
    }
  }

  static void closeQuietly(AsyncConnection c, String what) {
    try {
      c.close();
    } catch (IOException | RuntimeException e) {
      LOG.warn("Closing {} failed; continuing", what, e);
    }
  }

  /** The DC this store belongs to. */
  public String dc() {
    return config.dc();
  }

  public HBaseStoreConfig config() {
    return config;
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    checkRow(row);
    byte[] q = qualifier(column);
    if (maxTimestamp < 0) {
      return Optional.empty();
    }
    // Upper bound is exclusive; LATEST + 1 would overflow, and [0, LATEST) already holds every
    // version this store can write.
    long upper = maxTimestamp == LATEST ? LATEST : maxTimestamp + 1;
    Get get = new Get(row).addColumn(FAMILY, q);
    try {
      get.readVersions(1).setTimeRange(0, upper);
    } catch (IOException e) {
      throw new IllegalArgumentException("bad time range [0, " + upper + ")", e);
    }
    Result r = call(table, "read", row, () -> tables.get(table).get(get));
    org.apache.hadoop.hbase.Cell c = r.getColumnLatestCell(FAMILY, q);
    return c == null ? Optional.empty() : Optional.of(new Cell(c.getTimestamp(), CellUtil.cloneValue(c)));
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    checkRow(row);
    // A Get reads one version per column unless told otherwise.
    Get get = new Get(row).addFamily(FAMILY);
    return cells(call(table, "readRow", row, () -> tables.get(table).get(get)));
  }

  /** One batch request (HBase's {@code getAll}) instead of one request per row. */
  @Override
  public List<Map<String, Cell>> readRows(Table table, List<byte[]> rows) {
    if (rows.isEmpty()) {
      return List.of();
    }
    List<Get> gets = new ArrayList<>(rows.size());
    for (byte[] row : rows) {
      checkRow(row);
      gets.add(new Get(row).addFamily(FAMILY));
    }
    List<Result> results = call(table, "readRows(" + rows.size() + ")", rows.get(0),
        () -> tables.get(table).getAll(gets));
    List<Map<String, Cell>> out = new ArrayList<>(results.size());
    for (Result r : results) {
      out.add(cells(r));
    }
    return out;
  }

  private static Map<String, Cell> cells(Result r) {
    Map<String, Cell> out = new HashMap<>();
    org.apache.hadoop.hbase.Cell[] cells = r.rawCells();
    if (cells != null) {
      for (org.apache.hadoop.hbase.Cell c : cells) {
        out.put(new String(CellUtil.cloneQualifier(c), StandardCharsets.UTF_8),
            new Cell(c.getTimestamp(), CellUtil.cloneValue(c)));
      }
    }
    return out;
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    Put put = put(row, timestamp, cells);
    call(table, "write", row, () -> tables.get(table).put(put));
  }

  /** One multi-row request (HBase's {@code putAll}) instead of one request per row. */
  @Override
  public void writeRows(Table table, long timestamp, List<RowWrite> rows) {
    if (rows.isEmpty()) {
      return;
    }
    List<Put> puts = new ArrayList<>(rows.size());
    for (RowWrite w : rows) {
      puts.add(put(w.row(), timestamp, w.cells()));
    }
    call(table, "writeRows(" + rows.size() + ")", rows.get(0).row(),
        () -> tables.get(table).putAll(puts));
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    Put put = put(row, timestamp, cells);
    byte[] q = qualifier(checkColumn);
    CheckAndMutate.Builder b = CheckAndMutate.newBuilder(row);
    CheckAndMutate cam;
    if (expected == null) {
      cam = b.ifNotExists(FAMILY, q).build(put);
    } else if (expected.length == 0) {
      throw new IllegalArgumentException("expected value must be null (absent) or non-empty");
    } else {
      cam = b.ifEquals(FAMILY, q, expected).build(put);
    }
    return call(table, "checkAndWrite", row, () -> tables.get(table).checkAndMutate(cam))
        .isSuccess();
  }

  /**
   * A row {@code Delete} at the current time: its marker also hides any later put with an older
   * timestamp (WAL cells are written at {@link #UNVERSIONED}) until a major compaction drops the
   * marker, which suits collection: nothing may be written to a collected row anyway.
   */
  @Override
  public void deleteRow(Table table, byte[] row) {
    checkRow(row);
    Delete d = new Delete(row);
    call(table, "deleteRow", row, () -> tables.get(table).delete(d));
  }

  /** {@code Delete.addColumns(family, column, timestamp - 1)}: every version at or below it. */
  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    checkRow(row);
    if (timestamp <= 0) {
      return;
    }
    Delete d = new Delete(row).addColumns(FAMILY, qualifier(column), timestamp - 1);
    call(table, "deleteVersionsBefore", row, () -> tables.get(table).delete(d));
  }

  @Override
  public List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp, int limit,
      boolean reversed) {
    if (from == null || limit < 1) {
      throw new IllegalArgumentException("scan needs a start row and a limit >= 1");
    }
    long upper = maxTimestamp == LATEST ? LATEST : maxTimestamp + 1;
    Scan scan = new Scan().addFamily(FAMILY).readVersions(1).setLimit(limit);
    try {
      scan.setTimeRange(0, upper);
    } catch (IOException e) {
      throw new IllegalArgumentException("bad time range [0, " + upper + ")", e);
    }
    if (reversed) {
      // A reversed scan starts at its start row, the high end: [from, to) read from the last.
      scan.setReversed(true).withStartRow(to == null ? new byte[0] : to, false)
          .withStopRow(from, true);
    } else {
      scan.withStartRow(from, true);
      if (to != null) {
        scan.withStopRow(to, false);
      }
    }
    byte[] at = from.length == 0 ? new byte[] {0} : from;
    List<Result> results = call(table, "scan", at, () -> tables.get(table).scanAll(scan));
    List<ScannedRow> out = new ArrayList<>(results.size());
    for (Result r : results) {
      Map<String, Cell> cells = new HashMap<>();
      org.apache.hadoop.hbase.Cell[] raw = r.rawCells();
      if (raw != null) {
        for (org.apache.hadoop.hbase.Cell c : raw) {
          cells.put(new String(CellUtil.cloneQualifier(c), StandardCharsets.UTF_8),
              new Cell(c.getTimestamp(), CellUtil.cloneValue(c)));
        }
      }
      if (!cells.isEmpty()) {
        out.add(new ScannedRow(r.getRow(), cells));
      }
    }
    return out;
  }

  /** A full scan reading every version; for tests and benchmarks only. */
  @Override
  public TableCensus census(Table table) {
    Scan scan = new Scan().addFamily(FAMILY).readAllVersions();
    byte[] any = {0};
    java.util.List<Result> results = call(table, "census", any,
        () -> tables.get(table).scanAll(scan));
    long versions = 0;
    for (Result r : results) {
      versions += r.rawCells() == null ? 0 : r.rawCells().length;
    }
    return new TableCensus(results.size(), versions);
  }

  private static Put put(byte[] row, long timestamp, Map<String, byte[]> cells) {
    checkRow(row);
    if (timestamp < 0 || timestamp == LATEST) {
      throw new IllegalArgumentException("timestamp must be in [0, Long.MAX_VALUE), was " + timestamp);
    }
    if (cells.isEmpty()) {
      throw new IllegalArgumentException("no cells to write");
    }
    Put put = new Put(row);
    for (var c : cells.entrySet()) {
      byte[] v = c.getValue();
      if (v == null || v.length == 0) {
        throw new IllegalArgumentException("value of column " + c.getKey() + " must not be empty");
      }
      put.addColumn(FAMILY, qualifier(c.getKey()), timestamp, v.clone());
    }
    return put;
  }

  private <T> T call(Table table, String op, byte[] row, Supplier<CompletableFuture<T>> request) {
    if (closed.get()) {
      throw new IllegalStateException("store is closed");
    }
    Supplier<String> what = () -> "HBase store of DC " + config.dc() + ": " + op + " on "
        + table.name().toLowerCase(java.util.Locale.ROOT) + " row " + printable(row);
    long stalledBefore = StallDetector.PROCESS.stalledNanos();
    try {
      return Await.get(issue(request, what), deadline, what);
    } catch (StoreUnavailableException e) {
      if (StallDetector.PROCESS.stalledNanos() == stalledBefore) {
        throw e;
      }
      // This process stood still during the call (SIGSTOP, a VM pause), so the HBase client's
      // own timers may have failed a request that the store would have answered. Ask once more:
      // every store operation is safe to repeat (puts rewrite the same cells; a repeated
      // check-and-write fails its check, which callers treat as a lost race and re-read).
      LOG.info("{}: retrying once after this process stood still", what.get());
      return Await.get(issue(request, what), deadline, what);
    }
  }

  private static <T> CompletableFuture<T> issue(Supplier<CompletableFuture<T>> request,
      Supplier<String> what) {
    try {
      return request.get();
    } catch (RuntimeException e) {
      throw Await.translate(e, what);
    }
  }

  private static void checkRow(byte[] row) {
    if (row == null || row.length == 0) {
      throw new IllegalArgumentException("row must not be empty");
    }
  }

  private static byte[] qualifier(String column) {
    return Objects.requireNonNull(column, "column").getBytes(StandardCharsets.UTF_8);
  }

  private static String printable(byte[] row) {
    String s = Bytes.toStringBinary(row);
    return s.length() > 120 ? s.substring(0, 120) + "..." : s;
  }

  /** Closes the HBase connection; idempotent. Calls after close throw IllegalStateException. */
  @Override
  public void close() {
    if (closed.compareAndSet(false, true)) {
      closeQuietly(connection, "connection of DC " + config.dc());
    }
  }
}
