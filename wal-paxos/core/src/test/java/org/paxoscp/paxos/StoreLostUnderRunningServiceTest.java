package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.wal.LogValue;

/**
 * A DC's store emptied under its running service (docs/architecture.md section 12,
 * docs/rebuilding.md): the interleaving in which the objects of a running service (its acceptor,
 * applier and collector, each as the service holds it) would make a second value chosen at a
 * position, and the applier that would jump over positions it never applied to a rebuilt store.
 * Three DCs W, A and B, each an in-memory store.
 */
class StoreLostUnderRunningServiceTest {
  private static final String G = "accounts";
  private static final long P = 5;


  private final InMemoryKvStore w = new InMemoryKvStore();
  private final InMemoryKvStore a = new InMemoryKvStore();
  private final InMemoryKvStore b = new InMemoryKvStore();

  private static LogValue value(String txn) {
    return AcceptorContract.value(txn);
  }

  /** W's service: acceptor, applier and collector over W's store, as the service holds them. */
  private record Service(Acceptor acceptor, LogApplier applier, LogCollector collector) {}

  /**
   * Positions 1..P-1 chosen and applied at W, P's value c chosen by W and A (B missed it), and
   * v chosen at P+1 by W and A. Then W's store is emptied under its running service, and an
   * APPLY of P+1 and a peer's applied report reach it late. Then a learner at B runs Paxos at P
   * with W and B. Returns whether the learner's value was accepted by a majority (W and B) and
   * differs from c: a second value chosen at P.
   */
  private boolean secondValueChosen(Service ws) {
    Acceptor wa = ws.acceptor();
    Acceptor aa = new Acceptor(a);
    for (long p = 1; p < P; p++) {
      LogValue c = value("t" + p);
      assertEquals(Acceptor.ApplyResult.APPLIED, wa.apply(new Apply(G, p, c)));
      ws.applier().applyKnown(G, p, c);
    }
    Ballot b1 = Ballot.of(1, 1);
    LogValue c = value("c");
    LogValue v = value("v");
    for (Acceptor x : List.of(wa, aa)) {
      assertTrue(x.prepare(new Prepare(G, P, b1)).promised());
      assertTrue(x.accept(new Accept(G, P, b1, c)).accepted());
      assertTrue(x.prepare(new Prepare(G, P + 1, b1)).promised());
      assertTrue(x.accept(new Accept(G, P + 1, b1, v)).accepted());
    }
    // W learns c chosen at P and applies it (the one APPLY of P that reaches it).
    wa.apply(new Apply(G, P, c));
    ws.applier().applyKnown(G, P, c);
    assertEquals(P, ws.applier().knownApplied(G));
    // W's tables are emptied; its service runs on.
    w.wipe();
    // A late APPLY of P+1 reaches W's running service (what the service does with one), and a
    // peer's report of its applied position reaches W's collector.
    try {
      wa.apply(new Apply(G, P + 1, v));
      ws.applier().applyKnown(G, P + 1, v);
    } catch (RebuildingException e) {
      // refused: fine either way
    }
    ws.collector().recordSeenApplied(G, "A", P + 1);
    // A learner at B runs Paxos at P with W and B at a higher ballot.
    Acceptor ba = new Acceptor(b);
    Ballot b2 = Ballot.of(2, 3);
    List<PrepareReply> promises = new ArrayList<>();
    for (Acceptor x : List.of(wa, ba)) {
      try {
        PrepareReply r = x.prepare(new Prepare(G, P, b2));
        if (r.promised()) {
          promises.add(r);
        }
      } catch (RebuildingException e) {
        // no promise counted
      }
    }
    if (promises.size() < 2) {
      return false;
    }
    // Algorithm 2: the value of the highest vote reported, else the learner's own (a no-op).
    Optional<Vote> highest = promises.stream().map(PrepareReply::lastVote)
        .filter(java.util.Objects::nonNull).max((x, y) -> x.ballot().compareTo(y.ballot()));
    LogValue u = highest.map(Vote::value).orElse(LogValue.NOOP);
    int accepted = 0;
    for (Acceptor x : List.of(wa, ba)) {
      try {
        accepted += x.accept(new Accept(G, P, b2, u)).accepted() ? 1 : 0;
      } catch (RebuildingException e) {
        // no vote counted
      }
    }
    return accepted >= 2 && !u.equals(value("c"));
  }

