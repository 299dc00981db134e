package org.paxoscp.wal;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * A half-open range of item keys of one entity group, {@code [from, to)}, in key order: the part
 * of the group a scan read (docs/client.md, "Range reads"). A transaction's log entry carries the
 * ranges it scanned beside the keys it read ({@link LogEntry#readRanges}); a write into one of
 * them by a transaction ordered between its read position and its own position conflicts exactly
 * as a write to a read key does (docs/architecture.md section 14).
 *
 * <p><b>Key order</b> is the order of the keys' UTF-8 bytes, which is the store's row order and
 * the order of Unicode code points ({@link #ORDER}); it differs from {@link String#compareTo} for
 * characters outside the Basic Multilingual Plane, so ranges never use the latter.
 *
 * <p>{@code from} is inclusive; the empty string is the group's first key. {@code to} is
 * exclusive; {@code null} is past the group's last key. Bounds are not keys: they may end in a
 * NUL ({@link #through} reads up to and including a key; {@link #after} starts past one) but not
 * start with one. A range holds only application keys: a cross-group decision key (NUL first) is
 * in none. Immutable.
 */
public record KeyRange(String from, String to) {

  /** UTF-8 byte order of keys (= code point order): the store's row order. */
  public static final Comparator<String> ORDER = KeyRange::compare;

  /** The bound's byte limit: a key's, plus a trailing NUL. */
  public static final int MAX_BOUND_BYTES = 1024 + 1;

  /** The whole group. */
  public static final KeyRange ALL = new KeyRange("", null);

  public KeyRange {
    Objects.requireNonNull(from, "from");
    checkBound("from", from);
    if (to != null) {
      checkBound("to", to);
      if (compare(from, to) >= 0) {
        throw new IllegalArgumentException("empty key range: from " + quote(from)
            + " is not below to " + quote(to));
      }
    }
  }

  private static void checkBound(String what, String s) {
    if (!s.isEmpty() && s.charAt(0) == '\0') {
      throw new IllegalArgumentException("range bound " + what + " must not start with NUL");
    }
    if (hasUnpairedSurrogate(s)) {
      throw new IllegalArgumentException("range bound " + what + " holds half of a UTF-16 "
          + "surrogate pair, which has no UTF-8 form");
    }
    int n = s.getBytes(StandardCharsets.UTF_8).length;
    if (n > MAX_BOUND_BYTES) {
      throw new IllegalArgumentException("range bound " + what + " is " + n
          + " bytes; the limit is " + MAX_BOUND_BYTES);
    }
  }

  /**
   * The keys that start with {@code prefix}: {@code [prefix, successor)}, where the successor is
   * the prefix with its last code point raised by one (carrying over the highest code point);
   * the whole group for an empty prefix.
   */
  public static KeyRange prefix(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    int[] cps = prefix.codePoints().toArray();
    int n = cps.length;
    while (n > 0 && cps[n - 1] == Character.MAX_CODE_POINT) {
      n--;
    }
    if (n == 0) {
      return new KeyRange(prefix, null);
    }
    int next = cps[n - 1] + 1;
    if (next == Character.MIN_SURROGATE) {
      next = Character.MAX_SURROGATE + 1;
    }
    cps[n - 1] = next;
    return new KeyRange(prefix, new String(cps, 0, n));
  }

  /** {@code [from, key]}: this range's start up to and including {@code key}. */
  public KeyRange through(String key) {
    return new KeyRange(from, key + '\0');
  }

  /** {@code [key, to)}: from {@code key} (included) to this range's end. */
  public KeyRange startingAt(String key) {
    return new KeyRange(key, to);
  }

  /** {@code (key, to)}: what of this range follows {@code key}; empty if nothing can. */
  public java.util.Optional<KeyRange> after(String key) {
    String next = key + '\0';
    return to != null && compare(next, to) >= 0 ? java.util.Optional.empty()
        : java.util.Optional.of(new KeyRange(next, to));
  }

  /** {@code [from, key)}: what of this range precedes {@code key}; empty if nothing can. */
  public java.util.Optional<KeyRange> before(String key) {
    return compare(from, key) >= 0 ? java.util.Optional.empty()
        : java.util.Optional.of(new KeyRange(from, key));
  }

  /** Does the range hold {@code key}? Never a decision key (NUL first). */
  public boolean contains(String key) {
    return !key.isEmpty() && key.charAt(0) != '\0' && compare(from, key) <= 0
        && (to == null || compare(key, to) < 0);
  }

  /** Do the two ranges share a key? */
  public boolean overlaps(KeyRange o) {
    return (to == null || compare(o.from, to) < 0) && (o.to == null || compare(from, o.to) < 0);
  }

  /** Does any of {@code keys} lie in the range? */
  public boolean containsAny(Collection<String> keys) {
    for (String k : keys) {
      if (contains(k)) {
        return true;
      }
    }
    return false;
  }

  /**
   * The ranges sorted by start, with overlapping or touching ranges merged: the canonical form
   * a log entry keeps (equal sets of keys give equal lists).
   */
  public static List<KeyRange> normalize(Collection<KeyRange> ranges) {
    List<KeyRange> sorted = new ArrayList<>(ranges);
    sorted.sort((a, b) -> compare(a.from, b.from));
    List<KeyRange> out = new ArrayList<>();
    for (KeyRange r : sorted) {
      Objects.requireNonNull(r, "range");
      if (!out.isEmpty()) {
        KeyRange last = out.get(out.size() - 1);
        if (last.to == null || compare(r.from, last.to) <= 0) {
          String to = last.to == null || r.to == null ? null
              : compare(last.to, r.to) >= 0 ? last.to : r.to;
          out.set(out.size() - 1, new KeyRange(last.from, to));
          continue;
        }
      }
      out.add(r);
    }
    return List.copyOf(out);
  }

  /**
   * Does {@code s} hold a surrogate without its other half? Such a string has no UTF-8 form (the
   * encoder writes '?' for it), so two different strings would name one row; keys, groups and
   * range bounds refuse it.
   */
  public static boolean hasUnpairedSurrogate(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < s.length()
          && Character.isLowSurrogate(s.charAt(i + 1))) {
        i++;
      } else if (Character.isSurrogate(c)) {
        return true;
      }
    }
    return false;
  }

  /** Compares by code point, which is the order of the UTF-8 bytes. */
  public static int compare(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      char x = a.charAt(i);
      char y = b.charAt(i);
      if (x != y) {
        // Surrogates (U+D800-DFFF) encode code points above U+FFFF: they sort above every other
        // UTF-16 unit, as their code points sort above every other code point.
        boolean xs = Character.isSurrogate(x);
        boolean ys = Character.isSurrogate(y);
        if (xs != ys) {
          return xs ? 1 : -1;
        }
        return Character.compare(x, y);
      }
    }
    return Integer.compare(a.length(), b.length());
  }

  private static String quote(String s) {
    return "\"" + s.replace("\0", "\\0") + "\"";
  }

  @Override
  public String toString() {
    return "[" + quote(from) + ", " + (to == null ? "end" : quote(to)) + ")";
  }
}
