package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.version.ClusterVersionRow;
import org.paxoscp.version.UnsupportedClusterVersionException;

/** A service's cluster version: where it comes from, when it refuses, what the operator writes. */
class ClusterVersionsTest {
  private static final ClusterVersion.Range ALL =
      new ClusterVersion.Range(ClusterVersion.OLDEST, ClusterVersion.LATEST);
  private final List<ClusterVersions> started = new ArrayList<>();

  @AfterEach
  void tearDown() {
    started.forEach(ClusterVersions::close);
  }

  /** Peers that answer a version request with {@code peerVersion} (0: they do not answer). */
  private static final class Peers implements Transport {
    final int peerVersion;
    final Set<Integer> wire;
    final java.util.concurrent.atomic.AtomicInteger asked =
        new java.util.concurrent.atomic.AtomicInteger();
    volatile int applied;

    Peers(int peerVersion, Set<Integer> wire) {
      this.peerVersion = peerVersion;
      this.wire = wire;
    }

    @Override
    public String localDc() {
      return "V";
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      return CompletableFuture.failedFuture(new TransportTimeoutException("down"));
    }

    @Override
    public CompletableFuture<Message.VersionReply> askVersions(String dc, Duration timeout) {
      asked.incrementAndGet();
      return peerVersion == 0 ? CompletableFuture.failedFuture(new TransportTimeoutException(
          "no answer")) : CompletableFuture.completedFuture(new Message.VersionReply(
              peerVersion, 0, 0, 1, ClusterVersion.LATEST, -1, "", ""));
    }

    @Override
    public CompletableFuture<Set<Integer>> wireVersionsOf(String dc, Duration timeout) {
      return CompletableFuture.completedFuture(wire);
    }

    @Override
    public void clusterVersion(int version) {
      applied = version;
    }

    @Override
    public void send(String dc, Message message) {
    }

    @Override
    public void close() {
    }
  }

  private ClusterVersions start(KvStore store, Transport t, ClusterVersion.Range range) {
    ClusterVersions v = new ClusterVersions("V", List.of("O", "C"), store, t, range,
        Duration.ofMillis(50), Optional::empty);
    started.add(v);
    v.start(Duration.ofMillis(20));
    return v;
  }

  private static InMemoryKvStore withGroup() {
    InMemoryKvStore s = new InMemoryKvStore(true);
    s.write(KvStore.Table.META, WalLayout.metaRow("g"), KvStore.UNVERSIONED,
        Map.of(WalLayout.APPLIED, WalLayout.encodeLong(3)));
    return s;
  }

  @Test
  void aNewClusterStartsAtTheNewestVersionItSpeaksAndWritesIt() {
    InMemoryKvStore store = new InMemoryKvStore(true);
    Peers t = new Peers(0, Set.of());
    ClusterVersions v = start(store, t, new ClusterVersion.Range(1, 2));
    assertEquals(2, v.active());
    assertEquals(2, t.applied, "the transport speaks it");
    assertEquals(2, ClusterVersionRow.read(store).orElseThrow().active());
  }

  @Test
  void aDcWithoutARowTakesItsPeersVersion() {
    InMemoryKvStore store = withGroup();
    ClusterVersions v = start(store, new Peers(2, Set.of()), ALL);
    assertEquals(2, v.active());
    assertEquals(2, ClusterVersionRow.read(store).orElseThrow().active());
  }

  @Test
  void peersOfABuildBeforeClusterVersionsAreReadFromTheirWire() {
    assertEquals(ClusterVersion.WIRE_3, start(withGroup(), new Peers(0, Set.of(3)), ALL).active());
    assertEquals(ClusterVersion.WIRE_4, start(withGroup(), new Peers(0, Set.of(3, 4)), ALL)
        .active());
    assertEquals(ClusterVersion.WIRE_4, start(withGroup(), new Peers(0, Set.of(4)), ALL)
        .active(), "never inferred above 2: the raise to 3 drains wire version 3 first");
  }

  @Test
  void nothingIsWrittenFromAGuess() {
    InMemoryKvStore store = withGroup();
    ClusterVersions v = start(store, new Peers(0, Set.of()), ALL);
    assertEquals(0, v.active(), "no peer answered: not known yet");
    assertTrue(ClusterVersionRow.read(store).isEmpty());
    // Nor into a store that lost its contents (no marker): its rebuild is ahead.
    InMemoryKvStore lost = new InMemoryKvStore(false);
    assertEquals(2, start(lost, new Peers(2, Set.of()), ALL).active());
    assertTrue(ClusterVersionRow.read(lost).isEmpty());
  }

  @Test
  void aProcessRefusesAClusterOutsideItsRangeOrFencedAboveIt() {
    InMemoryKvStore store = new InMemoryKvStore(true);
    ClusterVersionRow.create(store, 3);
    UnsupportedClusterVersionException x = assertThrows(UnsupportedClusterVersionException.class,
        () -> start(store, new Peers(0, Set.of()), new ClusterVersion.Range(1, 2)));
    assertEquals(3, x.clusterVersion());
    assertTrue(x.getMessage().contains("DC V runs at cluster version 3")
        && x.getMessage().contains("speaks cluster versions 1-2"), x.getMessage());

    InMemoryKvStore fenced = new InMemoryKvStore(true);
    ClusterVersionRow.create(fenced, 1);
    assertTrue(ClusterVersionRow.fence(fenced, 0, 2));
    assertTrue(!ClusterVersionRow.fence(fenced, 0, 2), "attempt 0 is over");
    x = assertThrows(UnsupportedClusterVersionException.class,
        () -> start(fenced, new Peers(0, Set.of()), new ClusterVersion.Range(1, 1)));
    assertTrue(x.getMessage().contains("being raised"), x.getMessage());
    assertEquals(1, start(fenced, new Peers(0, Set.of()), ALL).active(),
        "a process that speaks the fence starts at the active version");
  }

