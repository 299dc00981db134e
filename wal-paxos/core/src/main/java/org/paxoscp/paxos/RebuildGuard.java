package org.paxoscp.paxos;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;

/**
 * Which store one service process answers from, and which groups and positions of it it may
 * answer for (docs/architecture.md section 12, docs/rebuilding.md): one per process, shared by its
 * acceptors, applier, catch-up and service.
 *
 * <p><b>The store's identity.</b> A store's {@link StoreMarker} has a random id that changes when
 * the store is lost (the marker goes with everything else), when its rebuild begins and when it
 * ends. A request takes the marker this process last saw ({@link #current}) before it touches the
 * store, and after its last store read or write the guard reads the marker again
 * ({@link #bounds}, {@link #verify}): the answer is given only if the marker is still that one.
 * So no promise, vote, grant, read answer, extent, group list or snapshot page comes from a store
 * that was lost, is being rebuilt, or was rebuilt while the request ran: a store that lost its
 * contents lost its marker first (the meta table is emptied first; a whole lost store has none),
 * so a marker read after the request's own store work proves that work was done before the loss,
 * and a loss after it is the loss the rebuild covers. Nothing about the store is trusted from
 * memory: every answer reads the marker, in the same batch as the group's meta row where it
 * reads that row anyway.
 *
 * <p><b>A change</b> of the marker seen (lost, being rebuilt, rebuilt) is told to the
 * {@link #onChange listeners} (the service drops every per-group cache and says so in its log
 * and metrics) and raises the {@link #epoch}: what was cached from the store under an earlier
 * epoch is not used again.
 *
 * <p><b>Meta rows.</b> While the marker is serving, a group with a meta row is served with the
 * row's fence (the higher of it and the store's), unless the row was installed by another
 * rebuild than the one that made the store serving (a late copy), and a group without one is new
 * here, fenced at the store's fence. While it is absent or being rebuilt, only a group whose row
 * the rebuild under way installed (a fence and {@link WalLayout#REBUILT_BY} its id) is served:
 * any other row was written after the loss by something that did not know of it (an APPLY, a
 * collector), not by the rebuild, and says nothing about what this DC promised or voted.
 *
 * <p>Thread-safe.
 */
public final class RebuildGuard {
  /** Told when the marker seen changes; {@code now} is null when the store has none (lost). */
  public interface Listener {
    void storeChanged(StoreMarker before, StoreMarker now);
  }

  /**
   * The guard's safety-critical decision, replaceable only to plant a bug in a test.
   *
   * @param trustUnfencedMetaRows the planted bug: any meta row makes its group served, with the
   *     row's fence or none, whatever the marker says (what an earlier version did)
   */
  public record Rules(boolean trustUnfencedMetaRows) {
    public static final Rules SHIPPED = new Rules(false);
  }

  /** The marker last seen (null: none) and the epoch it began. */
  private record Seen(StoreMarker marker, long epoch) {}

  private final KvStore store;
  private final Rules rules;
  private final AtomicReference<Seen> seen = new AtomicReference<>();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private final LongAdder changes = new LongAdder();

  public RebuildGuard(KvStore store) {
    this(store, Rules.SHIPPED);
  }

  public RebuildGuard(KvStore store, Rules rules) {
    this.store = store;
    this.rules = rules;
  }

  /**
   * What a vote at a position of {@code group} must stay above: the group's GC watermark here and
   * its rebuild fence (the higher of its own and the store's fence for unknown groups).
   *
   * @param gcWatermark positions at or below it were collected here (section 7)
   * @param fence positions at or below it get no promise, vote or grant here
   * @param foldFloor the position the group was copied at by a rebuild here (0: never): the
   *     store holds no version below it to fold a commutative update into
   *     ({@link WalLayout#FOLD_FLOOR})
   */
  public record Bounds(long gcWatermark, long fence, long foldFloor) {
    /** Bounds of a group never rebuilt here. */
    public Bounds(long gcWatermark, long fence) {
      this(gcWatermark, fence, 0);
    }
  }

  /** Calls {@code l} on every change of the marker seen (on the thread that saw it). */
  public void onChange(Listener l) {
    listeners.add(l);
  }

  /**
   * The marker a request begins under: the one last seen while it is serving (no store read),
   * else read now (a store being rebuilt or lost is looked at again by every request, so its
   * rebuild's end is seen at once). Null when the store has none.
   */
  public StoreMarker current() {
    Seen s = seen.get();
    if (s != null && s.marker() != null && s.marker().state() == StoreMarker.State.SERVING) {
      return s.marker();
    }
    return observe(StoreMarker.read(store).orElse(null));
  }

  /**
   * Reads the store's marker now and records it (a change is told as usual): for a request that
   * changes the marker itself (a rebuild), so that its process drops what it cached of the store
   * before at once, not at its next answer.
   */
  public StoreMarker refresh() {
    return observe(StoreMarker.read(store).orElse(null));
  }

  /**
   * Counts the changes of the marker seen: what a cache read from the store under one epoch
   * holds is not used under another.
   */
  public long epoch() {
    Seen s = seen.get();
    return s == null ? 0 : s.epoch();
  }

  /** Changes of the marker seen since this guard was made (the first look is none). */
  public long changes() {
    return changes.sum();
  }

