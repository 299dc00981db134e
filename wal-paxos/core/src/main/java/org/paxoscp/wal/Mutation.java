package org.paxoscp.wal;

import java.util.Arrays;
import java.util.Optional;

/**
 * One buffered write of a transaction: a new value for a key, or a delete (a tombstone).
 *
 * <p>Deletes are stored as tombstone versions, not as store deletes, so that a read at an older
 * read position still sees the value that was live then (ARCHITECTURE section 3).
 */
public final class Mutation {
  private static final Mutation DELETE = new Mutation(null);

  private final byte[] value;

  private Mutation(byte[] value) {
    this.value = value;
  }

  /** A write of {@code value} (copied). */
  public static Mutation put(byte[] value) {
    if (value == null) {
      throw new IllegalArgumentException("value must not be null; use Mutation.delete()");
    }
    return new Mutation(value.clone());
  }

  /** A delete of the key. */
  public static Mutation delete() {
    return DELETE;
  }

  public boolean isDelete() {
    return value == null;
  }

  /** The written value, or empty for a delete. The array is a copy. */
  public Optional<byte[]> value() {
    return value == null ? Optional.empty() : Optional.of(value.clone());
  }

  /** Package-private zero-copy access for the codec. */
  byte[] rawValue() {
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Mutation m && Arrays.equals(value, m.value);
  }

  @Override
  public int hashCode() {
    return value == null ? 0 : Arrays.hashCode(value);
  }

  @Override
  public String toString() {
    return value == null ? "DELETE" : "PUT(" + value.length + "B)";
  }
}
