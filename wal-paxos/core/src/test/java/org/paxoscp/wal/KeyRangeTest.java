package org.paxoscp.wal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.junit.jupiter.api.Test;

class KeyRangeTest {

  @Property(tries = 2000)
  void keyOrderIsTheOrderOfTheUtf8Bytes(@ForAll String a, @ForAll String b) {
    // Unpaired surrogates have no UTF-8 form (the encoder replaces them): keys never hold one.
    if (!wellFormed(a) || !wellFormed(b)) {
      return;
    }
    int bytes = Integer.signum(Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8),
        b.getBytes(StandardCharsets.UTF_8)));
    assertEquals(bytes, Integer.signum(KeyRange.compare(a, b)), a + " vs " + b);
  }

  private static boolean wellFormed(String s) {
    return s.codePoints().noneMatch(c -> c >= Character.MIN_SURROGATE
        && c <= Character.MAX_SURROGATE);
  }

  @Test
  void supplementaryCharactersSortAboveTheRestOfTheBasicPlaneAsInTheStore() {
    String key = "\uD83D\uDD11"; // U+1F511, UTF-8 F0 9F 94 91
    String high = "\uFFFD"; // UTF-8 EF BF BD
    assertTrue(key.compareTo(high) < 0, "String order puts the surrogates first");
    assertTrue(KeyRange.compare(key, high) > 0, "byte order does not");
    assertTrue(new KeyRange("\uFFFD", null).contains(key));
    assertFalse(new KeyRange("a", "\uFFFE").contains(key));
  }

  @Test
  void aPrefixRangeHoldsExactlyTheKeysWithThatPrefix() {
    KeyRange r = KeyRange.prefix("order/");
    assertEquals(new KeyRange("order/", "order0"), r);
    assertTrue(r.contains("order/"));
    assertTrue(r.contains("order/17"));
    assertTrue(r.contains("order/\uD83D\uDD11"));
    assertFalse(r.contains("order0"));
    assertFalse(r.contains("orders"));
    assertFalse(r.contains("order"));
    assertEquals(KeyRange.ALL, KeyRange.prefix(""));
    String top = new String(Character.toChars(Character.MAX_CODE_POINT));
    assertEquals(new KeyRange("a" + top, "b"), KeyRange.prefix("a" + top));
    assertEquals(new KeyRange(top, null), KeyRange.prefix(top));
    assertEquals(new KeyRange("\uD7FF", "\uE000"), KeyRange.prefix("\uD7FF"),
        "the successor skips the surrogate block");
  }

  @Test
  void decisionKeysAreInNoRange() {
    assertFalse(KeyRange.ALL.contains(XgStep.decisionKey("T")));
    assertTrue(KeyRange.ALL.contains("\u0001"));
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("\0xg/", null));
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("", "\0"));
  }

  @Test
  void throughAfterAndBeforeSplitARangeAtAKey() {
    KeyRange r = new KeyRange("a", "m");
    assertTrue(r.through("c").contains("c"));
    assertFalse(r.through("c").contains("c\u0001"));
    assertTrue(r.after("c").orElseThrow().contains("c\u0001"));
    assertFalse(r.after("c").orElseThrow().contains("c"));
    assertEquals(Optional.empty(), new KeyRange("a", "c\0").after("c"));
    assertEquals(new KeyRange("a", "c"), r.before("c").orElseThrow());
    assertEquals(Optional.empty(), r.before("a"));
    assertEquals(new KeyRange("c", "m"), r.startingAt("c"));
  }

  @Test
  void halfASurrogatePairIsRefusedInBoundsAndKeys() {
    // "a\uD800" and "a?" would name one row: the store could not tell them apart.
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("a", "a\uD800"));
    assertThrows(IllegalArgumentException.class, () -> KeyRange.prefix("a\uD83D"));
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("\uDD11", null));
    assertThrows(IllegalArgumentException.class,
        () -> org.paxoscp.paxos.WalLayout.validateKey("x\uD800"));
    assertThrows(IllegalArgumentException.class,
        () -> org.paxoscp.paxos.WalLayout.validateGroup("\uDC00g"));
    org.paxoscp.paxos.WalLayout.validateKey("x\uD83D\uDD11");
    assertEquals(new KeyRange("a\uD83D\uDD11", "a\uD83D\uDD12"), KeyRange.prefix("a\uD83D\uDD11"));
  }

  @Test
  void emptyRangesAndOverlongBoundsAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("b", "a"));
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("a", "a"));
    assertThrows(IllegalArgumentException.class, () -> new KeyRange("k".repeat(1026), null));
    new KeyRange("k".repeat(1024) + "\0", null);
  }

  @Test
  void normalizeSortsAndMergesOverlappingAndTouchingRanges() {
    assertEquals(List.of(new KeyRange("a", "d"), new KeyRange("e", "f"), new KeyRange("x", null)),
        KeyRange.normalize(
        List.of(new KeyRange("x", null), new KeyRange("c", "d"), new KeyRange("a", "c"),
            new KeyRange("e", "f"), new KeyRange("b", "c"))));
    assertEquals(List.of(KeyRange.ALL), KeyRange.normalize(List.of(new KeyRange("a", "b"),
        KeyRange.ALL)));
    assertTrue(new KeyRange("a", "c").overlaps(new KeyRange("b", null)));
    assertFalse(new KeyRange("a", "c").overlaps(new KeyRange("c", null)));
  }
}
