package org.paxoscp.transport;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;

/**
 * Runs {@link Proposer}s over a {@link Transport}: sends what a proposer asks to send (APPLY
 * one-way, everything else as a request whose reply goes back into the proposer), and fires its
 * timers on a scheduler. A lost request or reply, an error reply and a timeout are all simply no
 * reply: the proposer's own phase timers decide what happens next.
 *
 * <p>Thread-safe; any number of proposers may run at once. Each proposer is only ever called by
 * one thread at a time (its events are serialized on the proposer).
 */
public final class ProposerDriver {
  private final Transport transport;
  private final List<String> dcs;
  private final ScheduledExecutorService timers;
  private final Duration requestTimeout;

  /**
   * @param dcs the DC names in the proposer's index order ({@code ProposerConfig.dcs()})
   * @param timers fires proposer timers; owned by the caller
   * @param requestTimeout how long a single request waits for its reply (the proposer's phase
   *     timeout is the natural choice)
   */
  public ProposerDriver(Transport transport, List<String> dcs, ScheduledExecutorService timers,
      Duration requestTimeout) {
    this.transport = Objects.requireNonNull(transport);
    this.dcs = List.copyOf(dcs);
    this.timers = Objects.requireNonNull(timers);
    this.requestTimeout = Objects.requireNonNull(requestTimeout);
  }

  /** Starts {@code proposer}; the future completes with its outcome (never exceptionally). */
  public CompletableFuture<Outcome> run(Proposer proposer) {
    Run run = new Run(proposer);
    synchronized (proposer) {
      run.process(proposer.start(nowMicros()));
    }
    return run.result;
  }

  private static long nowMicros() {
    return System.nanoTime() / 1000;
  }

  private final class Run {
    final Proposer proposer;
    final CompletableFuture<Outcome> result = new CompletableFuture<>();

    Run(Proposer proposer) {
      this.proposer = proposer;
    }

    /** Carries out a proposer's outputs; the caller holds the proposer's lock. */
    void process(List<Proposer.Output> outputs) {
      for (Proposer.Output o : outputs) {
        if (o instanceof Proposer.Output.Send s) {
          send(s.dc(), s.message());
        } else if (o instanceof Proposer.Output.StartTimer t) {
          if (!proposer.isDone()) {
            timers.schedule(() -> onTimer(t.timerId()), t.delayMicros(), TimeUnit.MICROSECONDS);
          }
        }
      }
      if (proposer.isDone()) {
        result.complete(proposer.outcome());
      }
    }

    private void send(int dc, PaxosMessage m) {
      String name = dcs.get(dc);
      Message wire = new Message.Paxos(m);
      try {
        if (m instanceof PaxosMessage.Apply) {
          transport.send(name, wire);
          return;
        }
        transport.request(name, wire, requestTimeout).whenComplete((reply, failure) -> {
          if (reply instanceof Message.Paxos p) {
            synchronized (proposer) {
              if (!proposer.isDone()) {
                process(proposer.onReply(dc, p.message(), nowMicros()));
              }
            }
          }
        });
      } catch (TransportException e) {
        // As if the datagram were lost; the proposer's timers take it from here.
      }
    }

    private void onTimer(long timerId) {
      synchronized (proposer) {
        if (!proposer.isDone()) {
          process(proposer.onTimer(timerId, nowMicros()));
        }
      }
    }
  }
}
