package org.paxoscp.paxos;

import static org.paxoscp.paxos.WalLayout.APPLIED;
import static org.paxoscp.paxos.WalLayout.DATA_VALUE;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Applies a DC's chosen log positions, in order, to its data table, and serves reads at a read
 * position (ARCHITECTURE section 3). Each item version carries the log position as its timestamp;
 * a delete is a tombstone version. When a position holds several combined entries they are folded
 * in list order and each key is written once.
 *
 * <p>Thread-safe and idempotent: applying a position twice writes the same versions again, and the
 * applied watermark only moves forward (checkAndWrite on its previous value).
 */
public final class LogApplier {
  private static final byte LIVE = 1;
  private static final byte TOMBSTONE = 0;

  private final KvStore store;
  private final Acceptor acceptor;

  public LogApplier(KvStore store) {
    this.store = store;
    this.acceptor = new Acceptor(store);
  }

  /** Highest position p such that every position <= p is applied to this DC's data table. */
  public long appliedWatermark(String group) {
    return store.read(Table.META, WalLayout.metaRow(group), APPLIED, KvStore.LATEST)
        .map(c -> WalLayout.decodeLong(c.value())).orElse(0L);
  }

  /**
   * Applies every chosen position after the watermark that this DC knows, stopping at the first
   * position whose chosen value it does not know.
   *
   * @return the new applied watermark
   */
  public long applyKnown(String group) {
    long applied = appliedWatermark(group);
    while (true) {
      Optional<LogValue> next = acceptor.chosen(group, applied + 1);
      if (next.isEmpty()) {
        return applied;
      }
      writeVersions(group, applied + 1, next.get());
      applied = advance(group, applied, applied + 1);
    }
  }

  private void writeVersions(String group, long position, LogValue value) {
    Map<String, Mutation> folded = new LinkedHashMap<>();
    for (LogEntry e : value.entries()) {
      folded.putAll(e.writes());
    }
    for (var w : folded.entrySet()) {
      store.write(Table.DATA, WalLayout.dataRow(group, w.getKey()), position,
          Map.of(DATA_VALUE, encodeItem(w.getValue())));
    }
  }

  /** Moves the watermark from {@code from} to {@code to} unless another applier got further. */
  private long advance(String group, long from, long to) {
    byte[] row = WalLayout.metaRow(group);
    byte[] expected = from == 0 ? null : WalLayout.encodeLong(from);
    while (true) {
      if (store.checkAndWrite(Table.META, row, APPLIED, expected, KvStore.UNVERSIONED,
          Map.of(APPLIED, WalLayout.encodeLong(to)))) {
        return to;
      }
      long now = appliedWatermark(group);
      if (now >= to) {
        return now;
      }
      expected = now == 0 ? null : WalLayout.encodeLong(now);
    }
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

  /** Whether the GC watermark has been raised to {@code readPosition} or above. */
  public boolean tooOld(String group, long readPosition) {
    long gc = LogCollector.gcWatermark(store, group);
    return gc > 0 && readPosition <= gc;
  }

  static byte[] encodeItem(Mutation m) {
    if (m.isDelete()) {
      return new byte[] {TOMBSTONE};
    }
    byte[] v = m.value().orElseThrow();
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
