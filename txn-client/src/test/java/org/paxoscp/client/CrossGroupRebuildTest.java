package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.XgStep;

/**
 * A group holding a large PREPARE whose client crashed is rebuilt (issue 44, docs/rebuilding.md
 * "Lock pages"), on three in-process services whose every message travels in one sealed
 * datagram of 60,000 bytes, as over UDP; then a reader homed at the rebuilt DC meets the lock
 * there after its deadline and resolves it.
 */
@Timeout(180)
class CrossGroupRebuildTest {
  private static final List<String> GROUPS = List.of("ga", "gb");

  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofSeconds(1));
    cluster.network.limitDatagrams(cluster.config.maxDatagramBytes());
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home, Duration lockTimeout, int seed) {
    ClusterConfig config = cluster.config.withCrossGroup(new ClusterConfig.CrossGroup(25,
        lockTimeout));
    return cluster.closeLater(TxnClient.builder(config, home, CommitProtocol.CP)
        .transport(cluster.network.transport(home)).random(new SplittableRandom(seed))
        .maxAttempts(50).retryBackoff(Duration.ofMillis(5), Duration.ofMillis(200)).build());
  }

  private LogApplier.AppliedState applied(String dc, String group) {
    return new LogApplier(cluster.stores.get(dc)).appliedState(group);
  }

  @Test
  void aGroupHoldingALargePrepareOfACrashedClientIsRebuiltAndResolvedThere() throws Exception {
    TxnClient crashed = client("A", Duration.ofMillis(500), 1);
    byte[] big = new byte[40_000];
    new SplittableRandom(44).nextBytes(big);
    // Only the PREPARE in gb, as if the client died right after it; nothing follows it in gb.
    Transaction part = crashed.begin("gb");
    part.put("big", big);
    long prepared = Futures.join(part.commitUnrecorded(part.stepEntry(XgStep.prepare(
        "A-crashed-large", GROUPS, System.currentTimeMillis() + 500), true))).position();
    Poll.until("the peers apply the PREPARE", Duration.ofSeconds(30),
        () -> applied("A", "gb").position() >= prepared
            && applied("B", "gb").position() >= prepared);
    assertEquals(1, applied("A", "gb").locks().size());

    cluster.stores.get("C").wipe();
    Message.RebuildRequest rebuild = new Message.RebuildRequest("gb", "A", "C", "", false);
    // Below cluster version 7 the first snapshot page carries the lock beside the chosen value
    // (the PREPARE itself): over the datagram limit, the rebuild fails.
    cluster.services.get("C").service().followClusterVersion(() -> ClusterVersion.XG_ONE_ROUND);
    Message.ErrorReply refused = assertInstanceOf(Message.ErrorReply.class,
        cluster.services.get("C").handle("C", rebuild).join());
    assertTrue(refused.detail().contains("TOO_LARGE"), refused.detail());
    cluster.services.get("C").service().followClusterVersion(
        () -> ClusterVersion.SNAPSHOT_LOCK_PAGES);
    Message.RebuildReply r = assertInstanceOf(Message.RebuildReply.class,
        cluster.services.get("C").handle("C", rebuild).join());
    assertEquals("REBUILT", r.outcome());
    assertEquals(prepared, r.position());
    assertEquals(applied("A", "gb"), applied("C", "gb"), "the peer's lock, value included");

    // A reader at the rebuilt DC meets the lock, and past its deadline settles the transaction
    // (its PREPARE is missing in ga: ABORT) and resolves it.
    TxnClient reader = client("C", Duration.ofSeconds(30), 2);
    String seen = TestCluster.readPastLocks(reader, "gb", prepared, "big");
    assertEquals("none", seen, "the aborted PREPARE's write never becomes visible");
    assertEquals(CommitResult.Status.ABORTED, reader.crossGroupOutcome("A-crashed-large",
        GROUPS));
    Poll.until("the rebuilt DC applies the RESOLVE", Duration.ofSeconds(30),
        () -> applied("C", "gb").locks().isEmpty());
  }
}
