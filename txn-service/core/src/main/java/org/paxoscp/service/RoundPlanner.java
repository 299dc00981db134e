package org.paxoscp.service;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import org.paxoscp.paxos.Placement;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.LeaderGroup.Pending;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * What a leader round at position {@code q} does with a group's waiting entries: answers those
 * the decided positions already answer, and picks those that join the round's list. The
 * safety-critical half of leader combination (docs/leader-combination.md); the rest only decides
 * when and where rounds run.
 *
 * <p><b>Answers come only from decided positions.</b> Before an entry submitted for position
 * {@code p} with bound {@code b} joins round {@code q}, the values chosen at {@code p ... q-1}
 * (all decided and known at this DC: see {@link LeaderRounds}) are checked: one that holds the
 * entry answers COMMITTED there; one that writes a key the entry read, or holds its withdrawal,
 * answers ABORTED (the placement rule forbids any later position); {@code q > p + b} answers
 * ABORTED (the bound is used up, and every position in {@code p ... p + b} is decided without
 * it). So a duplicate submit, a restarted instance or a second instance of this DC can never
 * place an entry twice or abort one that is chosen.
 *
 * <p><b>The list</b>: first the earliest entry from the cheapest DC to lead
 * ({@link BatcherPlacement#firstEntryOrder}: its DC leads {@code q + 1}), then the others in
 * arrival order; an entry that reads a key an earlier one in the list writes, or that does not
 * fit in {@code maxListBytes}, waits for a later round, as does one submitted for a later
 * position than {@code q}.
 */
final class RoundPlanner {
  /** The decided log below a round, as this DC knows it. */
  interface DecidedLog {
    /**
     * The value chosen at {@code position}, or null when this DC does not have it.
     *
     * @throws TooOldException when the position was collected
     */
    LogValue chosen(long position);

    /** This DC's applied watermark: every position up to it is decided and recorded here. */
    long knownApplied();
  }

  /** A waiting entry answered without a round. */
  record Answer(Pending pending, Message reply) {}

  /**
   * What a round does: the entries answered now (in queue order) and the entries of its list (in
   * list order; empty when none may join). The rest wait.
   */
  record Plan(List<Answer> answered, List<Pending> list) {}

  private final String dc;
  private final LeaderCombiner.Rules rules;
  private final int maxListBytes;
  private final Comparator<Pending> first;

  RoundPlanner(String dc, LeaderCombiner.Rules rules, int maxListBytes,
      Comparator<LogEntry> firstEntryOrder) {
    this.dc = Objects.requireNonNull(dc);
    this.rules = Objects.requireNonNull(rules);
    this.maxListBytes = maxListBytes;
    this.first = Comparator.comparing(Pending::entry, firstEntryOrder);
  }

  /** Plans round {@code q} of {@code group} over {@code waiting} (in arrival order). */
  Plan plan(String group, Collection<Pending> waiting, long q, DecidedLog log) {
    List<Answer> answered = new ArrayList<>();
    List<Pending> eligible = new ArrayList<>();
    for (Pending p : waiting) {
      Message decided = judge(group, p.request, q, log);
      if (decided != null) {
        answered.add(new Answer(p, decided));
      } else if (p.request.position() <= q) {
        eligible.add(p);
      }
    }
    List<Pending> ordered = new ArrayList<>();
    // Stream.min keeps the earliest of equal entries: arrival order among equally cheap DCs.
    eligible.stream().min(first).ifPresent(ordered::add);
    for (Pending p : eligible) {
      if (!ordered.contains(p)) {
        ordered.add(p);
      }
    }
    List<Pending> list = new ArrayList<>();
    List<LogEntry> entries = new ArrayList<>();
    // A list encodes as one header plus its entries, so the sum of one-entry encodings is an
    // upper bound on its size (computed once per entry, not once per candidate list).
    long bytes = 0;
    for (Pending p : ordered) {
      if (!entries.isEmpty() && rules.conflicts(p.entry(), new LogValue(entries))) {
        continue;
      }
      int size = LogCodec.encode(LogValue.of(p.entry())).length;
      if (!entries.isEmpty() && bytes + size > maxListBytes) {
        continue;
      }
      entries.add(p.entry());
      bytes += size;
      list.add(p);
    }
    return new Plan(answered, list);
  }

  /**
   * What decided positions say about {@code s} before round {@code q}: a reply, or null when it
   * may join the round (or must wait for a later one).
   */
  Message judge(String group, SubmitRequest s, long q, DecidedLog log) {
    LogEntry e = s.entry();
    long last = Math.min(q - 1, s.position() + s.bound());
    for (long pos = s.position(); pos <= last; pos++) {
      LogValue v;
      try {
        v = log.chosen(pos);
      } catch (TooOldException ex) {
        return new ErrorReply(group, pos, ErrorCode.TOO_OLD, "DC " + dc + " collected position "
            + pos + " before judging " + e.txnId() + ": " + ex.getMessage());
      }
      if (v == null) {
        if (pos > log.knownApplied()) {
          // Held when the entry was queued, then withdrawn: its recording here failed.
          throw new CatchUpFailedException("DC " + dc + " lost the chosen value of position "
              + pos + " of group " + group + " before recording it");
        }
        // Below the applied watermark every position is chosen; a gap means a broken store.
        throw new IllegalStateException("DC " + dc + " applied group " + group + " past "
            + pos + " without its chosen value");
      }
      if (v.contains(e.txnId())) {
        return SubmitReply.committed(group, pos, e.txnId(), v.entries().size());
      }
      if (rules.conflicts(e, v)) {
        boolean withdrawn = v.entries().stream().anyMatch(w -> Placement.withdraws(w, e));
        return SubmitReply.aborted(group, pos, e.txnId(), withdrawn
            ? "withdrawn at position " + pos + " by its client, which had no answer"
            : "read a key written at position " + pos);
      }
    }
    if (q > s.position() + s.bound()) {
      return SubmitReply.aborted(group, s.position() + s.bound(), e.txnId(), "promotion bound "
          + s.bound() + " used up: positions " + s.position() + ".." + (s.position() + s.bound())
          + " went to other entries");
    }
    return null;
  }
}
