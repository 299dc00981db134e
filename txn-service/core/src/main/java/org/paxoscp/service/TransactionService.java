package org.paxoscp.service;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Learn;
import org.paxoscp.paxos.PaxosMessage.LearnReply;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.RebuildGuard;
import org.paxoscp.paxos.RebuildingException;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.Message.BeginReply;
import org.paxoscp.transport.Message.BeginRequest;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.ExtentReply;
import org.paxoscp.transport.Message.ExtentRequest;
import org.paxoscp.transport.Message.GroupsReply;
import org.paxoscp.transport.Message.GroupsRequest;
import org.paxoscp.transport.Message.SnapshotItem;
import org.paxoscp.transport.Message.SnapshotReply;
import org.paxoscp.transport.Message.SnapshotRequest;
import org.paxoscp.transport.Message.ReadReply;
import org.paxoscp.transport.Message.ReadRequest;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Transaction Service logic of one DC (docs/architecture.md sections 4-5) over that DC's
 * {@link KvStore}: the acceptor for PREPARE, ACCEPT, APPLY, grant and learn requests, the read
 * position for {@code BeginRequest}, and reads at a read position, catching up (section 5.4)
 * whenever a request proves that positions this DC has not applied exist.
 *
 * <p><b>Stateless.</b> All protocol state is in the store, changed only through the acceptor's
 * and log applier's check-and-write operations, so any number of instances may serve one DC;
 * what is held in memory (counters, catch-up runs, the applier's watermark and the chosen values
 * APPLYs brought) is only ever a lower bound or a value already chosen (docs/commit-path.md 11a),
 * and a restarted instance starts without it.
 *
 * <p><b>Errors.</b> {@link #handle} never throws and its future never fails. Invalid input is
 * answered with {@link ErrorCode#BAD_REQUEST} after validation and before any store access, so a
 * rejected request changes nothing. A store that does not answer gives {@link
 * ErrorCode#STORE_UNAVAILABLE}
 * (naming the DC and the operation); positions that cannot be learned in time give
 * {@link ErrorCode#CATCH_UP_FAILED}; a request for a position at or below the group's GC
 * watermark (a PREPARE, ACCEPT, grant or learn of a collected position, a read at a collected read
 * position) gives {@link ErrorCode#TOO_OLD} (section 7); a read reply too big for one datagram
 * gives
 * {@link ErrorCode#TOO_LARGE}; a request of a group this DC does not serve because it lost its
 * store and has not rebuilt the group, or a vote at or below a rebuilt group's fence, gives
 * {@link ErrorCode#REBUILDING} (section 12). One-way messages (APPLY, a pushed {@code LearnReply})
 * get no reply
 * even when they fail; they are logged.
 *
 * <p>Thread-safe. {@link #handle} does store work on the calling thread and never waits for a
 * message: a begin or read request that needs catch-up completes later, on the
 * {@link Scheduler}'s workers, or fails after {@link Limits#catchUpWait}. So the same code serves
 * UDP on worker threads and the simulator in virtual time.
 */
public final class TransactionService implements RequestHandler {
  private static final Logger LOG = LoggerFactory.getLogger(TransactionService.class);
  /** Per-entry allowance for framing in the reply size estimate. */
  private static final int ENTRY_OVERHEAD = 16;
  /** Allowance for the envelope, group and position in the reply size estimate. */
  private static final int REPLY_OVERHEAD = 128;
  /** Room for an ACCEPT's envelope and ballot beside a combined list in one datagram. */
  private static final int LIST_MARGIN = 512;
  /** Submitted entries one group may hold waiting at one service instance. */
  private static final int MAX_WAITING_SUBMITS = 4096;
  /** Data rows one snapshot page reads from the store at most. */
  private static final int SNAPSHOT_PAGE_ROWS = 512;
  /** Room for a snapshot page's digest of the lock table and its lock-pages mark. */
  private static final int LOCK_PAGE_OVERHEAD = 48;
  /** Groups one {@link GroupsReply} names at most. */
  private static final int GROUPS_PAGE = 128;

  /**
   * Request limits.
   *
   * @param maxReadKeys the most keys one {@code ReadRequest} may name
   * @param maxReplyBytes the largest reply that fits in one datagram (the cluster's datagram
   *     limit); a read reply estimated above it is refused with TOO_LARGE
   * @param catchUpWait how long a begin or read request waits for catch-up before answering
   *     CATCH_UP_FAILED (the catch-up itself goes on)
   */
  public record Limits(int maxReadKeys, int maxReplyBytes, Duration catchUpWait) {
    public Limits {
      Objects.requireNonNull(catchUpWait);
      if (maxReadKeys < 1) {
        throw new IllegalArgumentException("maxReadKeys must be >= 1");
      }
      if (maxReplyBytes < 512) {
        throw new IllegalArgumentException("maxReplyBytes must be >= 512");
      }
      if (catchUpWait.isNegative() || catchUpWait.isZero()) {
        throw new IllegalArgumentException("catchUpWait must be positive");
      }
    }
  }

  private final String dc;
  private final List<String> dcs;
  private final KvStore store;
  private final Acceptor acceptor;
  /** This process's view of its store's identity (section 12), shared with its catch-up. */
  private final RebuildGuard guard;
  private final LogApplier applier;
  private final CatchUp catchUp;
  /**
   * The cluster's version as this service follows it: below {@link ClusterVersion#RANGE_READS}
   * it refuses scans and votes for no value carrying a key range (docs/upgrading.md).
   */
  private volatile java.util.function.IntSupplier clusterVersion = () -> ClusterVersion.LATEST;
  private final Limits limits;
  private final Scheduler scheduler;
  /** Log and version GC (section 7), or null when this service does not collect. */
  private final GroupCollector collector;
  private final LeaderCombiner combiner;
  /** One-way messages (APPLY, a pushed learn reply) that failed, by what their reply would say. */
  private final Map<ErrorCode, java.util.concurrent.atomic.LongAdder> oneWayFailures =
      new java.util.EnumMap<>(ErrorCode.class);

  /**
   * @param dc this DC's name
   * @param dcs the cluster's DCs in proposer index order (for the fast-path leader rule)
   * @param store this DC's store; the same one {@code catchUp} was built on
   * @param catchUp this DC's catch-up; owned by the caller
   * @param scheduler the deadlines of requests that wait for catch-up, and the workers that
   *     finish them (the same scheduler {@code catchUp} runs on is the natural choice)
   */
  public TransactionService(String dc, List<String> dcs, KvStore store, CatchUp catchUp,
      Limits limits, Scheduler scheduler) {
    this(dc, dcs, store, catchUp, limits, scheduler, null);
  }

  /**
   * As above, and also advances the GC watermark and collects (section 7) through
   * {@code collector}, which the caller owns; null: this service does not collect (requests at
   * collected positions are still refused with TOO_OLD).
   */
  public TransactionService(String dc, List<String> dcs, KvStore store, CatchUp catchUp,
      Limits limits, Scheduler scheduler, GroupCollector collector) {
    this(dc, dcs, store, catchUp, limits, scheduler, collector, LeaderCombiner.Options.DEFAULT);
  }

  /** As above, with leader combination's options (docs/architecture.md section 5.5). */
  public TransactionService(String dc, List<String> dcs, KvStore store, CatchUp catchUp,
      Limits limits, Scheduler scheduler, GroupCollector collector,
      LeaderCombiner.Options leaderOptions) {
    this.collector = collector;
    for (ErrorCode c : ErrorCode.values()) {
      oneWayFailures.put(c, new java.util.concurrent.atomic.LongAdder());
    }
    this.dc = Objects.requireNonNull(dc);
    this.dcs = List.copyOf(dcs);
    if (!this.dcs.contains(dc)) {
      throw new IllegalArgumentException("DC " + dc + " is not in " + dcs);
    }
    this.store = Objects.requireNonNull(store);
    this.catchUp = Objects.requireNonNull(catchUp);
    this.guard = catchUp.guard();
    this.acceptor = new Acceptor(store, guard);
    guard.onChange(this::storeChanged);
    // One applier for the service and its catch-up, so both see one remembered watermark.
    this.applier = catchUp.applier();
    this.limits = Objects.requireNonNull(limits);
    this.scheduler = Objects.requireNonNull(scheduler);
    this.combiner = new LeaderCombiner(dc, this.dcs, acceptor, applier, catchUp, scheduler,
        leaderOptions, limits.maxReplyBytes() - LIST_MARGIN, MAX_WAITING_SUBMITS,
        applier.maxGroups());
  }

  /**
   * Empties every per-group cache of this service (the applier's, the leader combiner's idle
   * groups and cached chosen values, the collector's), as if every group had just been evicted;
   * live work (rounds, queued submits, catch-up runs) is kept. For the forced-eviction test
   * mode: a service must stay correct whenever its caches are emptied (docs/architecture.md
   * section 9).
   */
  public void forgetCaches() {
    applier.forgetAll();
    combiner.forgetCached();
    if (collector != null) {
      collector.forgetAll();
    }
  }

  /**
   * Groups whose state this service caches now, by structure (estimates): the applier's, the
   * leader combiner's (live and idle), the catch-up runs'. Each is bounded; see docs/operating.md,
   * "Many groups".
   */
  public Map<String, Long> cachedGroups() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("applier", applier.cachedGroups());
    m.put("leader", combiner.cachedGroups());
    m.put("catchup", (long) catchUp.activeRuns());
    return m;
  }

  /**
   * One-way messages (APPLY, a pushed learn reply) that failed and so got no reply, by the code
   * a reply would have carried ({@code TOO_OLD}, or {@code STORE_UNAVAILABLE} for a store that
   * failed or any other error); for metrics.
   */
  public long oneWayFailures(ErrorCode code) {
    return oneWayFailures.get(code).sum();
  }

  /**
   * Groups each per-group cache dropped to stay within its bound ({@code cache.groups}), by the
   * names {@link #cachedGroups} uses; a group dropped is rebuilt from the store on its next use.
   */
  public Map<String, Long> cacheEvictions() {
    Map<String, Long> m = new LinkedHashMap<>();
    m.put("applier", applier.evictions());
    m.put("leader", combiner.evictions());
    return m;
  }

  /** Leader combination at this service (rounds and entries, for reports). */
  public LeaderCombiner combiner() {
    return combiner;
  }

  /** This service's DC. */
  public String dc() {
    return dc;
  }

  /**
   * What this DC's store says about itself (docs/architecture.md section 12): {@code serving},
   * {@code rebuilding}, or {@code lost} (no marker: it lost its contents and no rebuild started).
   *
   * @throws StoreUnavailableException if the store does not answer
   */
  public String storeState() {
    return StoreMarker.read(store)
        .map(m -> m.state().name().toLowerCase(java.util.Locale.ROOT)).orElse("lost");
  }

  /**
   * Times this service saw its store's marker change while it ran (lost, being rebuilt,
   * rebuilt): each dropped every per-group cache (section 12). Should stay 0 but for rebuilds.
   */
  public long storeChanges() {
    return guard.changes();
  }

  /**
   * The store's marker changed under this running service: nothing cached from the store before
   * is used again (the guard's epoch moved on; the caches are emptied too), and until the store
   * is rebuilt every group is refused with REBUILDING.
   */
  private void storeChanged(StoreMarker before, StoreMarker now) {
    forgetCaches();
    String was = before == null ? "no marker" : before.describe();
    if (now == null) {
      LOG.error("DC {}: this DC's store lost its contents under the running service (it was {}, "
          + "it has no marker now): every group is refused until the DC is rebuilt "
          + "(paxoscp dc rebuild --dc {} --all); caches dropped", dc, was, dc);
    } else if (now.state() == StoreMarker.State.REBUILDING) {
      LOG.warn("DC {}: this DC's store is being rebuilt (it was {}, it is {} now): only groups "
          + "rebuilt by that rebuild are served; caches dropped", dc, was, now.describe());
    } else {
      LOG.info("DC {}: this DC's store is {} now (it was {}); caches dropped", dc,
          now.describe(), was);
    }
  }

  /**
   * A group at this DC, for an operator: its applied position, its GC watermark and the
   * fast-path leader for the next position ("" when none).
   *
   * @param applied the applied watermark in the store
   * @param gcWatermark positions at or below it were collected here (section 7)
   */
  public record GroupStatus(long applied, long gcWatermark, String leader) {}

  /**
   * Reads {@code group}'s status from the store (changes nothing).
   *
   * @throws IllegalArgumentException for an invalid group name
   * @throws StoreUnavailableException if the store does not answer
   */
  public GroupStatus groupStatus(String group) {
    WalLayout.validateGroup(group);
    long applied = applier.appliedWatermark(group);
    return new GroupStatus(applied, org.paxoscp.paxos.LogCollector.gcWatermark(store, group),
        leaderAfter(group, applied));
  }

  /**
   * How many APPLYs or learned values met a different value already chosen at the same position:
   * a broken agreement (safety violation), logged as an error when it happens. Should be 0.
   */
  public long conflicts() {
    return catchUp.conflicts();
  }

  /**
   * Never fails; see the class comment for the replies. Requests that need no catch-up complete
   * on the calling thread; begin and read requests behind a gap complete when catch-up reaches
   * the position or {@link Limits#catchUpWait} passes, without holding the calling thread.
   */
  @Override
  public CompletableFuture<Message> handle(String fromDc, Message request) {
    CompletableFuture<Message> reply;
    try {
      reply = dispatch(request);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(errorFor(request, e));
    }
    return reply.exceptionally(t -> errorFor(request,
        t instanceof CompletionException && t.getCause() != null ? t.getCause() : t));
  }

  private CompletableFuture<Message> dispatch(Message request) {
    if (request == null) {
      throw new Rejected("no request");
    }
    if (request instanceof Message.RebuildRequest q) {
      // Not behind the guard: it is what makes a group served again.
      if (!q.group().isEmpty()) {
        validateGroup(q.group());
      }
      return rebuild(q);
    }
    if (request instanceof Message.RttProbe probe) {
      return CompletableFuture.completedFuture(combiner.answer(probe));
    }
    if (request instanceof GroupsRequest g) {
      // Its group is where the listing goes on from: "" for the first page.
      if (!g.group().isEmpty()) {
        validateGroup(g.group());
      }
      return CompletableFuture.completedFuture(groups(g));
    }
    validateGroup(request.group() == null ? "" : request.group());
    if (request instanceof ExtentRequest e) {
      return CompletableFuture.completedFuture(extent(e));
    } else if (request instanceof SnapshotRequest q) {
      return CompletableFuture.completedFuture(snapshot(q));
    } else if (request instanceof Message.Paxos p) {
      return CompletableFuture.completedFuture(handlePaxos(p.message()));
    } else if (request instanceof BeginRequest b) {
      return begin(b);
    } else if (request instanceof ReadRequest r) {
      return read(r);
    } else if (request instanceof Message.ScanRequest r) {
      return scan(r);
    } else if (request instanceof Message.UpdatesRequest u) {
      return updates(u);
    } else if (request instanceof SubmitRequest s) {
      return submit(s);
    }
    throw new Rejected(request.getClass().getSimpleName() + " is not a request");
  }

  /** The reply to a request that failed with {@code t}; null for one-way messages. */
  private Message errorFor(Message request, Throwable t) {
    String group = request == null || request.group() == null ? "" : request.group();
    long position = request == null ? -1 : request.position();
    if (t instanceof Rejected || t instanceof IllegalArgumentException) {
      // Invalid input, found before any store access (also inside the acceptor).
      return new ErrorReply(group, position, ErrorCode.BAD_REQUEST, t.getMessage());
    }
    if (oneWay(request)) {
      ErrorCode code = t instanceof TooOldException ? ErrorCode.TOO_OLD
          : t instanceof RebuildingException ? ErrorCode.REBUILDING
          : ErrorCode.STORE_UNAVAILABLE;
      oneWayFailures.get(code).increment();
      if (!(t instanceof TooOldException) && !(t instanceof RebuildingException)) {
        LOG.warn("DC {} failed one-way {}: {}", dc, describe(request), t.toString());
      }
      return null;
    }
    if (t instanceof TooOldException) {
      // Section 7: the position was collected here; never a fresh instance or a stale read.
      return new ErrorReply(group, position, ErrorCode.TOO_OLD, "DC " + dc + ": " + t.getMessage());
    } else if (t instanceof RebuildingException) {
      // Section 12: the DC lost its store; another DC serves the request.
      return new ErrorReply(group, position, ErrorCode.REBUILDING, "DC " + dc + ": "
          + t.getMessage());
    } else if (t instanceof Failed f) {
      return new ErrorReply(group, position, f.code, f.getMessage());
    } else if (t instanceof StoreUnavailableException) {
      String detail = "store of DC " + dc + " unavailable during " + describe(request) + ": "
          + t.getMessage();
      LOG.warn(detail);
      return new ErrorReply(group, position, ErrorCode.STORE_UNAVAILABLE, detail);
    }
    // Not the requester's fault: unreadable store content or a broken invariant here.
    String detail = "DC " + dc + " failed " + describe(request) + ": " + t;
    LOG.error(detail, t);
    return new ErrorReply(group, position, ErrorCode.STORE_UNAVAILABLE, detail);
  }

  // ---- Paxos -------------------------------------------------------------------------------

  private Message handlePaxos(PaxosMessage m) {
    if (m.position() < 1) {
      throw new Rejected("log positions start at 1, got " + m.position());
    }
    if (m instanceof Prepare p) {
      if (p.ballot() == null || p.ballot().isFast()) {
        throw new Rejected("PREPARE needs a ballot above the fast-path ballot");
      }
      return new Message.Paxos(acceptor.prepare(p));
    } else if (m instanceof Accept a) {
      if (a.ballot() == null) {
        throw new Rejected("ACCEPT without a ballot");
      }
      if (carriesRanges(a.value())) {
        requireRangeReads("a vote for a value with key ranges");
      }
      if (carriesUpdates(a.value())) {
        requireVersion(ClusterVersion.COMMUTATIVE_UPDATES, "a vote for a value with counter or "
            + "set updates");
      }
      if (carriesClose(a.value())) {
        requireVersion(ClusterVersion.XG_ONE_ROUND, "a vote for a value with a CLOSE step");
      }
      return new Message.Paxos(acceptor.accept(a));
    } else if (m instanceof GrantRequest g) {
      if (g.requester() == null || g.requester().isEmpty()) {
        throw new Rejected("grant request without a requester");
      }
      return new Message.Paxos(acceptor.grant(g));
    } else if (m instanceof Learn l) {
      served(l.group());
      return new Message.Paxos(new LearnReply(l.group(), l.position(),
          acceptor.chosen(l.group(), l.position()).orElse(null)));
    } else if (m instanceof Apply a) {
      // Not in a group lost and not rebuilt here: applying would write its meta row.
      served(a.group());
      applied(a.group(), a.position(), a);
      return null;
    } else if (m instanceof LearnReply r) {
      served(r.group());
      if (r.chosen() != null) {
        applied(r.group(), r.position(), new Apply(r.group(), r.position(), r.chosen()));
      }
      return null;
    }
    throw new Rejected(m.getClass().getSimpleName() + " is a reply, not a request");
  }

  /**
   * Records a decided value (Algorithm 1, lines 20-21), applies what is known, and, when the
   * position lies beyond a gap, starts catching up the gap in the background: the APPLY proves
   * that every position up to it exists (section 5.4).
   */
  private void applied(String group, long position, Apply a) {
    // A begin arriving meanwhile (typically its client's next, right after this commit) may
    // read at this position before it is recorded and applied here (see begin).
    applier.announce(group, position, a.value());
    try {
      catchUp.record(group, position, a.value());
    } catch (RuntimeException e) {
      // Not recorded here (the store failed): begins no longer count on this DC having it.
      applier.withdraw(group, position);
      throw e;
    }
    // A lower bound of the store's watermark, as of the apply just done: enough both for the
    // collector (a low report only delays collection) and for the gap test (a catch-up to a
    // position already applied ends at once).
    long watermark = applier.knownApplied(group);
    if (collector != null) {
      collector.onApplied(group, watermark);
    }
    if (watermark < position) {
      catchUp.catchUpTo(group, position).whenComplete((w, t) -> {
        if (t != null) {
          LOG.warn("DC {}: catch-up of group {} below APPLY({}) failed: {}", dc, group, position,
              t.toString());
        }
      });
    }
  }

  // ---- begin and read -----------------------------------------------------------------------

  /**
   * Section 4 step 1: the read position, at least the client's session position: the highest
   * position up to which every chosen value has reached this DC ({@code LogApplier#readPosition}).
   * The last ones may still be being recorded and applied by the APPLYs that brought them, which
   * a read at it waits for ({@link #read}), so a begin that arrives just after its client's
   * commit does not wait for the commit's APPLY to be recorded and applied here, nor apply it a
   * second time. A begin with minimum 0 (a peer's GC asking for this DC's applied watermark, or a
   * client new to the group) gets the applied watermark.
   * No GC check: the read position is at or above this DC's applied watermark, and the GC
   * watermark stays below every DC's applied one by the retention (section 7); reads and
   * acceptors check it anyway. The reply carries the group's cross-group locks at the read
   * position, keys without values, for the client's lock rule (section 10; empty for most
   * groups, and then not sent).
   */
  private CompletableFuture<Message> begin(BeginRequest b) {
    if (b.position() < 0) {
      throw new Rejected("minimum read position must be >= 0, got " + b.position());
    }
    StoreMarker at = served(b.group());
    LogApplier.AppliedState state = applier.readState(b.group(), b.position());
    if (state.position() >= b.position()) {
      guard.verify(b.group(), at);
      return CompletableFuture.completedFuture(reply(b.group(), state));
    }
    // Caught up to at least the minimum; the applied watermark now is a read position too, and
    // its lock table is the one the applier keeps with it.
    return applyOrCatchUp(b.group(), b.position()).thenApply(w -> {
      LogApplier.AppliedState now = applier.appliedState(b.group());
      guard.verify(b.group(), at);
      return reply(b.group(), now);
    });
  }

  private BeginReply reply(String group, LogApplier.AppliedState s) {
    XgLocks all = s.locks().withoutValues();
    // Half a datagram at most (the first locks in id order then), so that the reply is sent.
    XgLocks sent = all.firstWithin(limits.maxReplyBytes() / 2);
    return new BeginReply(group, s.position(), leaderAfter(group, s.position()), sent,
        sent.size() < all.size());
  }

  /** The fast-path leader for {@code watermark + 1}, by the one rule (section 5.3), or "". */
  private String leaderAfter(String group, long watermark) {
    if (watermark == 0) {
      return dcs.get(Proposer.leaderOfFirst(dcs, group).getAsInt());
    }
    Optional<LogValue> chosen = applier.knownValue(group, watermark);
    if (chosen.isEmpty()) {
      chosen = acceptor.chosen(group, watermark);
    }
    return chosen.map(v -> {
      OptionalInt i = Proposer.leaderAfter(dcs, v);
      return i.isPresent() ? dcs.get(i.getAsInt()) : "";
    }).orElse("");
  }

  /**
   * Makes this service follow the cluster's version ({@code ClusterVersions#active}); until
   * called it assumes the newest this build speaks (a service without a version row: tests and
   * the simulator).
   */
  public void followClusterVersion(java.util.function.IntSupplier active) {
    this.clusterVersion = Objects.requireNonNull(active);
  }

  /**
   * Refuses what needs range reads while the cluster runs below them: a process that cannot read
   * a key range may still run then, and a value it cannot decode would stop its applier.
   */
  private void requireRangeReads(String what) {
    requireVersion(ClusterVersion.RANGE_READS, what);
  }

  /** Refuses {@code what} while the cluster runs below {@code needed} (see above). */
  private void requireVersion(int needed, String what) {
    int active = clusterVersion.getAsInt();
    if (active < needed) {
      throw new Rejected(what + " needs cluster version " + ClusterVersion.describe(needed)
          + "; DC " + dc + " runs at " + ClusterVersion.describe(active)
          + " (docs/upgrading.md)");
    }
  }

  private static boolean carriesRanges(LogValue v) {
    return v != null && v.entries().stream().anyMatch(e -> !e.readRanges().isEmpty());
  }

  private static boolean carriesUpdates(LogValue v) {
    return v != null && v.entries().stream().anyMatch(LogEntry::hasUpdates);
  }

  private static boolean carriesClose(LogValue v) {
    return v != null && v.entries().stream().anyMatch(TransactionService::isClose);
  }

  private static boolean isClose(LogEntry e) {
    return e.xg() != null && e.xg().kind() == org.paxoscp.wal.XgStep.Kind.CLOSE;
  }

  /**
   * Whether a committed entry's commutative updates applied ({@link Message.UpdatesRequest}):
   * applies up to its position and folds the position's value from the versions before it
   * ({@link LogApplier#refusedAt}). TOO_OLD when those versions may be collected.
   */
  private CompletableFuture<Message> updates(Message.UpdatesRequest u) {
    requireVersion(ClusterVersion.COMMUTATIVE_UPDATES, "asking whether updates applied");
    StoreMarker at = served(u.group());
    return ensureApplied(u.group(), u.position()).thenApply(w -> {
          LogValue v = acceptor.chosen(u.group(), u.position()).orElseThrow(() -> new Failed(
              ErrorCode.CATCH_UP_FAILED, "DC " + dc + " applied position " + u.position()
                  + " of group " + u.group() + " but holds no chosen value there"));
          Optional<LogEntry> mine = v.entries().stream()
              .filter(e -> e.txnId().equals(u.txnId())).findFirst();
          if (mine.isEmpty()) {
            return new Message.UpdatesReply(u.group(), u.position(), u.txnId(), false, "");
          }
          Map<String, String> refused = applier.refusedAt(u.group(), u.position(), v);
          guard.verify(u.group(), at);
          return new Message.UpdatesReply(u.group(), u.position(), u.txnId(), true,
              refused.getOrDefault(u.txnId(), ""));
        });
  }

  /** Section 4 step 2: the values of the keys at the read position. */
  private CompletableFuture<Message> read(ReadRequest r) {
    if (r.position() < 0) {
      throw new Rejected("read position must be >= 0, got " + r.position());
    }
    if (r.keys().size() > limits.maxReadKeys()) {
      throw new Rejected("a read may name at most " + limits.maxReadKeys() + " keys, got "
          + r.keys().size());
    }
    for (String k : r.keys()) {
      try {
        WalLayout.validateStoredKey(k);
      } catch (IllegalArgumentException e) {
        throw new Rejected(e.getMessage());
      }
    }
    StoreMarker at = served(r.group());
    return ensureApplied(r.group(), r.position()).thenApply(w -> readAt(r, at));
  }

  /**
   * A page of a range read (docs/client.md, "Range reads"): the range's entries at the read
   * position from one store scan, as many as the request's limit and one reply allow. Catches up
   * and answers TOO_OLD as a read does.
   */
  private CompletableFuture<Message> scan(Message.ScanRequest r) {
    if (r.position() < 0) {
      throw new Rejected("read position must be >= 0, got " + r.position());
    }
    requireRangeReads("a range read");
    StoreMarker at = served(r.group());
    return ensureApplied(r.group(), r.position()).thenApply(w -> scanAt(r, at));
  }

  private Message scanAt(Message.ScanRequest r, StoreMarker at) {
    int limit = Math.min(r.limit(), limits.maxReadKeys());
    List<LogApplier.ScannedItem> rows =
        applier.scan(r.group(), r.range(), r.position(), limit, r.reversed());
    List<Message.ScanItem> items = new ArrayList<>();
    long size = REPLY_OVERHEAD + r.group().length() * 4L;
    boolean complete = rows.size() < limit; // else more rows may follow the last one
    String last = "";
    for (LogApplier.ScannedItem row : rows) {
      int keyBytes = row.key().getBytes(StandardCharsets.UTF_8).length;
      long itemSize = ENTRY_OVERHEAD + keyBytes + row.value().map(v -> v.length).orElse(0);
      if (size + itemSize + keyBytes > limits.maxReplyBytes()) {
        if (last.isEmpty()) {
          throw new Failed(ErrorCode.TOO_LARGE, "the value of " + row.key() + " takes about "
              + itemSize + " bytes; one reply holds " + limits.maxReplyBytes());
        }
        complete = false; // the rest in the next page, after the last key sent
        break;
      }
      size += itemSize;
      last = row.key();
      row.value().ifPresent(v -> items.add(new Message.ScanItem(row.key(), v, row.version())));
    }
    guard.verify(r.group(), at);
    return new Message.ScanReply(r.group(), r.position(), items, complete, complete ? "" : last);
  }

  /**
   * The values at the read position, answered only if the store is still the one the request
   * began under: a store lost under the running service would answer "never written" for what
   * it lost, and one rebuilt since may not have applied the position yet.
   */
  private Message readAt(ReadRequest r, StoreMarker at) {
    Map<String, byte[]> values = new LinkedHashMap<>();
    Map<String, Long> versions = new LinkedHashMap<>();
    long size = REPLY_OVERHEAD + r.group().length() * 4L;
    for (String k : r.keys()) {
      LogApplier.VersionedRead v = applier.readVersioned(r.group(), k, r.position());
      int keyBytes = k.getBytes(StandardCharsets.UTF_8).length;
      versions.put(k, v.version());
      size += ENTRY_OVERHEAD + keyBytes;
      if (v.value().isPresent()) {
        values.put(k, v.value().get());
        size += ENTRY_OVERHEAD + keyBytes + v.value().get().length;
      }
    }
    if (size > limits.maxReplyBytes()) {
      throw new Failed(ErrorCode.TOO_LARGE, "the values of " + r.keys().size() + " keys take about "
          + size + " bytes; one reply holds " + limits.maxReplyBytes() + ": read fewer keys");
    }
    guard.verify(r.group(), at);
    return new ReadReply(r.group(), r.position(), values, versions);
  }

  /**
   * Applies what is known and, if the watermark is still below {@code target} (a position the
   * requester proved to exist), catches up to it; gives up waiting after
   * {@link Limits#catchUpWait} (the catch-up itself goes on).
   *
   * @return completes with the applied watermark, at least {@code target}
   */
  private CompletableFuture<Long> ensureApplied(String group, long target) {
    long known = applier.knownApplied(group);
    if (known >= target) {
      // Already applied here (the known watermark is a lower bound of the store's): no store read.
      return CompletableFuture.completedFuture(known);
    }
    return applyOrCatchUp(group, target);
  }

  /** {@link #ensureApplied} that first applies everything known, for a fresh watermark. */
  private CompletableFuture<Long> applyOrCatchUp(String group, long target) {
    long watermark = applier.applyKnown(group);
    if (watermark >= target) {
      return CompletableFuture.completedFuture(watermark);
    }
    CompletableFuture<Long> caughtUp = scheduler.within(catchUp.catchUpTo(group, target),
        limits.catchUpWait(), () -> new Failed(ErrorCode.CATCH_UP_FAILED, "DC " + dc
            + " is at position " + watermark + " of group " + group + " and did not reach "
            + target + " within " + limits.catchUpWait().toMillis()
            + " ms; still catching up"));
    // Continue on a worker: catch-up may complete on a timer or an I/O thread.
    return caughtUp.handleAsync((w, t) -> {
      if (t == null) {
        return w;
      }
      Throwable cause = t instanceof CompletionException && t.getCause() != null
          ? t.getCause() : t;
      if (cause instanceof StoreUnavailableException s || cause instanceof Failed) {
        throw (RuntimeException) cause;
      }
      throw new Failed(ErrorCode.CATCH_UP_FAILED, "DC " + dc + " could not catch up group "
          + group + " to " + target + ": " + cause.getMessage());
    }, scheduler.executor());
  }

  // ---- leader combination -------------------------------------------------------------------

  /**
   * docs/architecture.md section 5.5: queues the entry for this DC's leader rounds once this DC
   * knows its read position chosen (which the client proved): at once when the applier holds or has
   * applied every position up to it, else after applying up to it. Rounds judge the entry only
   * against positions after its read position, so they need those values, not the data applied.
   * Answered when a decided position settles it (see {@link LeaderCombiner}).
   */
  private CompletableFuture<Message> submit(SubmitRequest s) {
    LogEntry e = s.entry();
    if (!e.readRanges().isEmpty()) {
      requireRangeReads("an entry with key ranges");
    }
    if (e.hasUpdates()) {
      requireVersion(ClusterVersion.COMMUTATIVE_UPDATES, "an entry with counter or set updates");
    }
    if (isClose(e)) {
      requireVersion(ClusterVersion.XG_ONE_ROUND, "a CLOSE step");
    }
    if (!dcs.contains(e.originDc())) {
      throw new Rejected("entry " + e.txnId() + " names origin DC '" + e.originDc()
          + "', not one of " + dcs);
    }
    if (e.writes().isEmpty() && e.xg() == null) {
      // (A cross-group step may write nothing: a read-only group's PREPARE, a RESOLVE(ABORT).)
      throw new Rejected("entry " + e.txnId() + " writes nothing; read-only transactions "
          + "commit without the log");
    }
    try {
      e.readSet().forEach(WalLayout::validateStoredKey);
      e.writes().keySet().forEach(WalLayout::validateStoredKey);
    } catch (IllegalArgumentException ex) {
      throw new Rejected(ex.getMessage());
    }
    served(s.group());
    // An entry passed on to another DC's batcher needs nothing applied here (the batcher
    // applies the read position itself); only one batched here does.
    // An entry moved here off a silent batcher is queued as a passed-on one: never passed on
    // again (docs/leader-combination.md, safety item 8).
    Optional<CompletableFuture<Message>> passedOn =
        combiner.passOn(s, () -> batchHere(s.asForwarded()));
    return passedOn.orElseGet(() -> batchHere(s));
  }

  /** Queues {@code s} for this DC's rounds once the positions before it are known here. */
  private CompletableFuture<Message> batchHere(SubmitRequest s) {
    if (applier.knownThrough(s.group()) >= s.position() - 1) {
      // A closed-loop client submits again just after its last commit, before this DC has
      // applied that position: no need to wait for the apply.
      return combiner.submit(s);
    }
    return ensureApplied(s.group(), s.position() - 1).thenCompose(w -> combiner.submit(s));
  }

  // ---- rebuilding a DC (section 12) ----------------------------------------------------------

  /**
   * Rebuilds a group here from the peers ({@link DcRebuild}), then starts catching it up to
   * what the peers applied; or declares the store rebuilt. Answered once the group is installed
   * (catch-up goes on).
   */
  private CompletableFuture<Message> rebuild(Message.RebuildRequest q) {
    if (!q.dc().equals(dc)) {
      throw new Rejected("a rebuild of DC " + q.dc() + " sent to DC " + dc);
    }
    // Made for each request: it reads the store's marker now (a rebuild's state is all in the
    // store), so no request acts on what an earlier one saw of a store lost or rebuilt since.
    DcRebuild r = new DcRebuild(dc, dcs, store, catchUp.transport(), limits.catchUpWait(),
        scheduler.executor(),
        clusterVersion.getAsInt() >= ClusterVersion.SNAPSHOT_LOCK_PAGES);
    // The rebuild may have begun just now, or be about to end: this process drops its caches of
    // the store before at once (a catch-up of a rebuilt group must not count on them).
    guard.refresh();
    if (!q.complete() && !q.rebuildId().isEmpty() && !q.rebuildId().equals(r.rebuildId())) {
      // A request of another rebuild: an earlier one, or one whose store was lost since.
      throw new Failed(ErrorCode.BAD_REQUEST, "DC " + dc + ": the rebuild under way is "
          + r.rebuildId() + ", not " + q.rebuildId() + " (the store was lost again or rebuilt "
          + "since); start the rebuild again");
    }
    if (q.complete()) {
      // The store's marker decides (StoreMarker.markRebuilt): only the rebuild under way, once.
      boolean ended;
      try {
        ended = r.finish(q.rebuildId());
      } catch (IllegalStateException e) {
        throw new Failed(ErrorCode.BAD_REQUEST, "DC " + dc + ": " + e.getMessage());
      }
      guard.refresh();
      if (ended) {
        LOG.info("DC {}: store declared rebuilt by rebuild {}; groups without state here are new "
            + "here", dc, q.rebuildId());
      }
      return CompletableFuture.completedFuture(
          new Message.RebuildReply("", "COMPLETE", 0, 0, 0, "", q.rebuildId()));
    }
    if (q.group().isEmpty()) {
      return CompletableFuture.completedFuture(
          new Message.RebuildReply("", "BEGUN", 0, 0, 0, "", r.rebuildId()));
    }
    return r.rebuild(q.group(), q.from()).thenApply(res -> {
      if (res.outcome() == DcRebuild.Outcome.REBUILT) {
        LOG.info("DC {}: group {} rebuilt from DC {} at position {} ({} versions, fence {})",
            dc, res.group(), res.source(), res.position(), res.items(), res.fence());
      }
      if (res.peersApplied() > 0) {
        catchUp.catchUpTo(res.group(), res.peersApplied()).whenComplete((w, t) -> {
          if (t != null) {
            LOG.info("DC {}: catch-up of rebuilt group {} to {} not done yet: {}", dc,
                res.group(), res.peersApplied(), t.toString());
          }
        });
      }
      return (Message) new Message.RebuildReply(res.group(), res.outcome().name(),
          res.position(), res.fence(), res.items(), res.source(), r.rebuildId());
    }).exceptionally(t -> {
      Throwable cause = t instanceof CompletionException && t.getCause() != null
          ? t.getCause() : t;
      if (cause instanceof StoreUnavailableException s) {
        throw s;
      }
      // Expected while peers are unreachable (too few answered): said, not logged as a bug.
      LOG.info("DC {}: group {} not rebuilt yet: {}", dc, q.group(), cause.getMessage());
      throw new Failed(ErrorCode.CATCH_UP_FAILED, "DC " + dc + " could not rebuild group "
          + q.group() + ": " + cause.getMessage());
    });
  }

  /** How far a group reaches here, for a DC being rebuilt (its fence and where to copy from). */
  private Message extent(ExtentRequest e) {
    String g = e.group();
    StoreMarker at = served(g);
    long applied = applier.appliedWatermark(g);
    long gc = LogCollector.gcWatermark(store, g);
    List<KvStore.ScannedRow> last = store.scan(KvStore.Table.WAL, WalLayout.groupRowsStart(g),
        WalLayout.groupRowsEnd(g), KvStore.LATEST, 1, true);
    long lastWal = last.isEmpty() ? 0 : WalLayout.positionOf(g, last.get(0).row());
    long fence = store.read(KvStore.Table.META, WalLayout.metaRow(g), WalLayout.FENCE,
        KvStore.LATEST).map(c -> WalLayout.decodeLong(c.value())).orElse(0L);
    // From a store lost since the request began this would be a fence too low for the DC being
    // rebuilt: never answered.
    guard.verify(g, at);
    return new ExtentReply(g, applied, gc, lastWal, fence);
  }

  /**
   * A page of the group's data as of a position this DC applied and has not collected: of each
   * key, the newest version at or below it. The GC watermark is read after the data (as reads
   * do, docs/operating.md "Storage lifecycle"): if it reached the position meanwhile, a version
   * read may already have been superseded by collection, and the answer is TOO_OLD.
   *
   * <p>The lock table: before cluster version 7 the first page carries it whole, with nothing
   * keeping that within a datagram. A request in lock pages ({@code locksAfter}) gets it in
   * slices by size, values included ({@link SnapshotLocks}): the first page the locks that fit
   * beside the chosen value, each lock page after it at least one lock, and every page the
   * table's digest; data pages follow the last lock page.
   */
  private Message snapshot(SnapshotRequest q) {
    String g = q.group();
    boolean paged = q.locksAfter() != null;
    if (paged) {
      requireVersion(ClusterVersion.SNAPSHOT_LOCK_PAGES, "a snapshot in lock pages");
    }
    long position = q.position();
    XgLocks locks = XgLocks.EMPTY;
    LogValue chosen = null;
    byte[] digest = null;
    boolean locksMore = false;
    long budget = limits.maxReplyBytes() - REPLY_OVERHEAD - g.length() * 4L
        - (paged ? LOCK_PAGE_OVERHEAD : 0);
    StoreMarker at = served(g);
    if (position == 0 || q.lockPage()) {
      // The table is kept only with the applied watermark: a lock page is read from the table
      // there now, and its digest says whether that is still the first page's table.
      LogApplier.AppliedState s = applier.appliedState(g);
      if (position == 0) {
        position = s.position();
        if (position > 0) {
          long applied = position;
          chosen = acceptor.chosen(g, applied).orElseThrow(() -> new IllegalStateException(
              "DC " + dc + " applied position " + applied + " of group " + g
              + " without its chosen value"));
          budget -= org.paxoscp.wal.LogCodec.encode(chosen).length;
        }
      } else if (position > s.position()) {
        throw new Rejected("position " + position + " of group " + g + " is not applied at DC "
            + dc);
      }
      if (paged) {
        digest = SnapshotLocks.digest(s.locks());
        SnapshotLocks.Slice slice = SnapshotLocks.slice(s.locks(),
            q.lockPage() ? q.locksAfter() : "", budget, q.lockPage());
        locks = slice.locks();
        locksMore = slice.more();
        budget -= slice.bytes();
      } else {
        locks = s.locks();
        budget -= locks.encode().length;
      }
    } else if (position > applier.appliedWatermark(g)) {
      throw new Rejected("position " + position + " of group " + g + " is not applied at DC "
          + dc);
    }
    List<SnapshotItem> items = new java.util.ArrayList<>();
    boolean more = false;
    if (locksMore || q.lockPage()) {
      // No data beside a slice of locks but the last one of the first page: the data pages
      // follow the lock pages, from the first key.
      more = true;
    } else if (position > 0) {
      byte[] from = q.after().isEmpty() ? WalLayout.groupRowsStart(g)
          : java.util.Arrays.copyOf(WalLayout.dataRow(g, q.after()),
              WalLayout.dataRow(g, q.after()).length + 1);
      List<KvStore.ScannedRow> rows = store.scan(KvStore.Table.DATA, from,
          WalLayout.groupRowsEnd(g), position, SNAPSHOT_PAGE_ROWS, false);
      more = rows.size() == SNAPSHOT_PAGE_ROWS;
      for (KvStore.ScannedRow r : rows) {
        KvStore.Cell c = r.cells().get(WalLayout.DATA_VALUE);
        if (c == null) {
          continue;
        }
        String key = WalLayout.keyOf(g, r.row());
        budget -= ENTRY_OVERHEAD + key.length() * 4 + c.value().length;
        // One item at least on a later page (any one fits a datagram: a transaction wrote it);
        // the first page may carry none beside a large chosen value.
        if (budget < 0 && (!items.isEmpty() || chosen != null)) {
          more = true;
          break;
        }
        items.add(new SnapshotItem(key, c.timestamp(), c.value()));
      }
    }
    long gc = LogCollector.gcWatermark(store, g);
    if (position > 0 && position <= gc) {
      throw new TooOldException(g, position, gc);
    }
    guard.verify(g, at);
    return paged ? new SnapshotReply(g, position, gc, locks, chosen, items, more, locksMore,
        digest) : new SnapshotReply(g, position, gc, locks, chosen, items, more);
  }

  /**
   * The groups this DC holds anything of (a meta row or a WAL row) after {@code q}'s, in the
   * store's order: two short scans per group, for listing every group of a DC being rebuilt.
   * A DC that is itself being rebuilt does not answer: its list is not complete.
   */
  private Message groups(GroupsRequest q) {
    StoreMarker at = guard.current();
    if (at == null || at.state() != StoreMarker.State.SERVING) {
      throw new RebuildingException(q.group(), "this DC's store is being rebuilt; its list of "
          + "groups is not complete");
    }
    List<String> out = new java.util.ArrayList<>();
    String cursor = q.group();
    int budget = limits.maxReplyBytes() - REPLY_OVERHEAD;
    while (out.size() < GROUPS_PAGE) {
      Optional<String> next = nextGroup(cursor);
      if (next.isEmpty()) {
        guard.verifyServing(at);
        return new GroupsReply(q.group(), out, false);
      }
      budget -= next.get().length() * 4 + 4;
      if (budget < 0) {
        break;
      }
      out.add(next.get());
      cursor = next.get();
    }
    guard.verifyServing(at);
    return new GroupsReply(q.group(), out, true);
  }

  /** The first group after {@code cursor} ("" for the first) with a meta or WAL row here. */
  private Optional<String> nextGroup(String cursor) {
    byte[] metaFrom = cursor.isEmpty() ? new byte[0]
        : java.util.Arrays.copyOf(WalLayout.metaRow(cursor), WalLayout.metaRow(cursor).length + 1);
    Optional<String> inMeta = Optional.empty();
    while (inMeta.isEmpty()) {
      List<KvStore.ScannedRow> r = store.scan(KvStore.Table.META, metaFrom, null, KvStore.LATEST,
          1, false);
      if (r.isEmpty()) {
        break;
      }
      inMeta = WalLayout.groupOf(r.get(0).row());
      // Not a group's row (the store marker): look past it.
      metaFrom = java.util.Arrays.copyOf(r.get(0).row(), r.get(0).row().length + 1);
    }
    List<KvStore.ScannedRow> w = store.scan(KvStore.Table.WAL,
        cursor.isEmpty() ? new byte[0] : WalLayout.groupRowsEnd(cursor), null, KvStore.LATEST, 1,
        false);
    Optional<String> inWal = w.isEmpty() ? Optional.empty() : WalLayout.groupOf(w.get(0).row());
    if (inMeta.isEmpty() || inWal.isEmpty()) {
      return inMeta.isPresent() ? inMeta : inWal;
    }
    return java.util.Arrays.compareUnsigned(WalLayout.metaRow(inMeta.get()),
        WalLayout.metaRow(inWal.get())) <= 0 ? inMeta : inWal;
  }

  // ---- helpers ------------------------------------------------------------------------------

  /**
   * Section 12: a group this DC lost with its store and has not rebuilt is not served at all
   * (votes are guarded by the acceptor itself). Called after a request's validation, before its
   * store work; reads nothing while the store was last seen serving.
   *
   * @return the store's marker the request is served under: an answer built from the store is
   *     given only after {@link RebuildGuard#verify} found it still there
   */
  private StoreMarker served(String group) {
    StoreMarker at = guard.current();
    guard.checkServed(group, at);
    return at;
  }

  private static void validateGroup(String group) {
    try {
      WalLayout.validateGroup(group);
    } catch (IllegalArgumentException e) {
      throw new Rejected(e.getMessage());
    }
  }

  private static boolean oneWay(Message m) {
    return m instanceof Message.Paxos p
        && (p.message() instanceof Apply || p.message() instanceof LearnReply);
  }

  /** {@code Apply(group, position, txns [t1, t2])}: what a log line about a request names. */
  private static String describe(Message m) {
    if (m == null) {
      return "null";
    }
    Object what = m instanceof Message.Paxos p ? p.message() : m;
    LogValue value = null;
    if (what instanceof Apply a) {
      value = a.value();
    } else if (what instanceof Accept a) {
      value = a.value();
    }
    String txns = "";
    if (value != null && !value.isNoop()) {
      List<String> ids = value.entries().stream().limit(4).map(LogEntry::txnId).toList();
      txns = ", txns " + ids + (value.entries().size() > ids.size()
          ? " and " + (value.entries().size() - ids.size()) + " more" : "");
    } else if (m instanceof SubmitRequest s) {
      txns = ", txn " + s.entry().txnId();
    }
    return what.getClass().getSimpleName() + "(" + m.group() + ", " + m.position() + txns + ")";
  }

  /** Invalid input: answered with BAD_REQUEST before any store access. */
  private static final class Rejected extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Rejected(String message) {
      super(message, null, false, false);
    }
  }

  /** A valid request that could not be served. */
  private static final class Failed extends RuntimeException {
    private static final long serialVersionUID = 1L;
    final transient ErrorCode code;

    Failed(ErrorCode code, String message) {
      super(message, null, false, false);
      this.code = code;
    }
  }
}
