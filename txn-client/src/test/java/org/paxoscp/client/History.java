package org.paxoscp.client;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.wal.LogValue;

/** What clients observed, as {@link TxnRecord}s for the {@link SerializabilityChecker}. */
final class History {
  private final List<TxnRecord> records = new ArrayList<>();

  /**
   * Records a finished transaction and how its commit ended: {@code commitPosition} is kept for
   * a read-write transaction that committed, or that aborted because its entry was refused there
   * ({@link UpdateRefusedException}).
   */
  synchronized void add(String client, Transaction txn, TxnRecord.Status status,
      long commitPosition) {
    boolean toldPosition = !txn.writes().isEmpty() && (status == TxnRecord.Status.COMMITTED
        || status == TxnRecord.Status.ABORTED);
    records.add(new TxnRecord(txn.txnId(), client, status, txn.readPosition(), txn.reads(),
        txn.writes(), toldPosition ? commitPosition : -1));
  }

  /** Commits {@code txn} and records the outcome; returns the exception, if any. */
  RuntimeException commitAndRecord(String client, Transaction txn) {
    try {
      CommitResult r = txn.commit();
      add(client, txn, TxnRecord.Status.COMMITTED, r.position());
      return null;
    } catch (TransactionAbortedException | UnavailableException e) {
      add(client, txn, TxnRecord.Status.ABORTED, -1);
      return e;
    } catch (UpdateRefusedException e) {
      // In the log at its position, with no effect.
      add(client, txn, TxnRecord.Status.ABORTED, e.position().orElse(-1));
      return e;
    } catch (OutcomeUnknownException e) {
      add(client, txn, TxnRecord.Status.UNKNOWN, -1);
      return e;
    }
  }

  synchronized List<TxnRecord> records() {
    return List.copyOf(records);
  }

  CheckResult check(Map<String, SortedMap<Long, LogValue>> logs) {
    return SerializabilityChecker.check(logs, records());
  }
}