  @Test
  void theOperatorFencesAndRaisesOnlyFromWhatTheRowHolds() {
    InMemoryKvStore store = new InMemoryKvStore(true);
    ClusterVersionRow.create(store, 1);
    Peers t = new Peers(0, Set.of());
    ClusterVersions v = start(store, t, new ClusterVersion.Range(1, 2));
    Message.VersionReply r = change(v, true, 0, 3);
    assertTrue(r.detail().contains("speaks cluster versions 1-2"), r.detail());
    r = change(v, true, 0, 2);
    assertEquals("", r.detail());
    assertEquals(2, r.fence());
    assertEquals(1, r.attempt());
    assertEquals("", change(v, true, 0, 2).detail(), "the same fence again (its reply lost, "
        + "sent to another service of the DC) is done");
    assertEquals("", change(v, true, 1, 0).detail(), "attempt 1 removed");
    r = change(v, true, 0, 2);
    assertTrue(r.detail().startsWith("refused") && r.fence() == 0, "a copy of the first fence "
        + "after its removal sets nothing: " + r.detail());
    assertEquals(1, r.attempt(), "the refusal carries the row's attempts");
    assertEquals("", change(v, true, 1, 2).detail());
    assertTrue(change(v, true, 1, 0).detail().startsWith("refused"),
        "a copy of the first removal leaves the second fence");
    assertEquals(2, ClusterVersionRow.read(store).orElseThrow().fence());
    r = change(v, false, 2, 3);
    assertTrue(r.detail().startsWith("refused"), r.detail());
    r = change(v, false, 1, 2);
    assertEquals("", r.detail());
    assertEquals(2, r.active());
    assertEquals(0, r.fence(), "a raise clears its fence");
    assertEquals(2, t.applied);
    assertEquals("", change(v, false, 1, 2).detail(), "a copy of the raise is done, changing "
        + "nothing");
    assertEquals(new ClusterVersionRow.State(2, 0, 2), ClusterVersionRow.read(store)
        .orElseThrow());

    store.wipe();
    r = change(v, true, 2, 2);
    assertTrue(r.detail().contains("not serving"), r.detail());
    assertTrue(ClusterVersionRow.read(store).isEmpty(), "nothing written into a lost store");
  }

  private static Message.VersionReply change(ClusterVersions v, boolean fence, int from, int to) {
    return (Message.VersionReply) v.handle(new Message.VersionChange(fence, from, to));
  }

  @Test
  void aRunningServiceFollowsARaiseOfItsRowAndNeverGoesBack() {
    InMemoryKvStore store = new InMemoryKvStore(true);
    ClusterVersionRow.create(store, 1);
    Peers t = new Peers(0, Set.of());
    ClusterVersions v = start(store, t, ALL);
    assertTrue(ClusterVersionRow.raise(store, 1, 2));
    Poll.until("the raise taken", Duration.ofSeconds(10), () -> v.active() == 2);
    assertEquals(2, t.applied);
    // A lost store comes back rebuilt without the row: the service puts back what it ran at.
    store.wipe();
    StoreMarker.initialize(store);
    Poll.until("the row put back", Duration.ofSeconds(10),
        () -> ClusterVersionRow.read(store).map(s -> s.active() == 2).orElse(false));
  }

  @Test
  void aDcLeftBehindByARaiseCatchesUpWithItsPeers() {
    InMemoryKvStore store = new InMemoryKvStore(true);
    ClusterVersionRow.create(store, 1);
    ClusterVersions v = start(store, new Peers(2, Set.of()), ALL);
    Poll.until("raised as its peers", Duration.ofSeconds(10), () -> v.active() == 2
        && ClusterVersionRow.read(store).orElseThrow().active() == 2);
    // A peer above what this process speaks is not followed.
    InMemoryKvStore other = new InMemoryKvStore(true);
    ClusterVersionRow.create(other, 1);
    Peers above = new Peers(3, Set.of());
    ClusterVersions held = start(other, above, new ClusterVersion.Range(1, 2));
    Poll.until("peers asked at a few polls", Duration.ofSeconds(10), () -> above.asked.get() >= 6);
    assertEquals(1, held.active());
    assertEquals(1, ClusterVersionRow.read(other).orElseThrow().active());
  }

  @Test
  void aStoreHoldingOnlyTheVersionRowLostItsMarker() {
    InMemoryKvStore store = new InMemoryKvStore(false);
    ClusterVersionRow.create(store, 2);
    assertEquals(StoreMarker.Earlier.LOST,
        StoreMarker.initializeIfFromEarlierVersion(store, WalLayout.MARKED_META_COLUMNS));
  }
}