  @Test
  void theRunningServiceOfAnEmptiedStoreNeverLetsASecondValueBeChosen() {
    // As the shipped service holds them: one guard for acceptor and applier.
    RebuildGuard guard = new RebuildGuard(w);
    Service ws = new Service(new Acceptor(w, guard),
        new LogApplier(w, 100, guard, LogApplier.Rules.SHIPPED), new LogCollector(w));
    assertFalse(secondValueChosen(ws));
    // The emptied store holds no meta row that makes the group served: W refuses it until
    // rebuilt, whatever rows the late APPLY and report left.
    assertTrue(StoreMarker.read(w).isEmpty());
    assertThrows(RebuildingException.class, () -> guard.verify(G, guard.current()));
    Map<String, KvStore.Cell> meta = w.readRow(Table.META, WalLayout.metaRow(G));
    assertFalse(meta.containsKey(WalLayout.FENCE), "nothing but a rebuild writes a fence");
  }

  @Test
  void plantedGuardThatTrustsAnUnfencedMetaRowLetsASecondValueBeChosen() {
    // The guard and applier of earlier versions: a meta row makes its group served, and the
    // applier writes its watermark from memory into the emptied store, creating that row.
    RebuildGuard planted = new RebuildGuard(w, new RebuildGuard.Rules(true));
    Service ws = new Service(new Acceptor(w, planted),
        new LogApplier(w, 100, planted, new LogApplier.Rules(true)), new LogCollector(w));
    assertTrue(secondValueChosen(ws), "the planted guard must let W vote with no memory");
  }

  @Test
  void theApplierNeverMovesPastPositionsItDidNotApplyToARebuiltStore() {
    LogApplier applier = new LogApplier(w);
    Acceptor acceptor = new Acceptor(w);
    for (long p = 1; p <= 8; p++) {
      LogValue c = value("t" + p);
      acceptor.apply(new Apply(G, p, c));
      applier.applyKnown(G, p, c);
    }
    assertEquals(8, applier.knownApplied(G));
    // The store is lost and rebuilt from a peer at position 3 (data as of 3, collected below).
    w.wipe();
    String id = StoreMarker.markRebuilding(w).id();
    w.write(Table.DATA, WalLayout.dataRow(G, "k-t1"), 1, Map.of(WalLayout.DATA_VALUE,
        LogApplier.encodeItem(java.util.Optional.of("t1".getBytes()))));
    assertTrue(RebuildInstall.finish(w, G, 3, org.paxoscp.wal.XgLocks.EMPTY, value("t3"), 9, id));
    StoreMarker.markRebuilt(w, id, 4);
    // The next APPLY reaches the running applier, which remembers 8.
    LogValue nine = value("t9");
    acceptor.apply(new Apply(G, 9, nine));
    long after = applier.applyKnown(G, 9, nine);
    assertEquals(3, after, "4..8 are not in this store: applying stops at 3");
    assertEquals(3, applier.appliedWatermark(G));
    assertEquals(Optional.empty(), applier.read(G, "k-t5", 9).map(String::new),
        "never read at 9, which is not applied here");
    // Once 4..8 are recorded here (catch-up), applying goes on through them, in order.
    for (long p = 4; p <= 8; p++) {
      acceptor.apply(new Apply(G, p, value("t" + p)));
    }
    assertEquals(9, applier.applyKnown(G));
    assertEquals("t5", new String(applier.read(G, "k-t5", 9).orElseThrow()));
  }

