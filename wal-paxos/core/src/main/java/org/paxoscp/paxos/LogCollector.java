package org.paxoscp.paxos;

import static org.paxoscp.paxos.WalLayout.CHOSEN;
import static org.paxoscp.paxos.WalLayout.COLLECTED;
import static org.paxoscp.paxos.WalLayout.DATA_VALUE;
import static org.paxoscp.paxos.WalLayout.GC_WATERMARK;

import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.function.BiConsumer;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * The GC watermark of a group at one DC and the collection below it (docs/architecture.md
 * section 7).
 *
 * <p><b>Watermark.</b> Kept in the group's meta row ({@link WalLayout#GC_WATERMARK}) and only
 * raised, with a check-and-write on its previous value, so any number of stateless service
 * instances may advance it concurrently without a coordinator: the highest proposal wins and a
 * repeated one changes nothing. The caller proposes {@link #candidate}: the lowest applied
 * watermark of <em>every</em> DC of the cluster minus a retention in positions. Every position at
 * or below the watermark is therefore chosen, applied at every DC, and followed by at least
 * {@code retention} newer positions; no DC will ever need to learn it again.
 *
 * <p><b>Collection</b> ({@link #collect}), in this order, each step idempotent: (1) for every
 * position in (collected, watermark], the keys it wrote are read from its chosen value, and for
 * each such key every data version older than the key's newest version at or below the watermark
 * is deleted ({@link KvStore#deleteVersionsBefore}); (2) the WAL rows of those positions are
 * deleted ({@link KvStore#deleteRow}); (3) the {@link WalLayout#COLLECTED} mark is raised. A
 * collector that stops half-way leaves the mark behind, and the next run repeats the steps.
 * Explicit deletes driven by the log were chosen over column-family TTL or VERSIONS: a TTL would
 * expire the only version of a key that is rarely written, and VERSIONS counts versions, not log
 * positions, so neither can keep "the newest version at or below the watermark". HBase turns the
 * deletes into markers that its compactions reclaim.
 *
 * <p><b>Why reads above the watermark are unchanged.</b> A read at read position r > W returns
 * the newest version at or below r. Collection removes only versions older than the newest one at
 * or below W; that newest one, and every version above W, stays. So the newest version at or below
 * r is still there. A read at r <= W is refused by {@link LogApplier#read}, which checks the
 * watermark <em>after</em> reading the data; since the watermark is raised before any version
 * below it is deleted, a read that sees W < r afterwards read before any deletion that W >= r
 * allowed.
 *
 * <p><b>Why nothing at or below the watermark is decided again.</b> See {@link Acceptor}: every
 * acceptor answer for a position without a chosen value is given only after reading the watermark
 * below that position, after the row was read and after any write to it.
 *
 * <p>Thread-safe (no state of its own); blocks on the store.
 */
public final class LogCollector {
  /** Meta cells {@code seen.<dc>}: a peer's applied watermark as last reported to this DC. */
  private static final String SEEN_PREFIX = "seen.";


  /** What one {@link #collect} run did. */
  public record Collected(long from, long to, int positions, int keys) {}

  private final KvStore store;

  public LogCollector(KvStore store) {
    this.store = store;
  }

  /**
   * The watermark to propose: {@code minApplied - retention}, never negative.
   *
   * @param minApplied the lowest applied watermark of every DC of the cluster, as reported by each
   * @param retention positions kept below the lowest applied one; at least 1
   */
  public static long candidate(long minApplied, long retention) {
    if (retention < 1) {
      throw new IllegalArgumentException("retention must be >= 1 position, was " + retention);
    }
    return Math.max(0, minApplied - retention);
  }

  /** The GC watermark of {@code group} in {@code store}; 0 if nothing was ever collected. */
  public static long gcWatermark(KvStore store, String group) {
    return readLong(store, group, GC_WATERMARK);
  }

  /** The GC watermark of {@code group} at this DC. */
  public long gcWatermark(String group) {
    return gcWatermark(store, group);
  }

  /** How far collection has actually got at this DC (at most the watermark). */
  public long collected(String group) {
    return readLong(store, group, COLLECTED);
  }

  /**
   * Raises the watermark to {@code candidate} unless it is already at least that high. The caller
   * must have derived {@code candidate} from every DC's applied watermark ({@link #candidate});
   * it is also capped at this DC's own applied watermark, so a wrong caller cannot make this DC
   * forget positions it has not applied.
   *
   * @return the watermark after the call
   */
  public long advance(String group, long candidate) {
    long cap = Math.min(candidate, new LogApplier(store).appliedWatermark(group));
    return raise(group, GC_WATERMARK, cap);
  }

  /**
   * Collects up to {@code maxPositions} positions above the {@link #collected} mark and at or
   * below the watermark (see the class comment).
   *
   * @param onCollected told each position's chosen value just before its WAL row is deleted (the
   *     simulator keeps them for its checker); may be null
   */
  public Collected collect(String group, int maxPositions, BiConsumer<Long, LogValue> onCollected) {
    long watermark = gcWatermark(group);
    long from = collected(group);
    long to = Math.min(watermark, from + maxPositions);
    if (to <= from) {
      return new Collected(from, from, 0, 0);
    }
    TreeSet<String> keys = new TreeSet<>();
    Map<Long, LogValue> values = new java.util.TreeMap<>();
    for (long p = from + 1; p <= to; p++) {
      Optional<LogValue> v = store.read(Table.WAL, WalLayout.walRow(group, p), CHOSEN,
          KvStore.LATEST).map(c -> LogCodec.decode(c.value()));
      // Absent only when an earlier, interrupted run already deleted the row after step 1.
      if (v.isPresent()) {
        values.put(p, v.get());
        for (LogEntry e : v.get().entries()) {
          keys.addAll(e.writes().keySet());
        }
      }
    }
    for (String key : keys) {
      byte[] row = WalLayout.dataRow(group, key);
      Optional<KvStore.Cell> newest = store.read(Table.DATA, row, DATA_VALUE, watermark);
      if (newest.isPresent()) {
        store.deleteVersionsBefore(Table.DATA, row, DATA_VALUE, newest.get().timestamp());
      }
    }
    for (long p = from + 1; p <= to; p++) {
      LogValue v = values.get(p);
      if (onCollected != null && v != null) {
        onCollected.accept(p, v);
      }
      store.deleteRow(Table.WAL, WalLayout.walRow(group, p));
    }
    raise(group, COLLECTED, to);
    return new Collected(from, to, (int) (to - from), keys.size());
  }

  private static long readLong(KvStore store, String group, String column) {
    return store.read(Table.META, WalLayout.metaRow(group), column, KvStore.LATEST)
        .map(c -> WalLayout.decodeLong(c.value())).orElse(0L);
  }

  /**
   * The highest applied watermark DC {@code dc} reported for {@code group} to a collector of this
   * DC (0 if none did): how far behind an absent DC is known to be at most.
   */
  public long lastSeenApplied(String group, String dc) {
    return readLong(store, group, SEEN_PREFIX + dc);
  }

  /** Records that DC {@code dc} reported {@code applied} for {@code group}; only ever rises. */
  public void recordSeenApplied(String group, String dc, long applied) {
    raise(group, SEEN_PREFIX + dc, applied);
  }

  /**
   * Monotone check-and-write of a meta cell of a group that has a meta row with an applied
   * watermark; never creates the row. A meta row created here after the store was lost under a
   * running service would be a row no rebuild wrote (docs/rebuilding.md), so the first value of
   * the cell is written with a check on the applied cell instead, which a lost row does not have.
   * A group with nothing applied here has nothing to collect: nothing is written.
   */
  private long raise(String group, String column, long to) {
    byte[] row = WalLayout.metaRow(group);
    while (true) {
      Map<String, KvStore.Cell> cells = store.readRow(Table.META, row);
      KvStore.Cell cell = cells.get(column);
      long now = cell == null ? 0 : WalLayout.decodeLong(cell.value());
      if (now >= to) {
        return now;
      }
      KvStore.Cell applied = cells.get(WalLayout.APPLIED);
      boolean written;
      if (cell != null) {
        written = store.checkAndWrite(Table.META, row, column, cell.value(), KvStore.UNVERSIONED,
            Map.of(column, WalLayout.encodeLong(to)));
      } else if (applied != null) {
        written = store.checkAndWrite(Table.META, row, WalLayout.APPLIED, applied.value(),
            KvStore.UNVERSIONED, Map.of(column, WalLayout.encodeLong(to)));
      } else {
        return now;
      }
      if (written) {
        return to;
      }
    }
  }
}
