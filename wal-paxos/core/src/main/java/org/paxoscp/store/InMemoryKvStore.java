package org.paxoscp.store;

import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.TreeMap;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;


/**
 * Multi-version in-memory {@link KvStore}: every version is kept, every operation is atomic per row
 * (a row is its own monitor), and the whole store is thread-safe. Used by unit tests, by the
 * simulator, and by local clusters that explicitly ask for {@code --store memory}.
 *
 * <p>{@link #setAvailable(boolean)} lets tests turn the store "off": every call then throws
 * {@link StoreUnavailableException} without touching state.
 *
 * <p>A new in-memory store is a new DC's store, which has never held anything, so it starts with
 * the serving {@link StoreMarker}; {@link #wipe} loses everything, the marker included, as a DC
 * that loses its store does (docs/architecture.md section 12).
 */
public final class InMemoryKvStore implements KvStore {

  private static final class Row {
    final Map<String, NavigableMap<Long, byte[]>> columns = new HashMap<>();
  }

  private final Map<Table, ConcurrentNavigableMap<RowKey, Row>> tables =
      new EnumMap<>(Table.class);
  private volatile boolean available = true;
  private volatile boolean closed;

  /** A new DC's store: empty and marked serving. */
  public InMemoryKvStore() {
    this(true);
  }

  /**
   * An empty store; marked serving when {@code newDc}, else without a marker, as a store that
   * lost its contents comes back (its DC serves no group until it is rebuilt from its peers,
   * docs/architecture.md section 12): what a restarted process of a DC whose store lives in memory
   * has.
   */
  public InMemoryKvStore(boolean newDc) {
    for (Table t : Table.values()) {
      tables.put(t, new ConcurrentSkipListMap<>());
    }
    if (newDc) {
      StoreMarker.initialize(this);
    }
  }

  /**
   * Loses every row of every table, the store marker included: what a DC whose disks are lost
   * comes back to. The meta table goes first, as {@code HBaseSchema.truncate} empties it first:
   * a service still running that reads the marker after its own store work sees the loss
   * whenever that work may have met an emptied table (docs/architecture.md section 12).
   */
  public void wipe() {
    java.util.List<Table> order = java.util.List.of(Table.META, Table.WAL, Table.DATA);
    for (var t : order.stream().map(tables::get).toList()) {
      for (Row r : t.values()) {
        synchronized (r) {
          r.columns.clear();
        }
      }
      t.clear();
    }
  }

  /** Makes every subsequent call fail with {@link StoreUnavailableException} (false) or work. */
  public void setAvailable(boolean available) {
    this.available = available;
  }

  private void check() {
    if (closed) {
      throw new IllegalStateException("store is closed");
    }
    if (!available) {
      throw new StoreUnavailableException("in-memory store switched off");
    }
  }

  private static void checkRow(byte[] row) {
    if (row == null || row.length == 0) {
      throw new IllegalArgumentException("row must not be empty");
    }
  }

  private static void checkWrite(byte[] row, long timestamp, Map<String, byte[]> cells) {
    checkRow(row);
    if (timestamp < 0 || timestamp == LATEST) {
      throw new IllegalArgumentException("timestamp must be in [0, Long.MAX_VALUE), was " + timestamp);
    }
    if (cells.isEmpty()) {
      throw new IllegalArgumentException("no cells to write");
    }
    for (var c : cells.entrySet()) {
      if (c.getValue() == null || c.getValue().length == 0) {
        throw new IllegalArgumentException("value of column " + c.getKey() + " must not be empty");
      }
    }
  }

