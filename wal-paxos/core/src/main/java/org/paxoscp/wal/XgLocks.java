package org.paxoscp.wal;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The locks of one group at one log position: the chosen PREPAREs of cross-group transactions
 * (docs/architecture.md section 10) that no RESOLVE has followed yet, with the position each was
 * chosen at. A pure function of the log prefix ({@link #apply}), so every DC computes the same
 * table; the applier keeps it beside the applied watermark and a begin hands it to the client,
 * which checks the lock rule against it.
 *
 * <p>Immutable. Empty for every group that never saw a cross-group transaction.
 */
public final class XgLocks {
  /** The table of a group without unresolved PREPAREs. */
  public static final XgLocks EMPTY = new XgLocks(new TreeMap<>());
  private static final int FORMAT = 1;

  /** One unresolved PREPARE: the entry and the position it was chosen at. */
  public record Lock(long position, LogEntry prepare) {
    public Lock {
      if (!prepare.isPrepare()) {
        throw new IllegalArgumentException("not a PREPARE: " + prepare);
      }
    }

    /** The cross-group transaction holding the lock. */
    public String txn() {
      return prepare.xg().txn();
    }

    /**
     * The lock rule: may {@code e} not be placed while this lock is held? True if {@code e} reads
     * a key the PREPARE writes (by key, or inside a range it scanned), or writes a key the
     * PREPARE reads (by key or inside a range) or writes, unless {@code e} is a step of the same
     * cross-group transaction (its RESOLVE writes the prepared keys) other than its CLOSE: a
     * CLOSE writes the close key the PREPARE reads, and is kept out while the PREPARE holds its
     * locks, which is what lets a chosen CLOSE prove the PREPARE absent.
     */
    public boolean blocks(LogEntry e) {
      if (e.xg() != null && e.xg().txn().equals(txn()) && e.xg().kind() != XgStep.Kind.CLOSE) {
        return false;
      }
      if (prepare.writesWhatIsReadBy(e)) {
        return true;
      }
      for (String k : e.writes().keySet()) {
        if (prepare.reads(k) || prepare.writes().containsKey(k)) {
          return true;
        }
      }
      return false;
    }
  }

  /**
   * What applying one chosen value does: the table after it and, in list order, the writes of
   * each entry that writes (folded by {@link Updates#fold} into the versions to write).
   */
  public record Applied(XgLocks locks, List<Updates.Effect> effects) {
    /** The effects' writes as one map, a later write of a key replacing an earlier one. */
    public Map<String, Mutation> writes() {
      Map<String, Mutation> w = new LinkedHashMap<>();
      effects.forEach(e -> w.putAll(e.writes()));
      return w;
    }
  }

  private final SortedMap<String, Lock> byTxn;

  private XgLocks(SortedMap<String, Lock> byTxn) {
    this.byTxn = Collections.unmodifiableSortedMap(byTxn);
  }

  public boolean isEmpty() {
    return byTxn.isEmpty();
  }

  public int size() {
    return byTxn.size();
  }

  /** The locks in transaction id order. */
  public List<Lock> locks() {
    return List.copyOf(byTxn.values());
  }

  public Optional<Lock> lockOf(String txn) {
    return Optional.ofNullable(byTxn.get(txn));
  }

  /** The first lock that blocks {@code e} (see {@link Lock#blocks}), if any. */
  public Optional<Lock> blocking(LogEntry e) {
    for (Lock l : byTxn.values()) {
      if (l.blocks(e)) {
        return Optional.of(l);
      }
    }
    return Optional.empty();
  }

  /**
   * The first lock that blocks a scan of {@code range}: held by a PREPARE that writes a key in
   * it (the scan would read past an undecided write, as a get of that key would).
   */
  public Optional<Lock> blockingScan(KeyRange range) {
    for (Lock l : byTxn.values()) {
      if (range.containsAny(l.prepare().writes().keySet())) {
        return Optional.of(l);
      }
    }
    return Optional.empty();
  }

  /** The first lock that blocks a read of {@code key}: held by a PREPARE that writes it. */
  public Optional<Lock> blockingRead(String key) {
    for (Lock l : byTxn.values()) {
      if (l.prepare().writes().containsKey(key)) {
        return Optional.of(l);
      }
    }
    return Optional.empty();
  }

  /**
   * Applies the value chosen at {@code position} (the table being the one at {@code position -
   * 1}): entries in list order; an ordinary entry, a DECIDE or a CLOSE writes its writes (a
   * VALIDATE has none), and a DECIDE where its transaction holds locks (one round: the
   * coordinator's PREPARE) is also its RESOLVE there; a PREPARE takes
   * its transaction's locks (a second PREPARE of one transaction keeps the first); a RESOLVE
   * releases its transaction's locks and, for COMMIT, writes the prepared writes, or does nothing
   * when the transaction holds no lock here (a duplicate, or a PREPARE that was never chosen).
   */
  public Applied apply(long position, LogValue value) {
    TreeMap<String, Lock> next = null;
    List<Updates.Effect> writes = new ArrayList<>();
    for (LogEntry e : value.entries()) {
      XgStep x = e.xg();
      if (x == null || x.kind() == XgStep.Kind.DECIDE || x.kind() == XgStep.Kind.VALIDATE
          || x.kind() == XgStep.Kind.CLOSE) {
        if (!e.writes().isEmpty()) { // (a VALIDATE has none; a CLOSE writes its close key)
          writes.add(new Updates.Effect(e.txnId(), e.writes()));
        }
        if (x == null || x.kind() != XgStep.Kind.DECIDE
            || !(next == null ? byTxn : next).containsKey(x.txn())) {
          continue;
        }
        // A DECIDE where its transaction holds locks (a one-round commit's coordinator) is
        // also its RESOLVE there: on to the release below.
      }
      if (next == null) {
        next = new TreeMap<>(byTxn);
      }
      if (x.kind() == XgStep.Kind.PREPARE) {
        next.putIfAbsent(x.txn(), new Lock(position, e));
      } else {
        Lock released = next.remove(x.txn());
        if (released != null && x.commit() && !released.prepare().writes().isEmpty()) {
          // (Under its transaction's id: the RESOLVE carries only a copy of these writes.)
          writes.add(new Updates.Effect(released.txn(), released.prepare().writes()));
        }
      }
    }
    return new Applied(next == null ? this : new XgLocks(next), writes);
  }

  /**
   * The table with every prepared value replaced by an empty one: what a begin hands a client,
   * which needs the locked keys, never the values (the applier applies the PREPARE's own writes,
   * and a RESOLVE's copy matters only by its keys).
   */
  public XgLocks withoutValues() {
    if (byTxn.isEmpty()) {
      return this;
    }
    TreeMap<String, Lock> m = new TreeMap<>();
    for (Lock l : byTxn.values()) {
      LogEntry p = l.prepare();
      TreeMap<String, Mutation> keys = new TreeMap<>();
      p.writes().forEach((k, w) -> keys.put(k, switch (w.kind()) {
        case PUT -> Mutation.put(new byte[0]);
        case DELETE -> w;
        case ADD -> Mutation.add(0);
        case SET_UPDATE -> Mutation.setUpdate(Map.of());
      }));
      m.put(l.txn(), new Lock(l.position(), new LogEntry(p.txnId(), p.originDc(),
          p.readPosition(), p.readSet(), p.readRanges(), keys, p.xg())));
    }
    return new XgLocks(m);
  }

  /**
   * The first locks in transaction id order whose {@link #encode} fits {@code maxBytes}, and
   * always at least the first one: what a begin reply carries when the whole table would not fit
   * a datagram (a <em>cut</em> table). One order for every group, so that a cut table proves
   * something of a transaction it does not list ({@link #cutListsIfHeld}), and so that the
   * transaction with the least id of all that hold locks anywhere is listed in every group where
   * it holds one: resolving that one first always makes progress (docs/cross-group.md).
   */
  public XgLocks firstWithin(int maxBytes) {
    if (encode().length <= maxBytes) {
      return this;
    }
    TreeMap<String, Lock> kept = new TreeMap<>();
    int bytes = 1 + 5; // format and count, at most
    for (Lock l : byTxn.values()) {
      // position, length prefix (at most 5 bytes) and the one-entry value
      int size = 8 + 5 + LogCodec.encode(LogValue.of(l.prepare())).length;
      if (!kept.isEmpty() && bytes + size > maxBytes) {
        break;
      }
      kept.put(l.txn(), l);
      bytes += size;
    }
    return new XgLocks(kept);
  }

  /**
   * On a table {@link #firstWithin cut} from a group's whole table: would {@code txn} be listed
   * here if it held a lock in the group? True when its id is not above the last one listed (the
   * cut keeps a prefix in id order), so then its absence proves it holds none.
   */
  public boolean cutListsIfHeld(String txn) {
    return !byTxn.isEmpty() && txn.compareTo(byTxn.lastKey()) <= 0;
  }

  /** The first lock in transaction id order: the one a reader of a cut table helps resolve. */
  public Optional<Lock> first() {
    return byTxn.isEmpty() ? Optional.empty() : Optional.of(byTxn.get(byTxn.firstKey()));
  }

  /**
   * The table as bytes (empty array for the empty table), for the applied-watermark cell: per
   * lock its position and its PREPARE as a one-entry log value (so that two PREPAREs sharing an
   * entry id, which a faulty client could get chosen, still encode).
   */
  public byte[] encode() {
    if (byTxn.isEmpty()) {
      return new byte[0];
    }
    BinaryWriter w = new BinaryWriter(64).writeByte(FORMAT).writeVarint(byTxn.size());
    for (Lock l : byTxn.values()) {
      w.writeLong(l.position()).writeBytes(LogCodec.encode(LogValue.of(l.prepare())));
    }
    return w.toByteArray();
  }

  /**
   * Reads {@link #encode}'s bytes from {@code buf[offset..]}.
   *
   * @throws CorruptDataException if they are not one valid encoding
   */
  public static XgLocks decode(byte[] buf, int offset) {
    if (offset == buf.length) {
      return EMPTY;
    }
    BinaryReader r = new BinaryReader(buf, offset, buf.length - offset);
    int format = r.readByte("locks format");
    if (format != FORMAT) {
      throw new CorruptDataException("unknown locks format " + format);
    }
    int n = r.readCount("lock count", 8 + 7);
    if (n == 0) {
      // The empty table is encoded as nothing at all; anything else would not be canonical.
      throw new CorruptDataException("an encoded lock table with no lock");
    }
    TreeMap<String, Lock> m = new TreeMap<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      long position = r.readLong("lock position");
      LogValue v = LogCodec.decode(r.readBytes("lock entry"));
      if (v.entries().size() != 1 || !v.entries().get(0).isPrepare()) {
        throw new CorruptDataException("a lock that is not one PREPARE: " + v);
      }
      LogEntry e = v.entries().get(0);
      String txn = e.xg().txn();
      if (prev != null && prev.compareTo(txn) >= 0) {
        throw new CorruptDataException("locks not in strictly increasing transaction order");
      }
      prev = txn;
      m.put(txn, new Lock(position, e));
    }
    r.expectEnd("locks");
    return new XgLocks(m);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof XgLocks l && l.byTxn.equals(byTxn);
  }

  @Override
  public int hashCode() {
    return byTxn.hashCode();
  }

  @Override
  public String toString() {
    return byTxn.isEmpty() ? "no locks" : "locks" + byTxn.values();
  }

  /**
   * The table holding exactly {@code locks}: a slice of a table, or a table put together again
   * from its slices (a rebuild copies a large table in pages, docs/rebuilding.md).
   *
   * @throws IllegalArgumentException if two locks belong to one transaction
   */
  public static XgLocks of(java.util.Collection<Lock> locks) {
    TreeMap<String, Lock> m = new TreeMap<>();
    for (Lock l : locks) {
      if (m.put(l.txn(), l) != null) {
        throw new IllegalArgumentException("two locks of transaction " + l.txn());
      }
    }
    return m.isEmpty() ? EMPTY : new XgLocks(m);
  }
}
