package org.paxoscp.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

class UpdatesTest {
  private static Optional<byte[]> text(String s) {
    return Optional.of(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String str(Optional<byte[]> v) {
    return v.map(b -> new String(b, StandardCharsets.UTF_8)).orElse("<none>");
  }

  @Test
  void countersAreCanonicalDecimalNumbers() {
    assertEquals(Optional.of(0L), Updates.decodeCounter(Optional.empty()));
    assertEquals(Optional.of(-12L), Updates.decodeCounter(text("-12")));
    assertEquals(Optional.of(Long.MIN_VALUE),
        Updates.decodeCounter(text(Long.toString(Long.MIN_VALUE))));
    for (String bad : new String[] {"", "-", "-0", "007", "+1", "1a", " 1",
        "9223372036854775808", "hello"}) {
      assertEquals(Optional.empty(), Updates.decodeCounter(text(bad)), bad);
    }
    assertEquals("42", str(Optional.of(Updates.encodeCounter(42))));
  }

  @Test
  void anAddThatLeavesTheRangeIsRefusedNeverWrapped() {
    Updates.Result r = Updates.apply(text(Long.toString(Long.MAX_VALUE)), Mutation.add(1));
    assertEquals(Updates.Refusal.OVERFLOW, r.refusal());
    r = Updates.apply(text(Long.toString(Long.MIN_VALUE)), Mutation.add(-1));
    assertEquals(Updates.Refusal.OVERFLOW, r.refusal());
    assertEquals(Updates.Refusal.NOT_A_COUNTER, Updates.apply(text("x"), Mutation.add(1))
        .refusal());
    assertEquals("5", str(Updates.apply(Optional.empty(), Mutation.add(5)).value()));
  }

  @Test
  void countingSetsFollowWalter() {
    Optional<byte[]> s = Optional.empty();
    s = Updates.apply(s, Mutation.setUpdate(Map.of("a", 1L, "b", 1L))).value();
    s = Updates.apply(s, Mutation.setUpdate(Map.of("a", -1L, "c", -1L))).value();
    // a: 0 (gone), b: 1 (present), c: -1 (removed more often than added: absent)
    assertEquals(Map.of("b", 1L, "c", -1L), Updates.decodeSet(s).orElseThrow());
    assertEquals(List.of("b"), List.copyOf(Updates.present(Updates.decodeSet(s).orElseThrow())));
    assertEquals(Updates.Refusal.NOT_A_SET,
        Updates.apply(text("12"), Mutation.setUpdate(Map.of("a", 1L))).refusal());
    // A counter is never taken for a set, nor a set for a counter.
    assertEquals(Optional.empty(), Updates.decodeCounter(s));
    assertEquals(Optional.empty(), Updates.decodeSet(text("12")));
  }

  @Test
  void setCountsUseTheWhole64BitRangeAndRefuseBeyondIt() {
    Optional<byte[]> s = Updates.apply(Optional.empty(),
        Mutation.setUpdate(Map.of("e", Long.MAX_VALUE, "f", Long.MIN_VALUE))).value();
    assertEquals(Map.of("e", Long.MAX_VALUE, "f", Long.MIN_VALUE),
        Updates.decodeSet(s).orElseThrow());
    assertEquals(Updates.Refusal.OVERFLOW,
        Updates.apply(s, Mutation.setUpdate(Map.of("e", 1L))).refusal());
  }

  @Test
  void aSetPastItsBoundIsRefused() {
    Optional<byte[]> s = Optional.empty();
    String big = "e".repeat(1000);
    Updates.Result r = null;
    for (int i = 0; i < 40; i++) {
      r = Updates.apply(s, Mutation.setUpdate(Map.of(big + i, 1L)));
      if (r.refused()) {
        break;
      }
      s = r.value();
    }
    assertEquals(Updates.Refusal.SET_TOO_LARGE, r.refusal());
    assertTrue(s.orElseThrow().length <= Updates.MAX_SET_BYTES);
  }

  @Test
  void oneTransactionsWritesCombine() {
    assertEquals(Mutation.add(3), Updates.combine(Mutation.add(1), Mutation.add(2)));
    assertEquals(Mutation.put("7".getBytes(StandardCharsets.UTF_8)),
        Updates.combine(Mutation.put("5".getBytes(StandardCharsets.UTF_8)), Mutation.add(2)));
    assertEquals(Mutation.put("2".getBytes(StandardCharsets.UTF_8)),
        Updates.combine(Mutation.delete(), Mutation.add(2)));
    assertEquals(Mutation.delete(), Updates.combine(Mutation.add(2), Mutation.delete()));
    assertEquals(Mutation.setUpdate(Map.of("b", 1L)), Updates.combine(
        Mutation.setUpdate(Map.of("a", 1L)), Mutation.setUpdate(Map.of("a", -1L, "b", 1L))));
    assertThrows(IllegalArgumentException.class,
        () -> Updates.combine(Mutation.add(Long.MAX_VALUE), Mutation.add(1)));
    assertThrows(IllegalArgumentException.class,
        () -> Updates.combine(Mutation.add(1), Mutation.setUpdate(Map.of("a", 1L))));
    assertThrows(IllegalArgumentException.class,
        () -> Updates.combine(Mutation.put("x".getBytes(StandardCharsets.UTF_8)),
            Mutation.add(1)));
  }

  @Test
  void aPositionFoldsInListOrderAndRefusesWholeEntries() {
    Map<String, Optional<byte[]>> store = new HashMap<>(Map.of("c", text("10"),
        "m", text(Long.toString(Long.MAX_VALUE - 1))));
    List<Updates.Effect> effects = List.of(
        new Updates.Effect("t1", Map.of("c", Mutation.add(5))),
        new Updates.Effect("t2", Map.of("c", Mutation.put("100".getBytes()))),
        new Updates.Effect("t3", new TreeMap<>(Map.of("c", Mutation.add(1),
            "d", Mutation.put("x".getBytes())))),
        // t4 would overflow m: its add to c and its put of e take no effect either.
        new Updates.Effect("t4", new TreeMap<>(Map.of("c", Mutation.add(1000),
            "e", Mutation.put("y".getBytes()), "m", Mutation.add(2)))),
        new Updates.Effect("t5", Map.of("m", Mutation.add(1))));
    List<String> asked = new java.util.ArrayList<>();
    Updates.Folded f = Updates.fold(effects, k -> {
      asked.add(k);
      return store.getOrDefault(k, Optional.empty());
    });
    assertEquals("101", str(f.values().get("c")));
    assertEquals("x", str(f.values().get("d")));
    assertFalse(f.values().containsKey("e"));
    assertEquals(Long.toString(Long.MAX_VALUE), str(f.values().get("m")));
    assertEquals(List.of("t4"), List.copyOf(f.refused().keySet()));
    assertTrue(f.refused().get("t4").startsWith("m: "), f.refused().toString());
    // Only the values under an update were asked for, once each.
    assertEquals(List.of("c", "m"), asked);
    assertTrue(f.readBase());
    assertFalse(Updates.fold(List.of(new Updates.Effect("p", Map.of("k",
        Mutation.put(new byte[0])))), k -> { throw new AssertionError(k); }).readBase());
  }

  /** Adds commute: any order of a position's add-only entries folds to the same value. */
  @Test
  void addOnlyEntriesCommute() {
    Random rnd = new Random(7);
    for (int trial = 0; trial < 200; trial++) {
      List<Updates.Effect> effects = new java.util.ArrayList<>();
      long sum = 0;
      for (int i = 0; i < 6; i++) {
        long d = rnd.nextInt(2001) - 1000;
        sum += d;
        Map<String, Mutation> w = new LinkedHashMap<>();
        w.put("c", Mutation.add(d));
        w.put("s", Mutation.setUpdate(Map.of("e" + rnd.nextInt(3), rnd.nextBoolean() ? 1L : -1L)));
        effects.add(new Updates.Effect("t" + i, w));
      }
      Updates.Folded a = Updates.fold(effects, k -> Optional.empty());
      java.util.Collections.shuffle(effects, rnd);
      Updates.Folded b = Updates.fold(effects, k -> Optional.empty());
      assertEquals(Long.toString(sum), str(a.values().get("c")));
      assertEquals(str(a.values().get("c")), str(b.values().get("c")));
      assertEquals(Updates.decodeSet(a.values().get("s")), Updates.decodeSet(b.values().get("s")));
    }
  }
}
