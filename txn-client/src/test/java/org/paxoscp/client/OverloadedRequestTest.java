package org.paxoscp.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;

/**
 * Begins refused OVERLOADED by the services' admission control (docs/client.md, "Overload"): a
 * refusal moves on to the next DC at once; when every DC refused, the client backs off and asks
 * them all again, a bounded number of rounds, and then fails with every round's refusals.
 */
@Timeout(60)
class OverloadedRequestTest {
  private TestCluster cluster;
  private SimpleMeterRegistry registry;

  @BeforeEach
  void start() {
    cluster = new TestCluster(Duration.ofMillis(300));
    registry = new SimpleMeterRegistry();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
    registry.close();
  }

  /** Refuses begins to {@code dcs} OVERLOADED, {@code left} of them (negative: all). */
  private static final class Refusing implements Transport {
    private final Transport delegate;
    private final Set<String> dcs;
    private final AtomicInteger left;
    final AtomicInteger refused = new AtomicInteger();

    Refusing(Transport delegate, Set<String> dcs, int left) {
      this.delegate = delegate;
      this.dcs = dcs;
      this.left = new AtomicInteger(left);
    }

    @Override
    public String localDc() {
      return delegate.localDc();
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      if (dcs.contains(dc) && request instanceof Message.BeginRequest b
          && left.getAndDecrement() != 0) {
        refused.incrementAndGet();
        return CompletableFuture.completedFuture(new Message.ErrorReply(b.group(), b.position(),
            Message.ErrorCode.OVERLOADED, "DC " + dc + " overloaded: 1024 requests wait"));
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

  private TxnClient client(Refusing t) {
    return cluster.closeLater(cluster.client("A", CommitProtocol.CP).meterRegistry(registry)
        .transport(t).build());
  }

  private double requestBackoffs() {
    return registry.find("paxoscp.client.overload.backoffs").tag("step", "request").counter()
        .count();
  }

  @Test
  void aBeginRefusedAtHomeFailsOverWithoutBackingOff() {
    Refusing t = new Refusing(cluster.network.transport("A"), Set.of("A"), 1);
    TxnClient c = client(t);
    Transaction txn = c.begin("g");
    txn.put("k", "v");
    assertTrue(txn.commit().committed());
    assertEquals(1, t.refused.get());
    assertEquals(0, requestBackoffs());
  }

  @Test
  void aBeginEveryDcRefusedBacksOffAndIsAskedAgain() {
    Refusing t = new Refusing(cluster.network.transport("A"), Set.of("A", "B", "C"), 3);
    TxnClient c = client(t);
    Transaction txn = c.begin("g");
    txn.put("k", "v");
    assertTrue(txn.commit().committed());
    assertEquals(3, t.refused.get());
    assertEquals(1, requestBackoffs());
  }

  @Test
  void aBeginRefusedEveryRoundFailsWithTheRefusalsOfEveryRound() {
    Refusing t = new Refusing(cluster.network.transport("A"), Set.of("A", "B", "C"), -1);
    TxnClient c = client(t);
    UnavailableException e = assertThrows(UnavailableException.class, () -> c.begin("g"));
    int rounds = Failover.OVERLOAD_ROUNDS + 1;
    assertEquals(3 * rounds, t.refused.get());
    assertEquals(Failover.OVERLOAD_ROUNDS, requestBackoffs());
    assertEquals(3 * rounds, e.getSuppressed().length, e.toString());
  }
}
