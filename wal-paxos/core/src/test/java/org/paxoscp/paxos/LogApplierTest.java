package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

@Timeout(10)
class LogApplierTest {

  private static final String G = "g";

  private final InMemoryKvStore store = new InMemoryKvStore();
  private final Acceptor acceptor = new Acceptor(store);
  private final LogApplier applier = new LogApplier(store);
  private int txns;

  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** An entry writing {@code kv} pairs in order; a null value is a delete. */
  private LogEntry writes(String... kv) {
    Map<String, Mutation> w = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) {
      w.put(kv[i], kv[i + 1] == null ? Mutation.delete() : Mutation.put(b(kv[i + 1])));
    }
    return new LogEntry("t" + (++txns), "dc0", 0, new TreeSet<>(), new TreeMap<>(w));
  }

  private void choose(long position, LogEntry... entries) {
    assertEquals(Acceptor.ApplyResult.APPLIED,
        acceptor.apply(new Apply(G, position, LogValue.of(entries))));
  }

  private void assertReads(String key, long readPosition, String expected) {
    Optional<byte[]> got = applier.read(G, key, readPosition);
    if (expected == null) {
      assertTrue(got.isEmpty(), key + "@" + readPosition + " should be absent");
    } else {
      assertArrayEquals(b(expected), got.orElseThrow(() -> new AssertionError(
          key + "@" + readPosition + " is absent, expected " + expected)));
    }
  }

  @Test
  void emptyGroupHasWatermarkZeroAndNothingToApply() {
    assertEquals(0, applier.appliedWatermark(G));
    assertEquals(0, applier.applyKnown(G));
    assertReads("k", KvStore.LATEST, null);
  }

  @Test
  void appliesChosenPositionsInOrderAndStopsAtTheFirstGap() {
    choose(1, writes("a", "1"));
    choose(2, writes("b", "2"));
    choose(4, writes("c", "4"));
    assertEquals(2, applier.applyKnown(G));
    assertEquals(2, applier.appliedWatermark(G));
    assertReads("a", 2, "1");
    assertReads("b", 2, "2");
    assertReads("c", KvStore.LATEST, null);

    choose(3, writes("a", "3"));
    assertEquals(4, applier.applyKnown(G));
    assertReads("a", 4, "3");
    assertReads("c", 4, "4");
  }

  @Test
  void readsAtEachReadPositionSeeTheVersionThenLive() {
    choose(1, writes("k", "v1"));
    choose(2); // a no-op
    choose(3, writes("k", "v3", "other", "o3"));
    choose(4, writes("other", "o4"));
    assertEquals(4, applier.applyKnown(G));
    assertReads("k", 0, null);
    assertReads("k", 1, "v1");
    assertReads("k", 2, "v1");
    assertReads("k", 3, "v3");
    assertReads("k", 4, "v3");
    assertReads("other", 2, null);
    assertReads("other", 3, "o3");
    assertReads("other", 4, "o4");
  }

  @Test
  void combinedPositionsFoldWritesInListOrder() {
    choose(1, writes("k", "first", "only1", "x"), writes("k", "second", "only2", "y"),
        writes("j", "third"));
    applier.applyKnown(G);
    assertReads("k", 1, "second");
    assertReads("only1", 1, "x");
    assertReads("only2", 1, "y");
    assertReads("j", 1, "third");

    choose(2, writes("k", "later"), writes("k", null));
    choose(3, writes("j", null), writes("j", "back"));
    applier.applyKnown(G);
    assertReads("k", 2, null);
    assertReads("j", 3, "back");
  }

  @Test
  void deletesReadAsAbsentAtAndAfterTheirPositionOnly() {
    choose(1, writes("k", "v1"));
    choose(2, writes("k", null));
    choose(3, writes("unrelated", "u"));
    choose(4, writes("k", "v4"));
    applier.applyKnown(G);
    assertReads("k", 1, "v1");
    assertReads("k", 2, null);
    assertReads("k", 3, null);
    assertReads("k", 4, "v4");
  }

  @Test
  void emptyValuesAreNotDeletes() {
    choose(1, writes("k", ""));
    applier.applyKnown(G);
    assertArrayEquals(new byte[0], applier.read(G, "k", 1).orElseThrow());
  }

  @Test
  void groupsAreIndependent() {
    choose(1, writes("k", "in-g"));
    acceptor.apply(new Apply("h", 1, LogValue.of(writes("k", "in-h"))));
    acceptor.apply(new Apply("h", 2, LogValue.of(writes("k", "in-h-2"))));
    assertEquals(1, applier.applyKnown(G));
    assertReads("k", 1, "in-g");
    assertEquals(0, applier.appliedWatermark("h"));
    assertEquals(2, applier.applyKnown("h"));
    assertArrayEquals(b("in-h-2"), applier.read("h", "k", 2).orElseThrow());
    assertReads("k", 2, "in-g");
  }

  @Test
  void applyingAgainIsIdempotent() {
    choose(1, writes("k", "v1"));
    choose(2, writes("k", "v2"));
    assertEquals(2, applier.applyKnown(G));
    assertEquals(2, applier.applyKnown(G));
    assertEquals(2, new LogApplier(store).applyKnown(G));
    assertReads("k", 1, "v1");
    assertReads("k", 2, "v2");
  }

  @Test
  void theWatermarkNeverMovesBackwards() {
    long last = 0;
    for (long p = 1; p <= 20; p++) {
      if (p % 3 != 0) {
        choose(p, writes("k" + p, "v"));
      }
    }
    for (long p = 3; p <= 21; p += 3) {
      long w = applier.applyKnown(G);
      assertTrue(w >= last, "watermark went from " + last + " to " + w);
      assertEquals(p - 1, w);
      last = w;
      if (p <= 20) {
        choose(p, writes("k" + p, "v"));
      }
    }
  }

  @Test
  void aConcurrentApplierThatGotFurtherIsNotUndone() {
    for (long p = 1; p <= 5; p++) {
      choose(p, writes("k", "v" + p));
    }
    // While this applier is about to move the watermark 0 -> 1, another applier over the same
    // store applies everything up to 5.
    LogApplier other = new LogApplier(store);
    RacingStore racing = new RacingStore(store, () -> assertEquals(5, other.applyKnown(G)));
    LogApplier slow = new LogApplier(racing);
    assertEquals(5, slow.applyKnown(G));
    assertEquals(5, applier.appliedWatermark(G));
    assertEquals(5, racing.highest);
    assertReads("k", 3, "v3");
    assertReads("k", 5, "v5");
  }

  /**
   * Runs {@code race} once, just before the first watermark compare-and-set, and checks that no
   * watermark compare-and-set moves the watermark back.
   */
  private static final class RacingStore extends ForwardingKvStore {
    private Runnable race;
    private long highest;

    RacingStore(KvStore delegate, Runnable race) {
      super(delegate);
      this.race = race;
    }

    @Override
    public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
        long timestamp, Map<String, byte[]> cells) {
      if (table != Table.META) {
        return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
      }
      if (race != null) {
        Runnable r = race;
        race = null;
        r.run();
      }
      long before = watermark(row);
      boolean ok = delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
      long after = watermark(row);
      assertTrue(after >= before, "watermark moved back from " + before + " to " + after);
      highest = Math.max(highest, after);
      return ok;
    }

    private long watermark(byte[] row) {
      return delegate.read(Table.META, row, WalLayout.APPLIED, LATEST)
          .map(c -> WalLayout.decodeLong(c.value())).orElse(0L);
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  // ---- bounded memory (docs/architecture.md section 9) ------------------------------------------

  @Test
  void theCachesHoldAtMostTheirBoundAndAnEvictedGroupIsRebuiltFromTheStore() {
    LogApplier small = new LogApplier(store, 10);
    for (int i = 0; i < 200; i++) {
      String g = "group-" + i;
      acceptor.apply(new Apply(g, 1, LogValue.of(writes("k", "v" + i))));
      assertEquals(1, small.applyKnown(g, 1, LogValue.of(writes("k", "v" + i))));
      small.announce(g, 3, LogValue.of(writes("k", "later")));
    }
    // Caffeine evicts asynchronously; its bound holds once maintenance has run.
    org.paxoscp.testing.Poll.until("the caches shrank to their bound",
        java.time.Duration.ofSeconds(5), () -> small.cachedGroups() <= 10);
    // An evicted group's watermark reads as 0 from memory, and the store still has it.
    assertEquals(0, small.knownApplied("group-0"));
    assertEquals(1, small.appliedWatermark("group-0"));
    assertEquals(1, small.knownApplied("group-0"));
    assertArrayEquals(b("v0"), small.read("group-0", "k", 1).orElseThrow());
  }

  @Test
  void heldValuesAreDroppedOnceTheWatermarkPassesThemAndForgetAllEmptiesEverything() {
    choose(1, writes("a", "1"));
    choose(2, writes("a", "2"));
    applier.announce(G, 1, LogValue.of(writes("a", "1")));
    applier.announce(G, 2, LogValue.of(writes("a", "2")));
    assertEquals(2, applier.knownThrough(G));
    assertEquals(2, applier.applyKnown(G));
    // Nothing is held above the watermark any more: only the watermark's entry is cached.
    assertEquals(1, applier.cachedGroups());
    applier.forgetAll();
    assertEquals(0, applier.cachedGroups());
    assertEquals(0, applier.knownApplied(G));
    assertEquals(2, applier.readPosition(G, 1));
    assertReads("a", 2, "2");
  }

  // ---- commutative updates -------------------------------------------------------------------

  private LogEntry adds(String key, long delta) {
    return new LogEntry("t" + (++txns), "dc0", 0, new TreeSet<>(),
        new TreeMap<>(Map.of(key, Mutation.add(delta))));
  }

  /** Moves the stored watermark back to {@code position} (the versions above it stay). */
  private void rewindWatermark(long position) {
    byte[] row = WalLayout.metaRow(G);
    byte[] now = store.read(KvStore.Table.META, row, WalLayout.APPLIED, KvStore.LATEST)
        .orElseThrow().value();
    assertTrue(store.checkAndWrite(KvStore.Table.META, row, WalLayout.APPLIED, now,
        KvStore.UNVERSIONED, Map.of(WalLayout.APPLIED, LogApplier.encodeApplied(
            new LogApplier.AppliedState(position, org.paxoscp.wal.XgLocks.EMPTY)))));
  }

  @Test
  void aPositionFoldsPutsAndAddsInListOrder() {
    choose(1, writes("c", "5"));
    choose(2, adds("c", 3), writes("c", "100"), adds("c", 1), adds("d", -2));
    assertEquals(2, applier.applyKnown(G));
    assertReads("c", 1, "5");
    assertReads("c", 2, "101");
    assertReads("d", 2, "-2");
  }

  /**
   * A crash between writing a position's versions and moving the watermark: applying the
   * position again folds from the versions below it, so its deltas count once.
   */
  @Test
  void applyingAPositionAgainAddsItsDeltasOnce() {
    assertEquals(11, reappliedCounter(LogApplier.Rules.SHIPPED));
  }

  /** The same with the planted bug that folds into the newest version: the deltas count twice. */
  @Test
  void foldingIntoTheNewestVersionAddsTwiceOnASecondApply() {
    assertEquals(17, reappliedCounter(new LogApplier.Rules(false, true, false)));
  }

  private long reappliedCounter(LogApplier.Rules rules) {
    LogApplier a = new LogApplier(store, 100, new RebuildGuard(store), rules);
    choose(1, writes("c", "5"));
    choose(2, adds("c", 3), adds("c", 3));
    assertEquals(2, a.applyKnown(G));
    rewindWatermark(1);
    LogApplier restarted = new LogApplier(store, 100, new RebuildGuard(store), rules);
    assertEquals(2, restarted.applyKnown(G));
    return Long.parseLong(new String(restarted.read(G, "c", 2).orElseThrow(),
        StandardCharsets.UTF_8));
  }

  @Test
  void aRefusedEntryWritesNothingAndTheServiceCanSayWhich() {
    choose(1, writes("c", Long.toString(Long.MAX_VALUE)));
    LogEntry over = new LogEntry("over", "dc0", 0, new TreeSet<>(), new TreeMap<>(Map.of(
        "c", Mutation.add(1), "x", Mutation.put(b("x")))));
    LogEntry fine = adds("d", 1);
    choose(2, over, fine);
    assertEquals(2, applier.applyKnown(G));
    assertReads("c", 2, Long.toString(Long.MAX_VALUE));
    assertReads("x", 2, null);
    assertReads("d", 2, "1");
    Map<String, String> refused = applier.refusedAt(G, 2,
        new Acceptor(store).chosen(G, 2).orElseThrow());
    assertEquals(java.util.Set.of("over"), refused.keySet());
  }

  /**
   * An applier that remembers an old watermark applies a position another applier applied long
   * ago, after collection removed the versions below it: its fold would start from nothing, so
   * it writes nothing (the GC watermark says the position was applied everywhere).
   */
  @Test
  void aFoldPastTheGcWatermarkWritesNothing() {
    choose(1, writes("c", "5"));
    LogApplier stale = new LogApplier(store);
    assertEquals(1, stale.applyKnown(G));
    LogEntry add = adds("c", 3);
    choose(2, add);
    choose(3, writes("other", "x"));
    assertEquals(3, applier.applyKnown(G));
    LogCollector gc = new LogCollector(store);
    assertEquals(3, gc.advance(G, 3));
    gc.collect(G, 10, null);
    // c's newest version at or below the watermark, 8 at position 2, is the one kept.
    assertReads("c", KvStore.LATEST, "8");
    assertEquals(3, stale.applyKnown(G, 2, LogValue.of(add)));
    assertReads("c", KvStore.LATEST, "8");
  }
}
