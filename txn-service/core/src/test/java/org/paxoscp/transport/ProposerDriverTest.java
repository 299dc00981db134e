package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

@Timeout(30)
class ProposerDriverTest {
  private static final List<String> DCS = List.of("A", "B", "C");
  /** A phase timeout far beyond the test's patience: nothing may wait for a timer. */
  private static final ProposerConfig CFG = ProposerConfig.defaults(Protocol.BASIC, DCS)
      .withPhaseTimeoutMicros(TimeUnit.MINUTES.toMicros(10));
  private final ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();

  @AfterEach
  void stop() {
    timers.shutdownNow();
  }

  /** Every DC answers at once from an in-memory acceptor of its own. */
  private static Transport acceptors() {
    List<Acceptor> acc = List.of(new Acceptor(new InMemoryKvStore()),
        new Acceptor(new InMemoryKvStore()), new Acceptor(new InMemoryKvStore()));
    return new Transport() {
      @Override
      public String localDc() {
        return "A";
      }

      @Override
      public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
        Acceptor a = acc.get(DCS.indexOf(dc));
        PaxosMessage m = ((Message.Paxos) request).message();
        PaxosMessage reply = m instanceof PaxosMessage.Prepare p ? a.prepare(p)
            : a.accept((PaxosMessage.Accept) m);
        // Replies arrive on another thread, as from a socket.
        return CompletableFuture.supplyAsync(() -> new Message.Paxos(reply));
      }

      @Override
      public void send(String dc, Message message) {}

      @Override
      public void close() {}
    };
  }

  private static LogEntry entry() {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("k", Mutation.put(new byte[] {1}));
    return new LogEntry("t", "A", 0, new TreeSet<>(), w);
  }

  @Test
  void aProposerThatThrowsInAReplyCallbackFailsTheRunAtOnce() throws Exception {
    IllegalStateException bug = new IllegalStateException("planted: invariant broken");
    Proposer broken = new Proposer(CFG, "g", ProposerId.of(1), entry(), 1, OptionalInt.empty(),
        new SplittableRandom(1)) {
      @Override
      public List<Output> onReply(int fromDc, PaxosMessage reply, long nowMicros) {
        throw bug;
      }
    };
    CompletableFuture<Outcome> run = new ProposerDriver(acceptors(), DCS, Scheduler.of(timers),
        Duration.ofSeconds(5)).run(broken);
    // Within seconds, although the proposer's next timer is ten minutes away.
    ExecutionException e = assertThrows(ExecutionException.class,
        () -> run.get(10, TimeUnit.SECONDS));
    assertSame(bug, e.getCause());
  }

  @Test
  void aWorkingProposerStillCommits() throws Exception {
    Proposer p = new Proposer(CFG, "g", ProposerId.of(2), entry(), 1, OptionalInt.empty(),
        new SplittableRandom(2));
    Outcome o = new ProposerDriver(acceptors(), DCS, Scheduler.of(timers), Duration.ofSeconds(5)).run(p)
        .get(10, TimeUnit.SECONDS);
    assertEquals(Outcome.Status.COMMITTED, o.status());
  }
}
