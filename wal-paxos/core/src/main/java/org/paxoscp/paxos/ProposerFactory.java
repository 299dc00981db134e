package org.paxoscp.paxos;

import java.util.OptionalInt;
import java.util.random.RandomGenerator;
import org.paxoscp.wal.LogEntry;

/**
 * Builds the proposer of a client's commit: {@link #STANDARD} in production; the simulator and
 * tests substitute proposers with planted bugs.
 */
@FunctionalInterface
public interface ProposerFactory {
  ProposerFactory STANDARD = Proposer::new;

  Proposer create(ProposerConfig cfg, String group, ProposerId proposerId, LogEntry entry,
      long position, OptionalInt leaderDc, RandomGenerator random);
}
