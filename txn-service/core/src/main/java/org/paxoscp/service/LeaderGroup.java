package org.paxoscp.service;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * One group's leader-combination state at a service instance: the entries waiting, the chosen
 * values cached for judging them, the round and hold in progress, the grant asked ahead. Guarded
 * by its own monitor. While it has live work it lives in {@link LeaderCombiner}'s live map; when
 * idle it is retired to a {@link Memo} and never used again (see {@link LeaderCombiner}).
 */
final class LeaderGroup {
  /**
   * Chosen values kept per group for placement checks (twice the largest bound); older ones are
   * read from the store. Bounds the memory a service holds per group it has batched for.
   */
  static final int CACHED_POSITIONS = 2 * SubmitRequest.MAX_BOUND;
  /** Chosen values an idle group's memo keeps: the last one names the next position's leader. */
  static final int MEMO_POSITIONS = 2;

  final String name;
  final ArrayDeque<Pending> queue = new ArrayDeque<>();
  final Map<String, Pending> byTxn = new HashMap<>();
  final TreeMap<Long, LogValue> chosen = new TreeMap<>();
  /** The grant asked in advance for the next round, or null. */
  Prefetch prefetch;
  /** One past the last position this instance's rounds saw decided (every one below is). */
  long nextPosition = 1;
  /** The last round chose its own list: nextPosition is the log's end as far as we know. */
  boolean ownListChosen;
  /** A round is in flight, or a hold will start one. */
  boolean inFlight;
  /** While holding: how many of this DC's clients answered at the decision are still awaited. */
  int awaited;
  /** While holding: how many have submitted again. */
  int returned;
  /** Holds begun; a hold's timer ends only its own hold. */
  long holds;
  /** Holds in a row that ended with none of the awaited clients back (at most the cap). */
  int idleHolds;
  /** Decisions since the last hold. */
  int sinceHold;
  /** Retired: out of the live map, never used again. */
  boolean retired;

  /** A fresh state, or one rebuilt from an idle group's memo. */
  LeaderGroup(String name, Memo memo) {
    this.name = name;
    if (memo != null) {
      nextPosition = memo.nextPosition();
      ownListChosen = memo.ownListChosen();
      idleHolds = memo.idleHolds();
      sinceHold = memo.sinceHold();
      prefetch = memo.prefetch();
      chosen.putAll(memo.chosen());
    }
  }

  /** Whether it has live work: a round or hold, a queued entry, or one passed on unanswered. */
  boolean live() {
    return inFlight || awaited > 0 || !queue.isEmpty() || !byTxn.isEmpty();
  }

  /** What an idle group keeps; caller holds the monitor. */
  Memo memo() {
    TreeMap<Long, LogValue> last = new TreeMap<>();
    for (var e : chosen.descendingMap().entrySet()) {
      if (last.size() == MEMO_POSITIONS) {
        break;
      }
      last.put(e.getKey(), e.getValue());
    }
    return new Memo(nextPosition, ownListChosen, idleHolds, sinceHold, prefetch, last);
  }

  /** Caches the chosen value of {@code position}, keeping the last {@link #CACHED_POSITIONS}. */
  void remember(long position, LogValue v) {
    chosen.put(position, v);
    while (chosen.size() > CACHED_POSITIONS) {
      chosen.pollFirstEntry();
    }
  }

  /**
   * An idle group's state worth keeping: a cache of what the store holds, a heuristic's state,
   * and the grant asked ahead for the next round (granted to a holder only this instance knows:
   * dropping it costs that round the slow path).
   */
  record Memo(long nextPosition, boolean ownListChosen, int idleHolds, int sinceHold,
      Prefetch prefetch, Map<Long, LogValue> chosen) {}

  /** DC {@code grantor}'s fast-path grant for a position, asked before its round starts. */
  record Prefetch(long position, int grantor, ProposerId holder,
      CompletableFuture<Boolean> granted) {}

  /** A submitted entry waiting for its answer. */
  static final class Pending {
    final SubmitRequest request;
    final CompletableFuture<Message> reply = new CompletableFuture<>();
    boolean answered;
    int undecidedRounds;

    Pending(SubmitRequest request) {
      this.request = request;
    }

    LogEntry entry() {
      return request.entry();
    }
  }
}
