package org.paxoscp.paxos;

import static org.paxoscp.paxos.WalLayout.APPLIED;
import static org.paxoscp.paxos.WalLayout.DATA_VALUE;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ConcurrentSkipListMap;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.Updates;
import org.paxoscp.wal.XgLocks;

/**
 * Applies a DC's chosen log positions, in order, to its data table, and serves reads at a read
 * position (docs/architecture.md section 3). Each item version carries the log position as its
 * timestamp; a delete is a tombstone version. When a position holds several combined entries they
 * are folded in list order and each key is written once.
 *
 * <p>Thread-safe and idempotent: applying a position twice writes the same versions again, and the
 * applied watermark only moves forward (checkAndWrite on its previous value).
 *
 * <p><b>Memory.</b> What it keeps per group (docs/architecture.md section 9) is a bounded cache of
 * what the store holds: at most {@code maxGroups} groups' remembered watermarks and at most as many
 * groups' held values, evicted by recency (Caffeine's size bound). Everything in it is a lower
 * bound of the store's watermark or a value already chosen, so losing any of it at any moment
 * costs store reads, never correctness: an evicted watermark reads as 0 until the store is read
 * again, and an evicted held value is read from the WAL when applying reaches it. A group's map
 * of held values is dropped as soon as the watermark passes the last of them.
 */
public final class LogApplier {
  private static final byte LIVE = 1;
  private static final byte TOMBSTONE = 0;
  /** The most chosen values per group held in memory above the known watermark. */
  static final int MAX_AHEAD = 1024;
  /** Default bound on the groups whose state is cached (see the class comment). */
  public static final int DEFAULT_MAX_GROUPS = 10_000;

  private final KvStore store;
  private final Acceptor acceptor;
  /** The process's guard: its epoch tags what is cached, its marker id stamps new meta rows. */
  private final RebuildGuard guard;
  private final Rules rules;
  /**
   * Per group, the highest applied watermark this applier has read from or written to the store,
   * with the chosen value at that position when this applier applied it. Only a lower bound of
   * the store's watermark (other appliers over the same store move it too), and used only as one:
   * {@link #knownApplied} answers "is position p applied?" without a store read when the answer
   * is yes. A chosen value never changes, so the remembered value is always the position's.
   */
  private final ConcurrentMap<String, Applied> known;

  /**
   * Per group, the chosen values that callers of {@link #applyKnown(String, long, LogValue)}
   * have recorded in this DC's WAL above the known watermark: being applied by those callers.
   * Their look-ahead past the position they apply takes the next value from here and stops,
   * without a store read, where there is none; {@link #readPosition} counts them. Trimmed as the
   * known watermark passes them.
   */
  private final ConcurrentMap<String, ConcurrentSkipListMap<Long, LogValue>> recorded;
  /**
   * Per group, chosen values {@link #announce announced} above the known watermark: they have
   * reached this DC (an APPLY) and are about to be recorded and applied. Only
   * {@link #readPosition} and {@link #knownValue} use them, never applying (a position is
   * applied only once its chosen value is in this DC's WAL). Trimmed as the known watermark
   * passes them.
   */
  private final ConcurrentMap<String, ConcurrentSkipListMap<Long, LogValue>> announced;
  private final List<Cache<String, ?>> caches;
  private final java.util.concurrent.atomic.LongAdder evictions =
      new java.util.concurrent.atomic.LongAdder();
  private final int maxGroups;

  /**
   * A watermark, the lock table at it, and, if this applier applied it, the chosen value at it
   * (else null), read from or written to the store under the guard's {@code epoch}: under
   * another epoch (the store was lost or rebuilt since) it is no bound of anything.
   */
  private record Applied(long position, LogValue value, XgLocks locks, long epoch) {}

  /**
   * The applier's safety-critical decision, replaceable only to plant a bug in a test.
   *
   * @param advanceFromMemory the planted bug: what this applier remembers of a store is kept
   *     when the store is lost and rebuilt, and a watermark the store holds below the one
   *     remembered (rebuilt at an earlier position) is moved straight to the position applied,
   *     past positions never applied to this store
   * @param foldOnNewest the planted bug: a commutative update is folded into the newest version
   *     of its key instead of the newest one before the position applied, so applying a position
   *     again (a catch-up after a crash between writing its versions and moving the watermark)
   *     adds its deltas twice
   * @param updatesFirst the planted bug: a position's commutative updates are folded before its
   *     puts and deletes, out of list order (an add after a put in one position is lost)
   */
  public record Rules(boolean advanceFromMemory, boolean foldOnNewest, boolean updatesFirst) {
    public static final Rules SHIPPED = new Rules(false, false, false);

