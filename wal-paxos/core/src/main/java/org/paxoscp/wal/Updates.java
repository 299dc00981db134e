package org.paxoscp.wal;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Commutative updates (docs/architecture.md section 14): what a counter and a counting set look
 * like in the store, and how a position's entries fold into the values of the keys they write. Pure
 * functions: the applier, the service's answer to a committed entry, the checker and the
 * simulator all call these, so every DC and every oracle computes the same values.
 *
 * <p><b>Values.</b> A counter is stored as the decimal digits of a signed 64-bit number
 * ({@code "-12"}), canonical (no sign for 0 or positives, no leading zero), so a plain get or an
 * outside tool reads it as text and a put of {@code "5"} starts a counter at 5. A counting set is
 * stored as {@code 0xFF 'S' 1 count:varint (element:str count:i64)*}, elements in
 * {@link String#compareTo} order with counts other than 0 (0xFF never occurs in UTF-8, so no
 * text is taken for a set). An absent key (never written, or deleted) is the counter 0 and the
 * empty set.
 *
 * <p><b>Refusals.</b> An update that cannot apply to the value it meets — an add that would
 * leave the 64-bit range, an add to a value that is not a counter, a set update to one that is
 * not a set, a set that would pass {@link #MAX_SET_BYTES} — makes its whole entry <em>refused</em>
 * where it is folded: none of the entry's writes take effect, as if it had aborted. The refusal
 * is a function of the log prefix, so every DC refuses the same entries, and the client that
 * committed the entry learns it as a typed error.
 */
public final class Updates {
  /** The largest encoded counting set; an update that would make a larger one is refused. */
  public static final int MAX_SET_BYTES = 16 * 1024;
  /** The longest element of a counting set, in UTF-8 bytes. */
  public static final int MAX_ELEMENT_BYTES = 1024;
  private static final int SET_MAGIC_0 = 0xFF;
  private static final int SET_MAGIC_1 = 'S';
  private static final int SET_FORMAT = 1;

  /** Why an update could not apply. */
  public enum Refusal {
    /**
     * The add would take the counter past {@link Long#MAX_VALUE} or below {@link Long#MIN_VALUE}.
     */
    OVERFLOW,
    /** An add met a value that is not a counter. */
    NOT_A_COUNTER,
    /** A set update met a value that is not a counting set. */
    NOT_A_SET,
    /** The set would encode to more than {@link #MAX_SET_BYTES}. */
    SET_TOO_LARGE
  }

  private Updates() {}

  /** Throws {@link IllegalArgumentException} for an element that is null, empty or too long. */
  public static void validateElement(String element) {
    if (element == null || element.isEmpty()) {
      throw new IllegalArgumentException("a set element must not be null or empty");
    }
    if (element.getBytes(StandardCharsets.UTF_8).length > MAX_ELEMENT_BYTES) {
      throw new IllegalArgumentException("a set element may be at most " + MAX_ELEMENT_BYTES
          + " bytes of UTF-8");
    }
    if (KeyRange.hasUnpairedSurrogate(element)) {
      throw new IllegalArgumentException("a set element must not hold half a surrogate pair");
    }
  }

  // ---- values ---------------------------------------------------------------------------------

  /** The stored form of the counter {@code n}. */
  public static byte[] encodeCounter(long n) {
    return Long.toString(n).getBytes(StandardCharsets.US_ASCII);
  }

  /**
   * The counter a stored value holds: 0 for none, the number for a canonical counter, empty for
   * anything else.
   */
  public static Optional<Long> decodeCounter(Optional<byte[]> value) {
    if (value.isEmpty()) {
      return Optional.of(0L);
    }
    byte[] v = value.get();
    if (v.length == 0 || v.length > 20) {
      return Optional.empty();
    }
    int i = v[0] == '-' ? 1 : 0;
    if (i == v.length || (v[i] == '0' && v.length > i + 1) || (i == 1 && v[1] == '0')) {
      return Optional.empty(); // "-", a leading zero, or "-0"
    }
    for (int j = i; j < v.length; j++) {
      if (v[j] < '0' || v[j] > '9') {
        return Optional.empty();
      }
    }
    try {
      return Optional.of(Long.parseLong(new String(v, StandardCharsets.US_ASCII)));
    } catch (NumberFormatException e) {
      return Optional.empty(); // out of range
    }
  }

  /** The stored form of a counting set: its elements with their counts (zeros dropped). */
  public static byte[] encodeSet(Map<String, Long> counts) {
    TreeMap<String, Long> m = new TreeMap<>();
    counts.forEach((k, c) -> {
      if (c != 0) {
        m.put(k, c);
      }
    });
    BinaryWriter w = new BinaryWriter(16 + 16 * m.size()).writeByte(SET_MAGIC_0)
        .writeByte(SET_MAGIC_1).writeByte(SET_FORMAT).writeVarint(m.size());
    for (var e : m.entrySet()) {
      w.writeString(e.getKey()).writeLong(e.getValue());
    }
    return w.toByteArray();
  }

  /**
   * The counts a stored value holds as a counting set: empty map for none, the counts for a
   * canonical set encoding, empty for anything else.
   */
  public static Optional<SortedMap<String, Long>> decodeSet(Optional<byte[]> value) {
    if (value.isEmpty()) {
      return Optional.of(Collections.emptySortedMap());
    }
    byte[] v = value.get();
    if (v.length < 4 || (v[0] & 0xFF) != SET_MAGIC_0 || v[1] != SET_MAGIC_1
        || v[2] != SET_FORMAT) {
      return Optional.empty();
    }
    try {
      BinaryReader r = new BinaryReader(v, 3, v.length - 3);
      int n = r.readCount("set size", 9);
      TreeMap<String, Long> m = new TreeMap<>();
      String prev = null;
      for (int i = 0; i < n; i++) {
        String k = r.readString("set element");
        long c = r.readLong("set count");
        if ((prev != null && prev.compareTo(k) >= 0) || c == 0) {
          return Optional.empty();
        }
        m.put(k, c);
        prev = k;
      }
      r.expectEnd("set");
      return Optional.of(Collections.unmodifiableSortedMap(m));
    } catch (CorruptDataException e) {
      return Optional.empty();
    }
  }

  /** The elements of a counting set that are present: those counted above 0, in order. */
  public static java.util.SortedSet<String> present(Map<String, Long> counts) {
    java.util.TreeSet<String> s = new java.util.TreeSet<>();
    counts.forEach((k, c) -> {
      if (c > 0) {
        s.add(k);
      }
    });
    return s;
  }

  // ---- applying ---------------------------------------------------------------------------

  /** The value after a mutation, or why it could not apply. */
  public record Result(Optional<byte[]> value, Refusal refusal) {
    static Result of(Optional<byte[]> value) {
      return new Result(value, null);
    }

    static Result refused(Refusal r) {
      return new Result(Optional.empty(), r);
    }

    public boolean refused() {
      return refusal != null;
    }
  }

  /**
   * The value of a key after {@code m} applies to {@code current} (empty for no value): a put's
   * value, nothing for a delete, or the update folded in.
   */
  public static Result apply(Optional<byte[]> current, Mutation m) {
    switch (m.kind()) {
      case PUT:
        return Result.of(m.value());
      case DELETE:
        return Result.of(Optional.empty());
      case ADD: {
        Optional<Long> n = decodeCounter(current);
        if (n.isEmpty()) {
          return Result.refused(Refusal.NOT_A_COUNTER);
        }
        try {
          return Result.of(Optional.of(encodeCounter(Math.addExact(n.get(), m.delta()))));
        } catch (ArithmeticException e) {
          return Result.refused(Refusal.OVERFLOW);
        }
      }
      case SET_UPDATE: {
        Optional<SortedMap<String, Long>> s = decodeSet(current);
        if (s.isEmpty()) {
          return Result.refused(Refusal.NOT_A_SET);
        }
        TreeMap<String, Long> counts = new TreeMap<>(s.get());
        for (var e : m.elements().entrySet()) {
          long c;
          try {
            c = Math.addExact(counts.getOrDefault(e.getKey(), 0L), e.getValue());
          } catch (ArithmeticException ex) {
            return Result.refused(Refusal.OVERFLOW);
          }
          if (c == 0) {
            counts.remove(e.getKey());
          } else {
            counts.put(e.getKey(), c);
          }
        }
        byte[] out = encodeSet(counts);
        return out.length > MAX_SET_BYTES ? Result.refused(Refusal.SET_TOO_LARGE)
            : Result.of(Optional.of(out));
      }
      default:
        throw new AssertionError(m.kind());
    }
  }

  /**
   * Two mutations of one key by one transaction, {@code earlier} then {@code later}, as one:
   * what a transaction buffers. A put or delete followed by an update becomes a put of the
   * update applied to it; two updates of one kind add up; a put or delete replaces anything.
   *
   * @throws IllegalArgumentException when they cannot combine: an update that cannot apply to
   *     the earlier put (see {@link Refusal}), an add and a set update of one key, or deltas whose
   *     sum leaves the 64-bit range
   */
  public static Mutation combine(Mutation earlier, Mutation later) {
    if (!later.isUpdate()) {
      return later;
    }
    if (!earlier.isUpdate()) {
      Result r = apply(earlier.value(), later);
      if (r.refused()) {
        throw new IllegalArgumentException(describe(r.refusal()) + " (applied to this "
            + "transaction's own " + (earlier.isDelete() ? "delete" : "put") + ")");
      }
      return r.value().map(Mutation::put).orElse(Mutation.delete());
    }
    if (earlier.kind() != later.kind()) {
      throw new IllegalArgumentException("a key cannot be both a counter and a counting set in "
          + "one transaction");
    }
    try {
      if (later.kind() == Mutation.Kind.ADD) {
        return Mutation.add(Math.addExact(earlier.delta(), later.delta()));
      }
      TreeMap<String, Long> m = new TreeMap<>(earlier.elements());
      for (var e : later.elements().entrySet()) {
        m.put(e.getKey(), Math.addExact(m.getOrDefault(e.getKey(), 0L), e.getValue()));
      }
      return Mutation.setUpdate(m);
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("the deltas of one key add up past the 64-bit range");
    }
  }

  /** A sentence for a refusal. */
  public static String describe(Refusal r) {
    return switch (r) {
      case OVERFLOW -> "the add would take a count past the 64-bit range";
      case NOT_A_COUNTER -> "an add met a value that is not a counter";
      case NOT_A_SET -> "a set update met a value that is not a counting set";
      case SET_TOO_LARGE -> "the counting set would pass " + MAX_SET_BYTES + " bytes";
    };
  }

  /** One entry's writes in a position, in the order the position applies them. */
  public record Effect(String txnId, Map<String, Mutation> writes) {}

  /**
   * What a position does to the keys it writes.
   *
   * @param values the value of each key written by an entry not refused, after the position
   *     (empty for a tombstone), in the order first written
   * @param refused for each refused entry (by transaction id), the key and the reason
   * @param readBase whether a value before the position was asked for (a position of puts and
   *     deletes only needs none)
   */
  public record Folded(Map<String, Optional<byte[]>> values, Map<String, String> refused,
      boolean readBase) {}

  /**
   * Folds {@code effects} (a position's, in list order) into the values before the position,
   * which {@code before} gives for a key and is asked only for keys an update meets first. An
   * entry is applied whole or refused whole (see the class comment).
   */
  public static Folded fold(List<Effect> effects,
      Function<String, Optional<byte[]>> before) {
    Map<String, Optional<byte[]>> state = new HashMap<>();
    Map<String, Optional<byte[]>> written = new LinkedHashMap<>();
    Map<String, String> refused = new LinkedHashMap<>();
    boolean readBase = false;
    for (Effect e : effects) {
      Map<String, Optional<byte[]>> mine = new LinkedHashMap<>();
      String refusal = null;
      for (var w : e.writes().entrySet()) {
        Mutation m = w.getValue();
        Optional<byte[]> cur = Optional.empty();
        if (m.isUpdate()) {
          cur = state.get(w.getKey());
          if (cur == null) {
            cur = before.apply(w.getKey());
            readBase = true;
            state.put(w.getKey(), cur);
          }
        }
        Result r = apply(cur, m);
        if (r.refused()) {
          refusal = w.getKey() + ": " + describe(r.refusal());
          break;
        }
        mine.put(w.getKey(), r.value());
      }
      if (refusal != null) {
        refused.put(e.txnId(), refusal);
        continue;
      }
      state.putAll(mine);
      written.putAll(mine);
    }
    return new Folded(written, refused, readBase);
  }
}
