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

  /** Records a finished transaction and how its commit ended. */
  synchronized void add(String client, Transaction txn, TxnRecord.Status status,
      long commitPosition) {
    boolean committedWrite = status == TxnRecord.Status.COMMITTED && !txn.writes().isEmpty();
    records.add(new TxnRecord(txn.txnId(), client, status, txn.readPosition(), txn.reads(),
        txn.writes(), committedWrite ? commitPosition : -1));
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
