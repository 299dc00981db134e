package org.paxoscp.client;

/**
 * The transaction's entry is in the log, but one of its commutative updates could not apply
 * where the entry landed (docs/client.md, "Counters and counting sets"): an add would take a
 * counter past the 64-bit range, or met a value that is not a counter, or a set update met a
 * value that is not a counting set or would make it too large. Every DC refuses the entry alike
 * (the refusal is a function of the log), so the transaction certainly has no effect: none of its
 * writes took place. Not retried by {@link TxnClient#runInTransaction}: re-running it meets the
 * same values unless something else changes them first.
 */
public final class UpdateRefusedException extends TransactionException {
  private static final long serialVersionUID = 1L;

  private final String txnId;
  private final String detail;

  UpdateRefusedException(String group, long position, String txnId, String detail, String dc) {
    super("transaction " + txnId + " has no effect: " + detail, group, position, dc, null);
    this.txnId = txnId;
    this.detail = detail;
  }

  /** The transaction whose entry was refused. */
  public String txnId() {
    return txnId;
  }

  /** The key and the reason, as the applier gave them. */
  public String detail() {
    return detail;
  }
}
