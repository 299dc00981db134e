package org.paxoscp.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The one parser: defaults, validation naming the key, key families, unknown keys. */
class ConfigKeyTest {
  private enum Colour { RED, GREEN }

  private static final ConfigKey<Integer> COUNT =
      ConfigKey.integer("x.count", 5, 1, 10, "a count");
  private static final ConfigKey<Duration> WAIT =
      ConfigKey.millis("x.wait.ms", 200, 1, 1_000, "a wait");
  private static final ConfigKey<String> NAME = ConfigKey.string("x.name", null, "required");
  private static final ConfigKey<Colour> COLOUR =
      ConfigKey.choice("x.colour", Colour.class, Colour.RED, "a colour");
  private static final ConfigKey<String> PER_DC =
      ConfigKey.optionalString("x.dc.<DC>.opt.<key>", "an option of DC <DC>");
  private static final ConfigKeys KEYS = new ConfigKeys("X", COUNT, WAIT, NAME, COLOUR, PER_DC);

  @Test
  void defaultsAndValues() {
    assertEquals(5, COUNT.from(Map.of()));
    assertEquals(7, COUNT.from(Map.of("x.count", " 7 ")));
    assertEquals(Duration.ofMillis(200), WAIT.from(Map.of("x.wait.ms", "")));
    assertEquals(Colour.GREEN, COLOUR.from(Map.of("x.colour", "green")));
    assertEquals(Optional.empty(), NAME.optional(Map.of()));
  }

  @Test
  void everyBadValueIsRefusedNamingTheKey() {
    for (Runnable bad : new Runnable[] {
        () -> COUNT.from(Map.of("x.count", "11")),
        () -> COUNT.from(Map.of("x.count", "many")),
        () -> WAIT.from(Map.of("x.wait.ms", "0")),
        () -> WAIT.from(Map.of("x.wait.ms", "1.5")),
        () -> COLOUR.from(Map.of("x.colour", "blue")),
        () -> NAME.from(Map.of())}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, bad::run);
      assertTrue(e.getMessage().contains("x."), e.getMessage());
    }
  }

  @Test
  void keyFamiliesMatchTheirMembersOnly() {
    assertTrue(KEYS.knows("x.dc.V1.opt.zk.port"));
    assertFalse(KEYS.knows("x.dc.V1.other"));
    assertFalse(KEYS.knows("x.dc..opt.a"));
    assertTrue(KEYS.knows("x.count"));
    KEYS.rejectUnknown(Map.of("x.count", "1", "x.dc.A.opt.b", "2", "y.anything", "3"), "x.");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> KEYS.rejectUnknown(Map.of("x.cuont", "1"), "x."));
    assertTrue(e.getMessage().contains("x.cuont"), e.getMessage());
  }

  @Test
  void theReferenceShowsTypeDefaultAndDoc() {
    String md = KEYS.markdown();
    assertTrue(md.contains("| `x.count` | integer in [1, 10] | 5 | a count |"), md);
    assertTrue(md.contains("| `x.name` | string | (required) | required |"), md);
    // Placeholders are quoted, so that Markdown does not take them for HTML.
    assertTrue(md.contains("an option of DC `<DC>`"), md);
  }
}
