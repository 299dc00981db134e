package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CheckResult;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.testing.Poll;

/** Concurrent transactions from several clients, judged by outcome rules and the checker. */
@Timeout(120)
class TxnClientConcurrencyTest {
  private static final int CLIENTS = 6;

  private TestCluster cluster;
  private ExecutorService pool;

  @BeforeEach
  void setUp() {
    cluster = new TestCluster(Duration.ofSeconds(2));
    pool = Executors.newCachedThreadPool();
  }

  @AfterEach
  void tearDown() throws Exception {
    pool.shutdownNow();
    pool.awaitTermination(10, TimeUnit.SECONDS);
    cluster.close();
  }

  private List<TxnClient> clients(CommitProtocol protocol, int n) {
    List<TxnClient> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String home = TestCluster.DCS.get(i % TestCluster.DCS.size());
      out.add(cluster.closeLater(cluster.client(home, protocol)
          .random(new SplittableRandom(i)).build()));
    }
    return out;
  }

  /** Every client begins at the same read position, then all commit at once. */
  private List<Object> commitTogether(List<Transaction> txns, History history) throws Exception {
    CyclicBarrier barrier = new CyclicBarrier(txns.size());
    List<Future<Object>> futures = new ArrayList<>();
    for (int i = 0; i < txns.size(); i++) {
      Transaction t = txns.get(i);
      String client = "c" + i;
      futures.add(pool.submit(() -> {
        barrier.await();
        RuntimeException e = history.commitAndRecord(client, t);
        return e != null ? e : history.records().stream()
            .filter(rec -> rec.txnId().equals(t.txnId())).findFirst().orElseThrow();
      }));
    }
    List<Object> out = new ArrayList<>();
    for (Future<Object> f : futures) {
      out.add(f.get());
    }
    return out;
  }

  @Test
  void basicSameKeyExactlyOneWinsThePosition() throws Exception {
    List<TxnClient> clients = clients(CommitProtocol.BASIC, CLIENTS);
    History history = new History();
    List<Transaction> txns = new ArrayList<>();
    for (TxnClient c : clients) {
      Transaction t = c.begin("g");
      t.get("k");
      t.put("k", t.txnId());
      txns.add(t);
    }
    long r = txns.get(0).readPosition();
    List<Object> outcomes = commitTogether(txns, history);
    long committed = outcomes.stream()
        .filter(o -> o instanceof org.paxoscp.check.TxnRecord rec
            && rec.status() == org.paxoscp.check.TxnRecord.Status.COMMITTED).count();
    long aborted = outcomes.stream().filter(o -> o instanceof TransactionAbortedException).count();
    assertEquals(1, committed, "one winner: " + outcomes);
    assertEquals(CLIENTS - 1, aborted, "everyone else aborted: " + outcomes);
    for (Object o : outcomes) {
      if (o instanceof TransactionAbortedException e) {
        assertEquals(r + 1, e.result().position(), "basic Paxos never moves to another position");
        assertEquals(0, e.result().promotions());
      }
    }
    // APPLY is one-way: a commit returns once a majority accepted, before every DC recorded it.
    for (String dc : TestCluster.DCS) {
      LogApplier applier = new LogApplier(cluster.stores.get(dc));
      Poll.until(dc + " applied " + (r + 1), Duration.ofSeconds(5),
          () -> applier.appliedWatermark("g") >= r + 1);
    }
    CheckResult check = history.check(cluster.logs("g", r + 3));
    assertTrue(check.ok(), check.summary());
  }

  @Test
  void cpDisjointKeysAllCommitByCombinationOrPromotion() throws Exception {
    List<TxnClient> clients = clients(CommitProtocol.CP, CLIENTS);
    History history = new History();
    List<Transaction> txns = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      Transaction t = clients.get(i).begin("g");
      t.get("own" + i);
      t.put("own" + i, "v" + i);
      txns.add(t);
    }
    long r = txns.get(0).readPosition();
    List<Object> outcomes = commitTogether(txns, history);
    assertTrue(outcomes.stream().allMatch(o -> o instanceof org.paxoscp.check.TxnRecord rec
        && rec.status() == org.paxoscp.check.TxnRecord.Status.COMMITTED),
        "all commit: " + outcomes);
    // Six transactions from one read position cannot each have a position of their own at
    // r + 1: some were combined there or promoted past it.
    List<CommitResult> results = new ArrayList<>();
    for (TxnClient c : clients) {
      assertTrue(c.sessionPosition("g") > r);
    }
    for (var rec : history.records()) {
      results.add(new CommitResult(CommitResult.Status.COMMITTED, "g", rec.txnId(),
          rec.commitPosition(), 0, false, ""));
    }
    long highest = history.records().stream().mapToLong(rec -> rec.commitPosition()).max()
        .orElseThrow();
    // The APPLY of each decided position is one-way: wait until it has reached a DC.
    for (long p = r + 1; p <= highest; p++) {
      long position = p;
      Poll.until("a DC knows position " + position, Duration.ofSeconds(10),
          () -> cluster.logs("g", position).values().stream()
              .anyMatch(log -> log.containsKey(position)));
    }
    var logs = cluster.logs("g", r + CLIENTS + 1);
    long combinedPositions = logs.get("A").values().stream()
        .filter(v -> v.entries().size() > 1).count();
    long maxPosition = results.stream().mapToLong(CommitResult::position).max().orElseThrow();
    assertTrue(combinedPositions > 0 || maxPosition > r + 1,
        "combination or promotion visible: " + logs.get("A"));
    CheckResult check = history.check(logs);
    assertTrue(check.ok(), check.summary());
  }

  @Test
  void cpReportsPromotionsAndCombinationInResults() throws Exception {
    List<TxnClient> clients = clients(CommitProtocol.CP, CLIENTS);
    List<Transaction> txns = new ArrayList<>();
    for (int i = 0; i < CLIENTS; i++) {
      Transaction t = clients.get(i).begin("h");
      t.put("own" + i, "v" + i);
      txns.add(t);
    }
    CyclicBarrier barrier = new CyclicBarrier(CLIENTS);
    List<Future<CommitResult>> fs = new ArrayList<>();
    for (Transaction t : txns) {
      fs.add(pool.submit(() -> {
        barrier.await();
        return t.commit();
      }));
    }
    int promoted = 0;
    int combined = 0;
    for (Future<CommitResult> f : fs) {
      CommitResult r = f.get();
      promoted += r.promotions() > 0 ? 1 : 0;
      combined += r.combined() ? 1 : 0;
    }
    assertTrue(promoted + combined > 0, "promoted " + promoted + ", combined " + combined);
  }

  /**
   * 8 threads each increment one counter 20 times through runInTransaction. Increments conflict
   * (each reads and writes the counter), so many attempts abort and are re-run; every call that
   * returns committed exactly one increment, so the counter ends at exactly 160. Attempts are
   * generous here because 8 writers on one key abort often; the checker then judges the log.
   */
  @Test
  void runInTransactionRetriesAbortedIncrements() throws Exception {
    int threads = 8;
    int perThread = 20;
    List<TxnClient> clients = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      clients.add(cluster.closeLater(cluster.client(i == 0 ? "A" : "B",
          i == 0 ? CommitProtocol.CP : CommitProtocol.BASIC).maxAttempts(1000)
          .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(20))
          .random(new SplittableRandom(i)).build()));
    }
    AtomicInteger bodies = new AtomicInteger();
    List<Future<?>> fs = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      TxnClient c = clients.get(t % 2);
      fs.add(pool.submit(() -> {
        for (int i = 0; i < perThread; i++) {
          c.runInTransaction("counter", txn -> {
            bodies.incrementAndGet();
            long v = txn.getString("n").map(Long::parseLong).orElse(0L);
            txn.put("n", Long.toString(v + 1));
            return null;
          });
        }
        return null;
      }));
    }
    for (Future<?> f : fs) {
      f.get();
    }
    assertTrue(bodies.get() >= threads * perThread);
    long last = Math.max(clients.get(0).sessionPosition("counter"),
        clients.get(1).sessionPosition("counter"));
    // Client 0's session covers its own commits only; wait until its DC has applied client 1's
    // too, so that its next begin reads the final value.
    LogApplier applierA = new LogApplier(cluster.stores.get("A"));
    Poll.until("A applied " + last, Duration.ofSeconds(10),
        () -> applierA.applyKnown("counter") >= last);
    Transaction t = clients.get(0).begin("counter");
    assertEquals(last, t.readPosition());
    assertEquals("160", t.getString("n").orElseThrow());
    CheckResult check = new History().check(cluster.logs("counter", last + 1));
    assertTrue(check.ok(), check.summary());
    assertEquals(threads * perThread, check.stats().entries(), check.stats().toString());
    assertTrue(new String(t.get("n").orElseThrow(), StandardCharsets.UTF_8).equals("160"));
  }
}
