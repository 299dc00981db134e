package org.paxoscp.config;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The keys one component reads, in the order its reference lists them, with the check that
 * rejects unknown keys under the component's prefix and the reference table rows.
 */
public final class ConfigKeys {
  private final String title;
  private final List<ConfigKey<?>> keys;
  private final List<Pattern> patterns = new ArrayList<>();

  /** {@code title} heads the component's table in the reference. */
  public ConfigKeys(String title, ConfigKey<?>... keys) {
    this.title = title;
    this.keys = Collections.unmodifiableList(Arrays.asList(keys));
    for (ConfigKey<?> k : keys) {
      if (k.isPattern()) {
        // <DC>, <A>, <key>...: one or more characters other than a dot, except <key> (any).
        String regex = Pattern.quote(k.name())
            .replaceAll("<key>", "\\\\E.+\\\\Q")
            .replaceAll("<[A-Za-z]+>", "\\\\E[^.]+\\\\Q");
        patterns.add(Pattern.compile(regex));
      }
    }
  }

  public String title() {
    return title;
  }

  public List<ConfigKey<?>> keys() {
    return keys;
  }

  /** Whether {@code name} is one of these keys or matches one of their patterns. */
  public boolean knows(String name) {
    for (ConfigKey<?> k : keys) {
      if (!k.isPattern() && k.name().equals(name)) {
        return true;
      }
    }
    return patterns.stream().anyMatch(p -> p.matcher(name).matches());
  }

  /**
   * Rejects every key in {@code props} that starts with {@code prefix} and is not known here
   * nor to any of {@code others}.
   *
   * @throws IllegalArgumentException naming the unknown key
   */
  public void rejectUnknown(Map<String, String> props, String prefix, ConfigKeys... others) {
    for (String k : new java.util.TreeSet<>(props.keySet())) {
      if (!k.startsWith(prefix) || knows(k)) {
        continue;
      }
      boolean known = false;
      for (ConfigKeys o : others) {
        known |= o.knows(k);
      }
      if (!known) {
        throw new IllegalArgumentException("unknown key " + k + "; known keys: " + names());
      }
    }
  }

  /** The key names, patterns included. */
  public List<String> names() {
    return keys.stream().map(ConfigKey::name).toList();
  }

  /** Words holding a {@code <placeholder>} in backticks, so Markdown shows them. */
  private static String quotePlaceholders(String doc) {
    return doc.replaceAll("([^\\s(),;]*<[A-Za-z]+>[^\\s(),;]*)", "`$1`");
  }

  /** This component's title and table of the configuration reference, in Markdown. */
  public String markdown() {
    StringBuilder b = new StringBuilder();
    b.append("**").append(quotePlaceholders(title)).append("**\n\n");
    b.append("| key | type | default | meaning |\n|---|---|---|---|\n");
    for (ConfigKey<?> k : keys) {
      b.append("| `").append(k.name()).append("` | ").append(k.type()).append(" | ")
          .append(k.defaultText()).append(" | ").append(quotePlaceholders(k.doc())).append(" |\n");
    }
    return b.toString();
  }
}
