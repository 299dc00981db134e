package org.paxoscp.config;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * One configuration key: its name, type, default, validation and one-line description, and the
 * one parser every component uses. A key's value is read from {@code key=value} properties with
 * {@link #from}; a missing or invalid value fails with an {@link IllegalArgumentException} whose
 * message starts with the key's name. docs/configuration.md is generated from
 * these keys ({@code paxoscp config-reference}) and checked against them by a test.
 *
 * <p>A name may hold a placeholder such as {@code <DC>}: such a key documents a family of keys
 * (one per DC) whose names the owning component matches itself.
 *
 * @param <T> the value's type
 */
public final class ConfigKey<T> {
  private final String name;
  private final String type;
  private final T defaultValue;
  private final String defaultText;
  private final String doc;
  private final Function<String, T> parser;

  private ConfigKey(String name, String type, T defaultValue, String defaultText, String doc,
      Function<String, T> parser) {
    this.name = Objects.requireNonNull(name);
    this.type = Objects.requireNonNull(type);
    this.defaultValue = defaultValue;
    this.defaultText = Objects.requireNonNull(defaultText);
    this.doc = Objects.requireNonNull(doc);
    this.parser = Objects.requireNonNull(parser);
  }

  // ---- factories ----------------------------------------------------------------------------

  /** An integer in {@code [min, max]}. */
  public static ConfigKey<Integer> integer(String name, int dflt, int min, int max, String doc) {
    return new ConfigKey<>(name, range("integer", min, max), dflt, Integer.toString(dflt), doc,
        v -> {
          long n = parseLong(name, v, "an integer");
          if (n < min || n > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max
                + "], was " + n);
          }
          return (int) n;
        });
  }

  /** A duration in whole milliseconds in {@code [minMs, maxMs]}. */
  public static ConfigKey<Duration> millis(String name, long dfltMs, long minMs, long maxMs,
      String doc) {
    return new ConfigKey<>(name, range("ms", minMs, maxMs), Duration.ofMillis(dfltMs),
        Long.toString(dfltMs), doc, v -> {
          long n = parseLong(name, v, "a whole number of milliseconds");
          if (n < minMs || n > maxMs) {
            throw new IllegalArgumentException(name + " must be in [" + minMs + ", " + maxMs
                + "] ms, was " + n);
          }
          return Duration.ofMillis(n);
        });
  }

  /** A duration in milliseconds, fractions allowed (micro-second precision), at least 0. */
  public static ConfigKey<Duration> fractionalMillis(String name, double dfltMs, String doc) {
    return new ConfigKey<>(name, "ms >= 0", Duration.ofNanos(Math.round(dfltMs * 1e6)),
        trim(dfltMs), doc, v -> Duration.ofNanos(Math.round(nonNegative(name, v) * 1e6)));
  }

  /** A number in {@code [min, max]}. */
  public static ConfigKey<Double> decimal(String name, double dflt, double min, double max,
      String doc) {
    return new ConfigKey<>(name, "number in [" + trim(min) + ", " + trim(max) + "]", dflt,
        trim(dflt), doc, v -> {
          double d;
          try {
            d = Double.parseDouble(v);
          } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + ": '" + v + "' is not a number");
          }
          if (!(d >= min && d <= max)) {
            throw new IllegalArgumentException(name + " must be in [" + trim(min) + ", "
                + trim(max) + "], was " + v);
          }
          return d;
        });
  }

  public static ConfigKey<Boolean> bool(String name, boolean dflt, String doc) {
    return new ConfigKey<>(name, "true or false", dflt, Boolean.toString(dflt), doc, v -> {
      if (!v.equals("true") && !v.equals("false")) {
        throw new IllegalArgumentException(name + ": '" + v + "' is not true or false");
      }
      return Boolean.parseBoolean(v);
    });
  }

  /** A string; {@code dflt} null makes the key required (or optional, see {@link #optional}). */
  public static ConfigKey<String> string(String name, String dflt, String doc) {
    return new ConfigKey<>(name, "string", dflt, dflt == null ? "(required)" : show(dflt), doc,
        v -> v);
  }

  /** A string whose absence is meaningful: {@link #optional} reads it. */
  public static ConfigKey<String> optionalString(String name, String doc) {
    return new ConfigKey<>(name, "string", null, "(none)", doc, v -> v);
  }

  /** One of an enum's constants, written in lower case. */
  public static <E extends Enum<E>> ConfigKey<E> choice(String name, Class<E> type, E dflt,
      String doc) {
    List<String> names = new ArrayList<>();
    for (E e : type.getEnumConstants()) {
      names.add(e.name().toLowerCase(Locale.ROOT));
    }
    return new ConfigKey<>(name, String.join(" or ", names), dflt,
        dflt == null ? "(required)" : dflt.name().toLowerCase(Locale.ROOT), doc, v -> {
          for (E e : type.getEnumConstants()) {
            if (e.name().equalsIgnoreCase(v)) {
              return e;
            }
          }
          throw new IllegalArgumentException(name + ": expected " + String.join(" or ", names)
              + ", was '" + v + "'");
        });
  }

  /** A key with any parser (lists, addresses, hex); {@code defaultText} shows the default. */
  public static <T> ConfigKey<T> custom(String name, String type, T dflt, String defaultText,
      String doc, Function<String, T> parser) {
    return new ConfigKey<>(name, type, dflt, defaultText, doc, parser);
  }

  /** The same key with its default described differently (a default computed from others). */
  public ConfigKey<T> withDefaultText(String text) {
    return new ConfigKey<>(name, type, defaultValue, text, doc, parser);
  }

  // ---- reading ------------------------------------------------------------------------------

  /**
   * The key's value in {@code props}, or its default when absent or blank.
   *
   * @throws IllegalArgumentException naming the key when the value is invalid, or when the key
   *     is required and absent
   */
  public T from(Map<String, String> props) {
    Optional<T> v = optional(props);
    if (v.isPresent()) {
      return v.get();
    }
    if (defaultValue == null) {
      throw new IllegalArgumentException("missing required key " + name);
    }
    return defaultValue;
  }

  /** The key's value in {@code props} if set (validated), else empty; the default is not used. */
  public Optional<T> optional(Map<String, String> props) {
    String raw = props.get(name);
    if (raw == null || raw.isBlank()) {
      return Optional.empty();
    }
    return Optional.of(parse(raw));
  }

  /** Parses and validates one value of this key. */
  public T parse(String raw) {
    return parser.apply(raw.trim());
  }

  public String name() {
    return name;
  }

  /** The type and range as the reference shows it. */
  public String type() {
    return type;
  }

  /** The default, or null for a required key or one without a default. */
  public T defaultValue() {
    return defaultValue;
  }

  /** The default as the reference shows it. */
  public String defaultText() {
    return defaultText;
  }

  public String doc() {
    return doc;
  }

  /** True for a key family whose name holds a {@code <placeholder>}. */
  public boolean isPattern() {
    return name.contains("<");
  }

  @Override
  public String toString() {
    return name;
  }

  // ---- helpers ------------------------------------------------------------------------------

  private static long parseLong(String name, String v, String what) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + ": '" + v + "' is not " + what);
    }
  }

  private static double nonNegative(String name, String v) {
    try {
      double d = Double.parseDouble(v);
      if (d < 0 || Double.isNaN(d) || Double.isInfinite(d)) {
        throw new NumberFormatException();
      }
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + ": '" + v + "' is not a non-negative number of ms");
    }
  }

  private static String range(String unit, long min, long max) {
    String hi = max == Integer.MAX_VALUE || max == Long.MAX_VALUE ? "" : Long.toString(max);
    return unit + " in [" + min + ", " + (hi.isEmpty() ? "..." : hi) + "]";
  }

  private static String trim(double d) {
    return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString((long) d) : Double.toString(d);
  }

  private static String show(String s) {
    return s.isEmpty() ? "(empty)" : s;
  }
}
