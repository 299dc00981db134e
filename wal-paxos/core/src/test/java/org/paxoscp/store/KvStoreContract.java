package org.paxoscp.store;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;

/**
 * The {@link KvStore} contract, run against every implementation: versions and reads at or below
 * a timestamp, replacement at the same timestamp, checkAndWrite against an absent, equal or
 * different newest version, whole-row reads, argument validation and per-row atomicity.
 */
public abstract class KvStoreContract {

  /** A fresh, empty store; closed by the suite after each test. */
  protected abstract KvStore newStore();

  protected KvStore store;

  @BeforeEach
  void open() {
    store = newStore();
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  static byte[] b(String s) {
    return s.getBytes(UTF_8);
  }

  static String s(byte[] b) {
    return new String(b, UTF_8);
  }

  private Optional<String> readString(Table t, String row, String col, long ts) {
    return store.read(t, b(row), col, ts).map(c -> s(c.value()));
  }

  @Test
  void missingRowReadsEmpty() {
    for (Table t : Table.values()) {
      assertEquals(Optional.empty(), store.read(t, b("nope"), "c", KvStore.LATEST));
      assertEquals(Map.of(), store.readRow(t, b("nope")));
    }
  }

  @Test
  void readRowsReadsEachRowInTheOrderAsked() {
    store.write(Table.META, b("a"), KvStore.UNVERSIONED, Map.of("x", b("1"), "y", b("2")));
    store.write(Table.META, b("c"), KvStore.UNVERSIONED, Map.of("x", b("3")));
    List<Map<String, Cell>> rows = store.readRows(Table.META, List.of(b("c"), b("nope"), b("a")));
    assertEquals(3, rows.size());
    assertEquals("3", s(rows.get(0).get("x").value()));
    assertEquals(Map.of(), rows.get(1));
    assertEquals(Set.of("x", "y"), rows.get(2).keySet());
    assertEquals("2", s(rows.get(2).get("y").value()));
    assertEquals(List.of(), store.readRows(Table.META, List.of()));
  }

  @Test
  void readReturnsNewestVersionAtOrBelowTimestamp() {
    store.write(Table.DATA, b("k"), 5, Map.of("d", b("a")));
    store.write(Table.DATA, b("k"), 10, Map.of("d", b("b")));
    store.write(Table.DATA, b("k"), 7, Map.of("d", b("c"))); // out of order on purpose

    assertEquals(Optional.empty(), readString(Table.DATA, "k", "d", 4));
    assertEquals(Optional.empty(), readString(Table.DATA, "k", "d", 0));
    assertEquals(Optional.empty(), readString(Table.DATA, "k", "d", -1));
    assertEquals(Optional.of("a"), readString(Table.DATA, "k", "d", 5));
    assertEquals(Optional.of("a"), readString(Table.DATA, "k", "d", 6));
    assertEquals(Optional.of("c"), readString(Table.DATA, "k", "d", 7));
    assertEquals(Optional.of("c"), readString(Table.DATA, "k", "d", 9));
    assertEquals(Optional.of("b"), readString(Table.DATA, "k", "d", 10));
    assertEquals(Optional.of("b"), readString(Table.DATA, "k", "d", Long.MAX_VALUE - 1));
    Cell latest = store.read(Table.DATA, b("k"), "d", KvStore.LATEST).orElseThrow();
    assertEquals(10, latest.timestamp());
    assertEquals("b", s(latest.value()));
    assertEquals(7, store.read(Table.DATA, b("k"), "d", 8).orElseThrow().timestamp());
    assertEquals(Optional.empty(), readString(Table.DATA, "k", "other", KvStore.LATEST));
  }

  @Test
  void manyVersionsAreAllKept() {
    for (int ts = 1; ts <= 50; ts++) {
      store.write(Table.DATA, b("k"), ts, Map.of("d", b("v" + ts)));
    }
    for (int ts = 1; ts <= 50; ts++) {
      assertEquals(Optional.of("v" + ts), readString(Table.DATA, "k", "d", ts));
    }
  }

  @Test
  void unversionedWritesReplace() {
    for (Table t : Table.values()) {
      store.write(t, b("r"), KvStore.UNVERSIONED, Map.of("x", b("1")));
      store.write(t, b("r"), KvStore.UNVERSIONED, Map.of("x", b("2")));
      Cell c = store.read(t, b("r"), "x", KvStore.LATEST).orElseThrow();
      assertEquals(KvStore.UNVERSIONED, c.timestamp(), t.name());
      assertEquals("2", s(c.value()), t.name());
      assertEquals("2", s(store.readRow(t, b("r")).get("x").value()), t.name());
      assertEquals(Optional.of("2"), readString(t, "r", "x", 0));
    }
  }

  @Test
  void writeAtExistingVersionReplacesIt() {
    store.write(Table.DATA, b("k"), 3, Map.of("d", b("a")));
    store.write(Table.DATA, b("k"), 4, Map.of("d", b("x")));
    store.write(Table.DATA, b("k"), 3, Map.of("d", b("b")));
    assertEquals(Optional.of("b"), readString(Table.DATA, "k", "d", 3));
    assertEquals(Optional.of("x"), readString(Table.DATA, "k", "d", KvStore.LATEST));
  }

  @Test
  void writeRowsWritesEveryRowAtTheTimestamp() {
    store.write(Table.DATA, b("a"), 5, Map.of("d", b("old")));
    store.writeRows(Table.DATA, 7, List.of(
        new KvStore.RowWrite(b("a"), Map.of("d", b("a7"))),
        new KvStore.RowWrite(b("b"), Map.of("d", b("b7"), "e", b("e7")))));
    store.writeRows(Table.DATA, 8, List.of());
    assertEquals(Optional.of("old"), readString(Table.DATA, "a", "d", 6));
    assertEquals(Optional.of("a7"), readString(Table.DATA, "a", "d", KvStore.LATEST));
    assertEquals(Optional.of("b7"), readString(Table.DATA, "b", "d", 7));
    assertEquals(Optional.of("e7"), readString(Table.DATA, "b", "e", 7));
    assertEquals(Optional.empty(), readString(Table.DATA, "b", "d", 6));
    assertThrows(IllegalArgumentException.class, () -> store.writeRows(Table.DATA, 9,
        List.of(new KvStore.RowWrite(b("c"), Map.of()))));
  }

  @Test
  void multiCellWriteAndReadRow() {
    store.write(Table.WAL, b("p"), KvStore.UNVERSIONED, Map.of("n", b("1"), "b", b("2"), "v", b("3")));
    Map<String, Cell> row = store.readRow(Table.WAL, b("p"));
    assertEquals(3, row.size());
    assertEquals("1", s(row.get("n").value()));
    assertEquals("2", s(row.get("b").value()));
    assertEquals("3", s(row.get("v").value()));
  }

  @Test
  void readRowReturnsNewestVersionOfEachColumn() {
    store.write(Table.DATA, b("k"), 1, Map.of("a", b("a1"), "b", b("b1")));
    store.write(Table.DATA, b("k"), 2, Map.of("a", b("a2")));
    Map<String, Cell> row = store.readRow(Table.DATA, b("k"));
    assertEquals(2, row.size());
    assertEquals(new CellView(2, "a2"), CellView.of(row.get("a")));
    assertEquals(new CellView(1, "b1"), CellView.of(row.get("b")));
  }

  @Test
  void tablesAreSeparate() {
    store.write(Table.WAL, b("same"), KvStore.UNVERSIONED, Map.of("c", b("wal")));
    assertEquals(Optional.empty(), readString(Table.DATA, "same", "c", KvStore.LATEST));
    assertEquals(Optional.empty(), readString(Table.META, "same", "c", KvStore.LATEST));
    assertEquals(Optional.of("wal"), readString(Table.WAL, "same", "c", KvStore.LATEST));
  }

  @Test
  void checkAndWriteIfAbsent() {
    assertTrue(store.checkAndWrite(Table.WAL, b("r"), "g", null, KvStore.UNVERSIONED,
        Map.of("g", b("first"))));
    assertFalse(store.checkAndWrite(Table.WAL, b("r"), "g", null, KvStore.UNVERSIONED,
        Map.of("g", b("second"))));
    assertEquals(Optional.of("first"), readString(Table.WAL, "r", "g", KvStore.LATEST));
  }

  @Test
  void checkAndWriteIfEqual() {
    store.write(Table.WAL, b("r"), KvStore.UNVERSIONED, Map.of("n", b("1")));
    assertTrue(store.checkAndWrite(Table.WAL, b("r"), "n", b("1"), KvStore.UNVERSIONED,
        Map.of("n", b("2"), "v", b("vote"))));
    assertEquals(Optional.of("2"), readString(Table.WAL, "r", "n", KvStore.LATEST));
    assertEquals(Optional.of("vote"), readString(Table.WAL, "r", "v", KvStore.LATEST));
  }

  @Test
  void checkAndWriteMismatchChangesNothing() {
    store.write(Table.WAL, b("r"), KvStore.UNVERSIONED, Map.of("n", b("1")));
    assertFalse(store.checkAndWrite(Table.WAL, b("r"), "n", b("0"), KvStore.UNVERSIONED,
        Map.of("n", b("9"), "v", b("vote"))));
    assertFalse(store.checkAndWrite(Table.WAL, b("r"), "n", null, KvStore.UNVERSIONED,
        Map.of("n", b("9"))));
    assertEquals(Map.of("n", new CellView(0, "1")), CellView.of(store.readRow(Table.WAL, b("r"))));
    // A present expected value never matches an absent column, in an existing or a new row.
    assertFalse(store.checkAndWrite(Table.WAL, b("r"), "absent", b("1"), KvStore.UNVERSIONED,
        Map.of("x", b("1"))));
    assertFalse(store.checkAndWrite(Table.WAL, b("new"), "n", b("1"), KvStore.UNVERSIONED,
        Map.of("x", b("1"))));
    assertEquals(Map.of(), store.readRow(Table.WAL, b("new")));
  }

  /** HBase cannot tell an empty value from an absent column, so empty values are invalid. */
  @Test
  void emptyValuesAreRejected() {
    assertThrows(IllegalArgumentException.class,
        () -> store.write(Table.WAL, b("r"), KvStore.UNVERSIONED, Map.of("e", new byte[0])));
    assertThrows(IllegalArgumentException.class,
        () -> store.checkAndWrite(Table.WAL, b("r"), "e", null, KvStore.UNVERSIONED,
            Map.of("e", new byte[0])));
    assertThrows(IllegalArgumentException.class,
        () -> store.checkAndWrite(Table.WAL, b("r"), "e", new byte[0], KvStore.UNVERSIONED,
            Map.of("x", b("1"))));
    assertEquals(Map.of(), store.readRow(Table.WAL, b("r")));
  }

  @Test
  void checkAndWriteComparesNewestVersion() {
    store.write(Table.DATA, b("k"), 1, Map.of("d", b("old")));
    store.write(Table.DATA, b("k"), 2, Map.of("d", b("new")));
    assertFalse(store.checkAndWrite(Table.DATA, b("k"), "d", b("old"), 3, Map.of("d", b("x"))));
    assertTrue(store.checkAndWrite(Table.DATA, b("k"), "d", b("new"), 3, Map.of("d", b("y"))));
    assertEquals(new CellView(3, "y"),
        CellView.of(store.read(Table.DATA, b("k"), "d", KvStore.LATEST).orElseThrow()));
    assertEquals(Optional.of("new"), readString(Table.DATA, "k", "d", 2));
  }

  @Test
  void arraysAreCopied() {
    byte[] v = b("abc");
    store.write(Table.META, b("m"), KvStore.UNVERSIONED, Map.of("a", v));
    v[0] = 'X';
    byte[] read = store.read(Table.META, b("m"), "a", KvStore.LATEST).orElseThrow().value();
    assertEquals("abc", s(read));
    read[0] = 'Y';
    assertEquals(Optional.of("abc"), readString(Table.META, "m", "a", KvStore.LATEST));
  }

  @Test
  void invalidArgumentsAreRejected() {
    assertThrows(IllegalArgumentException.class,
        () -> store.write(Table.DATA, b("k"), -1, Map.of("d", b("a"))));
    assertThrows(IllegalArgumentException.class,
        () -> store.write(Table.DATA, b("k"), KvStore.LATEST, Map.of("d", b("a"))));
    assertThrows(IllegalArgumentException.class,
        () -> store.write(Table.DATA, b("k"), 1, Map.of()));
    assertThrows(IllegalArgumentException.class,
        () -> store.write(Table.DATA, new byte[0], 1, Map.of("d", b("a"))));
    assertThrows(IllegalArgumentException.class,
        () -> store.checkAndWrite(Table.DATA, b("k"), "d", null, -5, Map.of("d", b("a"))));
    assertThrows(IllegalArgumentException.class,
        () -> store.read(Table.DATA, new byte[0], "d", KvStore.LATEST));
    assertEquals(Map.of(), store.readRow(Table.DATA, b("k")));
  }

  @Test
  void closeIsIdempotentAndLaterCallsFail() {
    store.close();
    store.close();
    assertThrows(IllegalStateException.class,
        () -> store.read(Table.WAL, b("r"), "n", KvStore.LATEST));
  }

  /** Concurrent read-modify-checkAndWrite increments: no update is lost, none applied twice. */
  @Test
  void checkAndWriteIsAtomicUnderContention() throws Exception {
    int threads = 4;
    int perThread = 25;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<Integer>> wins = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        wins.add(pool.submit(() -> {
          int won = 0;
          for (int i = 0; i < perThread; i++) {
            while (true) {
              Optional<Cell> cur = store.read(Table.META, b("ctr"), "a", KvStore.LATEST);
              long n = cur.map(c -> Long.parseLong(s(c.value()))).orElse(0L);
              if (store.checkAndWrite(Table.META, b("ctr"), "a",
                  cur.map(Cell::value).orElse(null), KvStore.UNVERSIONED,
                  Map.of("a", b(Long.toString(n + 1))))) {
                won++;
                break;
              }
            }
          }
          return won;
        }));
      }
      int total = 0;
      for (Future<Integer> f : wins) {
        total += f.get(60, TimeUnit.SECONDS);
      }
      assertEquals(threads * perThread, total);
      assertEquals(Optional.of(Integer.toString(threads * perThread)),
          readString(Table.META, "ctr", "a", KvStore.LATEST));
    } finally {
      pool.shutdownNow();
      assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
    }
  }

  /** A cell as (timestamp, string value), for assertEquals. */
  record CellView(long timestamp, String value) {
    static CellView of(Cell c) {
      return new CellView(c.timestamp(), s(c.value()));
    }

    static Map<String, CellView> of(Map<String, Cell> row) {
      Map<String, CellView> out = new java.util.HashMap<>();
      row.forEach((k, v) -> out.put(k, of(v)));
      return out;
    }
  }

  @Test
  void arrayContentsRoundTrip() {
    byte[] all = new byte[256];
    for (int i = 0; i < all.length; i++) {
      all[i] = (byte) i;
    }
    store.write(Table.WAL, all, KvStore.UNVERSIONED, Map.of("bin", all));
    assertArrayEquals(all, store.read(Table.WAL, all, "bin", KvStore.LATEST).orElseThrow().value());
  }

  // ---- collection (docs/architecture.md section 7) ----------------------------------------------

  @Test
  void deleteRowRemovesEveryColumnAndVersionAndToleratesAbsentRows() {
    store.write(Table.WAL, b("r"), KvStore.UNVERSIONED, Map.of("n", b("1"), "c", b("x")));
    store.write(Table.DATA, b("d"), 3, Map.of("d", b("v3")));
    store.write(Table.DATA, b("d"), 5, Map.of("d", b("v5")));
    store.deleteRow(Table.WAL, b("r"));
    store.deleteRow(Table.DATA, b("d"));
    store.deleteRow(Table.META, b("never-written"));
    assertTrue(store.readRow(Table.WAL, b("r")).isEmpty());
    assertEquals(Optional.empty(), readString(Table.DATA, "d", "d", KvStore.LATEST));
    assertEquals(new KvStore.TableCensus(0, 0), store.census(Table.WAL));
    assertEquals(new KvStore.TableCensus(0, 0), store.census(Table.DATA));
  }

  @Test
  void deleteVersionsBeforeKeepsThatVersionAndNewerOnes() {
    for (long ts = 1; ts <= 5; ts++) {
      store.write(Table.DATA, b("d"), ts, Map.of("d", b("v" + ts)));
    }
    store.write(Table.DATA, b("d"), 2, Map.of("other", b("o2")));
    store.deleteVersionsBefore(Table.DATA, b("d"), "d", 3);
    assertEquals(Optional.empty(), readString(Table.DATA, "d", "d", 2));
    assertEquals(Optional.of("v3"), readString(Table.DATA, "d", "d", 3));
    assertEquals(Optional.of("v4"), readString(Table.DATA, "d", "d", 4));
    assertEquals(Optional.of("v5"), readString(Table.DATA, "d", "d", KvStore.LATEST));
    assertEquals(Optional.of("o2"), readString(Table.DATA, "d", "other", 2), "other columns stay");
    store.deleteVersionsBefore(Table.DATA, b("d"), "d", 3);
    store.deleteVersionsBefore(Table.DATA, b("absent"), "d", 3);
    assertEquals(new KvStore.TableCensus(1, 4), store.census(Table.DATA));
  }

  // ---- scans (rebuilding a DC, docs/architecture.md section 12) ---------------------------------

  private List<String> scanned(Table t, String from, String to, long maxTs, int limit,
      boolean reversed) {
    List<String> out = new ArrayList<>();
    for (KvStore.ScannedRow r : store.scan(t, b(from), to == null ? null : b(to), maxTs, limit,
        reversed)) {
      StringBuilder sb = new StringBuilder(s(r.row()));
      new java.util.TreeMap<>(r.cells()).forEach((col, c) -> sb.append(' ').append(col)
          .append('@').append(c.timestamp()).append('=').append(s(c.value())));
      out.add(sb.toString());
    }
    return out;
  }

  @Test
  void scanReturnsRowsInKeyOrderWithTheNewestVersionAtOrBelowTheBound() {
    store.write(Table.DATA, b("g/a"), 3, Map.of("d", b("a3")));
    store.write(Table.DATA, b("g/a"), 7, Map.of("d", b("a7")));
    store.write(Table.DATA, b("g/b"), 9, Map.of("d", b("b9")));
    store.write(Table.DATA, b("g/c"), 1, Map.of("d", b("c1"), "e", b("e1")));
    store.write(Table.DATA, b("h/a"), 1, Map.of("d", b("other group")));
    store.write(Table.DATA, b("g/" + (char) 0xE9), 1, Map.of("d", b("high byte")));
    store.write(Table.WAL, b("x"), KvStore.UNVERSIONED, Map.of("n", b("1")));
    store.deleteRow(Table.WAL, b("x"));

    assertEquals(List.of("g/a d@7=a7", "g/b d@9=b9", "g/c d@1=c1 e@1=e1",
        "g/\u00e9 d@1=high byte"), scanned(Table.DATA, "g/", "g0", KvStore.LATEST, 10, false),
        "every row of the range, the newest version of each column, unsigned byte order");
    assertEquals(List.of("g/a d@3=a3", "g/c d@1=c1 e@1=e1", "g/\u00e9 d@1=high byte"),
        scanned(Table.DATA, "g/", "g0", 5, 10, false),
        "versions above the bound are not seen; a row without one is left out");
    assertEquals(List.of("g/a d@7=a7", "g/b d@9=b9"),
        scanned(Table.DATA, "g/", "g0", KvStore.LATEST, 2, false), "at most the limit");
    assertEquals(List.of("g/b d@9=b9", "g/c d@1=c1 e@1=e1"),
        scanned(Table.DATA, "g/b", "g/d", KvStore.LATEST, 10, false), "from inclusive, to not");
    assertEquals(List.of("g/\u00e9 d@1=high byte", "g/c d@1=c1 e@1=e1"),
        scanned(Table.DATA, "g/", "g0", KvStore.LATEST, 2, true), "reversed: from the last");
    assertEquals(List.of("h/a d@1=other group"),
        scanned(Table.DATA, "h", null, KvStore.LATEST, 10, false), "to null: the table's end");
    assertEquals(List.of(), scanned(Table.WAL, "", null, KvStore.LATEST, 10, false),
        "a deleted row is not returned");
    assertThrows(IllegalArgumentException.class,
        () -> store.scan(Table.DATA, b("g"), null, KvStore.LATEST, 0, false));
  }
}
