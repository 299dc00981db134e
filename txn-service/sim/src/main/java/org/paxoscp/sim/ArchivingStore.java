package org.paxoscp.sim;

import java.util.Optional;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;

/**
 * The view of a DC's store its log collectors write through: before a WAL row is deleted, its
 * chosen value goes to the {@link Archive} under the row's group and position, so that the
 * checker still judges every group's whole log (what was collected and what remains). The
 * collector's own archive callback names the position only, not the group; the row key names
 * both.
 */
final class ArchivingStore extends ForwardingKvStore {

  /** Receives each chosen value a collector removes. */
  interface Archive {
    void collected(String group, long position, LogValue value);
  }

  private final Archive archive;

  ArchivingStore(KvStore delegate, Archive archive) {
    super(delegate);
    this.archive = archive;
  }

  @Override
  public void deleteRow(Table table, byte[] row) {
    if (table == Table.WAL) {
      Optional<String> group = WalLayout.groupOf(row);
      if (group.isPresent()) {
        // Only chosen positions lie at or below the watermark; a row already gone was archived
        // by the round that deleted it.
        delegate.read(Table.WAL, row, WalLayout.CHOSEN, KvStore.LATEST).ifPresent(c ->
            archive.collected(group.get(), WalLayout.positionOf(group.get(), row),
                LogCodec.decode(c.value())));
      }
    }
    delegate.deleteRow(table, row);
  }
}