    /** Rules that differ from the shipped ones only in {@code advanceFromMemory}. */
    public Rules(boolean advanceFromMemory) {
      this(advanceFromMemory, false, false);
    }
  }

  /**
   * An applied watermark with the group's cross-group lock table at it ({@link XgLocks}), which
   * the applier keeps in the same store cell as the watermark, so that one read gives both.
   */
  public record AppliedState(long position, XgLocks locks) {
    public static final AppliedState NONE = new AppliedState(0, XgLocks.EMPTY);
  }

  /** An applier caching at most {@link #DEFAULT_MAX_GROUPS} groups. */
  public LogApplier(KvStore store) {
    this(store, DEFAULT_MAX_GROUPS);
  }

  /** An applier caching the state of at most {@code maxGroups} groups (>= 1). */
  public LogApplier(KvStore store, int maxGroups) {
    this(store, maxGroups, new RebuildGuard(store), Rules.SHIPPED);
  }

  /**
   * An applier caching the state of at most {@code maxGroups} groups (>= 1), answering through
   * {@code guard}, the process's one for {@code store}.
   */
  public LogApplier(KvStore store, int maxGroups, RebuildGuard guard, Rules rules) {
    if (maxGroups < 1) {
      throw new IllegalArgumentException("maxGroups must be >= 1, was " + maxGroups);
    }
    this.store = store;
    this.guard = guard;
    this.rules = rules;
    this.acceptor = new Acceptor(store, guard);
    this.maxGroups = maxGroups;
    // Evictions are counted for the operator (a listener, called only when one happens).
    Cache<String, Applied> k = Caffeine.newBuilder().maximumSize(maxGroups)
        .<String, Applied>evictionListener((g, v, cause) -> evictions.increment()).build();
    Cache<String, ConcurrentSkipListMap<Long, LogValue>> r = Caffeine.newBuilder()
        .maximumSize(maxGroups).<String, ConcurrentSkipListMap<Long, LogValue>>evictionListener(
            (g, v, cause) -> evictions.increment()).build();
    Cache<String, ConcurrentSkipListMap<Long, LogValue>> a = Caffeine.newBuilder()
        .maximumSize(maxGroups).<String, ConcurrentSkipListMap<Long, LogValue>>evictionListener(
            (g, v, cause) -> evictions.increment()).build();
    this.known = k.asMap();
    this.recorded = r.asMap();
    this.announced = a.asMap();
    this.caches = List.of(k, r, a);
  }

  /**
   * Drops everything cached, as if every group had been evicted (a test mode proves that the
   * service stays correct when its caches are emptied at any moment).
   */
  public void forgetAll() {
    caches.forEach(Cache::invalidateAll);
  }

  /** The bound on the groups each of its caches holds. */
  public int maxGroups() {
    return maxGroups;
  }

  /**
   * Groups its caches dropped to stay within {@link #maxGroups} (each of its caches counts), since
   * it was made; {@link #forgetAll} is not counted.
   */
  public long evictions() {
    return evictions.sum();
  }

  /** Groups with cached state now (an estimate, as Caffeine gives it), per cache. */
  public long cachedGroups() {
    return caches.stream().mapToLong(Cache::estimatedSize).max().orElse(0);
  }

  /** Highest position p such that every position <= p is applied to this DC's data table. */
  public long appliedWatermark(String group) {
    return appliedState(group).position();
  }

  /** {@link #appliedWatermark} with the lock table at it, from one store read. */
  public AppliedState appliedState(String group) {
    long epoch = guard.epoch();
    AppliedState s = store.read(Table.META, WalLayout.metaRow(group), APPLIED, KvStore.LATEST)
        .map(c -> decodeApplied(c.value())).orElse(AppliedState.NONE);
    remember(group, s.position(), null, s.locks(), epoch);
    return s;
  }

  /** The applied cell: the watermark as 8 bytes, then the lock table when it is not empty. */
  public static byte[] encodeApplied(AppliedState s) {
    byte[] locks = s.locks().encode();
    return ByteBuffer.allocate(8 + locks.length).putLong(s.position()).put(locks).array();
  }

