package org.paxoscp.paxos;

import java.util.Objects;
import org.paxoscp.wal.LogValue;

/**
 * The protocol's messages between a proposer (a transaction client, or a service catching up) and
 * the acceptors of the DCs. Every message names its group and log position; the sending or
 * answering DC is carried by the transport envelope.
 */
public sealed interface PaxosMessage {
  String group();

  long position();

  /** Phase 1a (Algorithm 2, line 32). */
  record Prepare(String group, long position, Ballot ballot) implements PaxosMessage {}

  /** Phase 2a (Algorithm 2, line 49); {@code ballot} may be {@link Ballot#FAST} after a grant. */
  record Accept(String group, long position, Ballot ballot, LogValue value) implements PaxosMessage {
    public Accept {
      Objects.requireNonNull(value);
    }
  }

  /** The decided value for a position (Algorithm 2, line 61). Idempotent. */
  record Apply(String group, long position, LogValue value) implements PaxosMessage {
    public Apply {
      Objects.requireNonNull(value);
    }
  }

  /** Asks the leader DC of a position for its fast-path grant (section 5.3). */
  record GrantRequest(String group, long position, String requester) implements PaxosMessage {}

  /** Asks a DC for the chosen value of a position, if it knows it (section 5.4). */
  record Learn(String group, long position) implements PaxosMessage {}

  /**
   * Phase 1b. {@code promised} is whether the acceptor promised {@code ballot}; {@code promise}
   * is its highest promise after handling the request; {@code lastVote} its last accepted vote
   * (null if none); {@code chosen} the decided value when the acceptor already knows it.
   */
  record PrepareReply(String group, long position, Ballot ballot, boolean promised, Ballot promise,
      Vote lastVote, LogValue chosen) implements PaxosMessage {}

  /** Phase 2b, with the acceptor's highest promise and the chosen value if known. */
  record AcceptReply(String group, long position, Ballot ballot, boolean accepted, Ballot promise,
      LogValue chosen) implements PaxosMessage {}

  /** Whether {@code requester} holds the fast-path grant for the position. */
  record GrantReply(String group, long position, String requester, boolean granted)
      implements PaxosMessage {}

  /** Answer to {@link Learn}: the chosen value, or null when this DC does not know it. */
  record LearnReply(String group, long position, LogValue chosen) implements PaxosMessage {}
}
