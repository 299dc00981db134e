package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;

/**
 * The client's second pass: DC health in fail-over, batch reads, deadlines, outcomes by handle,
 * transactions that close, checked exceptions in transaction functions, typed errors with their
 * group, and the cluster file's loaders.
 */
@Timeout(60)
class TxnClientSecondPassTest {
  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    // A request timeout well above any reply time on a loaded machine, so that only the
    // services made silent here ever time out; the deadlines below are shorter still.
    cluster = new TestCluster(Duration.ofSeconds(1));
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home, RecordingTransport transport, CommitProtocol protocol) {
    TxnClient.Builder b = cluster.client(home, protocol).random(new SplittableRandom(11));
    if (transport != null) {
      b.transport(transport);
    }
    return cluster.closeLater(b.build());
  }

  private static long sentTo(RecordingTransport rec, String dc, Class<? extends Message> type) {
    return rec.sent.stream().filter(s -> s.dc().equals(dc) && type.isInstance(s.message()))
        .count();
  }

  private void writeKeys(TxnClient c, String group, int n, int valueBytes) {
    Transaction t = c.begin(group);
    for (int i = 0; i < n; i++) {
      t.put(key(i), "v".repeat(Math.max(0, valueBytes - 3)) + i);
    }
    t.commit();
  }

  private static String key(int i) {
    return String.format("k%03d", i);
  }

  @Test
  void aSilentHomeDcIsAskedOnceThenSkippedUntilAProbeHearsIt() {
    TxnClient writer = client("B", null, CommitProtocol.CP);
    writeKeys(writer, "g", 10, 8);
    RecordingTransport rec = new RecordingTransport(cluster.network.transport("A"));
    TxnClient c = client("A", rec, CommitProtocol.CP);
    cluster.services.get("A").silent = true;

    Transaction t = TestCluster.beginAtLeast(c, "g", 1);
    for (int i = 0; i < 10; i++) {
      assertTrue(t.get(key(i)).isPresent(), key(i));
    }
    // The begin timed out at A once; the ten reads went to B at once.
    assertEquals(1, sentTo(rec, "A", Message.BeginRequest.class));
    assertEquals(0, sentTo(rec, "A", Message.ReadRequest.class));
    assertEquals(10, sentTo(rec, "B", Message.ReadRequest.class));
    assertTrue(c.silentDcs().contains("A"));
    t.put("after", "1");
    assertEquals(CommitResult.Status.COMMITTED, t.commit().status());

    // A answers again: a probe brings it back, and the next begin asks it first.
    cluster.services.get("A").silent = false;
    Poll.until("a probe hears A", Duration.ofSeconds(20), () -> c.silentDcs().isEmpty());
    assertTrue(sentTo(rec, "A", Message.VersionRequest.class) >= 1);
    long beginsAtA = sentTo(rec, "A", Message.BeginRequest.class);
    c.begin("g").abort();
    assertEquals(beginsAtA + 1, sentTo(rec, "A", Message.BeginRequest.class));
  }

  @Test
  void getAllReadsManyKeysInOneRequestWithOwnWritesMerged() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    writeKeys(c, "g", 100, 8);
    Transaction t = TestCluster.beginAtLeast(c, "g", 1);
    t.put(key(3), "mine");
    t.delete(key(4));
    int readsBefore = cluster.services.get("A").readRequests.get();
    List<String> keys = new ArrayList<>();
    keys.add("absent");
    for (int i = 99; i >= 0; i--) {
      keys.add(key(i));
    }
    keys.add(key(7)); // Twice: read once.
    Map<String, byte[]> got = t.getAll(keys);

    assertEquals(readsBefore + 1, cluster.services.get("A").readRequests.get());
    assertEquals(99, got.size()); // Not "absent", not the deleted key.
    assertEquals(key(99), got.keySet().iterator().next()); // The order asked.
    assertEquals("mine", new String(got.get(key(3)), StandardCharsets.UTF_8));
    assertFalse(got.containsKey(key(4)));
    assertTrue(new String(got.get(key(50)), StandardCharsets.UTF_8).endsWith("50"));
    // Every key read from the store joins the read set, the absent one too; a later get of one
    // of them sends nothing.
    assertTrue(t.reads().containsKey("absent"));
    assertEquals(99, t.reads().size()); // 101 distinct keys, less the put and the delete.
    assertEquals(Optional.empty(), t.get("absent"));
    assertEquals(readsBefore + 1, cluster.services.get("A").readRequests.get());
    t.put("x", "1");
    assertEquals(CommitResult.Status.COMMITTED, t.commit().status());
  }

  @Test
  void getAllSplitsARequestWhoseReplyWouldNotFitInADatagram() throws Exception {
    cluster.close();
    cluster = new TestCluster(Duration.ofSeconds(1), 2048);
    TxnClient c = client("A", null, CommitProtocol.CP);
    for (int batch = 0; batch < 4; batch++) {
      Transaction w = c.begin("g");
      for (int i = batch * 3; i < batch * 3 + 3; i++) {
        w.put(key(i), "v".repeat(400) + i);
      }
      w.commit();
    }
    Transaction t = TestCluster.beginAtLeast(c, "g", 4);
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 12; i++) {
      keys.add(key(i));
    }
    int before = cluster.services.get("A").readRequests.get();
    Map<String, byte[]> got = t.getAll(keys);
    assertEquals(12, got.size());
    for (int i = 0; i < 12; i++) {
      assertTrue(new String(got.get(key(i)), StandardCharsets.UTF_8).endsWith("" + i));
    }
    // 12 values of ~400 bytes take several 2 KB replies: the request was split.
    assertTrue(cluster.services.get("A").readRequests.get() - before >= 3);
  }

  @Test
  void aMultiTransactionReadsManyKeysPerGroupAtOnce() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    writeKeys(c, "g1", 5, 8);
    writeKeys(c, "g2", 5, 8);
    try (MultiTransaction t = c.beginMulti()) {
      assertEquals(5, t.getAll("g1", List.of(key(0), key(1), key(2), key(3), key(4))).size());
      assertEquals(2, t.getAllAsync("g2", List.of(key(0), key(4), "none")).join().size());
      assertEquals(java.util.Set.of("g1", "g2"), t.groups());
    }
  }

  @Test
  void aReadPastItsCallDeadlineFailsAndTheTransactionStaysUsable() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    writeKeys(c, "g", 1, 8);
    Transaction t = c.begin("g", TxnOptions.DEFAULTS.callTimeout(Duration.ofMillis(500)));
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = true;
    }
    DeadlineExceededException e = assertThrows(DeadlineExceededException.class,
        () -> t.get(key(0)));
    assertTrue(e.getMessage().contains("call timeout of 500 ms"), e.getMessage());
    assertTrue(t.isActive()); // Past a call's deadline only: usable, as after an unavailable read.
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = false;
    }
    assertTrue(t.get(key(0)).isPresent());
  }

  @Test
  void aBeginPastItsDeadlineFailsTypedAndNamesTheGroup() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = true;
    }
    DeadlineExceededException e = assertThrows(DeadlineExceededException.class,
        () -> c.begin("g", TxnOptions.DEFAULTS.timeout(Duration.ofMillis(100))));
    assertEquals("g", e.group());
    assertTrue(e.getMessage().contains("transaction timeout of 100 ms"), e.getMessage());
    // A request the deadline cut short says nothing about the DC.
    assertTrue(c.silentDcs().isEmpty());
  }

  @Test
  void aCommitPastItsDeadlineBeforeItsEntryWentOutIsCertainlyAborted() {
    List<org.paxoscp.check.TxnRecord> history = new java.util.concurrent.CopyOnWriteArrayList<>();
    HistoryRecorder recorder = HistoryRecorder.to(new HistoryRecorder.Listener() {
      @Override
      public void attempt(String group, org.paxoscp.check.TxnRecord record) {
        history.add(record);
      }

      @Override
      public void crossGroup(org.paxoscp.check.CrossGroupChecker.Observation observation) {
      }
    });
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.BASIC)
        .random(new SplittableRandom(3)).recordHistory(recorder)
        .callTimeout(Duration.ofSeconds(2)).build());
    Transaction t = TestCluster.beginAtLeast(c, "g", 0);
    t.put("k", "v");
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = true;
    }
    // Basic Paxos asks for promises first: with every DC silent, no ACCEPT carries the entry.
    DeadlineExceededException e = assertThrows(DeadlineExceededException.class, t::commit);
    assertEquals(CommitResult.Status.ABORTED, e.result().orElseThrow().status());
    assertFalse(t.isActive());
    assertEquals(List.of(org.paxoscp.check.TxnRecord.Status.ABORTED),
        history.stream().map(org.paxoscp.check.TxnRecord::status).toList());
  }

  @Test
  void aCommitPastItsDeadlineEndsTypedAndAnUnsentHandleSettlesAborted() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    Transaction t = TestCluster.beginAtLeast(c, "g", 0);
    t.put("k", "v");
    OutcomeHandle h = t.outcomeHandle();
    Transaction late = c.begin("g2", TxnOptions.DEFAULTS.timeout(Duration.ofMillis(1500)));
    late.put("k", "v");
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = true;
    }
    // Whether Paxos-CP's first round sent the entry (a fast-path ACCEPT) or only asked for a
    // grant or promises, the commit ends at its deadline with a typed outcome.
    TransactionException e = assertThrows(TransactionException.class, late::commit);
    assertTrue(e instanceof DeadlineExceededException || e instanceof OutcomeUnknownException,
        e.toString());
    assertFalse(late.isActive());
    if (e instanceof OutcomeUnknownException u) {
      assertEquals(u.firstPosition(), u.handle().orElseThrow().firstPosition());
    }
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = false;
    }
    t.abort();
    // The handle of a transaction that never sent its entry settles as ABORTED from any client.
    TxnClient other = client("B", null, CommitProtocol.CP);
    assertThrows(TransactionAbortedException.class,
        () -> other.outcome(OutcomeHandle.parse(h.toString())));
  }

  @Test
  void anOutcomeHandleTakenBeforeCommittingSettlesFromAnotherClient() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    Transaction t = TestCluster.beginAtLeast(c, "g", 0);
    t.put("k", "v");
    OutcomeHandle h = t.outcomeHandle();
    assertEquals(t.readPosition() + 1, h.firstPosition());
    // Unlimited promotions are capped once a handle is taken, so the range is finite.
    assertEquals(h.firstPosition() + 16, h.lastPosition());
    String stored = h.toString();
    CommitResult r = t.commit();

    TxnClient other = client("C", null, CommitProtocol.CP);
    CommitResult settled = other.outcome(OutcomeHandle.parse(stored));
    assertEquals(CommitResult.Status.COMMITTED, settled.status());
    assertEquals(r.position(), settled.position());
    assertEquals(h, OutcomeHandle.parse(stored));
    assertThrows(IllegalArgumentException.class, () -> OutcomeHandle.parse("g:1:2"));
    assertThrows(IllegalArgumentException.class,
        () -> OutcomeHandle.parse("paxoscp-outcome-v1:Zw:eA:5:4"));
  }

  @Test
  void aBasicHandleNamesOnePosition() {
    TxnClient c = client("A", null, CommitProtocol.BASIC);
    Transaction t = TestCluster.beginAtLeast(c, "g", 0);
    OutcomeHandle h = t.outcomeHandle();
    assertEquals(h.firstPosition(), h.lastPosition());
    t.abort();
    assertThrows(IllegalStateException.class, t::outcomeHandle);
  }

  @Test
  void aTransactionClosedWithoutCommitIsDiscarded() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    Transaction kept;
    try (Transaction t = c.begin("g")) {
      t.put("k", "never");
      kept = t;
    }
    assertFalse(kept.isActive());
    assertEquals(Optional.empty(), c.begin("g").getString("k"));
    try (Transaction t = c.begin("g")) {
      t.put("k", "once");
      t.commit();
    } // Closing a committed transaction does nothing.
    assertEquals(Optional.of("once"), TestCluster.beginAtLeast(c, "g", 1).getString("k"));
  }

  @Test
  void aCheckedExceptionOfTheFunctionAbortsAndIsWrapped() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    TxnFunctionException e = assertThrows(TxnFunctionException.class,
        () -> c.runInTransaction("g", t -> {
          t.put("k", "no");
          throw new IOException("disk full");
        }));
    assertInstanceOf(IOException.class, e.getCause());
    assertEquals(Optional.empty(), c.begin("g").getString("k"));
  }

  @Test
  void invalidArgumentsAreTransactionExceptionsNamingTheGroup() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    Transaction t = c.begin("orders");
    TransactionException e = assertThrows(TransactionException.class, () -> t.get(""));
    assertInstanceOf(InvalidArgumentException.class, e);
    assertEquals("orders", e.group());
    TransactionException tooLarge = assertThrows(TransactionException.class,
        () -> t.put("big", new byte[70_000]));
    assertInstanceOf(TransactionTooLargeException.class, tooLarge);
    assertEquals("orders", tooLarge.group());
    assertTrue(t.isActive());
  }

  @Test
  void anInterruptedReadFinishesTheTransactionAndKeepsTheFlag() {
    TxnClient c = client("A", null, CommitProtocol.CP);
    Transaction t = c.begin("g");
    for (String dc : TestCluster.DCS) {
      cluster.services.get(dc).silent = true;
    }
    Thread.currentThread().interrupt();
    try {
      assertThrows(TransactionInterruptedException.class, () -> t.get("k"));
      assertTrue(Thread.currentThread().isInterrupted());
      assertFalse(t.isActive());
    } finally {
      Thread.interrupted();
    }
  }

  @Test
  void theClusterFileLoadsFromAPathOrProperties(@TempDir Path dir) throws IOException {
    Map<String, String> props = new LinkedHashMap<>(cluster.config.toProperties());
    props.put("paxoscp.service.read.max.keys", "500"); // A service's own key: skipped.
    Path file = dir.resolve("cluster.properties");
    StringBuilder text = new StringBuilder();
    props.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
    Files.writeString(file, text);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
    assertEquals(cluster.config.toProperties(), ClusterConfig.load(file).toProperties());

    Properties p = new Properties();
    p.putAll(cluster.config.toProperties());
    assertEquals(cluster.config.toProperties(),
        ClusterConfig.fromProperties(p).toProperties());
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
        () -> ClusterConfig.load(dir.resolve("nope.properties")));
    assertTrue(missing.getMessage().contains("nope.properties"), missing.getMessage());
  }
}
