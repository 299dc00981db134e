package org.paxoscp.client;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import org.paxoscp.wal.KeyRange;

/**
 * What a range read returned ({@link Transaction#scan}): the entries of the range at the
 * transaction's read position with its own writes merged in, in key order (or reversed), at most
 * the limit asked for; and, when the limit stopped it, the part of the range not read yet, to
 * pass to the next {@link Transaction#scan(KeyRange, int, boolean)} of the same transaction.
 *
 * <p>Immutable; the value arrays are copies made for the caller.
 *
 * @param entries the entries, in scan order
 * @param rest the unread rest of the range when the limit stopped the scan; empty when the scan
 *     read the range to its end
 */
public record ScanResult(List<Entry> entries, Optional<KeyRange> rest) {

  /** One key and its value. */
  public record Entry(String key, byte[] value) {
    public Entry {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(value, "value");
    }

    /** The value decoded as UTF-8. */
    public String valueString() {
      return new String(value, StandardCharsets.UTF_8);
    }
  }

  public ScanResult {
    entries = List.copyOf(entries);
    Objects.requireNonNull(rest, "rest");
  }

  /** Did the limit stop the scan before the range's end? */
  public boolean hasMore() {
    return rest.isPresent();
  }

  /** The last key returned, if any: where a next page starts after (or before, reversed). */
  public Optional<String> lastKey() {
    return entries.isEmpty() ? Optional.empty()
        : Optional.of(entries.get(entries.size() - 1).key());
  }

  public int size() {
    return entries.size();
  }
}
