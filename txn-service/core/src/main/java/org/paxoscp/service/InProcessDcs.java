package org.paxoscp.service;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.UnknownDcException;

/**
 * DCs served in this process by the shipped {@link TransactionService}, one per given store, and
 * a way to run a {@link Proposer} against them on the caller's thread with no network: for
 * measuring what a commit costs in store operations (every store call happens on the thread that
 * runs the proposer) and for contract tests of the protocol on real stores. When the proposer
 * waits for a timer with nothing in flight, the timer fires at once (there is nothing to wait
 * for), so back-off does not sleep.
 *
 * <p>Thread-safe as far as the stores are: any number of threads may run proposers at once.
 */
public final class InProcessDcs implements AutoCloseable {
  private final List<String> dcs;
  private final List<TransactionService> services = new ArrayList<>();
  private final List<CatchUp> catchUps = new ArrayList<>();
  private final ScheduledExecutorService timers;

  /** DC {@code dcs.get(i)} is served over {@code stores.get(i)}; the caller keeps the stores. */
  public InProcessDcs(List<String> dcs, List<? extends KvStore> stores) {
    this.dcs = List.copyOf(dcs);
    if (stores.size() != dcs.size()) {
      throw new IllegalArgumentException(dcs.size() + " DCs but " + stores.size() + " stores");
    }
    this.timers = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "in-process-dcs");
      t.setDaemon(true);
      return t;
    });
    Scheduler scheduler = Scheduler.of(timers);
    Duration wait = Duration.ofSeconds(10);
    for (int i = 0; i < dcs.size(); i++) {
      String dc = dcs.get(i);
      CatchUp c = new CatchUp(dc, dcs, stores.get(i), new Loopback(dc),
          CatchUp.Settings.defaults(wait), scheduler);
      catchUps.add(c);
      services.add(new TransactionService(dc, dcs, stores.get(i), c,
          new TransactionService.Limits(1024, 1 << 20, wait), scheduler));
    }
  }

  /** The service of DC {@code dc} (by index). */
  public TransactionService service(int dc) {
    return services.get(dc);
  }

  /**
   * Drives {@code proposer} until it finishes, delivering its messages to the services on the
   * caller's thread; returns its outcome. The APPLYs of the decided value are delivered before
   * it returns.
   */
  public Outcome run(Proposer proposer) {
    Objects.requireNonNull(proposer);
    Deque<Proposer.Output> queue = new ArrayDeque<>(proposer.start(System.nanoTime() / 1000));
    long lastTimer = -1;
    while (!proposer.isDone()) {
      if (queue.isEmpty()) {
        if (lastTimer < 0) {
          throw new IllegalStateException("proposer waits with no timer set");
        }
        queue.addAll(proposer.onTimer(lastTimer, System.nanoTime() / 1000));
        continue;
      }
      Proposer.Output o = queue.poll();
      if (o instanceof Proposer.Output.StartTimer t) {
        lastTimer = t.timerId();
      } else if (o instanceof Proposer.Output.Send s) {
        PaxosMessage reply = deliver(s.dc(), s.message());
        if (reply != null) {
          queue.addAll(proposer.onReply(s.dc(), reply, System.nanoTime() / 1000));
        }
      }
    }
    for (Proposer.Output o : queue) {
      if (o instanceof Proposer.Output.Send s && s.message() instanceof PaxosMessage.Apply) {
        deliver(s.dc(), s.message());
      }
    }
    return proposer.outcome();
  }

  /** One message to one DC's service; null when there is no Paxos reply (APPLY, an error). */
  private PaxosMessage deliver(int dc, PaxosMessage m) {
    Message reply = services.get(dc).handle(dcs.get(dc), new Message.Paxos(m)).join();
    return reply instanceof Message.Paxos p ? p.message() : null;
  }

  /** Closes the catch-ups and the timer thread; the stores stay open. */
  @Override
  public void close() {
    catchUps.forEach(CatchUp::close);
    timers.shutdownNow();
  }

  /** What a service's catch-up sends reaches the other services, in this process. */
  private final class Loopback implements Transport {
    private final String localDc;

    Loopback(String localDc) {
      this.localDc = localDc;
    }

    @Override
    public String localDc() {
      return localDc;
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      int i = dcs.indexOf(dc);
      if (i < 0) {
        return CompletableFuture.failedFuture(new UnknownDcException("no DC " + dc));
      }
      if (timers.isShutdown()) {
        return CompletableFuture.failedFuture(new TransportClosedException("closed"));
      }
      return services.get(i).handle(localDc, request);
    }

    @Override
    public void send(String dc, Message message) {
      request(dc, message, Duration.ZERO);
    }

    @Override
    public void close() {}
  }
}
