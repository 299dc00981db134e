package org.paxoscp.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Learn;
import org.paxoscp.paxos.PaxosMessage.LearnReply;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.wal.LogValue;

/**
 * One simulated DC: a Transaction Service's acceptor, log applier and catch-up over its own
 * {@link InMemoryKvStore}. When an APPLY reveals a gap below it, the DC asks its peers for the
 * missing chosen values (section 5.4).
 */
final class SimDc {
  private static final int MAX_LEARN_PER_GAP = 16;

  final int index;
  final String name;
  final InMemoryKvStore store = new InMemoryKvStore();
  final Acceptor acceptor = new Acceptor(store);
  final LogApplier applier = new LogApplier(store);
  /** Requests refused because their position was collected (section 7). */
  long tooOld;
  private final String group;
  private final List<String> conflicts;
  /** Sends a message from this DC to the DC with the given index. */
  private PeerSender peers;

  interface PeerSender {
    void send(int fromDc, int toDc, PaxosMessage m);
  }

  SimDc(int index, String name, String group, List<String> conflicts) {
    this.index = index;
    this.name = name;
    this.group = group;
    this.conflicts = conflicts;
  }

  void connect(PeerSender sender) {
    this.peers = sender;
  }

  /** The highest position applied here; the read position a client starting here gets. */
  long readPosition() {
    return applier.applyKnown(group);
  }

  /** Handles a request; {@code reply} sends an answer back to whoever asked. */
  void handle(int fromDc, PaxosMessage m, Consumer<PaxosMessage> reply, int dcCount) {
    try {
      dispatch(m, reply, dcCount);
    } catch (TooOldException e) {
      // Section 7: a collected position gets no Paxos answer (the service sends TOO_OLD, which
      // a proposer counts as no reply).
      tooOld++;
    }
  }

  private void dispatch(PaxosMessage m, Consumer<PaxosMessage> reply, int dcCount) {
    if (m instanceof Prepare p) {
      reply.accept(acceptor.prepare(p));
    } else if (m instanceof Accept a) {
      reply.accept(acceptor.accept(a));
    } else if (m instanceof GrantRequest g) {
      reply.accept(acceptor.grant(g));
    } else if (m instanceof Learn l) {
      reply.accept(new LearnReply(l.group(), l.position(),
          acceptor.chosen(l.group(), l.position()).orElse(null)));
    } else if (m instanceof Apply a) {
      record(a.position(), a.value());
      catchUpBelow(a.position(), dcCount);
    } else if (m instanceof LearnReply r && r.chosen() != null) {
      record(r.position(), r.chosen());
    }
  }

  private void record(long position, LogValue value) {
    Acceptor.ApplyResult res = acceptor.apply(new Apply(group, position, value));
    if (res == Acceptor.ApplyResult.CONFLICT) {
      conflicts.add("DC " + name + " was told two different chosen values for position "
          + position + ": kept " + acceptor.chosen(group, position).orElseThrow() + ", refused "
          + value);
    }
    applier.applyKnown(group);
  }

  private void catchUpBelow(long position, int dcCount) {
    long applied = applier.applyKnown(group);
    List<Long> missing = new ArrayList<>();
    for (long p = applied + 1; p < position && missing.size() < MAX_LEARN_PER_GAP; p++) {
      if (acceptor.chosen(group, p).isEmpty()) {
        missing.add(p);
      }
    }
    for (long p : missing) {
      for (int dc = 0; dc < dcCount; dc++) {
        if (dc != index) {
          peers.send(index, dc, new Learn(group, p));
        }
      }
    }
  }
}