  static AppliedState decodeApplied(byte[] cell) {
    if (cell.length < 8) {
      throw new org.paxoscp.wal.CorruptDataException("applied cell of " + cell.length
          + " bytes, expected at least 8");
    }
    return new AppliedState(ByteBuffer.wrap(cell).getLong(), XgLocks.decode(cell, 8));
  }

  /**
   * A lower bound of {@link #appliedWatermark} without a store read: the highest watermark this
   * applier has seen or set (0 before the first). Every position at or below it is applied.
   */
  public long knownApplied(String group) {
    Applied a = current(group);
    return a == null ? 0 : a.position();
  }

  /** The cached watermark of {@code group} if it was cached under the guard's epoch now. */
  private Applied current(String group) {
    Applied a = known.get(group);
    return a != null && (a.epoch() == guard.epoch() || rules.advanceFromMemory()) ? a : null;
  }

  /**
   * Notes that {@code value} is the chosen value of {@code position} (a proposer that learned it
   * chosen said so) before it is recorded and applied here, for {@link #readPosition}.
   */
  public void announce(String group, long position, LogValue value) {
    if (position > knownApplied(group)) {
      hold(announced, group, position, value);
    }
  }

  /** Takes back an {@link #announce} whose value could not be recorded here. */
  public void withdraw(String group, long position) {
    announced.computeIfPresent(group, (g, a) -> {
      a.remove(position);
      return a.isEmpty() ? null : a;
    });
  }

  /**
   * Adds to one of the maps of values above the watermark, unless it holds {@link #MAX_AHEAD}
   * already (a DC whose store is down keeps receiving APPLYs it cannot apply): a value left out
   * is read from the store when applying reaches it.
   */
  private static void hold(ConcurrentMap<String, ConcurrentSkipListMap<Long, LogValue>> m,
      String group, long position, LogValue value) {
    // compute, not computeIfAbsent: atomic with the removal of an emptied map (remember).
    m.compute(group, (g, r) -> {
      ConcurrentSkipListMap<Long, LogValue> held = r != null ? r : new ConcurrentSkipListMap<>();
      if (held.size() < MAX_AHEAD) {
        held.put(position, value);
      }
      return held.isEmpty() ? null : held;
    });
  }

  /**
   * A read position for a new transaction (section 4, step 1), with one store read: the store's
   * applied watermark, raised over the following positions whose chosen values have reached this
   * DC and are being recorded and applied (by a caller of
   * {@link #applyKnown(String, long, LogValue)}, or after {@link #announce}) — unless
   * {@code atLeast} is 0, which gets the applied watermark itself: that is what a peer's GC asks
   * for (a client that has not yet committed or read in the group asks with 0 too, and reads at
   * the applied watermark). Every position at or below it is chosen, but the last few may not be
   * applied yet: a read at it must first apply up to it (the service's reads do). Below
   * {@code atLeast} when a position up to it has not reached this DC (then catch up).
   */
  public long readPosition(String group, long atLeast) {
    long w = appliedWatermark(group);
    return atLeast == 0 ? w : raisedOverHeld(group, w);
  }

  /**
   * {@link #readPosition} with the lock table at that position: the applied one, with the
   * values the position was raised over applied to it (what a begin hands its client for the
   * lock rule).
   */
  public AppliedState readState(String group, long atLeast) {
    AppliedState s = appliedState(group);
    if (atLeast == 0) {
      return s;
    }
    long w = s.position();
    XgLocks locks = s.locks();
    while (true) {
      Optional<LogValue> v = heldValue(group, w + 1);
      if (v.isEmpty()) {
        return new AppliedState(w, locks);
      }
      w++;
      locks = locks.apply(w, v.get()).locks();
    }
  }

  private Optional<LogValue> heldValue(String group, long position) {
    for (var m : List.of(recorded, announced)) {
      ConcurrentSkipListMap<Long, LogValue> r = m.get(group);
      LogValue v = r == null ? null : r.get(position);
      if (v != null) {
        return Optional.of(v);
      }
    }
    return Optional.empty();
  }

  /**
   * The highest position {@code p} such that this applier knows, without a store read, that
   * every position at or below {@code p} is chosen and holds its value or has applied it: the
   * known watermark raised over the recorded and announced positions that follow it. A lower
   * bound of {@link #readPosition} for {@code atLeast > 0}.
   */
  public long knownThrough(String group) {
    return raisedOverHeld(group, knownApplied(group));
  }

