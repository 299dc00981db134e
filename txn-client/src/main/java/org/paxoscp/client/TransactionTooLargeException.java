package org.paxoscp.client;

/**
 * The transaction's log entry would not fit in one datagram (the cluster's
 * {@code paxoscp.max.datagram.bytes} less a margin for the message envelope). Raised by the
 * {@code put} that would make it too large (which is then not buffered), or by {@code commit}
 * when its reads made it too large; nothing is sent. Also raised by a {@code scan} that would
 * make the entry carry more than {@code LogEntry.MAX_READ_RANGES} key ranges (the scan is then
 * not recorded; {@link #entryBytes} and {@link #limitBytes} are -1).
 */
public final class TransactionTooLargeException extends InvalidArgumentException {
  private static final long serialVersionUID = 1L;

  private final int entryBytes;
  private final int limitBytes;

  TransactionTooLargeException(String group, int entryBytes, int limitBytes) {
    super(group, "transaction would encode to " + entryBytes + " bytes; at most " + limitBytes
        + " fit in a datagram");
    this.entryBytes = entryBytes;
    this.limitBytes = limitBytes;
  }

  /** Too many separate key ranges: {@code detail} says how many. */
  TransactionTooLargeException(String group, String detail) {
    super(group, "transaction: " + detail);
    this.entryBytes = -1;
    this.limitBytes = -1;
  }

  /** The encoded size the entry would have. */
  public int entryBytes() {
    return entryBytes;
  }

  /** The largest encoded entry the transport can carry. */
  public int limitBytes() {
    return limitBytes;
  }
}
