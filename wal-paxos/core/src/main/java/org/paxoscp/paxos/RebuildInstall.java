package org.paxoscp.paxos;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * Writes a group's state copied from a peer into the store of a DC being rebuilt
 * (docs/architecture.md section 12): the data as of a position {@code s} the peer had applied, the
 * value chosen at {@code s}, and last the meta row, which makes the group served here. Positions
 * below {@code s} are then collected here (GC watermark {@code s - 1}): this DC has not got their
 * versions or values, and answers them TOO_OLD like any collected position; the log above {@code s}
 * is caught up from the peers' WALs the ordinary way.
 *
 * <p>Every step can be repeated: data versions and the chosen value are facts, and the meta row
 * is written only if the group has none (a store that lost its contents) or only raised (a DC
 * that fell behind past the peers' GC watermark and kept its state).
 */
public final class RebuildInstall {
  private RebuildInstall() {}

  /** One data version copied: the item's key, the position that wrote it, the stored cell. */
  public record Item(String key, long version, byte[] cell) {}

  /**
   * Writes copied data versions (before {@link #finish}, which makes them readable): one
   * multi-row write per position that wrote some of them.
   */
  public static void writeItems(KvStore store, String group, List<Item> items) {
    Map<Long, List<KvStore.RowWrite>> byVersion = new java.util.TreeMap<>();
    for (Item i : items) {
      byVersion.computeIfAbsent(i.version(), v -> new java.util.ArrayList<>()).add(
          new KvStore.RowWrite(WalLayout.dataRow(group, i.key()),
              Map.of(WalLayout.DATA_VALUE, i.cell())));
    }
    byVersion.forEach((version, rows) -> store.writeRows(Table.DATA, version, rows));
  }

  /**
   * Records the chosen value at {@code position} and writes the group's meta row: applied
   * {@code position} with its lock table, collected below it, and {@code fence} (0: none; the DC
   * kept its acceptor state).
   *
   * @param rebuildId the rebuild under way ({@code fence > 0}): its id is written with the row
   *     ({@link WalLayout#REBUILT_BY}), which makes the group served while the store is still
   *     being rebuilt ({@link RebuildGuard}); any other meta row the group has (written after the
   *     loss by a service that had not noticed it, or by an earlier rebuild's copy that came too
   *     late) is replaced
   * @return false if the group's meta row was already installed by {@code rebuildId} and
   *     {@code fence > 0} (nothing written), else true
   */
  public static boolean finish(KvStore store, String group, long position, XgLocks locks,
      LogValue chosen, long fence, String rebuildId) {
    if (position > 0) {
      store.checkAndWrite(Table.WAL, WalLayout.walRow(group, position), WalLayout.CHOSEN, null,
          KvStore.UNVERSIONED, Map.of(WalLayout.CHOSEN, LogCodec.encode(chosen)));
    }
    byte[] meta = WalLayout.metaRow(group);
    if (fence > 0) {
      // A store that lost its contents: the row is written whole, once per rebuild.
      Map<String, KvStore.Cell> row = store.readRow(Table.META, meta);
      if (RebuildGuard.rebuiltBy(row, rebuildId)) {
        return false;
      }
      KvStore.Cell by = row.get(WalLayout.REBUILT_BY);
      Map<String, byte[]> cells = new HashMap<>();
      cells.put(WalLayout.FENCE, WalLayout.encodeLong(fence));
      cells.put(WalLayout.REBUILT_BY, rebuildId.getBytes(java.nio.charset.StandardCharsets.UTF_8));
      // Written even at position 0: an applied cell a service wrote after the loss (from what it
      // remembered of the store before) must not survive the row that makes the group served.
      cells.put(WalLayout.APPLIED, LogApplier.encodeApplied(
          new LogApplier.AppliedState(position, locks)));
      if (position > 1) {
        // (A watermark cell of 0 is never written: 0 is its absence.)
        cells.put(WalLayout.GC_WATERMARK, WalLayout.encodeLong(position - 1));
        cells.put(WalLayout.COLLECTED, WalLayout.encodeLong(position - 1));
      }
      if (position > 0) {
        cells.put(WalLayout.FOLD_FLOOR, WalLayout.encodeLong(position));
      }
      // Checked on the row's rebuild id as read: two copies of one group racing each other
      // write it once; a copy that lost the race leaves the winner's row.
      if (!store.checkAndWrite(Table.META, meta, WalLayout.REBUILT_BY,
          by == null ? null : by.value(), KvStore.UNVERSIONED, cells)) {
        return false;
      }
      // A copy of this rebuild that lands after the store was lost again and rebuilt by a
      // later rebuild (its thread stood still meanwhile) wrote into that later store: the
      // guard serves no row of another rebuild there, and the later one's row is put back.
      org.paxoscp.store.StoreMarker m = org.paxoscp.store.StoreMarker.read(store).orElse(null);
      boolean ours = m != null && (m.state() == org.paxoscp.store.StoreMarker.State.REBUILDING
          ? m.id().equals(rebuildId) : m.rebuiltFrom().equals(rebuildId));
      if (!ours) {
        Map<String, byte[]> back = new HashMap<>();
        row.forEach((column, cell) -> back.put(column, cell.value()));
        if (back.isEmpty()) {
          // The group had no row there: it is new there again.
          store.deleteRow(Table.META, meta);
        } else {
          store.checkAndWrite(Table.META, meta, WalLayout.REBUILT_BY,
              rebuildId.getBytes(java.nio.charset.StandardCharsets.UTF_8), KvStore.UNVERSIONED,
              back);
        }
        throw new IllegalStateException("group " + group + ": the store is not being rebuilt by "
            + rebuildId + " any more (" + (m == null ? "no marker" : m.describe())
            + "); nothing installed");
      }
      return true;
    }
    // A DC that kept its state: raise the GC watermark first (reads below the copied position
    // are refused from now on), then the applied watermark; the collector removes the WAL rows
    // and versions below.
    raise(store, meta, WalLayout.GC_WATERMARK, position - 1);
    // Its own versions below the copied position are stale: nothing at or below it is folded
    // here again.
    raise(store, meta, WalLayout.FOLD_FLOOR, position);
    while (true) {
      // Expecting the cell as it is (a rebuild at position 0 writes an explicit 0).
      java.util.Optional<KvStore.Cell> raw = store.read(Table.META, meta, WalLayout.APPLIED,
          KvStore.LATEST);
      LogApplier.AppliedState now = raw.map(c -> LogApplier.decodeApplied(c.value()))
          .orElse(LogApplier.AppliedState.NONE);
      if (now.position() >= position) {
        return true;
      }
      byte[] expected = raw.map(KvStore.Cell::value).orElse(null);
      if (store.checkAndWrite(Table.META, meta, WalLayout.APPLIED, expected, KvStore.UNVERSIONED,
          Map.of(WalLayout.APPLIED, LogApplier.encodeApplied(
              new LogApplier.AppliedState(position, locks))))) {
        return true;
      }
    }
  }

  private static void raise(KvStore store, byte[] row, String column, long to) {
    while (true) {
      long now = store.read(Table.META, row, column, KvStore.LATEST)
          .map(c -> WalLayout.decodeLong(c.value())).orElse(0L);
      if (now >= to) {
        return;
      }
      if (store.checkAndWrite(Table.META, row, column,
          now == 0 ? null : WalLayout.encodeLong(now), KvStore.UNVERSIONED,
          Map.of(column, WalLayout.encodeLong(to)))) {
        return;
      }
    }
  }
}
