package org.paxoscp.service;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.List;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * A group's lock table copied in pages (cluster version 7, docs/rebuilding.md "Lock pages"): how
 * a snapshot page slices the table by size, values included, and the digest that keeps slices of
 * two different tables apart. Both sides of a rebuild use it: the peer answering
 * {@code SnapshotRequest}s and the {@link DcRebuild} putting the table together again.
 *
 * <p>Why a digest and not the position: a peer keeps only its latest lock table (in the applied
 * cell), so a lock page read after the peer applied further is read from a later table. The table
 * is a pure function of the log prefix and most positions leave it as it is; a page of a later
 * table with the same digest is a page of the same table, and the rebuilt store installs exactly
 * the table at the copied position. A page of a changed table is never used: the copy starts
 * again at a newer position.
 */
final class SnapshotLocks {
  /**
   * Bytes a slice's encoding adds to its locks': the format and count ({@link XgLocks#encode})
   * and the length prefix the wire gives it, at most.
   */
  static final int SLICE_OVERHEAD = 1 + 5 + 5;

  private SnapshotLocks() {}

  /**
   * A slice of a table: its locks, whether more locks follow it, and its bytes on the wire (at
   * most).
   */
  record Slice(XgLocks locks, boolean more, long bytes) {}

  /**
   * The locks of {@code table} after transaction id {@code after} ("": from the first), in
   * transaction order, as many as fit {@code budget} bytes with {@link #SLICE_OVERHEAD}; at least
   * one when {@code atLeastOne} and any is left, whatever its size (one lock alone fits a
   * datagram: its PREPARE did, with a client's margin beside it).
   */
  static Slice slice(XgLocks table, String after, long budget, boolean atLeastOne) {
    List<XgLocks.Lock> out = new ArrayList<>();
    long left = budget - SLICE_OVERHEAD;
    boolean more = false;
    for (XgLocks.Lock l : table.locks()) {
      if (l.txn().compareTo(after) <= 0) {
        continue;
      }
      long size = size(l);
      if (left < size && !(atLeastOne && out.isEmpty())) {
        more = true;
        break;
      }
      out.add(l);
      left -= size;
    }
    return new Slice(XgLocks.of(out), more, budget - left);
  }

  /** A lock's bytes in a table's encoding, at most: position, length prefix, one-entry value. */
  static long size(XgLocks.Lock l) {
    return 8 + 5 + LogCodec.encode(LogValue.of(l.prepare())).length;
  }

  /** SHA-256 of the table's encoding. */
  static byte[] digest(XgLocks table) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(table.encode());
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }
}
