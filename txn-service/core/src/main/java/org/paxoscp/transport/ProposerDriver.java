package org.paxoscp.transport;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs {@link Proposer}s over a {@link Transport}: sends what a proposer asks to send (APPLY
 * one-way, everything else as a request whose reply goes back into the proposer), and fires its
 * timers on a {@link Scheduler}. An OVERLOADED refusal goes back into the proposer as what it is,
 * a definite non-answer ({@link Proposer#onRefused}); a lost request or reply, any other error
 * reply and a timeout are all simply no reply: the proposer's own phase timers decide what
 * happens next. Cancelling the
 * future {@link #run} returned stops the proposer where it is (a client that crashed).
 *
 * <p>Thread-safe; any number of proposers may run at once. Each proposer is only ever called by
 * one thread at a time (its events are serialized on the proposer).
 */
public final class ProposerDriver {
  private static final Logger LOG = LoggerFactory.getLogger(ProposerDriver.class);
  private final Transport transport;
  private final List<String> dcs;
  private final Scheduler scheduler;
  private final Duration requestTimeout;

  /**
   * @param dcs the DC names in the proposer's index order ({@code ProposerConfig.dcs()})
   * @param scheduler the clock and the proposer timers
   * @param requestTimeout how long a single request waits for its reply (the proposer's phase
   *     timeout is the natural choice)
   */
  public ProposerDriver(Transport transport, List<String> dcs, Scheduler scheduler,
      Duration requestTimeout) {
    this.transport = Objects.requireNonNull(transport);
    this.dcs = List.copyOf(dcs);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.requestTimeout = Objects.requireNonNull(requestTimeout);
  }

  /**
   * Starts {@code proposer}; the future completes with its outcome. It completes exceptionally
   * only when the proposer itself throws (a broken invariant), with that exception, at once —
   * not at the proposer's next timer. Its entry may then be in the log: callers must treat it as
   * an unknown outcome, never as an abort.
   */
  public CompletableFuture<Outcome> run(Proposer proposer) {
    Run run = new Run(proposer);
    run.step(() -> proposer.start(nowMicros()));
    return run.result;
  }

  private long nowMicros() {
    return scheduler.nowMicros();
  }

  private final class Run {
    final Proposer proposer;
    final CompletableFuture<Outcome> result = new CompletableFuture<>();

    Run(Proposer proposer) {
      this.proposer = proposer;
    }

    /**
     * Feeds one event to the proposer under its lock and carries out its outputs. A proposer
     * that throws fails the run at once: the exception would otherwise vanish in a reply
     * callback or a timer task, and the commit would wait for a timer that may never help.
     */
    void step(java.util.function.Supplier<List<Proposer.Output>> event) {
      synchronized (proposer) {
        if (result.isDone()) {
          return;
        }
        try {
          process(event.get());
        } catch (RuntimeException e) {
          LOG.error("proposer for group {} position {} failed", proposer.group(),
              proposer.position(), e);
          result.completeExceptionally(e);
        }
      }
    }

    /** Carries out a proposer's outputs; the caller holds the proposer's lock. */
    void process(List<Proposer.Output> outputs) {
      for (Proposer.Output o : outputs) {
        if (o instanceof Proposer.Output.Send s) {
          send(s.dc(), s.message());
        } else if (o instanceof Proposer.Output.StartTimer t) {
          if (!proposer.isDone()) {
            scheduler.schedule(t.delayMicros(), () -> onTimer(t.timerId()));
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
            step(() -> proposer.isDone() ? List.of()
                : proposer.onReply(dc, p.message(), nowMicros()));
          } else if (reply instanceof Message.ErrorReply e
              && e.code() == Message.ErrorCode.OVERLOADED) {
            // Refused before the acceptor acted: certainly no promise, vote or grant.
            step(() -> proposer.isDone() ? List.of()
                : proposer.onRefused(dc, m, nowMicros()));
          }
        });
      } catch (TransportException e) {
        // As if the datagram were lost; the proposer's timers take it from here.
      }
    }

    private void onTimer(long timerId) {
      step(() -> proposer.isDone() ? List.of() : proposer.onTimer(timerId, nowMicros()));
    }
  }
}
