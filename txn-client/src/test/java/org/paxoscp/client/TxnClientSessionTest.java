package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;

/** Session positions in bounded memory: an evicted group still reads its own writes. */
@Timeout(60)
class TxnClientSessionTest {
  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofMillis(300));
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  /** A client of DC A that caches the session position of one group only. */
  private TxnClient oneGroupClient() {
    return cluster.closeLater(TxnClient.builder(cluster.config.withClientSessionGroups(1), "A",
            CommitProtocol.CP)
        .transport(cluster.network.transport("A")).random(new SplittableRandom(3)).build());
  }

  @Test
  void aGroupWhoseSessionEntryWasEvictedStillReadsItsOwnWrites() {
    TxnClient c = oneGroupClient();
    // A misses the commit: its own DC will be behind when the client comes back to the group.
    cluster.services.get("A").silent = true;
    Transaction t = c.begin("g");
    t.put("k", "mine");
    long p = t.commit().position();
    assertEquals(p, c.sessionPosition("g"));

    // Another group pushes g out of the one-entry cache; it settles once B and C applied p.
    c.begin("h").commit();
    Poll.until("g's entry settled and dropped", Duration.ofSeconds(10),
        () -> c.sessionStats().dropped() >= 1);
    assertEquals(0, c.sessionPosition("g"), "the client no longer knows g's position");
    cluster.services.get("A").silent = false;
    long appliedAtA = new LogApplier(cluster.stores.get("A")).appliedWatermark("g");
    assertTrue(appliedAtA < p, "A must still be behind for this test to mean anything: "
        + appliedAtA + " vs " + p);

    // A plain begin at A would read below p; the client asks a majority for a floor first.
    Transaction again = c.begin("g");
    assertTrue(again.readPosition() >= p, "read position " + again.readPosition()
        + " below the client's own commit at " + p);
    assertEquals(Optional.of("mine"), again.getString("k"));
    assertEquals(1, c.sessionStats().floorQueries());
  }

  @Test
  void withinTheBoundNothingIsAskedAndAGroupNeverSeenReadsFromZero() {
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.CP).build());
    for (int i = 0; i < 5; i++) {
      Transaction t = c.begin("g" + i);
      t.put("k", "v" + i);
      t.commit();
    }
    for (int i = 0; i < 5; i++) {
      assertEquals(Optional.of("v" + i), c.begin("g" + i).getString("k"));
    }
    TxnClient.SessionStats s = c.sessionStats();
    assertEquals(5, s.cached());
    assertEquals(0, s.settling());
    assertEquals(0, s.dropped());
    assertEquals(0, s.floorQueries());
  }

  @Test
  void anEvictedEntryIsKeptWhileNoMajorityHasAppliedIt() {
    TxnClient c = oneGroupClient();
    Transaction t = c.begin("g");
    t.put("k", "v");
    long p = t.commit().position();
    // Two of three DCs fall silent: g's entry cannot settle, so it is never dropped.
    cluster.services.get("B").silent = true;
    cluster.services.get("C").silent = true;
    c.begin("h");
    Poll.until("g's entry moved to settling", Duration.ofSeconds(5),
        () -> c.sessionStats().settling() == 1);
    assertEquals(p, c.sessionPosition("g"), "a settling entry still counts");
    assertEquals(0, c.sessionStats().dropped());
    assertTrue(c.begin("g").readPosition() >= p);
    assertEquals(0, c.sessionStats().floorQueries());
  }
}
