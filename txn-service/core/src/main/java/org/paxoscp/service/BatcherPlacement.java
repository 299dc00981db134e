package org.paxoscp.service;

import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.paxoscp.transport.LeaderSubmit;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.paxoscp.wal.LogEntry;

/**
 * Where a group's entries are batched, for one service instance of leader combination
 * (docs/leader-combination.md): which DC batches a client's entry, which DC a round passes its
 * queued entries on to, and whose entry goes first in a list (its DC leads the next position,
 * ARCHITECTURE 5.3). It passes entries on and marks a DC that did not answer as down for a while.
 *
 * <p>None of this is needed for safety: where an entry is batched decides only who proposes it;
 * the grant check-and-write and the acceptors arbitrate between batchers, and every batcher
 * judges an entry against the decided positions before placing it ({@link LeaderRounds}).
 *
 * <p>Two rules, by whether the cluster knows what leading costs at each DC:
 * <ul>
 *   <li><b>With leader costs</b> (each DC's nearest-majority RTT): a group's batcher is the
 *       cheapest DC not marked down ({@link LeaderSubmit#batcher}); a list's first entry comes
 *       from the cheapest DC among its origins, this DC winning ties.
 *   <li><b>Without</b>: an entry goes to the DC that leads the group's next position as this DC
 *       knows it (which may be stale: the grant decides), and a round whose position another DC
 *       leads passes its clients' entries on there.
 * </ul>
 *
 * <p>Thread-safe.
 */
final class BatcherPlacement {
  private final String dc;
  private final List<String> dcs;
  private final int dcIndex;
  private final Map<String, Long> leaderCosts;
  private final Transport transport;
  private final Scheduler scheduler;
  private final Duration forwardTimeout;
  /** How long a DC that did not answer a pass-on counts as down ({@link LeaderSubmit#batcher}). */
  private final long downMicros;
  /** Per DC, until when it counts as down. */
  private final Map<String, Long> down = new ConcurrentHashMap<>();
  private final AtomicLong forwarded = new AtomicLong();

  /**
   * @param leaderCosts what leading costs at each DC (missing: 0); empty when the cluster does
   *     not know
   * @param forwardTimeout how long a pass-on waits for the other DC's answer
   * @param downMicros how long a DC that did not answer a pass-on is passed over
   */
  BatcherPlacement(String dc, List<String> dcs, Map<String, Long> leaderCosts,
      Transport transport, Scheduler scheduler, Duration forwardTimeout, long downMicros) {
    this.dc = Objects.requireNonNull(dc);
    this.dcs = List.copyOf(dcs);
    this.dcIndex = this.dcs.indexOf(dc);
    this.leaderCosts = Map.copyOf(leaderCosts);
    this.transport = Objects.requireNonNull(transport);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.forwardTimeout = Objects.requireNonNull(forwardTimeout);
    this.downMicros = downMicros;
  }

  /** Whether leader costs are known (the first rule of the class comment). */
  boolean hasCosts() {
    return !leaderCosts.isEmpty();
  }

  /**
   * Where a client's entry goes instead of into rounds here, if anywhere. With leader costs, to
   * the group's batcher when that is another DC; without, to the DC that leads the next position
   * as this DC knows it ({@code leaderOfNext}, asked only then).
   */
  Optional<String> passOnTo(Supplier<OptionalInt> leaderOfNext) {
    if (hasCosts()) {
      String b = LeaderSubmit.batcher(leaderCosts, dcs, down, scheduler.nowMicros());
      return b.equals(dc) ? Optional.empty() : Optional.of(b);
    }
    OptionalInt leader = leaderOfNext.get();
    return leader.isPresent() && leader.getAsInt() != dcIndex
        ? Optional.of(dcs.get(leader.getAsInt())) : Optional.empty();
  }

  /**
   * The DC a round at a position {@code leader} leads passes its clients' queued entries on to,
   * if any: only without leader costs, and only when another DC leads.
   */
  Optional<String> roundPassesOnTo(OptionalInt leader) {
    return !hasCosts() && leader.isPresent() && leader.getAsInt() != dcIndex
        ? Optional.of(dcs.get(leader.getAsInt())) : Optional.empty();
  }

  /**
   * The order that picks a list's first entry: the cheapest DC to lead first, this DC's entries
   * before other DCs' of equal cost (a stable minimum keeps arrival order among equals).
   */
  Comparator<LogEntry> firstEntryOrder() {
    return Comparator.comparingLong((LogEntry e) -> cost(e.originDc()))
        .thenComparingInt(e -> e.originDc().equals(dc) ? 0 : 1);
  }

  private long cost(String origin) {
    return leaderCosts.getOrDefault(origin, 0L);
  }

  /**
   * Passes {@code s} on to {@code to}'s service and relays its answer; a DC that does not answer
   * in time is marked down and the answer is LEADER_UNREACHABLE (the client then settles the
   * outcome).
   */
  CompletableFuture<Message> forward(SubmitRequest s, String to) {
    forwarded.incrementAndGet();
    CompletableFuture<Message> reply;
    try {
      reply = transport.request(to, s.asForwarded(), forwardTimeout);
    } catch (TransportException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    return reply.handle((m, t) -> {
      if (m instanceof SubmitReply || m instanceof ErrorReply) {
        return m;
      }
      down.put(to, scheduler.nowMicros() + downMicros);
      return new ErrorReply(s.group(), s.position(), ErrorCode.LEADER_UNREACHABLE, "DC " + dc
          + " passed the entry on to DC " + to + ", which did not answer in "
          + forwardTimeout.toMillis() + " ms" + (t == null ? "" : ": " + t));
    });
  }

  /** Submits passed on to another DC's service. */
  long forwarded() {
    return forwarded.get();
  }
}
