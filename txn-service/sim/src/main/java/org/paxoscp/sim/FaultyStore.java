package org.paxoscp.sim;

import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;

/**
 * A DC's store as its services see it under {@link SimConfig.Faults#storeFaults}: each operation
 * fails with that probability, half the time before it does anything (the store unavailable)
 * and, for a write, half the time after it was done (an ambiguous write: applied, yet the caller
 * sees an error, as when an HBase RPC times out after the region server wrote). Reads, and
 * scans of the data table, fail only before; several rows written together fail row by row.
 * Both throw {@link StoreUnavailableException}, what the HBase store throws.
 */
final class FaultyStore extends ForwardingKvStore {
  private final SplittableRandom random;
  private double probability;
  private long unavailable;
  private long ambiguous;

  FaultyStore(KvStore delegate, SplittableRandom random, double probability) {
    super(delegate);
    this.random = random;
    this.probability = probability;
  }

  /** No more faults (the recovery phase at the end of a run). */
  void heal() {
    probability = 0;
  }

  long unavailable() {
    return unavailable;
  }

  long ambiguous() {
    return ambiguous;
  }

  /** Before an operation: fails it now (true) or lets it run. */
  private void before(String op) {
    if (random.nextDouble() < probability / 2) {
      unavailable++;
      throw new StoreUnavailableException("simulated store fault: " + op + " not done");
    }
  }

  /** After a write that was done: reports it failed now and then. */
  private void after(String op) {
    if (random.nextDouble() < probability / 2) {
      ambiguous++;
      throw new StoreUnavailableException("simulated store fault: " + op
          + " timed out (it may have been done)");
    }
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    before("read");
    return delegate.read(table, row, column, maxTimestamp);
  }

  @Override
  public Map<String, Cell> readRow(Table table, byte[] row) {
    before("readRow");
    return delegate.readRow(table, row);
  }

  @Override
  public java.util.List<Map<String, Cell>> readRows(Table table, java.util.List<byte[]> rows) {
    before("readRows");
    return delegate.readRows(table, rows);
  }

  @Override
  public java.util.List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp,
      int limit, boolean reversed) {
    if (table == Table.DATA) {
      // Data scans (range reads, a rebuild's copy) fail as reads do; the services' scans of
      // their metadata at start (cluster versions, the store's marker) stay as they were.
      before("scan");
    }
    return delegate.scan(table, from, to, maxTimestamp, limit, reversed);
  }

  @Override
  public void write(Table table, byte[] row, long timestamp, Map<String, byte[]> cells) {
    before("write");
    delegate.write(table, row, timestamp, cells);
    after("write");
  }

  @Override
  public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
      long timestamp, Map<String, byte[]> cells) {
    before("checkAndWrite");
    boolean done = delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
    after("checkAndWrite");
    return done;
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    before("deleteRow");
    delegate.deleteRow(table, row);
    after("deleteRow");
  }

  @Override
  public void deleteVersionsBefore(Table table, byte[] row, String column, long timestamp) {
    before("deleteVersionsBefore");
    delegate.deleteVersionsBefore(table, row, column, timestamp);
    after("deleteVersionsBefore");
  }
}
