package org.paxoscp.sim;

import java.util.List;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;

/**
 * The planted bug of {@link Simulator.RangePlant#SCAN_AT_LATEST}: a view of a DC's store whose
 * scans of the data table ignore the version bound they are given (the read position) and
 * return each row's newest version, as a store scan without a time range would. Exists only so that a test can
 * prove the checker catches it.
 */
final class ScanAtLatestStore extends ForwardingKvStore {

  ScanAtLatestStore(KvStore delegate) {
    super(delegate);
  }

  @Override
  public List<ScannedRow> scan(Table table, byte[] from, byte[] to, long maxTimestamp, int limit,
      boolean reversed) {
    return delegate.scan(table, from, to, table == Table.DATA ? Long.MAX_VALUE : maxTimestamp,
        limit, reversed);
  }
}
