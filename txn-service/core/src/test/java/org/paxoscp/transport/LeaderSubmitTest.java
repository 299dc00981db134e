package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

class LeaderSubmitTest {
  private static final List<String> DCS = List.of("V", "O", "C");
  private static final Map<String, Long> COSTS = Map.of("V", 90_000L, "O", 20_000L,
      "C", 20_000L);

  @Test
  void theBatcherIsTheCheapestDcTiesInClusterOrder() {
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, Map.of(), 0));
  }

  @Test
  void aDcMarkedDownIsSkippedUntilItsMarkExpires() {
    Map<String, Long> down = Map.of("O", 1_000L);
    assertEquals("C", LeaderSubmit.batcher(COSTS, DCS, down, 999));
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, down, 1_000));
  }

  @Test
  void withEveryDcDownTheCheapestIsTriedAnyway() {
    Map<String, Long> down = Map.of("V", 5L, "O", 5L, "C", 5L);
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, down, 0));
  }

  @Test
  void boundsFollowThePromotionCap() {
    assertEquals(LeaderSubmit.DEFAULT_BOUND, LeaderSubmit.boundFor(-1));
    assertEquals(3, LeaderSubmit.boundFor(3));
    assertEquals(Message.SubmitRequest.MAX_BOUND, LeaderSubmit.boundFor(1_000));
  }

  /**
   * A transport on which the first {@code lost} submits vanish (request or reply lost) and the
   * next is answered COMMITTED; every request is logged with its send time. With
   * {@code failing}, every request fails at once instead (a send error), Paxos messages too.
   */
  private static final class LossyTransport implements Transport {
    final int lost;
    final boolean failing;
    final List<Long> sentAtNanos = Collections.synchronizedList(new ArrayList<>());
    final List<String> sentTo = Collections.synchronizedList(new ArrayList<>());

    LossyTransport(int lost) {
      this(lost, false);
    }

    LossyTransport(int lost, boolean failing) {
      this.lost = lost;
      this.failing = failing;
    }

    @Override
    public String localDc() {
      return "client";
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      if (failing) {
        if (request instanceof Message.SubmitRequest) {
          sentAtNanos.add(System.nanoTime());
        }
        return CompletableFuture.failedFuture(new TransportSendException("send failed", null));
      }
      sentAtNanos.add(System.nanoTime());
      sentTo.add(dc);
      Message.SubmitRequest s = (Message.SubmitRequest) request;
      if (sentAtNanos.size() <= lost) {
        return new CompletableFuture<Message>()
            .orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
      }
      return CompletableFuture.completedFuture(Message.SubmitReply.committed(s.group(),
          s.position(), s.entry().txnId(), 1));
    }

    @Override
    public void send(String dc, Message message) {}

    @Override
    public void close() {}
  }

  private static Outcome submitOver(LossyTransport transport, Duration submitTimeout)
      throws Exception {
    ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
    try {
      Scheduler scheduler = Scheduler.of(timers);
      ProposerConfig config = ProposerConfig.defaults(Protocol.LEADER, DCS)
          .withPhaseTimeoutMicros(50_000);
      LeaderSubmit submit = new LeaderSubmit(transport, DCS,
          new ProposerDriver(transport, DCS, scheduler, Duration.ofMillis(100)), config,
          scheduler, submitTimeout);
      TreeMap<String, Mutation> writes = new TreeMap<>();
      writes.put("k", Mutation.put("v".getBytes(StandardCharsets.UTF_8)));
      LogEntry entry = new LogEntry("t1", "V", 4, new TreeSet<>(), writes);
      return submit.commit("g", entry, "V", 16).get(10, TimeUnit.SECONDS);
    } finally {
      timers.shutdownNow();
    }
  }

  @Test
  void aLostSubmitIsSentAgainBeforeTheClientSettles() throws Exception {
    LossyTransport transport = new LossyTransport(2);
    Duration timeout = Duration.ofMillis(1_200);
    Outcome o = submitOver(transport, timeout);
    assertEquals(Outcome.Status.COMMITTED, o.status(), o.toString());
    assertEquals(5, o.position());
    assertEquals(3, transport.sentAtNanos.size(), "two copies lost, the third answered");
    assertEquals(List.of("V", "O", "V"), transport.sentTo,
        "the first two at once, to the client's DC and to the cheapest other one");
    long gapMillis = (transport.sentAtNanos.get(2) - transport.sentAtNanos.get(1)) / 1_000_000;
    long step = timeout.toMillis() / LeaderSubmit.COPIES;
    assertTrue(gapMillis >= step / LeaderSubmit.FIRST_WAIT_SHARE - 5,
        "before any answer, the next copy waits a share of the longest wait: " + gapMillis
            + " ms");
  }

  @Test
  void submitsThatFailAtOnceStillEndInASettle() throws Exception {
    LossyTransport transport = new LossyTransport(0, true);
    Outcome o = submitOver(transport, Duration.ofMillis(600));
    // Nothing reaches any DC: the settle cannot decide position 5, so the entry may still be
    // chosen anywhere in 5 .. 5 + 16.
    assertEquals(Outcome.Status.UNKNOWN, o.status(), o.toString());
    assertEquals(5, o.firstPosition());
    assertEquals(5 + 16, o.position());
    int copies = transport.sentAtNanos.size();
    assertTrue(copies > 2 && copies <= LeaderSubmit.MAX_COPIES,
        "copies went out until the deadline, at most " + LeaderSubmit.MAX_COPIES + ": " + copies);
  }
}
