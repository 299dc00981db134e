package org.paxoscp.sim;

import java.util.OptionalInt;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.wal.LogEntry;

/** Builds the proposers of simulated clients; tests substitute proposers with planted bugs. */
@FunctionalInterface
public interface ProposerFactory {
  ProposerFactory STANDARD = Proposer::new;

  Proposer create(ProposerConfig cfg, String group, ProposerId proposerId, LogEntry entry,
      long position, OptionalInt leaderDc, RandomGenerator random);
}