  /**
   * The lock table kept beside the watermark, across a loss: a PREPARE chosen at 2 and resolved
   * (COMMIT) at 6; the running applier remembers position 8 with no lock. The store is rebuilt
   * at 3, where the PREPARE still holds its lock. The applier takes the store's watermark and
   * table, not what it remembers: it reports the lock at 3, applies 4..9 from there, releases the
   * lock at 6 and writes the prepared value there.
   */
  @Test
  void theApplierTakesARebuiltStoresLockTableNotTheOneItRemembers() {
    LogApplier applier = new LogApplier(w);
    Acceptor acceptor = new Acceptor(w);
    java.util.List<String> groups = java.util.List.of("a-group", G);
    org.paxoscp.wal.LogEntry prepare = new org.paxoscp.wal.LogEntry("xg-p", "dc1", 1,
        new java.util.TreeSet<>(), new java.util.TreeMap<>(Map.of("locked",
            org.paxoscp.wal.Mutation.put("prepared".getBytes()))),
        org.paxoscp.wal.XgStep.prepare("xg", groups, 1));
    org.paxoscp.wal.LogEntry resolve = new org.paxoscp.wal.LogEntry("xg-r", "dc1", 5,
        new java.util.TreeSet<>(), new java.util.TreeMap<>(Map.of("locked",
            org.paxoscp.wal.Mutation.put("prepared".getBytes()))),
        org.paxoscp.wal.XgStep.resolve("xg", groups, true));
    Map<Long, LogValue> log = new java.util.TreeMap<>();
    for (long p = 1; p <= 9; p++) {
      log.put(p, p == 2 ? LogValue.of(prepare) : p == 6 ? LogValue.of(resolve)
          : value("t" + p));
    }
    for (long p = 1; p <= 8; p++) {
      acceptor.apply(new Apply(G, p, log.get(p)));
      applier.applyKnown(G, p, log.get(p));
    }
    assertEquals(8, applier.knownApplied(G));
    assertTrue(applier.appliedState(G).locks().isEmpty(), "resolved at 6");
    org.paxoscp.wal.XgLocks atThree = org.paxoscp.wal.XgLocks.EMPTY.apply(1, log.get(1L))
        .locks().apply(2, log.get(2L)).locks().apply(3, log.get(3L)).locks();
    assertEquals(1, atThree.size());
    w.wipe();
    String id = StoreMarker.markRebuilding(w).id();
    assertTrue(RebuildInstall.finish(w, G, 3, atThree, log.get(3L), 9, id));
    StoreMarker.markRebuilt(w, id, 4);
    LogApplier.AppliedState now = applier.appliedState(G);
    assertEquals(3, now.position(), "the store's watermark, not the remembered 8");
    assertEquals(atThree, now.locks(), "the store's lock table, not the remembered empty one");
    acceptor.apply(new Apply(G, 9, log.get(9L)));
    assertEquals(3, applier.applyKnown(G, 9, log.get(9L)), "4..8 are not recorded here yet");
    for (long p = 4; p <= 8; p++) {
      acceptor.apply(new Apply(G, p, log.get(p)));
    }
    assertEquals(9, applier.applyKnown(G));
    assertTrue(applier.appliedState(G).locks().isEmpty(), "released again at 6");
    assertEquals(Optional.empty(), applier.read(G, "locked", 5).map(String::new));
    assertEquals("prepared", new String(applier.read(G, "locked", 6).orElseThrow()));
  }

