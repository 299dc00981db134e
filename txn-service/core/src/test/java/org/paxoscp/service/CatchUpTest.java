package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Scheduler;

/** A catch-up run that meets a store failure ends, and the next one starts. */
@Timeout(30)
class CatchUpTest {
  private static final String G = "g";
  private static final List<String> DCS = List.of("A", "B", "C");

  private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2);
  private final InProcessTransport.Network net = new InProcessTransport.Network();

  @AfterEach
  void stop() {
    timers.shutdownNow();
    net.close();
  }

  /** Fails the {@code n}-th read of a WAL row's chosen cell (1-based), then works again. */
  private static final class FailingNthChosenRead extends ForwardingKvStore {
    private final AtomicInteger reads = new AtomicInteger();
    private final int n;

    FailingNthChosenRead(int n) {
      super(new InMemoryKvStore());
      this.n = n;
    }

    @Override
    public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
      if (table == Table.WAL && WalLayout.CHOSEN.equals(column)
          && reads.incrementAndGet() == n) {
        throw new StoreUnavailableException("planted store failure");
      }
      return super.read(table, row, column, maxTimestamp);
    }
  }

  @Test
  void aStoreFailureWhileLearningEndsTheRunAndALaterRunStarts() throws Exception {
    // Read 1 of position 1's chosen cell is the applier's; read 2 is the learning step's.
    CatchUp c = new CatchUp("A", DCS, new FailingNthChosenRead(2), net.transport("A"),
        new CatchUp.Settings(Duration.ofMillis(200), Duration.ofSeconds(1), 16),
        Scheduler.of(timers));
    try {
      CompletableFuture<Long> first = c.catchUpTo(G, 1);
      ExecutionException e = assertThrows(
          ExecutionException.class, () -> first.get(10, TimeUnit.SECONDS));
      assertInstanceOf(StoreUnavailableException.class, e.getCause());
      // Not wedged: a new request starts a new run (position 0 is reached at once).
      assertEquals(0L, c.catchUpTo(G, 0).get(10, TimeUnit.SECONDS));
    } finally {
      c.close();
    }
  }
}
