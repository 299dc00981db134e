package org.paxoscp.paxos;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The GC watermark and collection of one DC ({@link LogCollector}) against every store: the
 * watermark only rises and never passes the applied one; collection removes WAL rows and
 * superseded versions; and an acceptor write that lands on a row after it was collected is
 * refused and removed (the race the acceptor's second watermark check closes).
 */
public abstract class LogCollectorContract {
  private static final String G = "carts";

  /** A fresh, empty store; closed after each test. */
  protected abstract KvStore newStore();

  private KvStore store;

  @BeforeEach
  void open() {
    store = newStore();
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  private static LogValue write(long position, String key) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.put(("v" + position).getBytes(UTF_8)));
    return LogValue.of(new LogEntry("t" + position, "dc1", position - 1, new TreeSet<>(), w));
  }

  /** Positions 1..n, each writing key "k" + (p % 3), applied. */
  private void logOf(KvStore s, long from, long to) {
    Acceptor a = new Acceptor(s);
    for (long p = from; p <= to; p++) {
      a.apply(new Apply(G, p, write(p, "k" + (p % 3))));
    }
    new LogApplier(s).applyKnown(G);
  }

  @Test
  void theWatermarkOnlyRisesAndNeverPassesTheAppliedOne() {
    logOf(store, 1, 20);
    LogCollector c = new LogCollector(store);
    assertEquals(0, c.gcWatermark(G));
    assertEquals(10, c.advance(G, LogCollector.candidate(14, 4)));
    assertEquals(10, c.advance(G, 7), "never lowered");
    assertEquals(20, c.advance(G, 1_000), "capped at the applied watermark");
    assertThrows(IllegalArgumentException.class, () -> LogCollector.candidate(5, 0));
    assertEquals(0, LogCollector.candidate(3, 10));
  }

  @Test
  void collectionRemovesWalRowsAndSupersededVersionsOnly() {
    logOf(store, 1, 30);
    LogCollector c = new LogCollector(store);
    c.advance(G, 12);
    // Two runs: the first stops after 5 positions, the second finishes.
    assertEquals(5, c.collect(G, 5, null).positions());
    assertEquals(7, c.collect(G, 100, null).positions());
    assertEquals(12, c.collected(G));
    assertEquals(0, c.collect(G, 100, null).positions(), "idempotent");
    assertEquals(18, store.census(Table.WAL).rows());
    // Each of the 3 keys keeps its newest version at or below 12, plus the 18 above it.
    assertEquals(3 + 18, store.census(Table.DATA).versions());
    LogApplier reader = new LogApplier(store);
    for (long r = 13; r <= 30; r++) {
      for (int k = 0; k < 3; k++) {
        long newest = r - Math.floorMod(r - k, 3);
        assertEquals("v" + newest, new String(reader.read(G, "k" + k, r).orElseThrow(), UTF_8),
            "k" + k + " at " + r);
      }
    }
    for (long r = 1; r <= 12; r++) {
      final long pos = r;
      assertThrows(TooOldException.class, () -> reader.read(G, "k0", pos));
    }
  }

  @Test
  void aVoteThatLandsAfterItsRowWasCollectedIsRefusedAndRemoved() {
    logOf(store, 1, 10);
    // Position 11 is empty here when the PREPARE reads its row; before the PREPARE writes its
    // promise, 11..20 are decided and applied, the watermark passes 11 and the row is collected.
    AtomicBoolean raced = new AtomicBoolean();
    KvStore racing = new ForwardingKvStore(store) {
      @Override
      public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
          long timestamp, Map<String, byte[]> cells) {
        if (table == Table.WAL && cells.containsKey(WalLayout.PROMISE)
            && raced.compareAndSet(false, true)) {
          logOf(delegate, 11, 20);
          LogCollector c = new LogCollector(delegate);
          c.advance(G, 15);
          c.collect(G, 100, null);
        }
        return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
      }
    };
    Acceptor acceptor = new Acceptor(racing);
    assertThrows(TooOldException.class,
        () -> acceptor.prepare(new Prepare(G, 11, Ballot.of(1, 7))));
    assertTrue(raced.get());
    assertTrue(store.readRow(Table.WAL, WalLayout.walRow(G, 11)).isEmpty(),
        "the promise written after collection must be removed again");
    // Every later request for 11 is refused before it touches the row.
    assertThrows(TooOldException.class,
        () -> acceptor.accept(new Accept(G, 11, Ballot.of(1, 7), LogValue.NOOP)));
    assertThrows(TooOldException.class,
        () -> acceptor.accept(new Accept(G, 11, Ballot.FAST, LogValue.NOOP)));
    assertThrows(TooOldException.class, () -> acceptor.chosen(G, 11));
    assertThrows(TooOldException.class, () -> acceptor.apply(new Apply(G, 11, LogValue.NOOP)));
    assertTrue(store.readRow(Table.WAL, WalLayout.walRow(G, 11)).isEmpty());
    // Above the watermark the acceptor works as before.
    assertTrue(acceptor.prepare(new Prepare(G, 21, Ballot.of(1, 7))).promised());
  }

  @Test
  void aFastVoteLeftOnACollectedRowByAFailedWatermarkReadIsNeverAnswered() {
    logOf(store, 1, 20);
    LogCollector c = new LogCollector(store);
    c.advance(G, 15);
    c.collect(G, 100, null);
    // A stale batcher's fast ACCEPT for 11: its check-and-write finds the collected row empty
    // and writes the vote; the store then fails the watermark read that would remove it again.
    AtomicBoolean armed = new AtomicBoolean();
    AtomicBoolean voted = new AtomicBoolean();
    KvStore failing = new ForwardingKvStore(store) {
      @Override
      public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
          long timestamp, Map<String, byte[]> cells) {
        boolean done = delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
        voted.compareAndSet(false, armed.get() && done && table == Table.WAL);
        return done;
      }

      @Override
      public java.util.Optional<Cell> read(Table table, byte[] row, String column,
          long maxTimestamp) {
        if (table == Table.META && voted.get()) {
          throw new org.paxoscp.store.StoreUnavailableException("watermark read failed");
        }
        return delegate.read(table, row, column, maxTimestamp);
      }

      @Override
      public Map<String, Cell> readRow(Table table, byte[] row) {
        if (table == Table.META && voted.get()) {
          throw new org.paxoscp.store.StoreUnavailableException("watermark read failed");
        }
        return delegate.readRow(table, row);
      }
    };
    LogValue stale =
        LogValue.of(new LogEntry("stale", "dc1", 10, new TreeSet<>(), new TreeMap<>()));
    // A long-running acceptor has seen its store serving: its fast ACCEPT reads nothing first.
    Acceptor running = new Acceptor(failing);
    assertTrue(running.prepare(new Prepare(G, 25, Ballot.of(1, 7))).promised());
    armed.set(true);
    assertThrows(org.paxoscp.store.StoreUnavailableException.class,
        () -> running.accept(new Accept(G, 11, Ballot.FAST, stale)));
    // The vote may stay in the row (in memory it does; on HBase the collection's delete marker
    // hides a write with an older timestamp). Either way no answer ever reports it: every
    // request for 11 reads the watermark after the row.
    Acceptor acceptor = new Acceptor(store);
    assertThrows(TooOldException.class,
        () -> acceptor.accept(new Accept(G, 11, Ballot.FAST, stale)));
    assertThrows(TooOldException.class, () -> acceptor.chosen(G, 11));
    assertThrows(TooOldException.class,
        () -> acceptor.prepare(new Prepare(G, 11, Ballot.of(2, 7))));
  }
}
