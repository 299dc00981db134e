package org.paxoscp.wal;

import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * One buffered write of a transaction: a new value for a key, a delete (a tombstone), or a
 * commutative update ({@link Updates}): an add to a 64-bit counter, or changes to the counts of a
 * counting set's elements.
 *
 * <p>Deletes are stored as tombstone versions, not as store deletes, so that a read at an older
 * read position still sees the value that was live then (docs/architecture.md section 3). An update
 * carries a delta, not a value: the applier folds it into the value the key holds at its place
 * in the log (docs/architecture.md section 14), and the transaction that wrote it did not read the
 * key.
 */
public final class Mutation {
  /** What a mutation does. */
  public enum Kind {
    /** Writes a value. */
    PUT,
    /** Writes a tombstone. */
    DELETE,
    /** Adds a signed delta to a counter ({@link Updates#encodeCounter}). */
    ADD,
    /** Adds signed deltas to the counts of a counting set's elements ({@link Updates}). */
    SET_UPDATE
  }

  private static final Mutation DELETE = new Mutation(Kind.DELETE, null, 0, null);

  private final Kind kind;
  private final byte[] value;
  private final long delta;
  private final SortedMap<String, Long> elements;

  private Mutation(Kind kind, byte[] value, long delta, SortedMap<String, Long> elements) {
    this.kind = kind;
    this.value = value;
    this.delta = delta;
    this.elements = elements;
  }

  /** A write of {@code value} (copied). */
  public static Mutation put(byte[] value) {
    if (value == null) {
      throw new IllegalArgumentException("value must not be null; use Mutation.delete()");
    }
    return new Mutation(Kind.PUT, value.clone(), 0, null);
  }

  /** A delete of the key. */
  public static Mutation delete() {
    return DELETE;
  }

  /** An add of {@code delta} to the key's counter (an absent key counts as 0). */
  public static Mutation add(long delta) {
    return new Mutation(Kind.ADD, null, delta, null);
  }

  /**
   * Changes to the counts of a counting set's elements (an absent key is the empty set): each
   * element's delta is added to its count (Walter's csets: +1 for an add, -1 for a remove; an
   * element is present while its count is above 0). Zero deltas are dropped.
   *
   * @throws IllegalArgumentException for an invalid element ({@link Updates#validateElement})
   */
  public static Mutation setUpdate(Map<String, Long> deltas) {
    TreeMap<String, Long> m = new TreeMap<>();
    for (var e : deltas.entrySet()) {
      Updates.validateElement(e.getKey());
      if (e.getValue() != 0) {
        m.put(e.getKey(), e.getValue());
      }
    }
    return new Mutation(Kind.SET_UPDATE, null, 0, Collections.unmodifiableSortedMap(m));
  }

  public Kind kind() {
    return kind;
  }

  public boolean isDelete() {
    return kind == Kind.DELETE;
  }

  /** True for an {@link Kind#ADD} or a {@link Kind#SET_UPDATE}: a delta, not a value. */
  public boolean isUpdate() {
    return kind == Kind.ADD || kind == Kind.SET_UPDATE;
  }

  /**
   * The written value; empty for a delete and for an update (which carries a delta, see
   * {@link #delta} and {@link #elements}). The array is a copy.
   */
  public Optional<byte[]> value() {
    return value == null ? Optional.empty() : Optional.of(value.clone());
  }

  /** An {@link Kind#ADD}'s delta (0 for other kinds). */
  public long delta() {
    return delta;
  }

  /** A {@link Kind#SET_UPDATE}'s deltas by element, none zero (empty for other kinds). */
  public SortedMap<String, Long> elements() {
    return elements == null ? Collections.emptySortedMap() : elements;
  }

  /** Package-private zero-copy access for the codec. */
  byte[] rawValue() {
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Mutation m && kind == m.kind && Arrays.equals(value, m.value)
        && delta == m.delta && elements().equals(m.elements());
  }

  @Override
  public int hashCode() {
    return switch (kind) {
      case PUT -> Arrays.hashCode(value);
      case DELETE -> 0;
      case ADD -> Long.hashCode(delta) * 31 + 1;
      case SET_UPDATE -> elements.hashCode() * 31 + 2;
    };
  }

  @Override
  public String toString() {
    return switch (kind) {
      case PUT -> "PUT(" + value.length + "B)";
      case DELETE -> "DELETE";
      case ADD -> "ADD(" + (delta >= 0 ? "+" : "") + delta + ")";
      case SET_UPDATE -> "SET" + elements;
    };
  }
}
