package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;

/** The asynchronous API: the same transactions as the blocking one, without a thread each. */
@Timeout(60)
class TxnClientAsyncTest {
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
    return cluster.closeLater(cluster.client(home, protocol).random(new SplittableRandom(3))
        .build());
  }

  /** What {@code f} failed with, unwrapped. */
  private static Throwable failure(CompletableFuture<?> f) {
    CompletionException e = assertThrows(CompletionException.class, f::join);
    return Futures.unwrap(e);
  }

  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void beginReadWriteCommitWithoutBlocking(CommitProtocol protocol) {
    TxnClient c = client("A", protocol);
    List<String> threads = new ArrayList<>();
    CommitResult r = c.beginAsync("g").thenCompose(t -> t.getAsync("x").thenCompose(v -> {
      threads.add(Thread.currentThread().getName());
      assertEquals(Optional.empty(), v);
      t.put("x", "one");
      return t.commitAsync();
    })).join();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals(1, r.position());
    // Continuations run on the client's workers, never on a transport or timer thread.
    assertTrue(threads.get(0).startsWith("paxoscp-client-callbacks-A"), threads.toString());
    // The blocking API reads what the asynchronous one wrote.
    assertEquals(Optional.of("one"), c.begin("g").getString("x"));
  }

  @Test
  void errorsFailTheFutureInsteadOfBeingThrown() {
    TxnClient c = client("A", CommitProtocol.CP);
    assertInstanceOf(InvalidArgumentException.class, failure(c.beginAsync("")));
    Transaction t = c.begin("g");
    assertInstanceOf(InvalidArgumentException.class, failure(t.getAsync("")));
    // The transaction stays usable after a refused argument.
    t.put("k", "v");
    assertEquals(CommitResult.Status.COMMITTED, t.commitAsync().join().status());
    assertInstanceOf(IllegalStateException.class, failure(t.getAsync("k")));
  }

  @Test
  void oneOperationAtATime() {
    // Reads are held until the test lets them through: the read below is in flight for sure.
    CompletableFuture<Void> release = new CompletableFuture<>();
    Transport network = cluster.network.transport("A");
    Transport held = new Transport() {
      @Override
      public String localDc() {
        return network.localDc();
      }

      @Override
      public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
        CompletableFuture<Message> reply = network.request(dc, request, timeout);
        return request instanceof Message.ReadRequest
            ? release.thenCompose(v -> reply) : reply;
      }

      @Override
      public void send(String dc, Message message) {
        network.send(dc, message);
      }

      @Override
      public void close() {
      }
    };
    TxnClient c = cluster.closeLater(TxnClient.builder(cluster.config, "A", CommitProtocol.CP)
        .transport(held).random(new SplittableRandom(3)).build());
    Transaction t = c.begin("g");
    CompletableFuture<Optional<byte[]>> read = t.getAsync("a");
    // While the read is in flight, another operation is refused, and nothing is buffered.
    assertThrows(IllegalStateException.class, () -> t.put("b", "x"));
    assertInstanceOf(IllegalStateException.class, failure(t.getAsync("c")));
    release.complete(null);
    assertEquals(Optional.empty(), read.join());
    t.put("b", "x");
    assertEquals(CommitResult.Status.COMMITTED, t.commit().status());
    assertEquals(java.util.Set.of("a"), t.reads().keySet(), "the refused read read nothing");
  }

  /**
   * Many transactions in flight from one thread, all incrementing one counter with a read and
   * a put: conflicts abort some attempts, {@code runInTransactionAsync} re-runs them, and the
   * counter ends at the number of transactions that completed.
   */
  @ParameterizedTest
  @EnumSource(CommitProtocol.class)
  void runInTransactionAsyncReRunsAbortedAttempts(CommitProtocol protocol) {
    TxnClient c = cluster.closeLater(cluster.client("A", protocol).random(new SplittableRandom(5))
        .maxAttempts(50).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(20)).build());
    int n = 12;
    List<CompletableFuture<Long>> runs = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      runs.add(c.runInTransactionAsync("g", t -> t.getAsync("n").thenApply(v -> {
        long next = v.map(b -> Long.parseLong(new String(b, StandardCharsets.UTF_8)))
            .orElse(0L) + 1;
        t.put("n", Long.toString(next));
        return next;
      })));
    }
    int done = 0;
    for (CompletableFuture<Long> r : runs) {
      try {
        r.join();
        done++;
      } catch (CompletionException e) {
        // Out of attempts, or an outcome unknown; neither is retried here.
        assertTrue(e.getCause() instanceof TransactionException, e.toString());
      }
    }
    assertTrue(done > 0);
    long value = Long.parseLong(c.begin("g").getString("n").orElseThrow());
    assertTrue(value >= done && value <= n, "counter " + value + " after " + done
        + " completed runs of " + n);
  }

  @Test
  void aTransactionAcrossGroupsJoinsWritesAndCommitsAsynchronously() {
    TxnClient c = client("A", CommitProtocol.CP);
    MultiTransaction m = c.beginMulti();
    CommitResult r = m.joinAsync("ga")
        .thenCompose(v -> m.joinAsync("gb"))
        .thenCompose(v -> {
          m.put("ga", "x", "1");
          m.put("gb", "y", "2");
          return m.commitAsync();
        }).join();
    assertEquals(CommitResult.Status.COMMITTED, r.status());
    assertEquals("ga", r.group(), "the coordinator is the first group");
    MultiTransaction check = c.beginMulti();
    assertEquals(Optional.of("1"), check.getString("ga", "x"));
    assertEquals(Optional.of("2"), check.getString("gb", "y"));
  }

  @Test
  void closingFailsWhatIsLeft() {
    TxnClient c = client("A", CommitProtocol.CP);
    c.close();
    assertInstanceOf(IllegalStateException.class, failure(c.beginAsync("g")));
    assertInstanceOf(IllegalStateException.class,
        failure(c.runInTransactionAsync("g", t -> CompletableFuture.completedFuture(1))));
  }
}
