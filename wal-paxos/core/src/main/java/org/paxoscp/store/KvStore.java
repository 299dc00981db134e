package org.paxoscp.store;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One DC's multi-version key-value store, shaped after HBase: tables of rows, rows of columns,
 * columns of timestamped versions. Every operation is atomic for one row. This is the paper's
 * store abstraction (section 2.2): {@code read} (latest version at or below a timestamp),
 * {@code write} (a version at a timestamp) and {@code checkAndWrite}, plus a whole-row read that
 * the acceptor uses to see its Paxos state for a position in one call.
 *
 * <p>Rows and values are non-empty byte strings (HBase's check-and-mutate cannot tell an empty
 * value from an absent column); written timestamps lie in [0, {@link #LATEST}) (HBase reserves
 * {@code Long.MAX_VALUE} for "now"); a write carries at least one cell. Invalid arguments throw
 * {@link IllegalArgumentException} and change nothing.
 *
 * <p>Implementations are thread-safe. Byte arrays passed in are not retained and arrays returned
 * are not shared. Every method may throw {@link StoreUnavailableException} when the store cannot
 * be reached within its deadline; the caller then knows nothing about whether a write applied.
 */
public interface KvStore extends AutoCloseable {

  /** Timestamp for cells that keep only their latest value (WAL and meta rows). */
  long UNVERSIONED = 0L;

  /** Read bound meaning "the newest version". */
  long LATEST = Long.MAX_VALUE;

  /** The tables a DC keeps (docs/architecture.md section 3). */
  enum Table {
    /** Row per (group, position): the acceptor state and the chosen value. */
    WAL,
    /** Row per (group, item): one version per log position that wrote it. */
    DATA,
    /** Row per group: watermarks and the next position's leader. */
    META
  }

  /** A version of a column: its timestamp and value. */
  record Cell(long timestamp, byte[] value) {}

  /** The newest version of {@code column} with timestamp {@code <= maxTimestamp}, if any. */
  Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp);

  /** The newest version of every column of the row; empty if the row does not exist. */
  Map<String, Cell> readRow(Table table, byte[] row);

  /**
   * {@link #readRow} of each of {@code rows}, in their order: each row read atomically, the rows
   * not together. A store may read them in one request (HBase sends one batch); the default
   * reads them one by one.
   */
  default List<Map<String, Cell>> readRows(Table table, List<byte[]> rows) {
    List<Map<String, Cell>> out = new java.util.ArrayList<>(rows.size());
    for (byte[] row : rows) {
      out.add(readRow(table, row));
    }
    return out;
  }

  /**
   * Writes every cell in {@code cells} at {@code timestamp}, atomically. A write to an existing
   * (row, column, timestamp) replaces that version.
   */
  void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells);

  /** One row's cells for {@link #writeRows}. */
  record RowWrite(byte[] row, Map<String, byte[]> cells) {}

  /**
   * Writes each row's cells at {@code timestamp}, as {@link #write} would one row at a time:
   * each row atomically, the rows in no particular order and not atomically together. A store
   * may send them in one request (HBase does); the default calls {@link #write} per row.
   */
  default void writeRows(Table table, long timestamp, List<RowWrite> rows) {
    for (RowWrite w : rows) {
      write(table, w.row(), timestamp, w.cells());
    }
  }

  /**
   * Writes {@code cells} at {@code timestamp} atomically if and only if the newest version of
   * {@code checkColumn} equals {@code expected} ({@code null}: the column has no version; an
   * empty array is invalid).
   *
   * @return whether the write was applied
   */
  boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells);

  /**
   * Removes the whole row (every column, every version). Removing an absent row does nothing.
   * Used by log garbage collection ({@code org.paxoscp.paxos.LogCollector}); HBase: a row
   * {@code Delete}.
   */
  void deleteRow(Table table, byte[] row);

  /**
   * Removes every version of {@code column} whose timestamp is below {@code timestamp}; versions
   * at or above it stay. Idempotent. Used by version garbage collection; HBase: a
   * {@code Delete.addColumns(family, qualifier, timestamp - 1)}.
   */
  void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp);

  /**
   * A row found by {@link #scan}: its key and, of each of its columns, the newest version at or
   * below the scan's bound.
   */
  record ScannedRow(byte[] row, Map<String, Cell> cells) {}

  /**
   * The rows with keys in [{@code from}, {@code to}) in key order (unsigned bytes), or from the
   * last when {@code reversed}; at most {@code limit} of them, each with the newest version at or
   * below {@code maxTimestamp} of each column. A row without such a version is left out (and not
   * counted). {@code from} may be empty (the table's start); {@code to} null is the table's end.
   * Each row is read atomically, the rows not together. For a transaction's range reads
   * ({@code LogApplier#scan}: a group's data rows at a read position, which no later write
   * changes) and for rebuilding a DC (listing groups, copying a group's data, finding a group's
   * last WAL row).
   */
  List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp, int limit,
      boolean reversed);

  /**
   * Size of a table: its rows and its stored versions (all columns, all versions). Scans the whole
   * table; for tests and benchmarks, not for request paths.
   */
  TableCensus census(Table table);

  /** Rows and stored versions of one table, as counted by {@link #census}. */
  record TableCensus(long rows, long versions) {}

  /** Releases connections; idempotent. */
  @Override
  void close();
}
