package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgStep;

/** Transactions across entity groups on three real in-process services, judged by the checker. */
@Timeout(180)
class CrossGroupTest {
  private static final List<String> GROUPS = List.of("ga", "gb", "gc", "gd");

  private TestCluster cluster;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofSeconds(1));
  }

  @AfterEach
  void tearDown() throws Exception {
    cluster.close();
  }

  private TxnClient client(String home, CommitProtocol protocol, Duration lockTimeout, int seed) {
    ClusterConfig config = cluster.config.withCrossGroup(new ClusterConfig.CrossGroup(25,
        lockTimeout));
    return cluster.closeLater(TxnClient.builder(config, home, protocol)
        .transport(cluster.network.transport(home)).random(new SplittableRandom(seed))
        .maxAttempts(50).retryBackoff(Duration.ofMillis(5), Duration.ofMillis(200)).build());
  }

  private CrossGroupChecker.Result check(List<CrossGroupChecker.Observation> obs) {
    return CrossGroupChecker.check(TestCluster.quiescentLogs(cluster, GROUPS), Map.of(), obs);
  }

  /** The entries of {@code group}'s log in order, from the union of the DCs' logs. */
  private List<LogEntry> entries(String group) {
    return entries(group, 0);
  }

  /**
   * As above, once some DC has recorded position {@code atLeast} (a commit returns when a
   * majority accepted; the chosen value reaches the stores with APPLY, a moment later).
   */
  private List<LogEntry> entries(String group, long atLeast) {
    SortedMap<Long, LogValue> union = new TreeMap<>();
    TestCluster.quiescentLogs(cluster, List.of(group), Map.of(group, atLeast)).get(group)
        .values().forEach(union::putAll);
    List<LogEntry> out = new ArrayList<>();
    union.values().forEach(v -> out.addAll(v.entries()));
    return out;
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void commitsAcrossGroupsAndEveryGroupShowsItsWrites(CommitProtocol protocol) {
    TxnClient c = client("A", protocol, Duration.ofSeconds(5), 1);
    MultiTransaction t = c.beginMulti();
    assertEquals(Optional.empty(), t.getString("gb", "x"));
    t.put("ga", "x", "a1");
    t.put("gb", "x", "b1");
    t.put("gc", "y", "c1");
    assertEquals(new TreeSet<>(List.of("ga", "gb", "gc")), t.groups());
    CommitResult r = t.commit();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals("ga", r.group(), "the coordinator is the first group");
    assertFalse(t.isActive());

    // The same client reads its own writes in every group (it waits for its RESOLVEs).
    assertEquals(Optional.of("a1"), c.begin("ga").getString("x"));
    assertEquals(Optional.of("b1"), c.begin("gb").getString("x"));
    assertEquals(Optional.of("c1"), c.begin("gc").getString("y"));
    assertEquals(CommitResult.Status.COMMITTED, c.crossGroupOutcome(t.txnId(), t.groups()));

    List<LogEntry> inB = entries("gb");
    assertEquals(XgStep.Kind.PREPARE, inB.get(0).xg().kind());
    assertEquals(XgStep.Kind.RESOLVE, inB.get(inB.size() - 1).xg().kind());
    assertTrue(inB.get(inB.size() - 1).xg().commit());
    // One round: a PREPARE in the coordinator too, reading the close key; then the DECIDE,
    // which also releases the coordinator's locks (no RESOLVE there).
    List<LogEntry> inA = entries("ga", 2);
    assertEquals(XgStep.Kind.PREPARE, inA.get(0).xg().kind());
    assertTrue(inA.get(0).readSet().contains(XgStep.closeKey(t.txnId())));
    LogEntry decide = inA.get(inA.size() - 1);
    assertEquals(XgStep.Kind.DECIDE, decide.xg().kind());
    assertTrue(decide.xg().commit());
    assertTrue(decide.writes().containsKey(XgStep.decisionKey(t.txnId())));
    assertEquals(2, inA.size(), "the coordinator holds its PREPARE and the DECIDE: " + inA);

    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(1, verdict.committed());
  }

  /**
   * Below cluster version 6 a commit takes the two rounds of the builds before it: PREPARE in
   * every group but the coordinator, then DECIDE(COMMIT) there, carrying its writes.
   */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void belowClusterVersion6ACommitTakesTwoRounds(CommitProtocol protocol) {
    TxnClient c = cluster.closeLater(TxnClient.builder(cluster.config.withCrossGroup(
        new ClusterConfig.CrossGroup(25, Duration.ofSeconds(5))), "A", protocol)
        .transport(cluster.network.transport("A")).random(new SplittableRandom(14))
        .clusterVersion(ClusterVersion.COMMUTATIVE_UPDATES).build());
    MultiTransaction t = c.beginMulti();
    t.put("ga", "x", "a2");
    t.put("gb", "x", "b2");
    assertEquals(CommitResult.Status.COMMITTED, t.commit().status());
    assertEquals(Optional.of("a2"), c.begin("ga").getString("x"));
    assertEquals(Optional.of("b2"), c.begin("gb").getString("x"));
    List<LogEntry> inA = entries("ga", 1);
    assertEquals(1, inA.size(), "no PREPARE in the coordinator: " + inA);
    assertEquals(XgStep.Kind.DECIDE, inA.get(0).xg().kind());
    assertTrue(inA.get(0).writes().containsKey("x"), "the DECIDE carries the coordinator's writes");
    assertFalse(entries("gb").get(0).readSet().contains(XgStep.closeKey(t.txnId())),
        "a two-round PREPARE reads no close key");
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(1, verdict.committed());
  }

  @Test
  void oneGroupStaysTheOrdinaryPath() {
    TxnClient c = client("A", CommitProtocol.CP, Duration.ofSeconds(5), 2);
    MultiTransaction t = c.beginMulti();
    t.put("ga", "k", "v");
    CommitResult r = t.commit();
    assertEquals(1, r.position());
    LogEntry e = entries("ga", 1).get(0);
    assertEquals(null, e.xg(), "a one-group transaction writes an ordinary entry");
  }

  @Test
  void tooManyGroupsFailsBeforeAnythingIsSent() {
    ClusterConfig config = cluster.config.withCrossGroup(new ClusterConfig.CrossGroup(2,
        Duration.ofSeconds(5)));
    TxnClient c = cluster.closeLater(TxnClient.builder(config, "A", CommitProtocol.CP)
        .transport(cluster.network.transport("A")).build());
    MultiTransaction t = c.beginMulti();
    t.put("ga", "k", "v");
    t.put("gb", "k", "v");
    InvalidArgumentException e = assertThrows(InvalidArgumentException.class,
        () -> t.put("gc", "k", "v"));
    assertTrue(e.getMessage().contains("paxoscp.client.xg.max.groups"), e.getMessage());
    assertTrue(t.isActive(), "the transaction stays usable");
    t.abort();
    assertTrue(cluster.log("A", "ga", 10).isEmpty() && cluster.log("A", "gb", 10).isEmpty());
  }

  /** A group whose lock table would outgrow its budget takes no more PREPAREs for a while. */
  @Test
  void aGroupFullOfLocksRefusesMorePreparesBeforeSendingThem() throws Exception {
    cluster.close();
    cluster = new TestCluster(Duration.ofSeconds(1), 4096); // budget: 1,024 bytes of keys
    TxnClient crashed = client("A", CommitProtocol.CP, Duration.ofSeconds(60), 8);
    String longKey = "k".repeat(200);
    long last = 0;
    for (int i = 0; i < 5; i++) {
      Transaction p = crashed.begin("gb");
      p.put(longKey + i, "v");
      last = Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare("A-stuck-" + i,
          List.of("ga", "gb"), System.currentTimeMillis() + 60_000)))).position();
    }
    TxnClient c = client("B", CommitProtocol.CP, Duration.ofSeconds(60), 9);
    TestCluster.beginAtLeast(c, "gb", last).abort();
    MultiTransaction t = c.beginMulti();
    t.put("ga", "x", "1");
    t.put("gb", "y", "1");
    long before = entries("gb").size();
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class, t::commit);
    assertTrue(e.getMessage().contains("unresolved cross-group transactions"), e.getMessage());
    assertEquals(before, entries("gb").size(), "nothing was sent to gb");
    assertTrue(entries("ga").isEmpty(), "nothing was sent to ga");
  }

  /**
   * More unresolved PREPAREs in one group than a begin reply can list (datagrams of 4,096 bytes,
   * about 6,000 bytes of locked keys): a begin still answers, with the first locks (in id order)
   * and the cut mark; a transaction cannot check its reads then, so it helps resolve the first
   * lock and
   * aborts retryably, and once enough are resolved it reads and commits.
   */
  @Test
  void moreLocksThanABeginReplyHoldsAreResolvedInIdOrder() throws Exception {
    cluster.close();
    cluster = new TestCluster(Duration.ofSeconds(1), 4096); // a reply lists <= 2,048 bytes
    TxnClient crashed = client("A", CommitProtocol.CP, Duration.ofSeconds(60), 11);
    String longKey = "k".repeat(200);
    long last = 0;
    for (int i = 0; i < 25; i++) {
      Transaction p = crashed.begin("gb");
      p.put(longKey + i, "v");
      last = Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare("A-stuck-" + (char) ('a' + i),
          List.of("ga", "gb"), System.currentTimeMillis() + 200)))).position();
    }
    TxnClient reader = client("B", CommitProtocol.CP, Duration.ofSeconds(60), 12);
    Transaction first = TestCluster.beginAtLeast(reader, "gb", last);
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class,
        () -> first.get("other"));
    assertTrue(e.getMessage().contains("more unresolved cross-group transactions than a begin "
        + "reply lists"), e.getMessage());
    assertTrue(e.getMessage().contains("A-stuck-a "), "the first id first: " + e.getMessage());
    String v = reader.runInTransaction("gb", x -> {
      String old = x.getString("other").orElse("none");
      x.put("other", "after");
      return old;
    });
    assertEquals("none", v);
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertTrue(verdict.aborted() >= 10, "the first were aborted past their deadline: "
        + verdict.summary());
  }

  /**
   * Cut tables in two groups whose locks were taken in opposite orders: 20 one-round
   * transactions, crashed with every PREPARE chosen, in ga in the order a..t and in gb in t..a.
   * Cut by age, each group would list first a lock the other group's list cuts off, so neither
   * could ever be settled; cut in id order, both list A-stuck-a first, and settling goes on
   * from the least id: every one is decided COMMIT (every PREPARE is in) and resolved.
   */
  @Test
  void cutTablesOfTwoGroupsNeverBlockEachOther() throws Exception {
    cluster.close();
    cluster = new TestCluster(Duration.ofSeconds(1), 4096); // a reply lists <= 2,048 bytes
    TxnClient crashed = client("A", CommitProtocol.CP, Duration.ofMillis(200), 15);
    List<String> groups = List.of("ga", "gb");
    String longKey = "k".repeat(200);
    long deadline = System.currentTimeMillis() + 200;
    for (int n = 0; n < 2; n++) {
      for (int j = 0; j < 20; j++) {
        int i = n == 0 ? j : 19 - j;
        Transaction p = crashed.begin(groups.get(n));
        p.put(longKey + i, "v" + i);
        Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare("A-stuck-" + (char) ('a' + i),
            groups, deadline), true)));
      }
    }
    TxnClient reader = cluster.closeLater(cluster.client("B", CommitProtocol.CP)
        .random(new SplittableRandom(16)).maxAttempts(400)
        .retryBackoff(Duration.ofMillis(5), Duration.ofMillis(50)).build());
    for (String g : groups) {
      assertEquals(Optional.of("v7"), reader.runInTransaction(g,
          x -> x.getString(longKey + 7)), "every stuck transaction committed and was resolved");
    }
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(20, verdict.committed(), verdict.summary());
  }

  /**
   * The two budgets at different settings: the services' begin replies list at most half their
   * datagram of locks (here 2,048 bytes), a client refuses to PREPARE where the table would pass
   * a quarter of its own. A client with four times the services' datagram PREPAREs past what a
   * begin lists (then the services' cut applies: it refuses reads there and resolves the
   * first listed); one with a quarter of the services' datagram refuses to PREPARE first (its
   * budget of 256 bytes, helping resolve the first listed). Either way begins answer and the
   * transaction commits once the
   * stuck locks are resolved.
   */
  @Test
  void lockBudgetsAtMismatchedSettingsStillLetTransactionsThrough() throws Exception {
    cluster.close();
    cluster = new TestCluster(Duration.ofSeconds(1), 4096);
    TxnClient crashed = client("A", CommitProtocol.CP, Duration.ofSeconds(60), 13);
    String longKey = "k".repeat(150);
    for (int i = 0; i < 18; i++) { // about 2,900 bytes of locked keys in gb
      Transaction p = crashed.begin("gb");
      p.put(longKey + i, "v");
      Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare("A-stuck-" + (char) ('a' + i),
          List.of("ga", "gb"), System.currentTimeMillis() + 200))));
    }
    for (int datagram : List.of(16_384, 1024)) {
      ClusterConfig config = cluster.config.withMaxDatagramBytes(datagram)
          .withCrossGroup(new ClusterConfig.CrossGroup(25, Duration.ofSeconds(5)));
      TxnClient c = cluster.closeLater(TxnClient.builder(config, "B", CommitProtocol.CP)
          .transport(cluster.network.transport("B")).random(new SplittableRandom(datagram))
          .maxAttempts(200).retryBackoff(Duration.ofMillis(5), Duration.ofMillis(100)).build());
      c.runInMultiTransaction(t -> {
        t.put("ga", "x", "a" + datagram);
        t.put("gb", "y" + datagram, "b");
        return null;
      });
      assertEquals(Optional.of("b"), c.runInTransaction("gb", x -> x.getString("y" + datagram)),
          "datagram " + datagram + ": committed past the stuck locks");
    }
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(18, verdict.aborted(), "every stuck PREPARE aborted past its deadline: "
        + verdict.summary());
  }

  /** A recording client writes one line per transaction across groups, of its own shape. */
  @Test
  void aTransactionAcrossGroupsIsRecordedAsOneHistoryLine(@TempDir Path tmp) throws Exception {
    Path file = tmp.resolve("h.jsonl");
    TxnClient c;
    try (HistoryRecorder rec = HistoryRecorder.append(file)) {
      c = cluster.closeLater(TxnClient.builder(cluster.config, "A", CommitProtocol.CP)
          .transport(cluster.network.transport("A")).recordHistory(rec).build());
      MultiTransaction t = c.beginMulti();
      t.getString("ga", "r");
      t.put("ga", "x", "1");
      t.put("gb", "y", "2");
      CommitResult r = t.commit();
      c.close();
      List<String> lines = Files.readAllLines(file);
      assertEquals(1, lines.size(), "one line, no one-group lines for its parts: " + lines);
      String line = lines.get(0);
      assertTrue(line.startsWith("{\"xg\":\"" + t.txnId() + "\""), line);
      assertTrue(line.contains("\"groups\":[\"ga\",\"gb\"]"), line);
      assertTrue(line.contains("\"outcome\":\"COMMITTED\",\"decidePos\":" + r.position()),
          line);
      assertTrue(line.contains("{\"key\":\"r\",\"value\":null,\"version\":0}"), line);
    }
  }

  /** A client that crashed after its PREPAREs: a reader waits, then aborts it past the deadline. */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aClientCrashedAfterPrepareBlocksOnlyUntilItsDeadline(CommitProtocol protocol)
      throws Exception {
    TxnClient crashed = client("A", protocol, Duration.ofMillis(800), 3);
    MultiTransaction t = crashed.beginMulti();
    t.put("ga", "k", "a");
    t.put("gb", "k", "b");
    // Only the PREPARE in gb, as if the client died before its DECIDE.
    Transaction part = crashed.begin("gb");
    part.put("k", "b");
    List<String> groups = List.of("ga", "gb");
    // A deadline well past the read below on a loaded machine: before it, the lock holds.
    long prepared = Futures.join(part.commitUnrecorded(part.stepEntry(XgStep.prepare(t.txnId(), groups,
        System.currentTimeMillis() + 3_000)))).position();
    t.abort();

    TxnClient other = client("B", protocol, Duration.ofSeconds(5), 4);
    Transaction blocked = TestCluster.beginAtLeast(other, "gb", prepared);
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class,
        () -> blocked.get("k"));
    assertTrue(e.getMessage().contains(t.txnId()), e.getMessage());
    // Its retries meet the lock until the deadline passes; then a reader aborts the PREPARE.
    java.util.concurrent.atomic.AtomicReference<String> v =
        new java.util.concurrent.atomic.AtomicReference<>();
    org.paxoscp.testing.Poll.until("a write past the lock once its deadline passed",
        Duration.ofSeconds(20), () -> {
          try {
            v.set(other.runInTransaction("gb", x -> {
              String old = x.getString("k").orElse("none");
              x.put("k", "after");
              return old;
            }));
            return true;
          } catch (TransactionAbortedException retry) {
            return false;
          }
        });
    assertEquals("none", v.get(), "the aborted PREPARE's write never became visible");
    assertEquals(CommitResult.Status.ABORTED, other.crossGroupOutcome(t.txnId(), groups));
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(1, verdict.aborted());
  }

  /** A client that crashed after its DECIDE(COMMIT): the first reader finishes the RESOLVE. */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aClientCrashedAfterDecideIsResolvedByAReader(CommitProtocol protocol) {
    TxnClient crashed = client("A", protocol, Duration.ofSeconds(30), 5);
    List<String> groups = List.of("ga", "gb");
    String xg = "A-crashed-after-decide";
    Transaction pb = crashed.begin("gb");
    pb.put("k", "b");
    long prepared = Futures.join(pb.commitUnrecorded(pb.stepEntry(XgStep.prepare(xg, groups,
        System.currentTimeMillis() + 30_000)))).position();
    Transaction pa = crashed.begin("ga");
    pa.put("k", "a");
    Futures.join(pa.commitUnrecorded(pa.stepEntry(XgStep.decide(xg, groups, true))));

    // A reader at or above the PREPARE's position (below it, "none" is a correct answer too):
    // it meets the lock, finishes the RESOLVE, and reads past it on a retry.
    TxnClient reader = client("C", protocol, Duration.ofSeconds(30), 6);
    String seen = null;
    int metLock = 0;
    for (int attempt = 0; attempt < 50 && seen == null; attempt++) {
      Transaction x = TestCluster.beginAtLeast(reader, "gb", prepared);
      try {
        seen = x.getString("k").orElse("none");
        x.commit();
      } catch (TransactionAbortedException e) {
        metLock++;
      }
    }
    assertTrue(metLock > 0, "the first read at the PREPARE's position met its lock");
    assertEquals("b", seen, "the reader resolved the committed PREPARE and read past it");
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(1, verdict.committed());
  }

  /**
   * One round: a client that crashed once its PREPAREs were chosen everywhere, before any
   * DECIDE, committed. A reader that meets a lock after the deadline sees the transaction's
   * locks in every group, decides COMMIT and resolves, and reads the prepared write. The reader
   * settles so even while it still speaks cluster version 5 (it has not learned the raise yet):
   * the PREPARE it met says how to settle it, not the reader's version.
   */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aOneRoundClientCrashedAfterEveryPrepareCommitted(CommitProtocol protocol) {
    TxnClient crashed = client("A", protocol, Duration.ofMillis(500), 8);
    List<String> groups = List.of("ga", "gb");
    int committed = 0;
    for (int readerVersion : List.of(ClusterVersion.LATEST, ClusterVersion.COMMUTATIVE_UPDATES)) {
      String xg = "A-one-round-every-prepare-" + readerVersion;
      String value = "value-" + readerVersion;
      long deadline = System.currentTimeMillis() + 500;
      long prepared = 0;
      for (String g : groups) {
        Transaction p = crashed.begin(g);
        p.put("k", g + "-" + value);
        prepared = Futures.join(p.commitUnrecorded(p.stepEntry(XgStep.prepare(xg, groups,
            deadline), true))).position();
      }
      TxnClient reader = cluster.closeLater(cluster.client("C", protocol)
          .random(new SplittableRandom(9 + readerVersion)).clusterVersion(readerVersion)
          .build());
      String seen = TestCluster.readPastLocks(reader, "gb", prepared, "k");
      assertEquals("gb-" + value, seen, "reader at version " + readerVersion
          + ": every PREPARE was chosen, the transaction committed");
      assertEquals(CommitResult.Status.COMMITTED, reader.crossGroupOutcome(xg, groups));
      assertEquals(Optional.of("ga-" + value), reader.runInTransaction("ga",
          x -> x.getString("k")), "the coordinator's write too");
      committed++;
    }
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(committed, verdict.committed());
  }

  /**
   * One round: a client that crashed with its PREPARE chosen in one group only. A reader that
   * meets the lock after the deadline closes the other group (a CLOSE there), decides ABORT,
   * and a PREPARE of the transaction sent there afterwards is refused.
   */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void aOneRoundClientCrashedAfterOnePrepareIsClosedAndAborted(CommitProtocol protocol) {
    TxnClient crashed = client("A", protocol, Duration.ofMillis(500), 10);
    List<String> groups = List.of("ga", "gb");
    String xg = "A-one-round-one-prepare";
    long deadline = System.currentTimeMillis() + 500;
    Transaction late = crashed.begin("ga"); // Its PREPARE in ga, sent only after the close.
    late.put("k", "ga-value");
    Transaction pb = crashed.begin("gb");
    pb.put("k", "gb-value");
    long prepared = Futures.join(pb.commitUnrecorded(pb.stepEntry(XgStep.prepare(xg, groups,
        deadline), true))).position();

    TxnClient reader = client("C", protocol, Duration.ofSeconds(30), 11);
    String seen = TestCluster.readPastLocks(reader, "gb", prepared, "k");
    assertEquals("none", seen, "the PREPARE in ga was missing: the transaction aborted");
    assertEquals(CommitResult.Status.ABORTED, reader.crossGroupOutcome(xg, groups));
    assertTrue(entries("ga").stream().anyMatch(e -> e.xg() != null
        && e.xg().kind() == XgStep.Kind.CLOSE && e.xg().txn().equals(xg)),
        "the reader closed ga before deciding ABORT");
    assertThrows(TransactionAbortedException.class, () -> Futures.join(late.commitUnrecorded(
        late.stepEntry(XgStep.prepare(xg, groups, deadline), true))),
        "a PREPARE after its group's CLOSE is refused");
    CrossGroupChecker.Result verdict = check(List.of());
    assertTrue(verdict.ok(), verdict.summary());
    assertEquals(1, verdict.aborted());
  }


  /**
   * A closed economy across groups: concurrent transfers between accounts of different groups,
   * one-group transfers beside them, and read-only audits over every group that must always see
   * the initial total; then the checker judges every group's log and every observation.
   */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void concurrentTransfersAcrossGroupsKeepTheTotalAndPassTheChecker(CommitProtocol protocol)
      throws Exception {
    int accountsPerGroup = 3;
    int initial = 100;
    TxnClient setup = client("A", protocol, Duration.ofSeconds(3), 7);
    for (String g : GROUPS) {
      setup.runInTransaction(g, t -> {
        for (int i = 0; i < accountsPerGroup; i++) {
          t.put("acct" + i, Integer.toString(initial));
        }
        return null;
      });
    }
    int total = GROUPS.size() * accountsPerGroup * initial;
    // Begins read what their DC has applied (consistent, possibly stale): let APPLY reach every DC
    // so that few workers start on a snapshot from before the accounts existed.
    TestCluster.quiescentLogs(cluster, GROUPS);
    ConcurrentLinkedQueue<CrossGroupChecker.Observation> obs = new ConcurrentLinkedQueue<>();
    ExecutorService pool = Executors.newFixedThreadPool(6);
    List<Future<int[]>> futures = new ArrayList<>();
    // Each worker makes 12 attempts, then goes on (up to 60) until the workers together have
    // committed enough transfers across groups for the checker's verdict to mean something: how
    // many of the first 12 win depends on how the threads interleave on a loaded machine.
    AtomicInteger crossGroupCommits = new AtomicInteger();
    int enoughCrossGroup = 6;
    for (int w = 0; w < 6; w++) {
      TxnClient c = client(TestCluster.DCS.get(w % 3), protocol, Duration.ofSeconds(3), 100 + w);
      SplittableRandom rnd = new SplittableRandom(1000 + w);
      boolean auditor = w == 5;
      futures.add(pool.submit(() -> {
        int[] counts = new int[5]; // committed, aborted, unknown, audits, stale snapshots
        // One audit: reads every account and commits; true if it committed.
        BooleanSupplier audit = () -> {
          MultiTransaction t = c.beginMulti();
          try {
            int sum = 0;
            for (String g : GROUPS) {
              for (int a = 0; a < accountsPerGroup; a++) {
                sum += balance(t, g, "acct" + a);
              }
            }
            t.commit();
            counts[3]++;
            assertEquals(total, sum, "an audit saw a total other than the initial one");
            obs.add(observation(t, TxnRecord.Status.COMMITTED, true));
            return true;
          } catch (TransactionAbortedException e) {
            counts[1]++;
            if (t.groups().size() > 1) {
              obs.add(observation(t, TxnRecord.Status.ABORTED, true));
            }
          } catch (OutcomeUnknownException | UnavailableException e) {
            counts[2]++;
          } catch (StaleSnapshot e) {
            t.abort();
            counts[4]++;
          }
          return false;
        };
        for (int i = 0; i < 60 && (i < 12 || crossGroupCommits.get() < enoughCrossGroup); i++) {
          if (auditor) {
            audit.getAsBoolean();
            continue;
          }
          MultiTransaction t = c.beginMulti();
          try {
            String g1 = GROUPS.get(rnd.nextInt(GROUPS.size()));
            String g2 = rnd.nextInt(4) == 0 ? g1 : GROUPS.get(rnd.nextInt(GROUPS.size()));
            String k1 = "acct" + rnd.nextInt(accountsPerGroup);
            String k2 = "acct" + rnd.nextInt(accountsPerGroup);
            if (g1.equals(g2) && k1.equals(k2)) {
              continue;
            }
            int amount = 1 + rnd.nextInt(10);
            int b1 = balance(t, g1, k1);
            int b2 = balance(t, g2, k2);
            t.put(g1, k1, Integer.toString(b1 - amount));
            t.put(g2, k2, Integer.toString(b2 + amount));
            t.commit();
            counts[0]++;
            if (t.groups().size() > 1) {
              obs.add(observation(t, TxnRecord.Status.COMMITTED, false));
              crossGroupCommits.incrementAndGet();
            }
          } catch (TransactionAbortedException e) {
            counts[1]++;
            if (t.groups().size() > 1) {
              obs.add(observation(t, TxnRecord.Status.ABORTED, false));
            }
          } catch (OutcomeUnknownException | UnavailableException e) {
            counts[2]++;
          } catch (StaleSnapshot e) {
            // A DC that had not applied the accounts yet: such a transaction could never commit.
            t.abort();
            counts[4]++;
          }
        }
        if (auditor && counts[3] == 0) {
          // The auditor reads every account, so a transfer beside it aborts it (its reads meet
          // the transfer's locks): one audit commits at the latest once the transfers have ended.
          org.paxoscp.testing.Poll.until("an audit across the groups to commit",
              Duration.ofSeconds(60), audit);
        }
        return counts;
      }));
    }
    int[] sum = new int[5];
    for (Future<int[]> f : futures) {
      int[] c = f.get();
      for (int i = 0; i < 5; i++) {
        sum[i] += c[i];
      }
    }
    pool.shutdown();
    assertTrue(pool.awaitTermination(30, TimeUnit.SECONDS));
    // A last audit after everything settled.
    int end = client("B", protocol, Duration.ofSeconds(3), 99).runInMultiTransaction(t -> {
      int s = 0;
      for (String g : GROUPS) {
        for (int a = 0; a < accountsPerGroup; a++) {
          s += Integer.parseInt(t.getString(g, "acct" + a).orElseThrow());
        }
      }
      return s;
    });
    assertEquals(total, end);
    CrossGroupChecker.Result verdict = check(List.copyOf(obs));
    assertTrue(verdict.ok(), verdict.summary());
    assertTrue(sum[0] > 5, "too few commits to mean anything: " + sum[0]);
    assertTrue(sum[3] > 0, "no audit committed, so none was checked against the total");
    assertTrue(verdict.committed() > 3, verdict.summary());
    System.out.printf("%s: committed %d aborted %d unknown %d audits %d stale %d; %s%n",
        protocol, sum[0], sum[1], sum[2], sum[3], sum[4], verdict.summary());
  }

  /** A snapshot taken before an account existed: legitimate at a lagging DC, never committable. */
  private static final class StaleSnapshot extends RuntimeException {
    StaleSnapshot(String group, String key) {
      super(group + "/" + key + " absent", null, false, false);
    }
  }

  private static int balance(MultiTransaction t, String group, String key) {
    return Integer.parseInt(t.getString(group, key)
        .orElseThrow(() -> new StaleSnapshot(group, key)));
  }

  static CrossGroupChecker.Observation observation(MultiTransaction t, TxnRecord.Status status,
      boolean readOnly) {
    Map<String, Map<String, Long>> versions = new TreeMap<>();
    t.parts().forEach((g, p) -> versions.put(g, new TreeMap<>(p.readVersions())));
    return new CrossGroupChecker.Observation(t.txnId(), status, t.groups(), versions, readOnly);
  }
}
