package org.paxoscp.sim;

import java.util.Optional;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;


/**
 * The planted bug of {@link SimGc#plantedReadBelowWatermark}: a view of a DC's store in which the
 * GC watermark cell is never there, so reads through it are served below the watermark from
 * whatever versions collection left. Exists only so that a test can prove the checker catches it.
 */
final class WatermarkBlindStore extends ForwardingKvStore {

  WatermarkBlindStore(KvStore delegate) {
    super(delegate);
  }

  @Override
  public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
    if (table == Table.META && WalLayout.GC_WATERMARK.equals(column)) {
      return Optional.empty();
    }
    return delegate.read(table, row, column, maxTimestamp);
  }
}
