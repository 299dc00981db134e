package org.paxoscp.service;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.Message.BeginReply;
import org.paxoscp.transport.Message.BeginRequest;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.wal.LogValue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Advances one DC's GC watermark of a group and collects below it (docs/architecture.md section 7,
 * {@link LogCollector}). Any service instance of any DC may run it: it holds no state that matters
 * (the watermark is raised by check-and-write in the group's meta row, only upwards, and
 * collection is idempotent), so no coordinator is needed.
 *
 * <p><b>Policy: by count, waiting for every DC.</b> A round asks every peer DC for its applied
 * watermark (a {@code BeginRequest(group, 0)}, whose reply is that DC's read position, i.e. its
 * applied watermark) and proposes {@code min(applied at every DC) - retentionPositions}. A count
 * bounds storage directly (about {@code retentionPositions} WAL rows per DC, plus one version per
 * key and the versions of the retained positions) whatever the commit rate; a transaction is
 * refused with TOO_OLD only if more than {@code retentionPositions} positions were decided while
 * it ran, which the retention is chosen to make rare. (The lowest read position still in use
 * cannot be known: services are stateless and clients are not registered.)
 *
 * <p><b>A DC that is away.</b> If a DC does not answer, the round does nothing while that DC
 * is at most {@link Settings#maxLagPositions} behind: the watermark waits for it, so a DC that
 * returns finds every position it lacks still in its peers' WALs and catches up by the ordinary
 * learn path (section 5.4). The wait is bounded by that lag, measured from the highest applied
 * position the DC last reported to this DC (kept in the group's meta row, so it survives
 * restarts; 0 if it never answered): once the DCs that answer are further ahead than that, the
 * watermark moves on without it, and the WALs stop growing. A DC left behind so stays safe — its
 * peers answer its learn requests and PREPAREs at collected positions with TOO_OLD, so it decides
 * nothing there and never applies past the gap — but it cannot serve the group until it is
 * rebuilt (installing a snapshot from a peer is not implemented). {@code maxLagPositions} 0 waits
 * for ever.
 *
 * <p>Thread-safe. {@link #onApplied} never blocks and a round never waits for a message: it asks
 * its peers, and its store work runs on the {@link Scheduler}'s workers once they answered or
 * their deadline passed; at most one round per group runs at a time. The simulator runs this
 * class unchanged in virtual time.
 */
public final class GroupCollector implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(GroupCollector.class);

  /**
   * @param retentionPositions positions kept below the lowest applied position of all DCs (>= 1)
   * @param collectEveryPositions a round starts when the applied watermark crosses a multiple
   *     of this (>= 1)
   * @param maxPositionsPerRound the most positions one round collects (>= 1)
   * @param peerTimeout how long a round waits for each peer's applied watermark
   * @param maxLagPositions how far the DCs that answer may get ahead of one that does not before
   *     collection goes on without it (0: wait for ever)
   */
  public record Settings(long retentionPositions, int collectEveryPositions,
      int maxPositionsPerRound, Duration peerTimeout, long maxLagPositions) {
    public Settings {
      Objects.requireNonNull(peerTimeout);
      if (maxLagPositions < 0) {
        throw new IllegalArgumentException("maxLagPositions must be >= 0");
      }
      if (retentionPositions < 1 || collectEveryPositions < 1 || maxPositionsPerRound < 1) {
        throw new IllegalArgumentException("retention, interval and batch must be >= 1");
      }
      if (peerTimeout.isNegative() || peerTimeout.isZero()) {
        throw new IllegalArgumentException("peerTimeout must be positive");
      }
    }
  }

  /**
   * What one round did.
   *
   * @param minApplied the lowest applied watermark of the DCs the round counted (every DC, or
   *     all but those left behind, see the class comment), or -1 if it waited for a silent DC
   * @param gcWatermark this DC's GC watermark after the round
   * @param collected positions whose WAL rows were removed in this round
   */
  public record Round(long minApplied, long gcWatermark, int collected) {}

  private final String dc;
  private final List<String> peers;
  private final LogApplier applier;
  private final LogCollector collector;
  private final Transport transport;
  private final Settings settings;
  private final Scheduler scheduler;
  /** Receives each collected position's chosen value (the simulator keeps them), or null. */
  private final BiConsumer<Long, LogValue> archive;
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  private final AtomicLong collected = new AtomicLong();
  private final AtomicLong rounds = new AtomicLong();
  private final AtomicLong roundsWaiting = new AtomicLong();
  /** This DC's applied position minus its GC watermark, after the last round (any group). */
  private final AtomicLong lastLag = new AtomicLong();
  /**
   * Per group: the applied watermark at which this object last started a round. A bounded cache
   * (docs/architecture.md section 9): a group evicted from it starts again from the last multiple
   * of {@link Settings#collectEveryPositions} below its watermark, so GC work follows the groups
   * written, and an evicted group costs no extra round.
   */
  private final Cache<String, AtomicLong> lastRound;
  private final AtomicBoolean closed = new AtomicBoolean();

  /**
   * @param dc this DC; must be in {@code dcs}
   * @param dcs every DC of the cluster
   * @param store this DC's store
   * @param transport speaks for {@code dc}
   * @param scheduler runs the rounds' store work and deadlines; owned by the caller
   */
  public GroupCollector(String dc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler) {
    this(dc, dcs, store, transport, settings, scheduler, null);
  }

  /**
   * As above; {@code archive}, if not null, receives the chosen value of every position this
   * collector removes (the simulator's checker judges the whole log).
   */
  public GroupCollector(String dc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler, BiConsumer<Long, LogValue> archive) {
    this(dc, dcs, store, transport, settings, scheduler, archive, LogApplier.DEFAULT_MAX_GROUPS);
  }

  /** As above, caching at most {@code maxGroups} groups' state. */
  public GroupCollector(String dc, List<String> dcs, KvStore store, Transport transport,
      Settings settings, Scheduler scheduler, BiConsumer<Long, LogValue> archive,
      int maxGroups) {
    this.lastRound = Caffeine.newBuilder().maximumSize(maxGroups).build();
    this.dc = Objects.requireNonNull(dc);
    if (!dcs.contains(dc)) {
      throw new IllegalArgumentException("DC " + dc + " is not in " + dcs);
    }
    this.peers = dcs.stream().filter(d -> !d.equals(dc)).toList();
    this.applier = new LogApplier(store, maxGroups);
    this.collector = new LogCollector(store);
    this.transport = Objects.requireNonNull(transport);
    this.settings = Objects.requireNonNull(settings);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.archive = archive;
  }

  public Settings settings() {
    return settings;
  }

  /** Positions whose WAL rows this collector removed so far. */
  public long collectedPositions() {
    return collected.get();
  }

  /** GC rounds finished, whether or not they moved the watermark. */
  public long rounds() {
    return rounds.get();
  }

  /** Rounds that left the watermark where it was to wait for a silent DC. */
  public long roundsWaiting() {
    return roundsWaiting.get();
  }

  /**
   * How far the GC watermark stayed below this DC's applied position in the last round (of any
   * group): about the retention when every DC keeps up, more while GC waits for one.
   */
  public long lastLagPositions() {
    return lastLag.get();
  }

  /**
   * Tells the collector that this DC applied {@code group} up to {@code applied}; starts a round
   * in the background once {@link Settings#collectEveryPositions} positions were applied since
   * the last round this object started for the group. Never blocks, never throws.
   */
  public void onApplied(String group, long applied) {
    long every = settings.collectEveryPositions();
    AtomicLong last = lastRound.get(group, g -> new AtomicLong(assumedLastRound(applied, every)));
    long l = last.get();
    if (applied - l >= settings.collectEveryPositions() && last.compareAndSet(l, applied)) {
      collectNow(group);
    }
  }

  /**
   * Where a group unknown here (new, or evicted from the cache) is taken to have had its last
   * round: the last multiple of {@code every} below {@code applied}, so that reaching a multiple
   * starts a round and nothing else does, as if the group had never been evicted.
   */
  static long assumedLastRound(long applied, long every) {
    return Math.max(0, applied - 1) / every * every;
  }

  /**
   * Runs one round for {@code group} in the background unless one is already running for it.
   *
   * @return the round; completes with null if one was already running or the collector is closed,
   *     exceptionally if the store failed
   */
  public CompletableFuture<Round> collectNow(String group) {
    if (closed.get() || !running.add(group)) {
      return CompletableFuture.completedFuture(null);
    }
    CompletableFuture<Round> f = new CompletableFuture<>();
    f.whenComplete((r, t) -> running.remove(group));
    scheduler.execute(() -> {
      try {
        startRound(group, f);
      } catch (RuntimeException e) {
        fail(group, f, e);
      }
    });
    return f;
  }

  /** Asks every peer for its applied watermark; goes on when all answered or timed out. */
  private void startRound(String group, CompletableFuture<Round> f) {
    long own = applier.appliedWatermark(group);
    List<CompletableFuture<Message>> replies = new ArrayList<>();
    for (String peer : peers) {
      CompletableFuture<Message> reply;
      try {
        reply = transport.request(peer, new BeginRequest(group, 0), settings.peerTimeout());
      } catch (RuntimeException e) {
        reply = CompletableFuture.failedFuture(e);
      }
      // A transport that never completes a request must not stall the round.
      replies.add(scheduler.within(reply, settings.peerTimeout().plusMillis(100),
          () -> new TransportTimeoutException("no answer from " + peer)));
    }
    CompletableFuture.allOf(replies.stream()
            .map(r -> r.handle((m, t) -> null)).toArray(CompletableFuture[]::new))
        .whenComplete((ignored, t) -> scheduler.execute(() -> {
          try {
            f.complete(finishRound(group, own, replies));
          } catch (RuntimeException e) {
            fail(group, f, e);
          }
        }));
  }

  private void fail(String group, CompletableFuture<Round> f, RuntimeException e) {
    LOG.warn("DC {}: GC round of group {} failed: {}", dc, group, e.toString());
    f.completeExceptionally(e);
  }

  private Round finishRound(String group, long own, List<CompletableFuture<Message>> replies) {
    if (closed.get()) {
      return null;
    }
    long min = own;
    List<String> silent = new ArrayList<>();
    for (int i = 0; i < replies.size(); i++) {
      Message m = replies.get(i).isCompletedExceptionally() ? null : replies.get(i).join();
      if (m instanceof BeginReply b && group.equals(b.group())) {
        min = Math.min(min, b.position());
        collector.recordSeenApplied(group, peers.get(i), b.position());
      } else {
        LOG.debug("DC {}: GC of group {}: no answer from DC {}: {}", dc, group, peers.get(i), m);
        silent.add(peers.get(i));
      }
    }
    for (String peer : silent) {
      long seen = collector.lastSeenApplied(group, peer);
      if (settings.maxLagPositions() == 0 || min - seen <= settings.maxLagPositions()) {
        // Wait for it: it may need every position above what it last reported.
        long held = collector.gcWatermark(group);
        rounds.incrementAndGet();
        roundsWaiting.incrementAndGet();
        lastLag.set(own - held);
        return new Round(-1, held, 0);
      }
      LOG.warn("DC {}: GC of group {} goes on without DC {}, silent and more than {} positions "
          + "behind (last reported {}, the others {}): DC {} must be rebuilt before it serves "
          + "the group", dc, group, peer, settings.maxLagPositions(), seen, min, peer);
    }
    long watermark = collector.advance(group,
        LogCollector.candidate(min, settings.retentionPositions()));
    LogCollector.Collected c = collector.collect(group, settings.maxPositionsPerRound(),
        archive);
    collected.addAndGet(c.positions());
    rounds.incrementAndGet();
    lastLag.set(own - watermark);
    return new Round(min, watermark, c.positions());
  }

  /** Drops the cached state of every group (the forced-eviction test mode). */
  public void forgetAll() {
    lastRound.invalidateAll();
    applier.forgetAll();
  }

  /** Later rounds do nothing; a round already running ends without collecting. Idempotent. */
  @Override
  public void close() {
    closed.set(true);
  }
}