  /**
   * Reads {@code group}'s bounds and the store's marker in one batch, after the caller's store
   * work for a request begun under {@code at}.
   *
   * @throws RebuildingException if the marker is not {@code at} any more, or the store does not
   *     serve the group (lost, or being rebuilt and the group not rebuilt yet)
   */
  public Bounds bounds(String group, StoreMarker at) {
    List<Map<String, Cell>> rows = store.readRows(Table.META,
        List.of(StoreMarker.ROW, WalLayout.metaRow(group)));
    StoreMarker now = observe(StoreMarker.parse(rows.get(0)).orElse(null));
    Map<String, Cell> meta = rows.get(1);
    if (rules.trustUnfencedMetaRows() && !meta.isEmpty()) {
      return new Bounds(longCell(meta, WalLayout.GC_WATERMARK), longCell(meta, WalLayout.FENCE),
          longCell(meta, WalLayout.FOLD_FLOOR));
    }
    check(group, at, now);
    if (now.state() == StoreMarker.State.SERVING) {
      if (meta.isEmpty()) {
        return new Bounds(0, now.unknownGroupFence());
      }
      Cell by = meta.get(WalLayout.REBUILT_BY);
      if (by != null && !new String(by.value(), java.nio.charset.StandardCharsets.UTF_8)
          .equals(now.rebuiltFrom())) {
        // A copy of an earlier rebuild that landed after a later one made the store serving:
        // its fence is that of a store lost since (RebuildInstall puts the later row back).
        throw new RebuildingException(group, "the group's meta row was written by another "
            + "rebuild than the one that made this store serving; it is not served");
      }
      return new Bounds(longCell(meta, WalLayout.GC_WATERMARK),
          Math.max(longCell(meta, WalLayout.FENCE), now.unknownGroupFence()),
          longCell(meta, WalLayout.FOLD_FLOOR));
    }
    if (!rebuiltBy(meta, now.id())) {
      throw new RebuildingException(group, "this DC's store is being rebuilt and the group is "
          + "not rebuilt here yet");
    }
    return new Bounds(longCell(meta, WalLayout.GC_WATERMARK), longCell(meta, WalLayout.FENCE),
        longCell(meta, WalLayout.FOLD_FLOOR));
  }

  /**
   * Before a request's store work: throws {@link RebuildingException} unless the store serves
   * {@code group} under {@code at} (no store read while {@code at} is serving). The answer still
   * needs {@link #verify} or {@link #bounds} after the work.
   */
  public void checkServed(String group, StoreMarker at) {
    if (at == null || at.state() != StoreMarker.State.SERVING) {
      bounds(group, at);
    }
  }

  /**
   * After a request's last store read: throws {@link RebuildingException} unless the store's
   * marker is still {@code at} and serves {@code group}. One store read (the marker; with the
   * group's meta row while the store is being rebuilt).
   */
  public void verify(String group, StoreMarker at) {
    if (at != null && at.state() == StoreMarker.State.SERVING
        && !rules.trustUnfencedMetaRows()) {
      check(group, at, observe(StoreMarker.read(store).orElse(null)));
    } else {
      bounds(group, at);
    }
  }

  /**
   * After a request's last store read, for answers about the whole store (a list of its groups):
   * throws {@link RebuildingException} unless the marker is still {@code at} and serving.
   */
  public void verifyServing(StoreMarker at) {
    StoreMarker now = observe(StoreMarker.read(store).orElse(null));
    check("", at, now);
    if (now.state() != StoreMarker.State.SERVING) {
      throw new RebuildingException("", "this DC's store is being rebuilt; it does not answer "
          + "for all its groups");
    }
  }

  /**
   * Whether a group of this store may have a fence under {@code at}: false only for a serving
   * store never rebuilt (then no group has one, and a write that reads nothing first needs no
   * check before it).
   */
  public static boolean mayFence(StoreMarker at) {
    return at == null || at.state() != StoreMarker.State.SERVING || at.unknownGroupFence() > 0;
  }

  /** Whether {@code meta} is a row the rebuild {@code rebuildId} installed. */
  public static boolean rebuiltBy(Map<String, Cell> meta, String rebuildId) {
    Cell by = meta.get(WalLayout.REBUILT_BY);
    return meta.containsKey(WalLayout.FENCE) && by != null
        && new String(by.value(), java.nio.charset.StandardCharsets.UTF_8).equals(rebuildId);
  }

  private void check(String group, StoreMarker at, StoreMarker now) {
    if (now == null) {
      throw new RebuildingException(group, "this DC's store has no marker: it lost its contents "
          + "and is not rebuilt yet (paxoscp dc rebuild)");
    }
    if (!now.sameAs(at)) {
      throw new RebuildingException(group, "this DC's store changed while the request was "
          + "served (" + (at == null ? "no marker" : at.describe()) + ", now " + now.describe()
          + "); it is not answered from either");
    }
  }

  /** Records the marker just read; a change from the one seen raises the epoch and is told. */
  private StoreMarker observe(StoreMarker now) {
    while (true) {
      Seen s = seen.get();
      if (s != null && (s.marker() == null ? now == null : s.marker().sameAs(now))) {
        return now;
      }
      Seen next = new Seen(now, s == null ? 0 : s.epoch() + 1);
      if (seen.compareAndSet(s, next)) {
        if (s != null) {
          changes.increment();
          for (Listener l : listeners) {
            l.storeChanged(s.marker(), now);
          }
        }
        return now;
      }
    }
  }

  private static long longCell(Map<String, Cell> cells, String column) {
    Cell c = cells.get(column);
    return c == null ? 0 : WalLayout.decodeLong(c.value());
  }
}
