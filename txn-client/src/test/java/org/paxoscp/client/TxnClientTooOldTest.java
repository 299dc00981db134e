package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;

/**
 * TOO_OLD (docs/architecture.md section 7): a read at a read position the DC has collected is a
 * retryable
 * abort, and {@code runInTransaction} runs the transaction again at a new read position.
 */
@Timeout(30)
class TxnClientTooOldTest {
  private TestCluster cluster;

  @BeforeEach
  void start() {
    cluster = new TestCluster(Duration.ofMillis(300));
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  /** Answers the first {@code n} read requests with TOO_OLD, as a DC that collected them. */
  private static final class TooOldReads implements Transport {
    private final Transport delegate;
    private final AtomicInteger left;

    TooOldReads(Transport delegate, int n) {
      this.delegate = delegate;
      this.left = new AtomicInteger(n);
    }

    @Override
    public String localDc() {
      return delegate.localDc();
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      if (request instanceof Message.ReadRequest r && left.getAndDecrement() > 0) {
        return CompletableFuture.completedFuture(new Message.ErrorReply(r.group(), r.position(),
            Message.ErrorCode.TOO_OLD, "position " + r.position() + " is below the watermark"));
      }
      return delegate.request(dc, request, timeout);
    }

    @Override
    public void send(String dc, Message message) {
      delegate.send(dc, message);
    }

    @Override
    public void close() {
      delegate.close();
    }
  }

  @Test
  void aReadAtACollectedPositionIsARetryableAbort() {
    var registry = new io.micrometer.core.instrument.simple.SimpleMeterRegistry();
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.CP)
        .transport(new TooOldReads(cluster.network.transport("A"), 1)).meterRegistry(registry)
        .build());
    Transaction t = c.begin("g");
    TransactionAbortedException e = assertThrows(TransactionAbortedException.class,
        () -> t.get("k"));
    assertEquals(CommitResult.Status.ABORTED, e.result().status());
    assertTrue(e.result().reason().contains("GC watermark"), e.result().reason());
    assertEquals(1, registry.find("paxoscp.client.commit").tag("outcome", "aborted")
        .tag("reason", "too_old").timer().count(), "counted as an abort for TOO_OLD");
  }

  @Test
  void runInTransactionRetriesTooOld() {
    TxnClient c = cluster.closeLater(cluster.client("A", CommitProtocol.CP)
        .transport(new TooOldReads(cluster.network.transport("A"), 2)).build());
    AtomicInteger runs = new AtomicInteger();
    String v = c.runInTransaction("g", txn -> {
      runs.incrementAndGet();
      String old = txn.getString("k").orElse("none");
      txn.put("k", "v1");
      return old;
    });
    assertEquals("none", v);
    assertEquals(3, runs.get(), "two TOO_OLD aborts, then a commit");
  }
}
