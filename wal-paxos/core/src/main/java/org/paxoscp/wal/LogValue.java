package org.paxoscp.wal;

import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The value decided for one log position: an ordered list of transaction entries (more than one
 * when Paxos-CP combined non-conflicting transactions), or a no-op (empty list) written when a
 * position had to be filled without any transaction.
 *
 * <p>Immutable and thread-safe. Two values are equal when their entries are equal in order; vote
 * counting in the proposer relies on this.
 */
public record LogValue(List<LogEntry> entries) {

  /** The no-op value. */
  public static final LogValue NOOP = new LogValue(List.of());

  public LogValue {
    entries = List.copyOf(entries);
    Set<String> ids = new HashSet<>();
    for (LogEntry e : entries) {
      if (!ids.add(e.txnId())) {
        throw new IllegalArgumentException("duplicate txn id in one log value: " + e.txnId());
      }
    }
  }

  public static LogValue of(LogEntry... entries) {
    return new LogValue(List.of(entries));
  }

  public boolean isNoop() {
    return entries.isEmpty();
  }

  public boolean contains(String txnId) {
    return find(txnId).isPresent();
  }

  public Optional<LogEntry> find(String txnId) {
    Objects.requireNonNull(txnId);
    for (LogEntry e : entries) {
      if (e.txnId().equals(txnId)) {
        return Optional.of(e);
      }
    }
    return Optional.empty();
  }


  @Override
  public String toString() {
    return isNoop() ? "NOOP" : entries.toString();
  }
}
