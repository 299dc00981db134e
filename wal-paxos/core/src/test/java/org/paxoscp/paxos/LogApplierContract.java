package org.paxoscp.paxos;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Reads at a read position after applying a log (docs/architecture.md section 3), against every
 * store: each read position must see exactly the state the log defines, including a combined
 * position whose entries write overlapping keys (folded in list order) and deletes (tombstone
 * versions).
 */
public abstract class LogApplierContract {

  /** A fresh, empty store; closed after each test. */
  protected abstract KvStore newStore();

  private static final String G = "accounts";
  private static final List<String> KEYS = List.of("a", "b", "c", "d");

  private KvStore store;
  private Acceptor acceptor;
  private LogApplier applier;

  @BeforeEach
  void open() {
    store = newStore();
    acceptor = new Acceptor(store);
    applier = new LogApplier(store);
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  /** A write set: "k=v" puts, "k=" deletes. */
  private static LogEntry txn(String id, long readPos, String... writes) {
    SortedMap<String, Mutation> w = new TreeMap<>();
    for (String kv : writes) {
      String[] p = kv.split("=", -1);
      w.put(p[0], p[1].isEmpty() ? Mutation.delete() : Mutation.put(p[1].getBytes(UTF_8)));
    }
    return new LogEntry(id, "dc1", readPos, new TreeSet<>(), w);
  }

  /** The log of this scenario: position -> chosen value. */
  private static final List<LogValue> LOG = List.of(
      /* 1 */ LogValue.of(txn("t1", 0, "a=1", "b=1")),
      /* 2 */ LogValue.of(txn("t2", 1, "a=2", "c=2"), txn("t3", 1, "a=3", "b=")),
      /* 3 */ LogValue.of(txn("t4", 2, "c=4", "d=4")),
      /* 4 */ LogValue.NOOP,
      /* 5 */ LogValue.of(txn("t5", 4, "b=5", "a=")),
      /* 6 */ LogValue.of(txn("t6", 5, "d=6"), txn("t7", 5, "d="), txn("t8", 5, "c=8")));

  /** The state at every read position, computed from the log independently of the applier. */
  private static Map<Long, Map<String, Optional<String>>> expectedStates() {
    Map<Long, Map<String, Optional<String>>> states = new HashMap<>();
    Map<String, Optional<String>> state = new HashMap<>();
    for (String k : KEYS) {
      state.put(k, Optional.empty());
    }
    states.put(0L, Map.copyOf(state));
    for (int i = 0; i < LOG.size(); i++) {
      for (LogEntry e : LOG.get(i).entries()) {
        e.writes().forEach((k, m) -> state.put(k, m.value().map(v -> new String(v, UTF_8))));
      }
      states.put((long) i + 1, Map.copyOf(state));
    }
    return states;
  }

  private void choose(long position, LogValue v) {
    assertEquals(Acceptor.ApplyResult.APPLIED, acceptor.apply(new Apply(G, position, v)));
  }

  @Test
  void readsAtEachReadPositionSeeExactlyTheLoggedState() {
    for (int i = 0; i < LOG.size(); i++) {
      choose(i + 1, LOG.get(i));
    }
    assertEquals(0, applier.appliedWatermark(G));
    assertEquals(LOG.size(), applier.applyKnown(G));
    assertEquals(LOG.size(), applier.appliedWatermark(G));

    Map<Long, Map<String, Optional<String>>> expected = expectedStates();
    for (long r = 0; r <= LOG.size(); r++) {
      for (String k : KEYS) {
        Optional<String> got = applier.read(G, k, r).map(v -> new String(v, UTF_8));
        assertEquals(expected.get(r).get(k), got, "key " + k + " at read position " + r);
      }
    }
  }

  @Test
  void combinedPositionWritesEachKeyOnceWithThePositionAsVersion() {
    for (int i = 0; i < LOG.size(); i++) {
      choose(i + 1, LOG.get(i));
    }
    applier.applyKnown(G);
    // Position 2 combined t2 (a=2) and t3 (a=3): one version at timestamp 2, the later entry's.
    KvStore.Cell a2 = store.read(Table.DATA, WalLayout.dataRow(G, "a"), WalLayout.DATA_VALUE, 2)
        .orElseThrow();
    assertEquals(2, a2.timestamp());
    assertEquals(Optional.of("3"), LogApplier.decodeItem(a2.value()).map(v -> new String(v, UTF_8)));
    // The delete of b at position 2 is a tombstone version, so b at 1 is still readable.
    assertEquals(2, store.read(Table.DATA, WalLayout.dataRow(G, "b"), WalLayout.DATA_VALUE, 4)
        .orElseThrow().timestamp());
    assertEquals(Optional.of("1"), applier.read(G, "b", 1).map(v -> new String(v, UTF_8)));
    // Nothing was written at the no-op position 4.
    assertEquals(3, store.read(Table.DATA, WalLayout.dataRow(G, "c"), WalLayout.DATA_VALUE, 4)
        .orElseThrow().timestamp());
  }

  @Test
  void applyingStopsAtTheFirstUnknownPositionAndIsIdempotent() {
    choose(1, LOG.get(0));
    choose(2, LOG.get(1));
    choose(4, LOG.get(3)); // 3 unknown here
    assertEquals(2, applier.applyKnown(G));
    assertEquals(Optional.empty(), applier.read(G, "d", 10));
    choose(3, LOG.get(2));
    assertEquals(4, applier.applyKnown(G));
    assertEquals(4, applier.applyKnown(G));
    assertEquals(Optional.of("4"), applier.read(G, "d", 4).map(v -> new String(v, UTF_8)));
  }

  @Test
  void recordedValuesAreAppliedInOrderFromMemoryAndTheirGapIsFilledFromTheStore() {
    choose(1, LOG.get(0));
    assertEquals(1, applier.applyKnown(G, 1, LOG.get(0)));
    // 3 recorded (and handed over) before 2: nothing to apply past the gap yet.
    choose(3, LOG.get(2));
    assertEquals(1, applier.applyKnown(G, 3, LOG.get(2)));
    choose(2, LOG.get(1));
    assertEquals(3, applier.applyKnown(G, 2, LOG.get(1)), "3 applied from memory after 2");
    // 5 recorded by another applier of this DC: not known here, so an in-order hand-over of 4
    // stops at 4 without reading the store; an applyKnown without a value reads on to 5.
    choose(5, LOG.get(4));
    choose(4, LOG.get(3));
    assertEquals(4, applier.applyKnown(G, 4, LOG.get(3)));
    assertEquals(5, applier.applyKnown(G));
    assertEquals(Optional.empty(), applier.read(G, "a", 5));
    assertEquals(Optional.of("5"), applier.read(G, "b", 5).map(v -> new String(v, UTF_8)));
  }

  @Test
  void aReadPositionCountsAnnouncedPositionsExceptForMinimumZero() {
    choose(1, LOG.get(0));
    assertEquals(1, applier.applyKnown(G));
    applier.announce(G, 2, LOG.get(1));
    applier.announce(G, 3, LOG.get(2));
    assertEquals(1, applier.readPosition(G, 0), "minimum 0 (a peer's GC): the applied watermark");
    assertEquals(3, applier.readPosition(G, 1), "the freshest position held, past the minimum");
    assertEquals(3, applier.readPosition(G, 7), "4 has not reached this DC");
    assertEquals(Optional.of(LOG.get(2)), applier.knownValue(G, 3));
    applier.withdraw(G, 2);
    assertEquals(1, applier.readPosition(G, 3), "2 could not be recorded: not counted");
    assertEquals(1, applier.appliedWatermark(G), "announcing applies nothing");
  }

  @Test
  void knownThroughCountsHeldPositionsWithoutAStoreRead() {
    assertEquals(0, applier.knownThrough(G));
    choose(1, LOG.get(0));
    assertEquals(1, applier.applyKnown(G));
    applier.announce(G, 2, LOG.get(1));
    applier.announce(G, 4, LOG.get(3));
    assertEquals(2, applier.knownThrough(G), "3 has not reached this DC: 4 does not count");
    applier.announce(G, 3, LOG.get(2));
    assertEquals(4, applier.knownThrough(G));
    applier.withdraw(G, 3);
    assertEquals(2, applier.knownThrough(G), "3 could not be recorded: not counted");
    assertEquals(1, applier.appliedWatermark(G), "holding applies nothing");
  }
}
