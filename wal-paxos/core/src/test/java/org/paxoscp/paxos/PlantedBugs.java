package org.paxoscp.paxos;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * Proposers with deliberately broken safety rules. They exist to prove that the checker and the
 * tests can fail: each must be caught on a schedule that exposes it.
 */
public final class PlantedBugs {
  private PlantedBugs() {}

  /** Promotes without checking the entry's reads against the winner's writes. */
  public static final class NoPromotionConflictCheck extends Proposer {
    public NoPromotionConflictCheck(ProposerConfig cfg, String group, ProposerId id, LogEntry entry,
        long position, OptionalInt leader, RandomGenerator random) {
      super(cfg, group, id, entry, position, leader, random);
    }

    @Override
    protected boolean conflictsWithWinner(LogEntry own, LogValue winner) {
      return false;
    }
  }

  /**
   * Treats a value as chosen when a majority voted for it in any ballots — the paper's per-value
   * count applied to promotion, which ARCHITECTURE 5.2 shows to be unsafe.
   */
  public static final class VotesCountedAcrossBallots extends Proposer {
    public VotesCountedAcrossBallots(ProposerConfig cfg, String group, ProposerId id, LogEntry entry,
        long position, OptionalInt leader, RandomGenerator random) {
      super(cfg, group, id, entry, position, leader, random);
    }

    @Override
    protected Optional<LogValue> knownChosen(Iterable<PrepareReply> replies) {
      Map<LogValue, Integer> perValue = new HashMap<>();
      for (PrepareReply p : replies) {
        if (p.lastVote() != null && perValue.merge(p.lastVote().value(), 1, Integer::sum)
            >= majority()) {
          return Optional.of(p.lastVote().value());
        }
      }
      return Optional.empty();
    }
  }
}