  /** {@code w} raised over the recorded or announced positions that follow it, in a row. */
  private long raisedOverHeld(String group, long w) {
    ConcurrentSkipListMap<Long, LogValue> r = recorded.get(group);
    ConcurrentSkipListMap<Long, LogValue> a = announced.get(group);
    while ((r != null && r.containsKey(w + 1)) || (a != null && a.containsKey(w + 1))) {
      w++;
    }
    return w;
  }

  /**
   * The chosen value at {@code position} if this applier holds it in memory (the watermark it
   * last applied, or a position recorded or announced and being applied), else empty (then ask
   * the acceptor).
   */
  public Optional<LogValue> knownValue(String group, long position) {
    Applied a = known.get(group);
    if (a != null && a.position() == position && a.value() != null) {
      return Optional.of(a.value());
    }
    return heldValue(group, position);
  }

  /**
   * Applies every chosen position after the watermark that this DC knows, stopping at the first
   * position whose chosen value it does not know.
   *
   * @return the new applied watermark
   */
  public long applyKnown(String group) {
    return applyKnown(group, 0, null);
  }

  /**
   * {@link #applyKnown(String)} for a caller that has just recorded {@code value} as the chosen
   * value of {@code position} in this DC's WAL: that position is applied from {@code value}
   * instead of being read back. Two store reads are saved in the common case of positions
   * recorded in order: when this applier's known watermark is {@code position - 1}, applying
   * starts there without reading the store's (a lower bound is a safe start: see
   * {@link #advance}); and past {@code position} it applies only positions that callers of
   * this method recorded, from memory (a position recorded by another applier over the same
   * store is applied by that applier, or by the next {@link #applyKnown(String)}, which reads the
   * store).
   */
  public long applyKnown(String group, long position, LogValue value) {
    AppliedState applied;
    ConcurrentSkipListMap<Long, LogValue> ahead = null;
    // The store the watermark below is learned from (a fold is written only if it is still the
    // one: writeVersions).
    StoreMarker marker = guard.current();
    long epoch = guard.epoch();
    if (value != null) {
      hold(recorded, group, position, value);
      ahead = recorded.get(group);
      // Nothing cached is position 0, whose lock table is empty: exact, not only a lower bound.
      Applied cached = current(group);
      if (cached == null) {
        cached = new Applied(0, null, XgLocks.EMPTY, epoch);
      }
      applied = cached.position() == position - 1
          ? new AppliedState(cached.position(), cached.locks()) : appliedState(group);
    } else {
      applied = appliedState(group);
    }
    while (true) {
      long at = applied.position() + 1;
      // Empty means "not recorded here", or collected: either way applying stops, and nothing
      // is concluded from it (a catch-up learns the position through Acceptor.chosen, which
      // tells the two apart).
      Optional<LogValue> next;
      if (ahead != null && at == position) {
        next = Optional.of(value);
      } else if (ahead != null && at > position) {
        next = Optional.ofNullable(ahead.get(at));
      } else {
        next = acceptor.chosenIfRecorded(group, at);
      }
      if (next.isEmpty()) {
        // Another applier may have gone further meanwhile; the known watermark says how far.
        return Math.max(applied.position(), knownApplied(group));
      }
      XgLocks.Applied effect = applied.locks().apply(at, next.get());
      writeVersions(group, at, effect.effects(), marker);
      AppliedState to = advance(group, applied, new AppliedState(at, effect.locks()));
      remember(group, to.position(), to.position() == at ? next.get() : null, to.locks(), epoch);
      applied = to;
    }
  }

  private void remember(String group, long position, LogValue value, XgLocks locks,
      long epoch) {
    // A later epoch replaces whatever an earlier one left; an earlier one's is dropped.
    Applied a = known.merge(group, new Applied(position, value, locks, epoch),
        (old, now) -> now.epoch() != old.epoch() && !rules.advanceFromMemory()
            ? (now.epoch() > old.epoch() ? now : old)
            : now.position() > old.position()
            || (now.position() == old.position() && old.value() == null) ? now : old);
    for (var m : List.of(recorded, announced)) {
      m.computeIfPresent(group, (g, r) -> {
        r.headMap(a.position(), true).clear();
        return r.isEmpty() ? null : r;
      });
    }
  }