  @Test
  void plantedApplierThatTrustsItsMemoryJumpsOverThem() {
    LogApplier applier = new LogApplier(w, 100, new RebuildGuard(w), new LogApplier.Rules(true));
    Acceptor acceptor = new Acceptor(w);
    for (long p = 1; p <= 8; p++) {
      LogValue c = value("t" + p);
      acceptor.apply(new Apply(G, p, c));
      applier.applyKnown(G, p, c);
    }
    w.wipe();
    String id = StoreMarker.markRebuilding(w).id();
    RebuildInstall.finish(w, G, 3, org.paxoscp.wal.XgLocks.EMPTY, value("t3"), 9, id);
    StoreMarker.markRebuilt(w, id, 4);
    LogValue nine = value("t9");
    acceptor.apply(new Apply(G, 9, nine));
    assertNotEquals(3, applier.applyKnown(G, 9, nine), "the planted applier jumps");
    assertEquals(9, applier.appliedWatermark(G));
    assertTrue(applier.read(G, "k-t5", 9).isEmpty(), "t5's write is missing at 9: a stale read");
  }
  @Test
  void aServiceThatNoticedTheLossCreatesNoMetaRowAndARestartNeverMarksTheStoreServing() {
    RebuildGuard guard = new RebuildGuard(w);
    Acceptor acceptor = new Acceptor(w, guard);
    LogApplier applier = new LogApplier(w, 100, guard, LogApplier.Rules.SHIPPED);
    StoreMarker x = guard.current();
    // Another instance of the DC's service, which will not notice the loss in time.
    RebuildGuard unawareGuard = new RebuildGuard(w);
    assertEquals(x, unawareGuard.current());
    Ballot b1 = Ballot.of(1, 1);
    assertTrue(acceptor.prepare(new Prepare(G, 2, b1)).promised());
    assertTrue(acceptor.accept(new Accept(G, 2, b1, value("c"))).accepted());
    w.wipe();
    assertThrows(RebuildingException.class, () -> guard.verify(G, x));
    // A catch-up run begun before the loss goes on: it records position 1 and applies it.
    LogValue one = value("t1");
    acceptor.apply(new Apply(G, 1, one));
    assertThrows(RebuildingException.class, () -> applier.applyKnown(G, 1, one));
    assertTrue(w.readRow(Table.META, WalLayout.metaRow(G)).isEmpty(), "no meta row created");
    assertEquals(StoreMarker.Earlier.EMPTY,
        StoreMarker.initializeIfFromEarlierVersion(w, WalLayout.MARKED_META_COLUMNS));
    // One that has not noticed yet creates the row with the id it saw: a restart then knows
    // that a version with markers wrote it, so the store lost its marker.
    LogApplier unaware = new LogApplier(w, 100, unawareGuard, LogApplier.Rules.SHIPPED);
    unaware.applyKnown(G, 1, one);
    assertTrue(w.readRow(Table.META, WalLayout.metaRow(G)).containsKey(WalLayout.STORE_ID));
    assertEquals(StoreMarker.Earlier.LOST,
        StoreMarker.initializeIfFromEarlierVersion(w, WalLayout.MARKED_META_COLUMNS));
    assertThrows(RebuildingException.class,
        () -> new Acceptor(w).prepare(new Prepare(G, 2, Ballot.of(2, 2))));
  }

  @Test
  void anAppliedCellWrittenIntoTheEmptiedStoreDoesNotSurviveTheRebuild() {
    // The loss comes between the applier's data write and its watermark write: the watermark
    // lands in the emptied meta table, the data goes with the data table.
    java.util.concurrent.atomic.AtomicBoolean armed = new java.util.concurrent.atomic.AtomicBoolean();
    KvStore racing = new org.paxoscp.store.ForwardingKvStore(w) {
      @Override
      public boolean checkAndWrite(Table t, byte[] row, String column, byte[] expected, long ts,
          Map<String, byte[]> cells) {
        if (t == Table.META && column.equals(WalLayout.APPLIED) && armed.compareAndSet(true,
            false)) {
          w.wipe();
        }
        return delegate.checkAndWrite(t, row, column, expected, ts, cells);
      }
    };
    RebuildGuard guard = new RebuildGuard(racing);
    Acceptor acceptor = new Acceptor(racing, guard);
    LogApplier applier = new LogApplier(racing, 100, guard, LogApplier.Rules.SHIPPED);
    LogValue one = value("t1");
    acceptor.apply(new Apply(G, 1, one));
    armed.set(true);
    applier.applyKnown(G, 1, one);
    // Rebuilt at position 0 (no peer had applied anything yet).
    String id = StoreMarker.markRebuilding(w).id();
    assertTrue(RebuildInstall.finish(w, G, 0, org.paxoscp.wal.XgLocks.EMPTY, null, 5, id));
    LogApplier fresh = new LogApplier(w);
    assertEquals(0, fresh.appliedWatermark(G), "the rebuild's position, not the stale cell's");
    // Position 1 caught up from the peers is applied over the rebuild's explicit 0.
    acceptor.apply(new Apply(G, 1, one));
    assertEquals(1, fresh.applyKnown(G));
    assertEquals("t1", new String(fresh.read(G, "k-t1", 1).orElseThrow()));
  }

  @Test
  void aGroupRebuiltAtPositionZeroCanStillBeBroughtUpLater() {
    w.wipe();
    String id = StoreMarker.markRebuilding(w).id();
    assertTrue(RebuildInstall.finish(w, G, 0, org.paxoscp.wal.XgLocks.EMPTY, null, 5, id));
    StoreMarker.markRebuilt(w, id, 4);
    // Later the group fell behind past its peers' GC: rebuilt again (kept state, no fence)
    // over the explicit 0 the first rebuild wrote.
    assertTrue(RebuildInstall.finish(w, G, 3, org.paxoscp.wal.XgLocks.EMPTY, value("t3"), 0,
        ""));
    assertEquals(3, new LogApplier(w).appliedWatermark(G));
  }

