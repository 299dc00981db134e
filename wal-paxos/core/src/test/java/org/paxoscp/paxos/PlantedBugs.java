package org.paxoscp.paxos;

import java.util.HashMap;
import java.util.List;
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

  /**
   * Gives up at a position after {@code maxAttemptsPerPosition} ballots of any kind, also when
   * its entry went out there and every ballot was refused by answering DCs (contention or
   * OVERLOADED): UNKNOWN where no message was lost and no process failed.
   */
  public static final class GivesUpOnAnsweredRefusals extends Proposer {
    public GivesUpOnAnsweredRefusals(ProposerConfig cfg, String group, ProposerId id,
        LogEntry entry, long position, OptionalInt leader, RandomGenerator random) {
      super(cfg, group, id, entry, position, leader, random);
    }

    @Override
    protected boolean settlesPastAnsweredRefusals() {
      return false;
    }
  }

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
   * Combines by keys alone: the combination's conflict test ignores the ranges entries scanned,
   * so an entry is placed after one that writes into a range it read (a phantom), so long as it
   * read none of the written keys by key. The list proposed holds the entries as they are.
   */
  public static final class CombinationIgnoresRanges extends Proposer {
    public CombinationIgnoresRanges(ProposerConfig cfg, String group, ProposerId id,
        LogEntry entry, long position, OptionalInt leader, RandomGenerator random) {
      super(cfg, group, id, entry, position, leader, random);
    }

    @Override
    protected LogValue combine(LogEntry own, List<LogEntry> candidates, long position) {
      Map<String, LogEntry> byId = new HashMap<>();
      byId.put(own.txnId(), own);
      candidates.forEach(e -> byId.putIfAbsent(e.txnId(), e));
      LogValue byKeys = super.combine(withoutRanges(own),
          candidates.stream().map(PlantedBugs::withoutRanges).toList(), position);
      return new LogValue(byKeys.entries().stream().map(e -> byId.get(e.txnId())).toList());
    }
  }

  /**
   * Promotes by keys alone: the promotion test ignores the ranges the entry scanned, so it is
   * promoted past a winner that wrote into one of them (a phantom), so long as the winner wrote
   * none of the keys it read by key.
   */
  public static final class PromotionIgnoresRanges extends Proposer {
    public PromotionIgnoresRanges(ProposerConfig cfg, String group, ProposerId id,
        LogEntry entry, long position, OptionalInt leader, RandomGenerator random) {
      super(cfg, group, id, entry, position, leader, random);
    }

    @Override
    protected boolean conflictsWithWinner(LogEntry own, LogValue winner) {
      return super.conflictsWithWinner(withoutRanges(own), winner);
    }
  }

  /** {@code e} as if it had scanned nothing. */
  public static LogEntry withoutRanges(LogEntry e) {
    return new LogEntry(e.txnId(), e.originDc(), e.readPosition(), e.readSet(), List.of(),
        e.writes(), e.xg());
  }

  /**
   * Treats a value as chosen when a majority voted for it in any ballots — the paper's per-value
   * count applied to promotion, which docs/architecture.md section 5.2 shows to be unsafe.
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
