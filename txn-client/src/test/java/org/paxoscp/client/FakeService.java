package org.paxoscp.client;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.Transport;
import org.paxoscp.wal.LogValue;

/**
 * A minimal stand-in for one DC's Transaction Service, serving {@link Message}s over the DC's
 * store: acceptor requests, APPLY (then applies the log), begin and read. When a begin or read
 * needs positions this DC has not learned, it runs a learner proposer over its own transport to
 * the other DCs (section 5.4). Counts the requests it serves, for tests that check what the client
 * sent. A fake: no validation, no GC, no grant bookkeeping beyond the acceptor's.
 */
final class FakeService implements RequestHandler {
  private static final AtomicLong LEARNER_IDS = new AtomicLong();

  private final String dc;
  private final List<String> dcs;
  private final Acceptor acceptor;
  private final LogApplier applier;
  private final Transport peers;
  private final ProposerDriver driver;
  private final Duration timeout;
  final AtomicInteger beginRequests = new AtomicInteger();
  final AtomicInteger readRequests = new AtomicInteger();
  final AtomicInteger paxosRequests = new AtomicInteger();
  /** While set, the service answers nothing (its requests time out), as if its process hung. */
  volatile boolean silent;

  FakeService(String dc, List<String> dcs, KvStore store, Transport peers,
      ScheduledExecutorService timers, Duration timeout) {
    this.dc = dc;
    this.dcs = List.copyOf(dcs);
    this.acceptor = new Acceptor(store);
    this.applier = new LogApplier(store);
    this.peers = peers;
    this.timeout = timeout;
    this.driver = new ProposerDriver(peers, dcs, timers, timeout);
  }

  @Override
  public Message handle(String fromDc, Message request) {
    if (silent) {
      return null;
    }
    try {
      if (request instanceof Message.Paxos p) {
        paxosRequests.incrementAndGet();
        return paxos(p.message());
      } else if (request instanceof Message.BeginRequest b) {
        beginRequests.incrementAndGet();
        long w = catchUp(b.group(), b.position());
        if (w < b.position()) {
          return error(b.group(), b.position(), Message.ErrorCode.CATCH_UP_FAILED);
        }
        String leader = "";
        if (w > 0) {
          OptionalInt idx = Proposer.leaderAfter(dcs, acceptor.chosen(b.group(), w).orElseThrow());
          leader = idx.isPresent() ? dcs.get(idx.getAsInt()) : "";
        }
        return new Message.BeginReply(b.group(), w, leader);
      } else if (request instanceof Message.ReadRequest r) {
        readRequests.incrementAndGet();
        if (catchUp(r.group(), r.position()) < r.position()) {
          return error(r.group(), r.position(), Message.ErrorCode.CATCH_UP_FAILED);
        }
        Map<String, byte[]> values = new HashMap<>();
        for (String k : r.keys()) {
          applier.read(r.group(), k, r.position()).ifPresent(v -> values.put(k, v));
        }
        return new Message.ReadReply(r.group(), r.position(), values);
      }
      return error(request.group(), request.position(), Message.ErrorCode.BAD_REQUEST);
    } catch (StoreUnavailableException e) {
      return error(request.group(), request.position(), Message.ErrorCode.STORE_UNAVAILABLE);
    }
  }

  private Message paxos(PaxosMessage m) {
    if (m instanceof PaxosMessage.Prepare p) {
      return new Message.Paxos(acceptor.prepare(p));
    } else if (m instanceof PaxosMessage.Accept a) {
      return new Message.Paxos(acceptor.accept(a));
    } else if (m instanceof PaxosMessage.GrantRequest g) {
      return new Message.Paxos(acceptor.grant(g));
    } else if (m instanceof PaxosMessage.Learn l) {
      return new Message.Paxos(new PaxosMessage.LearnReply(l.group(), l.position(),
          acceptor.chosen(l.group(), l.position()).orElse(null)));
    } else if (m instanceof PaxosMessage.Apply a) {
      acceptor.apply(a);
      applier.applyKnown(a.group());
      return null;
    }
    return null;
  }

  /** Applies what is known, then learns positions up to {@code target}; the new watermark. */
  private long catchUp(String group, long target) {
    long w = applier.applyKnown(group);
    while (w < target) {
      LogValue learned = learn(group, w + 1);
      if (learned == null) {
        return w;
      }
      acceptor.apply(new PaxosMessage.Apply(group, w + 1, learned));
      w = applier.applyKnown(group);
    }
    return w;
  }

  private LogValue learn(String group, long position) {
    // A fresh random id, as every proposer of the cluster takes one.
    Proposer learner = Proposer.learner(
        ProposerConfig.defaults(Protocol.BASIC, dcs)
            .withPhaseTimeoutMicros(TimeUnit.NANOSECONDS.toMicros(timeout.toNanos())),
        group, ProposerId.random(), position, new SplittableRandom(LEARNER_IDS.incrementAndGet()));
    try {
      Outcome o = driver.run(learner).get(timeout.toMillis() * 20, TimeUnit.MILLISECONDS);
      return o.status() == Outcome.Status.LEARNED ? o.chosen() : null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    } catch (ExecutionException | TimeoutException e) {
      return null;
    }
  }

  private static Message error(String group, long position, Message.ErrorCode code) {
    return new Message.ErrorReply(group, position, code, "fake service");
  }

  @Override
  public String toString() {
    return "FakeService[" + dc + "]";
  }
}
