package org.paxoscp.paxos;

import java.util.Map;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;

/**
 * Which groups, and which positions of a group, one DC's store lets it serve (ARCHITECTURE
 * section 12): read from the group's meta row and, for a group without one, the store's
 * {@link StoreMarker}.
 *
 * <ul>
 *   <li>A group with a meta row is served. If it was rebuilt here, its meta row holds a fence
 *       ({@link WalLayout#FENCE}): the DC does not promise, vote or grant at positions at or below
 *       it, where promises and votes it lost may have counted.</li>
 *   <li>A group without one is new here when the store is serving (votes are then refused only at
 *       or below the store's fence for groups it rebuilt no state for, 0 for a store that never
 *       lost anything), and not served at all when the store is being rebuilt or has no marker
 *       (it lost its contents): {@link RebuildingException}.</li>
 * </ul>
 *
 * <p>Why a meta row can be trusted: a store that loses its contents loses its meta table first
 * (the meta table is emptied first when tables are truncated, and all of it goes when a store is
 * lost), and while a store is being rebuilt nothing but the rebuild writes a meta row of a group
 * it has not rebuilt, because the DC's service serves no request of such a group. A serving
 * marker never changes while the store has it, so it is read once and then kept.
 *
 * <p>Thread-safe.
 */
public final class RebuildGuard {
  private final KvStore store;
  /** The store's marker once it was read serving; null before. */
  private volatile StoreMarker serving;

  public RebuildGuard(KvStore store) {
    this.store = store;
  }

  /**
   * What a vote at a position of {@code group} must stay above: the group's GC watermark here and
   * its rebuild fence (the higher of its own and the store's fence for unknown groups).
   *
   * @param gcWatermark positions at or below it were collected here (section 7)
   * @param fence positions at or below it get no promise, vote or grant here
   */
  public record Bounds(long gcWatermark, long fence) {}

  /**
   * Reads {@code group}'s bounds.
   *
   * @throws RebuildingException if the store does not serve the group (not rebuilt yet)
   */
  public Bounds bounds(String group) {
    Map<String, Cell> meta = store.readRow(Table.META, WalLayout.metaRow(group));
    if (meta.isEmpty()) {
      return new Bounds(0, servingMarker(group).unknownGroupFence());
    }
    long fence = longCell(meta, WalLayout.FENCE);
    StoreMarker m = serving;
    if (m == null) {
      m = StoreMarker.read(store).orElse(null);
      if (m != null && m.state() == StoreMarker.State.SERVING) {
        serving = m;
      }
    }
    if (m != null && m.state() == StoreMarker.State.SERVING) {
      fence = Math.max(fence, m.unknownGroupFence());
    }
    return new Bounds(longCell(meta, WalLayout.GC_WATERMARK), fence);
  }

  /**
   * Throws {@link RebuildingException} unless the store serves {@code group}. Reads nothing once
   * the store was seen serving.
   */
  public void checkServed(String group) {
    if (serving != null) {
      return;
    }
    if (!store.readRow(Table.META, WalLayout.metaRow(group)).isEmpty()) {
      return;
    }
    servingMarker(group);
  }

  /**
   * Whether a group of this store may have a fence: false only once the store was seen serving
   * without having been rebuilt (then no group has one, and a write that reads nothing first
   * needs no check before it).
   */
  public boolean mayFence() {
    StoreMarker m = serving;
    return m == null || m.unknownGroupFence() > 0;
  }

  /** Whether the store was seen serving (every group without a meta row is new here). */
  public boolean storeServing() {
    if (serving == null) {
      StoreMarker m = StoreMarker.read(store).orElse(null);
      if (m != null && m.state() == StoreMarker.State.SERVING) {
        serving = m;
      }
    }
    return serving != null;
  }

  private StoreMarker servingMarker(String group) {
    StoreMarker m = StoreMarker.read(store).orElse(null);
    if (m == null) {
      serving = null;
      throw new RebuildingException(group, "this DC's store has no marker: it lost its contents "
          + "and is not rebuilt yet (paxoscp dc rebuild)");
    }
    if (m.state() != StoreMarker.State.SERVING) {
      serving = null;
      throw new RebuildingException(group, "this DC's store is being rebuilt and the group is "
          + "not rebuilt here yet");
    }
    serving = m;
    return m;
  }

  private static long longCell(Map<String, Cell> cells, String column) {
    Cell c = cells.get(column);
    return c == null ? 0 : WalLayout.decodeLong(c.value());
  }
}
