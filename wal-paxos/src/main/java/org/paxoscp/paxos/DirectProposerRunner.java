package org.paxoscp.paxos;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Objects;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Learn;
import org.paxoscp.paxos.PaxosMessage.LearnReply;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.store.StoreUnavailableException;

/**
 * Runs a {@link Proposer} to completion against in-process acceptors, one per DC, calling them
 * directly on the caller's thread: the shape of a single-process cluster, of integration tests on
 * real stores, and of store-cost measurements. A DC whose store is unavailable counts as a lost
 * message. When the proposer waits for a timer with nothing in flight, the timer fires at once
 * (there is nothing to wait for), so back-off does not sleep.
 *
 * <p>Thread-safe as far as the acceptors and stores are: any number of threads may run proposers
 * against the same acceptors concurrently.
 */
public final class DirectProposerRunner {
  private final List<Acceptor> acceptors;

  public DirectProposerRunner(List<Acceptor> acceptors) {
    this.acceptors = List.copyOf(acceptors);
  }

  /** Drives {@code proposer} until it finishes; returns its outcome. */
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
    // Deliver what is left (the APPLYs of the decided value) before returning.
    for (Proposer.Output o : queue) {
      if (o instanceof Proposer.Output.Send s && s.message() instanceof Apply) {
        deliver(s.dc(), s.message());
      }
    }
    return proposer.outcome();
  }

  /** One request to one DC's acceptor; null when there is no reply (APPLY, or store down). */
  private PaxosMessage deliver(int dc, PaxosMessage m) {
    Acceptor a = acceptors.get(dc);
    try {
      if (m instanceof Prepare p) {
        return a.prepare(p);
      } else if (m instanceof Accept acc) {
        return a.accept(acc);
      } else if (m instanceof GrantRequest g) {
        return a.grant(g);
      } else if (m instanceof Apply ap) {
        a.apply(ap);
        return null;
      } else if (m instanceof Learn l) {
        return new LearnReply(l.group(), l.position(), a.chosen(l.group(), l.position()).orElse(null));
      }
      throw new IllegalArgumentException("not a request: " + m);
    } catch (StoreUnavailableException e) {
      return null;
    }
  }
}
