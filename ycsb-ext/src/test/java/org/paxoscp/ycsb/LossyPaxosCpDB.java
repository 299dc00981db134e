package org.paxoscp.ycsb;

import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import site.ycsb.ByteIterator;
import site.ycsb.Status;

/**
 * A planted bug for the closed economy's validation: the binding silently drops the second write
 * of transactions (a transfer's credit, in one group or across two) until one such transaction
 * has committed (several threads may each drop one before that), so committed transfers lose an
 * update and the total shrinks. The validation must catch it.
 */
public class LossyPaxosCpDB extends PaxosCpDB {
  private static final AtomicBoolean LOST = new AtomicBoolean();
  private int writesInTxn;
  private boolean droppedInTxn;

  @Override
  public boolean begin(String group) {
    writesInTxn = 0;
    droppedInTxn = false;
    return super.begin(group);
  }

  @Override
  public void beginMulti() {
    writesInTxn = 0;
    droppedInTxn = false;
    super.beginMulti();
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    if (inTransaction() && !LOST.get() && writesInTxn++ == 1) {
      droppedInTxn = true;
      return Status.OK;
    }
    return super.update(table, key, values);
  }

  @Override
  public CommitInfo commit() {
    CommitInfo info = super.commit();
    if (droppedInTxn && info.outcome() == Outcome.COMMITTED) {
      LOST.set(true);
    }
    return info;
  }
}
