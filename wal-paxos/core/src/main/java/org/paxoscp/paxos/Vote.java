package org.paxoscp.paxos;

import java.util.Objects;
import org.paxoscp.wal.LogValue;

/** An acceptor's last accepted proposal for a position: the ballot and the value. */
public record Vote(Ballot ballot, LogValue value) {
  public Vote {
    Objects.requireNonNull(ballot);
    Objects.requireNonNull(value);
  }
}
