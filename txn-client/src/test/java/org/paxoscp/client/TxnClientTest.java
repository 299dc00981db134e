package org.paxoscp.client;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Optional;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogValue;

@Timeout(60)
class TxnClientTest {
  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofSeconds(1));
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home, CommitProtocol protocol) {
    return cluster.closeLater(cluster.client(home, protocol).random(new SplittableRandom(1))
        .build());
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void commitsAndReadsBack(CommitProtocol protocol) {
    TxnClient c = client("A", protocol);
    Transaction t = c.begin("g");
    assertEquals(0, t.readPosition());
    assertEquals(Optional.empty(), t.get("x"));
    t.put("x", "one");
    t.put("empty", new byte[0]);
    assertEquals(Optional.of("one"), t.getString("x"), "own buffered write first (A1)");
    CommitResult r = t.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals(1, r.position());
    assertEquals(t.txnId(), r.txnId());
    assertFalse(t.isActive());

    Transaction u = c.begin("g");
    assertEquals(1, u.readPosition());
    assertEquals(Optional.of("one"), u.getString("x"));
    assertArrayEquals(new byte[0], u.get("empty").orElseThrow(),
        "an empty value is a value, not an absent key");
    u.delete("x");
    assertEquals(Optional.empty(), u.get("x"));
    assertEquals(2, u.commit().position());
    assertEquals(Optional.empty(), c.begin("g").get("x"));

    LogValue chosen = cluster.log("A", "g", 1).get(1L);
    assertTrue(chosen.contains(t.txnId()));
    assertEquals(new java.util.TreeSet<>(java.util.Set.of("x")),
        chosen.find(t.txnId()).orElseThrow().readSet(), "the read of x is in the read set");
  }

  @Test
  void readYourWritesAcrossTransactionsAndDcs() {
    TxnClient a = client("A", CommitProtocol.CP);
    for (int i = 1; i <= 3; i++) {
      Transaction t = a.begin("g");
      t.put("k", "v" + i);
      assertEquals(i, t.commit().position());
      assertEquals(i, a.sessionPosition("g"));
    }
    // With A's services silent, begin and the read fail over to B, which has not necessarily
    // applied position 3 yet (APPLY is one-way): asked for session position 3, it catches up
    // before answering, so the client still sees its own last write.
    cluster.services.get("A").silent = true;
    try {
      Transaction t = a.begin("g");
      assertTrue(t.readPosition() >= 3);
      assertEquals(Optional.of("v3"), t.getString("k"));
    } finally {
      cluster.services.get("A").silent = false;
    }
    RecordingTransport rec2 = new RecordingTransport(cluster.network.transport("A"));
    TxnClient fresh = cluster.closeLater(cluster.client("A", CommitProtocol.CP).transport(rec2)
        .build());
    Transaction w = fresh.begin("g");
    w.put("k", "v4");
    long p = w.commit().position();
    fresh.begin("g");
    Message.BeginRequest last = (Message.BeginRequest) rec2.sent.stream()
        .map(RecordingTransport.Sent::message).filter(m -> m instanceof Message.BeginRequest)
        .reduce((x, y) -> y).orElseThrow();
    assertEquals(p, last.position(), "begin carries the last commit position");
  }

  @Test
  void aCommitThatLosesItsPositionMovesTheSessionThere() {
    TxnClient winner = client("A", CommitProtocol.BASIC);
    TxnClient loser = client("B", CommitProtocol.BASIC);
    Transaction late = loser.begin("g");
    assertEquals(0, late.readPosition());
    late.put("y", "late");
    Transaction first = winner.begin("g");
    first.put("x", "first");
    assertEquals(1, first.commit().position());

    TransactionAbortedException e = assertThrows(TransactionAbortedException.class, late::commit);
    assertEquals(1, e.decidedPosition(), "it learned position 1 taken");
    assertEquals(1, loser.sessionPosition("g"));
    Transaction again = loser.begin("g");
    assertEquals(1, again.readPosition(), "the next begin reads where it lost, not below");
    again.put("y", "again");
    assertEquals(2, again.commit().position());
  }

  @Test
  void readOnlyCommitIsImmediate() {
    TxnClient c = client("A", CommitProtocol.BASIC);
    Transaction w = c.begin("g");
    w.put("k", "v");
    long p = w.commit().position();
    // Another client has no session in the group: it reads at what A has applied, and the APPLY
    // of w is one-way.
    Poll.until("A applied " + p, Duration.ofSeconds(5),
        () -> new LogApplier(cluster.stores.get("A")).appliedWatermark("g") >= p);
    RecordingTransport rec = new RecordingTransport(cluster.network.transport("A"));
    TxnClient reader = cluster.closeLater(cluster.client("A", CommitProtocol.BASIC).transport(rec)
        .build());
    Transaction t = reader.begin("g");
    assertEquals(Optional.of("v"), t.getString("k"));
    assertEquals(Optional.of("v"), t.getString("k"));
    long before = rec.sent.size();
    CommitResult r = t.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals(t.readPosition(), r.position());
    assertEquals(before, rec.sent.size(), "nothing sent for a read-only commit");
    assertEquals(1, rec.count(Message.ReadRequest.class), "a repeated get is served from cache");
  }

  @Test
  void invalidArgumentsAndFinishedTransactions() {
    TxnClient c = client("A", CommitProtocol.CP);
    assertThrows(InvalidArgumentException.class, () -> c.begin(""));
    assertThrows(InvalidArgumentException.class, () -> c.begin("g".repeat(257)));
    Transaction t = c.begin("g");
    assertThrows(InvalidArgumentException.class, () -> t.get(""));
    assertThrows(InvalidArgumentException.class, () -> t.put("k".repeat(1025), "v"));
    assertThrows(InvalidArgumentException.class, () -> t.put("a\0b", "v"));
    assertThrows(InvalidArgumentException.class, () -> t.put("k", (byte[]) null));
    assertTrue(t.isActive(), "bad arguments change nothing");
    t.put("k", "v");
    t.commit();
    assertThrows(IllegalStateException.class, () -> t.get("k"));
    assertThrows(IllegalStateException.class, () -> t.put("k", "v"));
    assertThrows(IllegalStateException.class, t::commit);
    t.abort();
    Transaction u = c.begin("g");
    u.abort();
    u.abort();
    assertThrows(IllegalStateException.class, u::commit);
  }

  @Test
  void closeIsIdempotentAndRefusesLaterCalls() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    c.close();
    c.close();
    assertThrows(IllegalStateException.class, () -> c.begin("g"));
    t.put("k", "v");
    assertThrows(IllegalStateException.class, t::commit);
  }

  @Test
  void builderValidates() {
    // Without a transport the client opens its own UDP transport, and closes it with itself.
    try (TxnClient own = TxnClient.builder(cluster.config, "A", CommitProtocol.CP).build()) {
      assertEquals("A", own.homeDc());
    }
    assertThrows(IllegalArgumentException.class,
        () -> TxnClient.builder(cluster.config, "Z", CommitProtocol.CP)
            .transport(cluster.network.transport("Z")).build());
    assertThrows(IllegalArgumentException.class,
        () -> TxnClient.builder(cluster.config, "A", CommitProtocol.CP)
            .transport(cluster.network.transport("B")).build());
    assertThrows(IllegalArgumentException.class,
        () -> cluster.client("A", CommitProtocol.CP).maxAttempts(0));
  }

  @Test
  void directStoreServesReadsAndHomeAcceptorWithoutMessages() {
    TxnClient writer = client("B", CommitProtocol.CP);
    Transaction w = writer.begin("g");
    w.put("k", "v1");
    w.commit();

    RecordingTransport rec = new RecordingTransport(cluster.network.transport("A"));
    TxnClient direct = cluster.closeLater(cluster.client("A", CommitProtocol.CP).transport(rec)
        .directStore(cluster.stores.get("A")).build());
    Transaction t = direct.begin("g");
    assertEquals(1, t.readPosition());
    assertEquals(Optional.of("v1"), t.getString("k"));
    t.put("k", "v2");
    long p = t.commit().position();
    assertEquals(0, rec.count(Message.ReadRequest.class), "reads come from the direct store");
    assertTrue(rec.sent.stream().noneMatch(s -> s.dc().equals("A")
        && s.message() instanceof Message.Paxos), "home acceptor is called in process");
    assertTrue(rec.sent.stream().anyMatch(s -> s.dc().equals("B")
        && s.message() instanceof Message.Paxos), "other DCs still get the protocol");
    // The client applied its own commit to the home store.
    Poll.until("home DC applied " + p, Duration.ofSeconds(5),
        () -> new LogApplier(cluster.stores.get("A")).appliedWatermark("g") >= p);
    Transaction u = direct.begin("g");
    assertEquals(Optional.of("v2"), u.getString("k"));
    assertEquals(0, rec.count(Message.ReadRequest.class));

    // The direct store unavailable: reads go through a service (A's fails too, B answers).
    cluster.stores.get("A").setAvailable(false);
    try {
      assertEquals(Optional.of("v2"), direct.begin("g").getString("k"));
      assertTrue(rec.count(Message.ReadRequest.class) >= 1);
    } finally {
      cluster.stores.get("A").setAvailable(true);
    }
  }

  @Test
  void stringAndBytesAgree() {
    TxnClient c = client("A", CommitProtocol.CP);
    Transaction t = c.begin("g");
    t.put("k", "héllo");
    assertArrayEquals("héllo".getBytes(UTF_8), t.get("k").orElseThrow());
  }
}