  private Row row(Table table, byte[] row, boolean create) {
    ConcurrentNavigableMap<RowKey, Row> t = tables.get(table);
    RowKey key = new RowKey(row);
    return create ? t.computeIfAbsent(key, k -> new Row()) : t.get(key);
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    checkRow(row);
    check();
    Row r = row(table, row, false);
    if (r == null) {
      return Optional.empty();
    }
    synchronized (r) {
      NavigableMap<Long, byte[]> versions = r.columns.get(column);
      if (versions == null) {
        return Optional.empty();
      }
      Map.Entry<Long, byte[]> e = versions.floorEntry(maxTimestamp);
      return e == null ? Optional.empty() : Optional.of(new Cell(e.getKey(), e.getValue().clone()));
    }
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    checkRow(row);
    check();
    Row r = row(table, row, false);
    Map<String, Cell> out = new HashMap<>();
    if (r == null) {
      return out;
    }
    synchronized (r) {
      for (var c : r.columns.entrySet()) {
        Map.Entry<Long, byte[]> last = c.getValue().lastEntry();
        out.put(c.getKey(), new Cell(last.getKey(), last.getValue().clone()));
      }
    }
    return out;
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    checkWrite(row, timestamp, cells);
    check();
    Row r = row(table, row, true);
    synchronized (r) {
      put(r, timestamp, cells);
    }
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    checkWrite(row, timestamp, cells);
    if (expected != null && expected.length == 0) {
      throw new IllegalArgumentException("expected value must be null (absent) or non-empty");
    }
    check();
    Row r = row(table, row, true);
    synchronized (r) {
      NavigableMap<Long, byte[]> versions = r.columns.get(checkColumn);
      byte[] current = versions == null || versions.isEmpty() ? null : versions.lastEntry().getValue();
      boolean matches = expected == null ? current == null : Arrays.equals(expected, current);
      if (!matches) {
        return false;
      }
      put(r, timestamp, cells);
      return true;
    }
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    checkRow(row);
    check();
    Row r = row(table, row, false);
    if (r == null) {
      return;
    }
    synchronized (r) {
      r.columns.clear();
    }
    // An emptied row is left in the map (another thread may hold it); it reads as absent.
  }

  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    checkRow(row);
    check();
    Row r = row(table, row, false);
    if (r == null) {
      return;
    }
    synchronized (r) {
      NavigableMap<Long, byte[]> versions = r.columns.get(column);
      if (versions != null) {
        versions.headMap(timestamp, false).clear();
        if (versions.isEmpty()) {
          r.columns.remove(column);
        }
      }
    }
  }

  @Override
  public List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp, int limit,
      boolean reversed) {
    if (from == null || limit < 1) {
      throw new IllegalArgumentException("scan needs a start row and a limit >= 1");
    }
    check();
    ConcurrentNavigableMap<RowKey, Row> t = tables.get(table);
    ConcurrentNavigableMap<RowKey, Row> range = to == null ? t.tailMap(new RowKey(from), true)
        : t.subMap(new RowKey(from), true, new RowKey(to), false);
    List<ScannedRow> out = new ArrayList<>();
    for (var e : (reversed ? range.descendingMap() : range).entrySet()) {
      Map<String, Cell> cells = new HashMap<>();
      Row r = e.getValue();
      synchronized (r) {
        for (var c : r.columns.entrySet()) {
          Map.Entry<Long, byte[]> v = c.getValue().floorEntry(maxTimestamp);
          if (v != null) {
            cells.put(c.getKey(), new Cell(v.getKey(), v.getValue().clone()));
          }
        }
      }
      if (!cells.isEmpty()) {
        out.add(new ScannedRow(e.getKey().bytes.clone(), cells));
        if (out.size() == limit) {
          break;
        }
      }
    }
    return out;
  }

  @Override
  public TableCensus census(Table table) {
    check();
    long rows = 0;
    long versions = 0;
    for (Row r : tables.get(table).values()) {
      synchronized (r) {
        long v = 0;
        for (NavigableMap<Long, byte[]> c : r.columns.values()) {
          v += c.size();
        }
        rows += v > 0 ? 1 : 0;
        versions += v;
      }
    }
    return new TableCensus(rows, versions);
  }

  private static void put(Row r, long timestamp, Map<String, byte[]> cells) {
    for (var c : cells.entrySet()) {
      r.columns.computeIfAbsent(c.getKey(), k -> new TreeMap<>()).put(timestamp, c.getValue().clone());
    }
  }

  @Override
  public void close() {
    closed = true;
  }

  /** Byte-array row key with value equality, ordered as HBase orders rows (unsigned bytes). */
  private record RowKey(byte[] bytes) implements Comparable<RowKey> {
    RowKey {
      bytes = bytes.clone();
    }

    @Override
    public int compareTo(RowKey o) {
      return Arrays.compareUnsigned(bytes, o.bytes);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof RowKey k && Arrays.equals(bytes, k.bytes);
    }

    @Override
    public int hashCode() {
      return Arrays.hashCode(bytes);
    }
  }
}