  /**
   * Writes the versions of one position: its entries' writes folded in list order (a PREPARE's
   * only when its RESOLVE(COMMIT) comes: {@link XgLocks#apply}), commutative updates into the
   * values the keys hold before the position ({@link Updates#fold}; an entry one of whose updates
   * cannot apply is refused whole).
   *
   * <p>A fold is written only if what it read was the state before the position. Applying a
   * position again (another applier, or this one after a crash before the watermark moved)
   * reads the same versions below it, which no later apply rewrites differently, and writes the
   * same values. Three things can take those versions away, and the group's meta row and then
   * the store's marker, read after the fold's reads and compared with {@code at} (the marker
   * taken before the watermark was learned), tell each: the store was lost or rebuilt since
   * (the marker changed: nothing is written, as for any answer from a changed store,
   * {@link RebuildGuard}); collection removed them, which it
   * does only once every DC applied the position (the GC watermark passed {@code position - 1});
   * a rebuild copied the group at or above the position, with no version below the copy (its
   * {@link WalLayout#FOLD_FLOOR}). In the last two the position is applied here already.
   */
  private void writeVersions(String group, long position, List<Updates.Effect> effects,
      StoreMarker at) {
    if (effects.isEmpty()) {
      return;
    }
    if (rules.updatesFirst()) {
      effects = updatesFirst(effects);
    }
    long below = rules.foldOnNewest() ? KvStore.LATEST : position - 1;
    Updates.Folded folded = Updates.fold(effects, key -> store.read(Table.DATA,
        WalLayout.dataRow(group, key), DATA_VALUE, below).flatMap(c -> decodeItem(c.value())));
    if (folded.readBase() && foldBelow(group, at) > position - 1) {
      return;
    }
    if (folded.values().isEmpty()) {
      return;
    }
    List<KvStore.RowWrite> rows = new ArrayList<>(folded.values().size());
    for (var w : folded.values().entrySet()) {
      rows.add(new KvStore.RowWrite(WalLayout.dataRow(group, w.getKey()),
          Map.of(DATA_VALUE, encodeItem(w.getValue()))));
    }
    store.writeRows(Table.DATA, position, rows);
  }

  /**
   * The lowest position whose versions a fold may start from (none below it are kept), read after
   * the fold's reads; throws {@link RebuildingException} unless the store is still the one
   * {@code at} names (the marker is read again after the meta row, so that a loss that emptied
   * the meta row under the read is seen).
   */
  private long foldBelow(String group, StoreMarker at) {
    RebuildGuard.Bounds b = guard.bounds(group, at);
    guard.verify(group, at);
    return Math.max(b.gcWatermark(), b.foldFloor());
  }

  /** The planted bug {@link Rules#updatesFirst}: every entry's updates, then the rest. */
  private static List<Updates.Effect> updatesFirst(List<Updates.Effect> effects) {
    List<Updates.Effect> first = new ArrayList<>();
    List<Updates.Effect> then = new ArrayList<>();
    for (Updates.Effect e : effects) {
      Map<String, Mutation> u = new java.util.LinkedHashMap<>();
      Map<String, Mutation> rest = new java.util.LinkedHashMap<>();
      e.writes().forEach((k, m) -> (m.isUpdate() ? u : rest).put(k, m));
      first.add(new Updates.Effect(e.txnId(), u));
      then.add(new Updates.Effect(e.txnId(), rest));
    }
    first.addAll(then);
    return first;
  }

  /**
   * The entries of the value chosen at {@code position} that applying refuses ({@link Updates}):
   * by transaction id, the key and the reason. Folds from the versions before the position, so
   * every position up to {@code position - 1} must be applied here.
   *
   * @throws TooOldException when those versions may be collected, or a rebuild copied the group
   *     at or above the position
   * @throws RebuildingException when the store changed under the fold
   */
  public Map<String, String> refusedAt(String group, long position, LogValue value) {
    // Folded without the lock table: a RESOLVE(COMMIT) in the position writes only keys its
    // PREPARE locked, which no entry with an update placed at the position writes (the lock
    // rule), so its writes change no update's outcome.
    return refusedAfter(group, position - 1, XgLocks.EMPTY.apply(position, value).effects());
  }

