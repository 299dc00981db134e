package org.paxoscp.client;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A client's session positions (read-your-writes and monotonic reads per group), in bounded
 * memory (docs/architecture.md section 9).
 *
 * <p>The positions of the most recently used {@code maxGroups} groups are cached. An entry
 * evicted for size is not forgotten at once: it moves to the <em>settling</em> map, where it
 * stays until a majority of DCs has applied its position (each DC answered a read at that
 * position, which a DC serves only once it has applied it; a TOO_OLD answer means the DC
 * collected past it, so applied it too). Only then is it dropped: the client settles one batch of
 * entries at a time on its timer thread, with one read request per DC and entry.
 *
 * <p>A begin in a group found in neither map, once anything was ever dropped, cannot know its
 * session position, so it asks every DC for its applied position ({@code BeginRequest} with
 * minimum 0) and takes the highest of a majority's answers as the minimum. That is at least the
 * dropped position: a majority applied it before it was dropped, applied positions only rise,
 * and any two majorities share a DC. The cost is that one parallel round to the DCs before such a
 * begin (a WAN round trip to the nearest majority), and one read request per DC for each entry
 * settled; a client that never touches more than {@code maxGroups} groups pays neither.
 *
 * <p>Thread-safe.
 */
final class Sessions implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Sessions.class);
  /** Entries settled at a time. */
  private static final int SETTLE_BATCH = 256;
  /** Pause between settling rounds while entries wait. */
  private static final long SETTLE_PAUSE_MS = 200;

  private final ClusterConfig cluster;
  private final Transport transport;
  private final Scheduler scheduler;
  private final Cache<String, Long> recent;
  private final Map<String, Long> settling = new ConcurrentHashMap<>();
  private final AtomicBoolean settleScheduled = new AtomicBoolean();
  /** Set once an entry was dropped: from then on a miss may hide a session position. */
  private volatile boolean droppedAny;
  private final AtomicLong dropped = new AtomicLong();
  private final AtomicLong floorQueries = new AtomicLong();
  private volatile boolean closed;

  Sessions(ClusterConfig cluster, Transport transport, Scheduler scheduler, int maxGroups) {
    this.cluster = cluster;
    this.transport = transport;
    this.scheduler = scheduler;
    // The eviction listener runs inside the atomic removal: a lookup that misses the cache
    // afterwards finds the entry settling.
    this.recent = Caffeine.newBuilder()
        .maximumSize(maxGroups)
        // Evict on the calling thread: the bound holds when a note returns.
        .executor(Runnable::run)
        .evictionListener((String group, Long position, RemovalCause cause) -> {
          if (group != null && position != null && cause.wasEvicted()) {
            settling.merge(group, position, Math::max);
            scheduleSettle();
          }
        })
        .build();
  }

  /**
   * The session position of {@code group} if this client knows it: cached, or settling; empty
   * when it never had one or dropped it (then {@link #mayHaveDropped()} tells whether a begin
   * must ask the DCs).
   */
  java.util.OptionalLong known(String group) {
    Long p = recent.getIfPresent(group);
    if (p == null) {
      p = settling.get(group);
    }
    return p == null ? java.util.OptionalLong.empty() : java.util.OptionalLong.of(p);
  }

  /** Whether a group missing from both maps may have had a session position here. */
  boolean mayHaveDropped() {
    return droppedAny;
  }

  /** Raises the session position of {@code group} to at least {@code position}. */
  void note(String group, long position) {
    Long settled = settling.get(group);
    long p = settled == null ? position : Math.max(position, settled);
    recent.asMap().merge(group, p, Math::max);
  }

  /**
   * The highest applied position of a majority of DCs in {@code group}: at least any session
   * position this client dropped for it (see the class comment). Completes within one request
   * timeout; fails with {@link UnavailableException} when fewer than a majority answered.
   */
  CompletableFuture<Long> majorityFloor(String group) {
    floorQueries.incrementAndGet();
    List<String> dcs = cluster.dcNames();
    int majority = dcs.size() / 2 + 1;
    AtomicInteger answered = new AtomicInteger();
    AtomicInteger failed = new AtomicInteger();
    AtomicLong highest = new AtomicLong();
    CompletableFuture<Long> floor = new CompletableFuture<>();
    List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
    for (String dc : dcs) {
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(dc, new Message.BeginRequest(group, 0),
            cluster.requestTimeout());
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      reply.whenComplete((m, t) -> {
        if (m instanceof Message.BeginReply b && b.group().equals(group)) {
          highest.accumulateAndGet(b.position(), Math::max);
          if (answered.incrementAndGet() == majority) {
            floor.complete(highest.get());
          }
        } else {
          failures.add(dc + ": " + (t != null ? t.getMessage() : String.valueOf(m)));
          if (failed.incrementAndGet() == dcs.size() - majority + 1) {
            floor.completeExceptionally(new UnavailableException("the session position of "
                + "group " + group + " was evicted from this client's cache and fewer than a "
                + "majority of DCs told their applied position: " + failures, group, 0, dc));
          }
        }
      });
    }
    return floor;
  }

  /** Groups whose session position is cached now (an estimate). */
  long cached() {
    return recent.estimatedSize();
  }

  /** Evicted entries not yet settled. */
  int settlingCount() {
    return settling.size();
  }

  /** Entries settled and dropped since start. */
  long droppedCount() {
    return dropped.get();
  }

  /** Begins that had to ask a majority for a floor (a miss after drops). */
  long floorQueryCount() {
    return floorQueries.get();
  }

  @Override
  public void close() {
    closed = true;
  }

  private void scheduleSettle() {
    if (!closed && settleScheduled.compareAndSet(false, true)) {
      scheduler.schedule(SETTLE_PAUSE_MS * 1000, this::settleBatch);
    }
  }

  /** Settles up to {@link #SETTLE_BATCH} entries, then schedules the next batch if any wait. */
  private void settleBatch() {
    settleScheduled.set(false);
    if (closed) {
      return;
    }
    List<CompletableFuture<Void>> batch = new ArrayList<>();
    for (var e : settling.entrySet()) {
      if (batch.size() == SETTLE_BATCH) {
        break;
      }
      batch.add(settle(e.getKey(), e.getValue()));
    }
    CompletableFuture.allOf(batch.toArray(CompletableFuture[]::new))
        .whenComplete((v, t) -> {
          if (!settling.isEmpty()) {
            scheduleSettle();
          }
        });
  }

  /** Drops {@code group}'s entry once a majority of DCs served a read at {@code position}. */
  private CompletableFuture<Void> settle(String group, long position) {
    List<String> dcs = cluster.dcNames();
    int majority = dcs.size() / 2 + 1;
    AtomicInteger applied = new AtomicInteger();
    List<CompletableFuture<Message>> replies = new ArrayList<>();
    for (String dc : dcs) {
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(dc, new Message.ReadRequest(group, position, List.of()),
            cluster.requestTimeout());
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      replies.add(reply.whenComplete((m, t) -> {
        boolean atOrPast = m instanceof Message.ReadReply r && r.position() == position
            || m instanceof Message.ErrorReply err && err.code() == Message.ErrorCode.TOO_OLD;
        if (atOrPast && applied.incrementAndGet() == majority) {
          // Set first: a begin that misses both maps from now on asks the DCs.
          droppedAny = true;
          // Only the value settled is dropped (a later eviction may have raised it).
          if (settling.remove(group, position)) {
            dropped.incrementAndGet();
          }
        }
      }));
    }
    return CompletableFuture.allOf(replies.stream().map(r -> r.handle((m, t) -> null))
        .toArray(CompletableFuture[]::new)).thenRun(() -> {
          if (applied.get() < majority) {
            LOG.debug("session position {} of group {} not settled yet ({} of {} DCs)",
                position, group, applied.get(), dcs.size());
          }
        });
  }
}
