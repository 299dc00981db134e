package org.paxoscp.sim;

import java.util.Map;
import java.util.Optional;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore;

/**
 * The planted bug of {@link SimGc#plantedReadBelowWatermark}: a view of a DC's store in which the
 * GC watermark cell is never there, so reads through it are served below the watermark from
 * whatever versions collection left. Exists only so that a test can prove the checker catches it.
 */
final class WatermarkBlindStore implements KvStore {
  private final KvStore delegate;

  WatermarkBlindStore(KvStore delegate) {
    this.delegate = delegate;
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    if (table == Table.META && WalLayout.GC_WATERMARK.equals(column)) {
      return Optional.empty();
    }
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
  public TableCensus census(Table table) {
    return delegate.census(table);
  }

  @Override
  public void close() {}
}