  /**
   * The effects, folded into the versions at or below {@code base}, that would be refused; read
   * under the guard as {@link #writeVersions} folds.
   */
  private Map<String, String> refusedAfter(String group, long base, List<Updates.Effect> effects) {
    StoreMarker at = guard.current();
    Updates.Folded f = Updates.fold(effects, key -> store.read(Table.DATA,
        WalLayout.dataRow(group, key), DATA_VALUE, base).flatMap(c -> decodeItem(c.value())));
    if (f.readBase()) {
      long floor = foldBelow(group, at);
      if (floor > base) {
        throw new TooOldException(group, base, floor);
      }
    }
    return f.refused();
  }

  /**
   * Moves the watermark from {@code from} to {@code to} (the next position) if the store's is
   * {@code from}; else returns the store's, and the caller goes on from there. {@code from} may
   * be below the store's watermark (a remembered lower bound): another applier got further, and
   * the versions written for {@code to} meanwhile are the ones already there (a position's
   * versions are fixed by its chosen value), or, if the position was collected since, versions
   * older than the newest one at or below the GC watermark, which no read above the watermark
   * returns ({@link LogCollector}). The store's watermark may also be below {@code from}: the
   * store was lost and rebuilt at an earlier position (docs/architecture.md section 12), and the
   * positions between were never applied to it; the watermark then never jumps over them.
   *
   * <p>A group's first watermark creates its meta row, stamped with the store marker's id
   * ({@link WalLayout#STORE_ID}); none is created while the marker seen is missing. A row
   * created after the store was lost (by an APPLY that reached a running service before it
   * noticed) serves nobody: the guard trusts no row while the marker is missing or a rebuild is
   * under way but that rebuild's, and the rebuild replaces it.
   */
  private AppliedState advance(String group, AppliedState from, AppliedState to) {
    byte[] row = WalLayout.metaRow(group);
    byte[] expected = from.position() == 0 ? null : encodeApplied(from);
    Map<String, byte[]> cells = Map.of(APPLIED, encodeApplied(to));
    if (expected == null) {
      // A new meta row: never in a store without a marker (lost, and no rebuild began), and
      // always with the id of the marker seen, so that a row this version wrote is never taken
      // for one of a version without markers (StoreMarker.initializeIfFromEarlierVersion).
      StoreMarker m = guard.current();
      if (m == null) {
        throw new RebuildingException(group, "this DC's store has no marker: it lost its "
            + "contents; nothing is applied to it before it is rebuilt");
      }
      cells = Map.of(APPLIED, encodeApplied(to), WalLayout.STORE_ID,
          m.id().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }
    while (true) {
      if (store.checkAndWrite(Table.META, row, APPLIED, expected, KvStore.UNVERSIONED, cells)) {
        return to;
      }
      // The epoch before the read: what the read finds is then never taken for the store of a
      // later epoch (a change seen meanwhile).
      long epoch = guard.epoch();
      Optional<KvStore.Cell> raw = store.read(Table.META, row, APPLIED, KvStore.LATEST);
      AppliedState now = raw.map(c -> decodeApplied(c.value())).orElse(AppliedState.NONE);
      if (now.position() >= to.position()) {
        remember(group, now.position(), null, now.locks(), epoch);
        return now;
      }
      if (now.position() == from.position()) {
        if (!now.locks().equals(from.locks())) {
          // The table is a function of the log prefix: two appliers cannot disagree on it.
          throw new org.paxoscp.wal.CorruptDataException("group " + group + ": lock table at "
              + from.position() + " is " + now.locks() + " in the store, " + from.locks()
              + " computed here");
        }
        // The same watermark written otherwise (a rebuild writes position 0 explicitly, so
        // that no earlier store's cell survives it): again, expecting what is there.
        expected = raw.map(KvStore.Cell::value).orElse(null);
        cells = Map.of(APPLIED, encodeApplied(to));
        continue;
      }
      if (!rules.advanceFromMemory()) {
        // Positions now + 1 .. to - 1 may not be applied here: the caller applies from now.
        forget(group, now, epoch);
        return now;
      }
      expected = raw.map(KvStore.Cell::value).orElse(null);
      cells = Map.of(APPLIED, encodeApplied(to));
    }
  }

  /**
   * Replaces what is remembered of {@code group} with the store's {@code state}, which is below
   * it when the store was lost and rebuilt since (the remembered watermark then bounds nothing).
   */
  private void forget(String group, AppliedState state, long epoch) {
    known.put(group, new Applied(state.position(), null, state.locks(), epoch));
  }

  /**
   * The value of {@code key} as of {@code readPosition}: the newest version at or below it, or
   * empty if the key was never written or its newest such version is a delete. The caller must
   * have applied the log up to {@code readPosition}.
   *
   * @throws TooOldException when {@code readPosition} is at or below the GC watermark: the
   *     watermark is read after the data, so a read that passes this check read before any
   *     version it needed was collected ({@link LogCollector})
   */
  public Optional<byte[]> read(String group, String key, long readPosition) {
    return readVersioned(group, key, readPosition).value();
  }

  /**
   * A read with the log position that wrote what it returns.
   *
   * @param value the value, empty when the key was never written or its version is a delete
   * @param version the position whose value wrote the version read (a put or a delete), or 0
   *     when the key was never written at or below the read position
   */
  public record VersionedRead(Optional<byte[]> value, long version) {}

  /**
   * As {@link #read}, with the position that wrote the version read.
   *
   * @throws TooOldException as {@link #read}
   */
  public VersionedRead readVersioned(String group, String key, long readPosition) {
    Optional<KvStore.Cell> cell =
        store.read(Table.DATA, WalLayout.dataRow(group, key), DATA_VALUE, readPosition);
    // The watermark is read after the data (see read).
    long gc = LogCollector.gcWatermark(store, group);
    if (gc > 0 && readPosition <= gc) {
      throw new TooOldException(group, readPosition, gc);
    }
    return new VersionedRead(cell.flatMap(c -> decodeItem(c.value())),
        cell.map(KvStore.Cell::timestamp).orElse(0L));
  }

  /**
   * A row a scan examined: its key, its value at the read position (empty for a delete) and the
   * position that wrote that version.
   */
  public record ScannedItem(String key, Optional<byte[]> value, long version) {}

  /**
   * The keys of {@code range} in {@code group} that have a version at or below
   * {@code readPosition} (a put or a delete), in key order or reversed: at most {@code limit}
   * rows, each with the newest such version, in one store scan. Decision keys are never in a
   * range ({@link KeyRange#contains}). The caller must have applied the log up to
   * {@code readPosition}; fewer than {@code limit} rows means the range is read to its end.
   *
   * @throws TooOldException as {@link #read}: the watermark is read after the data
   */
  public List<ScannedItem> scan(String group, KeyRange range, long readPosition, int limit,
      boolean reversed) {
    // Decision keys start with a NUL byte: an open start begins past them (0x01).
    byte[] from = range.from().isEmpty()
        ? WalLayout.dataRow(group, "\u0001") : WalLayout.dataRow(group, range.from());
    byte[] to = range.to() == null ? WalLayout.groupRowsEnd(group)
        : WalLayout.dataRow(group, range.to());
    List<KvStore.ScannedRow> rows =
        store.scan(Table.DATA, from, to, readPosition, limit, reversed);
    long gc = LogCollector.gcWatermark(store, group);
    if (gc > 0 && readPosition <= gc) {
      throw new TooOldException(group, readPosition, gc);
    }
    List<ScannedItem> out = new ArrayList<>(rows.size());
    for (KvStore.ScannedRow r : rows) {
      KvStore.Cell c = r.cells().get(DATA_VALUE);
      if (c == null) {
        continue;
      }
      out.add(new ScannedItem(WalLayout.keyOf(group, r.row()), decodeItem(c.value()),
          c.timestamp()));
    }
    return out;
  }

  static byte[] encodeItem(Optional<byte[]> value) {
    if (value.isEmpty()) {
      return new byte[] {TOMBSTONE};
    }
    byte[] v = value.get();
    byte[] out = new byte[v.length + 1];
    out[0] = LIVE;
    System.arraycopy(v, 0, out, 1, v.length);
    return out;
  }

  static Optional<byte[]> decodeItem(byte[] cell) {
    if (cell.length == 0 || (cell[0] != LIVE && cell[0] != TOMBSTONE)) {
      throw new org.paxoscp.wal.CorruptDataException("bad data cell marker");
    }
    if (cell[0] == TOMBSTONE) {
      return Optional.empty();
    }
    byte[] v = new byte[cell.length - 1];
    System.arraycopy(cell, 1, v, 0, v.length);
    return Optional.of(v);
  }
}
