package org.paxoscp.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/** The lock table: applying steps, its encoding, the keys-only copy a begin hands out. */
class XgLocksTest {
  private static final List<String> G = List.of("a", "b");

  private static LogEntry prepare(String id, String txn, String readKey, String writeKey) {
    return new LogEntry(id, "V1", 1, new TreeSet<>(Set.of(readKey)),
        new TreeMap<>(Map.of(writeKey, Mutation.put(new byte[] {1, 2, 3}))),
        XgStep.prepare(txn, G, 100));
  }

  private static LogEntry resolve(String id, String txn, boolean commit, Map<String, Mutation> w) {
    return new LogEntry(id, "V1", 2, new TreeSet<>(), new TreeMap<>(w),
        XgStep.resolve(txn, G, commit));
  }

  private static LogEntry plain(String id, String key) {
    return new LogEntry(id, "V1", 0, new TreeSet<>(),
        new TreeMap<>(Map.of(key, Mutation.put(new byte[] {9}))));
  }

  @Test
  void aPrepareLocksAndItsFirstResolveReleasesAndApplies() {
    XgLocks.Applied a = XgLocks.EMPTY.apply(3, LogValue.of(plain("e", "z"),
        prepare("p", "T", "r", "w")));
    assertEquals(Set.of("z"), a.writes().keySet(), "a PREPARE writes nothing yet");
    XgLocks.Lock lock = a.locks().lockOf("T").orElseThrow();
    assertEquals(3, lock.position());
    assertTrue(lock.blocks(plain("x", "r")), "writing a key the PREPARE read");
    assertTrue(lock.blocks(new LogEntry("y", "V1", 0, new TreeSet<>(Set.of("w")),
        new TreeMap<>(Map.of("q", Mutation.delete())))), "reading a key it writes");
    assertEquals(false, lock.blocks(new LogEntry("y", "V1", 0, new TreeSet<>(Set.of("r")),
        new TreeMap<>(Map.of("q", Mutation.delete())))), "reading a key it only read");

    XgLocks.Applied r = a.locks().apply(5, LogValue.of(resolve("r1", "T", true, Map.of())));
    assertTrue(r.locks().isEmpty());
    assertArrayEquals(new byte[] {1, 2, 3}, r.writes().get("w").value().orElseThrow(),
        "the PREPARE's own writes, not the RESOLVE's copy");
    XgLocks.Applied again = r.locks().apply(6, LogValue.of(resolve("r2", "T", true,
        Map.of("w", Mutation.put(new byte[] {7})))));
    assertTrue(again.writes().isEmpty(), "a second RESOLVE is void");
  }

  @Test
  void encodingRoundTripsAndTheKeysOnlyCopyDropsValues() {
    XgLocks t = XgLocks.EMPTY.apply(2, LogValue.of(prepare("same-id", "T1", "r", "w"))).locks()
        .apply(3, LogValue.of(prepare("same-id", "T2", "s", "v"))).locks();
    assertEquals(2, t.size(), "two PREPAREs sharing an entry id still make a table");
    assertEquals(t, XgLocks.decode(t.encode(), 0));
    XgLocks keys = t.withoutValues();
    assertEquals(Set.of("T1", "T2"), Set.copyOf(keys.locks().stream().map(XgLocks.Lock::txn)
        .toList()));
    assertEquals(0, keys.lockOf("T1").orElseThrow().prepare().writes().get("w").value()
        .orElseThrow().length);
    assertTrue(keys.encode().length < t.encode().length);
    assertEquals(0, XgLocks.EMPTY.encode().length);
    assertEquals(XgLocks.EMPTY, XgLocks.decode(new byte[0], 0));
    assertThrows(CorruptDataException.class, () -> XgLocks.decode(new byte[] {1, 0}, 0),
        "an encoded table with no lock is not canonical");
  }

  @Test
  void theFirstWithinABudgetKeepAPrefixInIdOrderAndFit() {
    // Transaction ids in the reverse order of their positions, so id order is not age.
    XgLocks t = XgLocks.EMPTY;
    for (int i = 0; i < 10; i++) {
      t = t.apply(10 + i, LogValue.of(prepare("e" + i, "T" + (9 - i), "r" + i, "w" + i)))
          .locks();
    }
    int whole = t.encode().length;
    assertEquals(t, t.firstWithin(whole), "a table that fits is kept whole");
    XgLocks half = t.firstWithin(whole / 2);
    assertTrue(half.size() > 0 && half.size() < 10, half.toString());
    assertTrue(half.encode().length <= whole / 2);
    for (int i = 0; i < half.size(); i++) {
      assertEquals("T" + i, half.locks().get(i).txn(), "the kept ones are the first ids");
    }
    String lastKept = "T" + (half.size() - 1);
    assertTrue(half.cutListsIfHeld(lastKept) && half.cutListsIfHeld("T0"));
    assertTrue(half.cutListsIfHeld("S"), "an id below the last listed would have been listed");
    assertFalse(half.cutListsIfHeld("T9"), "an id past the cut may hold an unlisted lock");
    XgLocks one = t.firstWithin(1);
    assertEquals(1, one.size(), "the first lock even when it alone is over the budget");
    assertEquals("T0", one.first().orElseThrow().txn());
  }
}