  @Test
  void aCopyOfAnEarlierRebuildThatLandsLateLeavesTheLaterRebuildsRow() {
    w.wipe();
    String first = StoreMarker.markRebuilding(w).id();
    w.wipe(); // lost again while the first rebuild's copy of the group stood still
    String second = StoreMarker.markRebuilding(w).id();
    assertTrue(RebuildInstall.finish(w, G, 20, org.paxoscp.wal.XgLocks.EMPTY, value("t20"), 30,
        second));
    assertTrue(StoreMarker.markRebuilt(w, second, 4));
    assertThrows(IllegalStateException.class, () -> RebuildInstall.finish(w, G, 5,
        org.paxoscp.wal.XgLocks.EMPTY, value("t5"), 10, first));
    RebuildGuard guard = new RebuildGuard(w);
    assertEquals(30, guard.bounds(G, guard.current()).fence());
    assertEquals(20, new LogApplier(w).appliedWatermark(G));
    assertThrows(RebuildingException.class,
        () -> new Acceptor(w).prepare(new Prepare(G, 25, Ballot.of(7, 1))));
    // And were the late row left (its thread died before putting the later one back), the
    // group would not be served with its lower fence.
    w.write(Table.META, WalLayout.metaRow(G), KvStore.UNVERSIONED, Map.of(WalLayout.FENCE,
        WalLayout.encodeLong(10), WalLayout.REBUILT_BY,
        first.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    assertThrows(RebuildingException.class,
        () -> new Acceptor(w).prepare(new Prepare(G, 25, Ballot.of(8, 1))));
  }

  // ---- commutative updates: a fold needs the versions below its position -------------------

  private static org.paxoscp.wal.LogEntry entry(String txn, Map<String,
      org.paxoscp.wal.Mutation> writes) {
    return new org.paxoscp.wal.LogEntry(txn, "W", 0, new java.util.TreeSet<>(),
        new java.util.TreeMap<>(writes));
  }

  private static org.paxoscp.wal.Mutation put(String v) {
    return org.paxoscp.wal.Mutation.put(v.getBytes());
  }

  /** Position 1 puts k = hello; position 2 holds an add to k (refused: not a counter) and j. */
  private static final LogValue ONE = LogValue.of(entry("p1", Map.of("k", put("hello"))));
  private static final LogValue TWO = LogValue.of(
      entry("refused", Map.of("k", org.paxoscp.wal.Mutation.add(1), "j", put("x"))),
      entry("after", Map.of("other", put("y"))));

  private boolean hasAnyVersion(String key) {
    return w.read(Table.DATA, WalLayout.dataRow(G, key), WalLayout.DATA_VALUE, KvStore.LATEST)
        .isPresent();
  }

  /**
   * A late APPLY reaches a running service whose store was emptied: folding the add from the
   * empty store would apply it (absent counts as 0) and write k and j, which the log refuses and
   * which no later apply would overwrite. The fold is written only under the marker it began
   * with, so nothing is written.
   */
  @Test
  void aFoldFromAnEmptiedStoreWritesNothing() {
    LogApplier applier = new LogApplier(w);
    Acceptor acceptor = new Acceptor(w);
    acceptor.apply(new Apply(G, 1, ONE));
    assertEquals(1, applier.applyKnown(G, 1, ONE));
    w.wipe();
    assertThrows(RebuildingException.class, () -> applier.applyKnown(G, 2, TWO));
    assertFalse(hasAnyVersion("j"), "the refused entry's put was written into the emptied store");
    assertFalse(hasAnyVersion("k"));
  }

  /**
   * A store rebuilt at position 2 holds each key's newest version at or below 2 and nothing
   * older: position 2's fold cannot be done again there. An applier that still remembers
   * position 1 writes nothing, and the question whether position 2's updates applied is
   * answered TOO_OLD there, not from a base the store does not hold.
   */
  @Test
  void noFoldAtOrBelowTheRebuildPosition() {
    LogApplier applier = new LogApplier(w);
    Acceptor acceptor = new Acceptor(w);
    acceptor.apply(new Apply(G, 1, ONE));
    assertEquals(1, applier.applyKnown(G, 1, ONE));
    // Lost, and rebuilt from a peer at position 2: k's newest version there is hello, at 1.
    w.wipe();
    String id = StoreMarker.markRebuilding(w).id();
    RebuildInstall.writeItems(w, G, List.of(new RebuildInstall.Item("k", 1,
        LogApplier.encodeItem(Optional.of("hello".getBytes()))), new RebuildInstall.Item(
            "other", 2, LogApplier.encodeItem(Optional.of("y".getBytes())))));
    assertTrue(RebuildInstall.finish(w, G, 2, org.paxoscp.wal.XgLocks.EMPTY, TWO, 9, id));
    StoreMarker.markRebuilt(w, id, 3);
    // The running applier still remembers position 1 of the lost store.
    assertThrows(RebuildingException.class, () -> applier.applyKnown(G, 2, TWO));
    assertFalse(hasAnyVersion("j"));
    assertEquals("hello", new String(new LogApplier(w).read(G, "k", 2).orElseThrow()));
    // A service that looks at the rebuilt store now does not fold position 2 again.
    LogApplier fresh = new LogApplier(w);
    assertThrows(TooOldException.class, () -> fresh.refusedAt(G, 2, TWO));
    // Position 3 folds from the copied versions.
    LogValue three = LogValue.of(entry("p3", Map.of("c", org.paxoscp.wal.Mutation.add(4))));
    new Acceptor(w).apply(new Apply(G, 3, three));
    assertEquals(3, fresh.applyKnown(G));
    assertEquals(Map.of(), fresh.refusedAt(G, 3, three));
    assertEquals("4", new String(fresh.read(G, "c", 3).orElseThrow()));
  }

  /**
   * The store is lost and rebuilt at position 1 (and another request of the service sees the
   * rebuilt store) after the applier learned position 2 applied in the lost store and before it
   * folds position 3: the rebuilt store lacks position 2's put of "abc", so a fold from it
   * would apply the add (absent counts as 0) that the log refuses. The fold is written only
   * under the store its watermark came from, so nothing is written.
   */
  @Test
  void aFoldIsWrittenOnlyUnderTheStoreItsWatermarkCameFrom() {
    LogValue p1 = LogValue.of(entry("p1", Map.of("other", put("y"))));
    LogValue p2 = LogValue.of(entry("p2", Map.of("k", put("abc"))));
    LogValue p3 = LogValue.of(entry("p3", Map.of("k", org.paxoscp.wal.Mutation.add(1))));
    RebuildGuard[] guard = new RebuildGuard[1];
    boolean[] lost = new boolean[1];
    org.paxoscp.store.ForwardingKvStore fw = new org.paxoscp.store.ForwardingKvStore(w) {
      @Override
      public Optional<KvStore.Cell> read(Table table, byte[] row, String column,
          long maxTimestamp) {
        Optional<KvStore.Cell> c = super.read(table, row, column, maxTimestamp);
        if (!lost[0] && c.isPresent() && table == Table.WAL
            && java.util.Arrays.equals(row, WalLayout.walRow(G, 3))) {
          lost[0] = true;
          w.wipe();
          String id = StoreMarker.markRebuilding(w).id();
          RebuildInstall.writeItems(w, G, List.of(new RebuildInstall.Item("other", 1,
              LogApplier.encodeItem(Optional.of("y".getBytes())))));
          RebuildInstall.finish(w, G, 1, org.paxoscp.wal.XgLocks.EMPTY, p1, 9, id);
          StoreMarker.markRebuilt(w, id, 2);
          guard[0].refresh(); // another request of the service looks at the store
        }
        return c;
      }
    };
    guard[0] = new RebuildGuard(fw);
    LogApplier applier = new LogApplier(fw, 100, guard[0], LogApplier.Rules.SHIPPED);
    Acceptor acceptor = new Acceptor(fw, guard[0]);
    acceptor.apply(new Apply(G, 1, p1));
    acceptor.apply(new Apply(G, 2, p2));
    assertEquals(2, applier.applyKnown(G));
    acceptor.apply(new Apply(G, 3, p3));
    assertThrows(RebuildingException.class, () -> applier.applyKnown(G));
    assertTrue(lost[0]);
    assertFalse(hasAnyVersion("k"), "a fold from the rebuilt store was written");
  }
}
