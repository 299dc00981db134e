package org.paxoscp.store;

import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A store that passes every call to another; subclasses override the calls they want to observe,
 * change or interleave with (tests run a competing operation inside a check-and-write; the
 * simulator's planted watermark bug hides one cell). {@link #readRows} is left to the
 * interface's default, one {@link #readRow} per row, so a subclass that observes row reads sees
 * those too; a wrapper in front of a store that batches them (HBase) overrides it and passes the
 * batch on. Thread-safe when the delegate is.
 */
public abstract class ForwardingKvStore implements KvStore {
  protected final KvStore delegate;

  protected ForwardingKvStore(KvStore delegate) {
    this.delegate = Objects.requireNonNull(delegate);
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    return delegate.read(table, row, column, maxTimestamp);
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    return delegate.readRow(table, row);
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    delegate.write(table, row, timestamp, cells);
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    delegate.deleteRow(table, row);
  }

  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    delegate.deleteVersionsBefore(table, row, column, timestamp);
  }

  @Override
  public java.util.List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp,
      int limit, boolean reversed) {
    return delegate.scan(table, from, to, maxTimestamp, limit, reversed);
  }

  @Override
  public TableCensus census(Table table) {
    return delegate.census(table);
  }

  /** Does not close the delegate, which the test owns. */
  @Override
  public void close() {}
}
