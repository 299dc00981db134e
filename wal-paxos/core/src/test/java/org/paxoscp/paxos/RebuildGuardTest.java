package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.wal.LogValue;

/**
 * A DC that lost its store votes nowhere its lost promises and votes may have counted
 * (docs/architecture.md section 12): not at all in a group it has not rebuilt, and not at or below
 * a rebuilt group's fence; everywhere else as before.
 */
class RebuildGuardTest {
  private static final String G = "accounts";
  private final InMemoryKvStore store = new InMemoryKvStore();
  private final Acceptor acceptor = new Acceptor(store);

  private static LogValue value(String txn) {
    return AcceptorContract.value(txn);
  }

  private boolean promised(long position) {
    return acceptor.prepare(new Prepare(G, position, Ballot.of(1, 1))).promised();
  }

  /** What the rebuild {@code rebuildId} installs for a group: its fence and its id. */
  private void fence(String group, long fence, String rebuildId) {
    store.write(Table.META, WalLayout.metaRow(group), KvStore.UNVERSIONED,
        Map.of(WalLayout.FENCE, WalLayout.encodeLong(fence), WalLayout.REBUILT_BY,
            rebuildId.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  private static void checkServed(Acceptor a, String group) {
    a.guard().checkServed(group, a.guard().current());
  }

  @Test
  void aNewStoreServesEveryGroup() {
    assertEquals(StoreMarker.State.SERVING, StoreMarker.read(store).orElseThrow().state());
    assertTrue(promised(1));
    assertTrue(acceptor.grant(new GrantRequest(G, 2, "V1")).granted());
    assertTrue(acceptor.accept(new Accept(G, 3, Ballot.FAST, value("t"))).accepted());
    assertEquals(false, RebuildGuard.mayFence(acceptor.guard().current()),
        "a store that lost nothing has no fences");
  }

  @Test
  void aWipedStoreVotesNowhereButStillRecordsChosenValues() {
    assertTrue(promised(1));
    store.wipe();
    Acceptor fresh = new Acceptor(store);
    assertTrue(StoreMarker.read(store).isEmpty(), "the marker went with the rows");
    assertThrows(RebuildingException.class,
        () -> fresh.prepare(new Prepare(G, 1, Ballot.of(1, 2))));
    assertThrows(RebuildingException.class,
        () -> fresh.accept(new Accept(G, 5, Ballot.FAST, value("t"))));
    assertEquals(Optional.empty(), fresh.lastVote(G, 5), "refused before writing");
    assertThrows(RebuildingException.class,
        () -> fresh.grant(new GrantRequest(G, 5, "V1")));
    assertThrows(RebuildingException.class, () -> checkServed(fresh, G));
    assertEquals(Acceptor.ApplyResult.APPLIED, fresh.apply(new Apply(G, 1, value("c"))));
  }

  @Test
  void theRunningAcceptorNoticesTheWipeToo() {
    assertTrue(promised(1));
    assertTrue(acceptor.accept(new Accept(G, 1, Ballot.of(1, 1), value("t"))).accepted());
    store.wipe();
    assertThrows(RebuildingException.class, () -> promised(2));
    assertThrows(RebuildingException.class,
        () -> acceptor.accept(new Accept(G, 2, Ballot.FAST, value("t"))));
  }

  @Test
  void aMetaRowWrittenAfterTheLossServesNobody() {
    assertTrue(promised(1));
    assertTrue(acceptor.accept(new Accept(G, 1, Ballot.of(1, 1), value("t"))).accepted());
    store.wipe();
    // What an APPLY or a collector that did not notice the loss may leave behind: a meta row
    // without a fence, in a store without a marker, then being rebuilt.
    store.write(Table.META, WalLayout.metaRow(G), KvStore.UNVERSIONED,
        Map.of(WalLayout.APPLIED, WalLayout.encodeLong(1)));
    assertThrows(RebuildingException.class, () -> promised(1), "the running acceptor");
    Acceptor fresh = new Acceptor(store);
    assertThrows(RebuildingException.class,
        () -> fresh.prepare(new Prepare(G, 1, Ballot.of(1, 2))), "a fresh one");
    String id = StoreMarker.markRebuilding(store).id();
    assertThrows(RebuildingException.class, () -> promised(1), "being rebuilt: not its row");
    fence(G, 5, "rebuild-earlier");
    assertThrows(RebuildingException.class, () -> promised(6), "another rebuild's row");
    fence(G, 5, id);
    assertTrue(promised(6), "the row the rebuild under way installed");
  }

  @Test
  void aRequestBegunUnderOneMarkerIsNotAnsweredUnderAnother() {
    RebuildGuard guard = acceptor.guard();
    StoreMarker before = guard.current();
    guard.verify(G, before);
    long epoch = guard.epoch();
    store.wipe();
    assertThrows(RebuildingException.class, () -> guard.verify(G, before));
    assertEquals(epoch + 1, guard.epoch(), "the loss is a change");
    StoreMarker.markRebuilt(store, StoreMarker.markRebuilding(store).id(), 4);
    StoreMarker after = guard.current();
    assertEquals(StoreMarker.State.SERVING, after.state());
    assertThrows(RebuildingException.class, () -> guard.verify(G, before),
        "serving again, but another store: a request begun before is not answered");
    guard.verify(G, after);
    assertEquals(2, guard.changes(), "lost, then serving again (rebuilding was never seen)");
  }

  @Test
  void aRebuiltGroupVotesOnlyAboveItsFence() {
    store.wipe();
    String id = StoreMarker.markRebuilding(store).id();
    fence(G, 10, id);
    Acceptor a = new Acceptor(store);
    checkServed(a, G);
    assertThrows(RebuildingException.class, () -> a.prepare(new Prepare(G, 10, Ballot.of(1, 1))));
    assertThrows(RebuildingException.class,
        () -> a.accept(new Accept(G, 9, Ballot.FAST, value("t"))));
    assertEquals(Optional.empty(), a.lastVote(G, 9), "the fast vote was refused before writing");
    assertThrows(RebuildingException.class, () -> a.grant(new GrantRequest(G, 10, "V1")));
    assertTrue(a.prepare(new Prepare(G, 11, Ballot.of(1, 1))).promised());
    assertTrue(a.accept(new Accept(G, 12, Ballot.FAST, value("t"))).accepted());
    assertThrows(RebuildingException.class, () -> checkServed(a, "other"),
        "a group not rebuilt yet is not served while the store is being rebuilt");
    assertEquals(Acceptor.ApplyResult.APPLIED, a.apply(new Apply(G, 5, value("c"))),
        "a chosen value is recorded at a fenced position");
    assertEquals(Optional.of(value("c")), a.chosen(G, 5));
  }

  @Test
  void afterTheRebuildAGroupWithoutStateIsFencedAtTheStoreFence() {
    store.wipe();
    StoreMarker.markRebuilt(store, StoreMarker.markRebuilding(store).id(), 4);
    Acceptor a = new Acceptor(store);
    checkServed(a, "new-group");
    assertThrows(RebuildingException.class,
        () -> a.prepare(new Prepare("new-group", 4, Ballot.of(1, 1))));
    assertTrue(a.prepare(new Prepare("new-group", 5, Ballot.of(1, 1))).promised());
    // Once the group has a meta row (its first position applied), the store's fence still holds.
    store.write(Table.META, WalLayout.metaRow("new-group"), KvStore.UNVERSIONED,
        Map.of(WalLayout.APPLIED, WalLayout.encodeLong(1)));
    assertThrows(RebuildingException.class,
        () -> a.grant(new GrantRequest("new-group", 3, "V1")));
    assertTrue(RebuildGuard.mayFence(a.guard().current()));
  }

  @Test
  void aStoreFromAVersionWithoutMarkersIsToldApartFromALostOne() {
    store.wipe();
    assertEquals(StoreMarker.Earlier.EMPTY, earlier(), "empty: lost");
    store.write(Table.WAL, WalLayout.walRow(G, 1), KvStore.UNVERSIONED,
        Map.of(WalLayout.PROMISE, Ballot.of(1, 1).encode()));
    assertEquals(StoreMarker.Earlier.EMPTY, earlier(),
        "an empty meta table (emptied first) is a lost store whatever else is left");
    for (int i = 0; i < 1500; i++) {
      // More rows than one page of the scan: every row is looked at.
      store.write(Table.META, WalLayout.metaRow(G + i), KvStore.UNVERSIONED,
          Map.of(WalLayout.APPLIED, WalLayout.encodeLong(3)));
    }
    store.write(Table.META, WalLayout.metaRow("zz-last"), KvStore.UNVERSIONED,
        Map.of(WalLayout.APPLIED, WalLayout.encodeLong(1), WalLayout.STORE_ID,
            "3b1f".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    assertEquals(StoreMarker.Earlier.LOST, earlier(),
        "a row written by a version with markers: the store lost its marker, so its contents");
    assertTrue(StoreMarker.read(store).isEmpty());
    store.deleteRow(Table.META, WalLayout.metaRow("zz-last"));
    assertEquals(StoreMarker.Earlier.MARKED_NOW, earlier());
    assertEquals(StoreMarker.State.SERVING, StoreMarker.read(store).orElseThrow().state());
    assertEquals(StoreMarker.Earlier.MARKED, earlier());
  }

  private StoreMarker.Earlier earlier() {
    return StoreMarker.initializeIfFromEarlierVersion(store, WalLayout.MARKED_META_COLUMNS);
  }

  @Test
  void markersChangeOnlyAlongTheirPath() {
    assertThrows(IllegalStateException.class, () -> StoreMarker.markRebuilding(store),
        "a serving store lost nothing");
    String serving = StoreMarker.read(store).orElseThrow().id();
    assertThrows(IllegalStateException.class, () -> StoreMarker.markRebuilt(store, serving, 4),
        "a store that lost nothing is not completed by naming its id");
    store.wipe();
    String id = StoreMarker.markRebuilding(store).id();
    assertEquals(id, StoreMarker.markRebuilding(store).id(), "a resumed rebuild keeps its mark");
    assertEquals(false, StoreMarker.initialize(store), "initialize never overwrites a marker");
    assertThrows(IllegalStateException.class, () -> StoreMarker.markRebuilt(store, "rebuild-other", 4),
        "another rebuild's completion");
    assertEquals(StoreMarker.State.REBUILDING, StoreMarker.read(store).orElseThrow().state());
    assertTrue(StoreMarker.markRebuilt(store, id, 4));
    StoreMarker done = StoreMarker.read(store).orElseThrow();
    assertFalse(StoreMarker.markRebuilt(store, id, 4), "a repeated completion acts once");
    assertEquals(done, StoreMarker.read(store).orElseThrow());
    assertEquals(StoreMarker.State.SERVING, done.state());
    assertEquals(id, done.rebuiltFrom());
    assertEquals(4, done.unknownGroupFence());
    assertNotEquals(id, done.id(), "a rebuilt store gets a new id");
  }

  @Test
  void aCompletionOfAnEarlierRebuildNeverEndsALaterOne() {
    store.wipe();
    String first = StoreMarker.markRebuilding(store).id();
    assertTrue(StoreMarker.markRebuilt(store, first, 4));
    store.wipe(); // lost again, while the first rebuild's completion may still be on the wire
    String second = StoreMarker.markRebuilding(store).id();
    assertThrows(IllegalStateException.class, () -> StoreMarker.markRebuilt(store, first, 4));
    assertEquals(StoreMarker.State.REBUILDING, StoreMarker.read(store).orElseThrow().state());
    store.wipe(); // and a store without a marker is never completed either
    assertThrows(IllegalStateException.class, () -> StoreMarker.markRebuilt(store, second, 4));
    assertTrue(StoreMarker.read(store).isEmpty());
  }
}
