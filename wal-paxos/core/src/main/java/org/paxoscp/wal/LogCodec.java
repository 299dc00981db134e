package org.paxoscp.wal;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.CRC32C;

/**
 * Versioned binary encoding of {@link LogValue}s, as persisted in the WAL table and carried in
 * protocol messages.
 *
 * <pre>
 * value   := version:u8 (1, 2, 3 or 4) kind:u8 (0 = entry list) count:varint entry* crc32c:u32
 * entry   := txnId:str originDc:str readPosition:u64 nReads:varint key:str*
 *            [nRanges:varint range*, in versions 3 and 4] nWrites:varint write*
 *            [step, in versions 2, 3 and 4]
 * range   := from:str bounded:u8 (0 = to the group's end, 1) [to:str if bounded]
 * write   := key:str op:u8 (0 = put, 1 = delete, 2 = add, 3 = set update; 2 and 3 in version 4)
 *            [value:bytes if put] [delta:u64 if add] [n:varint (element:str delta:u64)* if set]
 * step    := 0 (none) | 1 kind:u8 (0 PREPARE, 1 DECIDE, 2 RESOLVE, 3 VALIDATE) txn:str nGroups:varint
 *            group:str* deadlineMillis:u64 commit:u8
 * str     := len:varint utf8-bytes ; bytes := len:varint raw
 * </pre>
 *
 * <p>A value none of whose entries is a cross-group step ({@link XgStep}) or holds a scanned key
 * range ({@link KeyRange}) is written in version 1, byte for byte as before cross-group
 * transactions existed; a value with a step but no range in version 2; a value with a range in
 * version 3 (cluster version 4, {@code range-reads}: a client scans only once the cluster runs
 * at it, so a build that reads only versions 1 and 2 never meets one). All three are read.
 *
 * Keys are written in sorted order without duplicates, so the encoding is canonical: equal values
 * encode to equal bytes. A new format gets a new version byte; a decoder rejects versions it does
 * not know rather than guessing. The CRC-32C trailer covers everything before it, so a flipped bit
 * anywhere is rejected instead of silently changing a transaction.
 */
public final class LogCodec {
  public static final int VERSION_1 = 1;
  public static final int VERSION_2 = 2;
  public static final int VERSION_3 = 3;
  public static final int VERSION_4 = 4;
  private static final int KIND_ENTRY_LIST = 0;
  private static final int OP_PUT = 0;
  private static final int OP_DELETE = 1;
  private static final int OP_ADD = 2;
  private static final int OP_SET = 3;
  /** Smallest possible encoded entry: two empty strings, a u64 and two zero counts. */
  private static final int MIN_ENTRY_BYTES = 1 + 1 + 8 + 1 + 1;

  private LogCodec() {}

  public static byte[] encode(LogValue value) {
    boolean updates = value.entries().stream().anyMatch(LogEntry::hasUpdates);
    boolean ranges = updates
        || value.entries().stream().anyMatch(e -> !e.readRanges().isEmpty());
    boolean steps = ranges || value.entries().stream().anyMatch(e -> e.xg() != null);
    BinaryWriter w = new BinaryWriter(128);
    w.writeByte(updates ? VERSION_4 : ranges ? VERSION_3 : steps ? VERSION_2 : VERSION_1)
        .writeByte(KIND_ENTRY_LIST)
        .writeVarint(value.entries().size());
    for (LogEntry e : value.entries()) {
      writeEntry(w, e, steps, ranges);
    }
    byte[] body = w.toByteArray();
    CRC32C crc = new CRC32C();
    crc.update(body);
    return new BinaryWriter(body.length + 4).writeRaw(body).writeInt((int) crc.getValue())
        .toByteArray();
  }

  private static void writeEntry(BinaryWriter w, LogEntry e, boolean steps, boolean ranges) {
    w.writeString(e.txnId()).writeString(e.originDc()).writeLong(e.readPosition());
    w.writeVarint(e.readSet().size());
    for (String k : e.readSet()) {
      w.writeString(k);
    }
    if (ranges) {
      w.writeVarint(e.readRanges().size());
      for (KeyRange r : e.readRanges()) {
        w.writeString(r.from());
        if (r.to() == null) {
          w.writeByte(0);
        } else {
          w.writeByte(1).writeString(r.to());
        }
      }
    }
    w.writeVarint(e.writes().size());
    for (var m : e.writes().entrySet()) {
      w.writeString(m.getKey());
      Mutation mu = m.getValue();
      switch (mu.kind()) {
        case DELETE -> w.writeByte(OP_DELETE);
        case PUT -> w.writeByte(OP_PUT).writeBytes(mu.rawValue());
        case ADD -> w.writeByte(OP_ADD).writeLong(mu.delta());
        case SET_UPDATE -> {
          w.writeByte(OP_SET).writeVarint(mu.elements().size());
          for (var el : mu.elements().entrySet()) {
            w.writeString(el.getKey()).writeLong(el.getValue());
          }
        }
        default -> throw new AssertionError(mu.kind());
      }
    }
    if (steps) {
      XgStep x = e.xg();
      if (x == null) {
        w.writeByte(0);
      } else {
        w.writeByte(1).writeByte(x.kind().ordinal()).writeString(x.txn())
            .writeVarint(x.groups().size());
        for (String g : x.groups()) {
          w.writeString(g);
        }
        w.writeLong(x.deadlineMillis()).writeByte(x.commit() ? 1 : 0);
      }
    }
  }

  /**
   * Decodes bytes produced by {@link #encode}.
   *
   * @throws CorruptDataException if the bytes are not exactly one valid, checksummed encoding
   */
  public static LogValue decode(byte[] bytes) {
    if (bytes == null || bytes.length < 7) {
      throw new CorruptDataException("log value too short: "
          + (bytes == null ? "null" : bytes.length + " bytes"));
    }
    int bodyLen = bytes.length - 4;
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, bodyLen);
    int stored = new BinaryReader(bytes, bodyLen, 4).readInt("crc");
    BinaryReader r = new BinaryReader(bytes, 0, bodyLen);
    int version = r.readByte("version");
    if (version < VERSION_1 || version > VERSION_4) {
      throw new CorruptDataException("unknown log value format version " + version);
    }
    if (stored != (int) crc.getValue()) {
      throw new CorruptDataException("log value checksum mismatch");
    }
    int kind = r.readByte("kind");
    if (kind != KIND_ENTRY_LIST) {
      throw new CorruptDataException("unknown log value kind " + kind);
    }
    int n = r.readCount("entry count", MIN_ENTRY_BYTES);
    List<LogEntry> entries = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      entries.add(readEntry(r, version >= VERSION_2, version >= VERSION_3,
          version == VERSION_4));
    }
    r.expectEnd("log value");
    if (version == VERSION_2 && entries.stream().allMatch(e -> e.xg() == null)) {
      throw new CorruptDataException("version 2 value without a cross-group step (not canonical)");
    }
    if (version == VERSION_3 && entries.stream().allMatch(e -> e.readRanges().isEmpty())) {
      throw new CorruptDataException("version 3 value without a key range (not canonical)");
    }
    if (version == VERSION_4 && entries.stream().noneMatch(LogEntry::hasUpdates)) {
      throw new CorruptDataException("version 4 value without an update (not canonical)");
    }
    try {
      return new LogValue(entries);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid log value: " + e.getMessage());
    }
  }

  private static LogEntry readEntry(BinaryReader r, boolean steps, boolean withRanges,
      boolean withUpdates) {
    String txnId = r.readString("txnId");
    String origin = r.readString("originDc");
    long readPos = r.readLong("readPosition");
    int nReads = r.readCount("read count", 1);
    TreeSet<String> reads = new TreeSet<>();
    String prev = null;
    for (int i = 0; i < nReads; i++) {
      String k = r.readString("read key");
      if (prev != null && prev.compareTo(k) >= 0) {
        throw new CorruptDataException("read keys not strictly sorted");
      }
      reads.add(k);
      prev = k;
    }
    List<KeyRange> ranges = withRanges ? readRanges(r) : List.of();
    int nWrites = r.readCount("write count", 2);
    TreeMap<String, Mutation> writes = new TreeMap<>();
    prev = null;
    for (int i = 0; i < nWrites; i++) {
      String k = r.readString("write key");
      if (prev != null && prev.compareTo(k) >= 0) {
        throw new CorruptDataException("write keys not strictly sorted");
      }
      int op = r.readByte("write op");
      Mutation m = switch (op) {
        case OP_PUT -> Mutation.put(r.readBytes("write value"));
        case OP_DELETE -> Mutation.delete();
        case OP_ADD -> {
          if (!withUpdates) {
            throw new CorruptDataException("an add in a value of a version before 4");
          }
          yield Mutation.add(r.readLong("add delta"));
        }
        case OP_SET -> {
          if (!withUpdates) {
            throw new CorruptDataException("a set update in a value of a version before 4");
          }
          yield readSetUpdate(r);
        }
        default -> throw new CorruptDataException("unknown write op " + op);
      };
      writes.put(k, m);
      prev = k;
    }
    XgStep step = steps ? readStep(r) : null;
    try {
      LogEntry e = new LogEntry(txnId, origin, readPos, reads, ranges, writes, step);
      if (!e.readRanges().equals(ranges)) {
        throw new CorruptDataException("key ranges not sorted and disjoint (not canonical)");
      }
      return e;
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid log entry: " + e.getMessage());
    }
  }

  private static Mutation readSetUpdate(BinaryReader r) {
    int n = r.readCount("set update size", 9);
    TreeMap<String, Long> m = new TreeMap<>();
    String prev = null;
    for (int i = 0; i < n; i++) {
      String el = r.readString("set element");
      long d = r.readLong("set delta");
      if ((prev != null && prev.compareTo(el) >= 0) || d == 0) {
        throw new CorruptDataException("set update elements not strictly sorted, or a zero delta "
            + "(not canonical)");
      }
      m.put(el, d);
      prev = el;
    }
    try {
      return Mutation.setUpdate(m);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid set update: " + e.getMessage());
    }
  }

  private static List<KeyRange> readRanges(BinaryReader r) {
    int n = r.readCount("range count", 2);
    List<KeyRange> ranges = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String from = r.readString("range from");
      int bounded = r.readByte("range bounded");
      if (bounded > 1) {
        throw new CorruptDataException("bad range bound flag " + bounded);
      }
      String to = bounded == 1 ? r.readString("range to") : null;
      try {
        ranges.add(new KeyRange(from, to));
      } catch (IllegalArgumentException e) {
        throw new CorruptDataException("invalid key range: " + e.getMessage());
      }
    }
    return ranges;
  }

  private static XgStep readStep(BinaryReader r) {
    int flag = r.readByte("step flag");
    if (flag == 0) {
      return null;
    }
    if (flag != 1) {
      throw new CorruptDataException("unknown step flag " + flag);
    }
    int kind = r.readByte("step kind");
    if (kind >= XgStep.Kind.values().length) {
      throw new CorruptDataException("unknown step kind " + kind);
    }
    String txn = r.readString("step txn");
    int n = r.readCount("step group count", 1);
    List<String> groups = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      groups.add(r.readString("step group"));
    }
    long deadline = r.readLong("step deadline");
    int commit = r.readByte("step outcome");
    if (commit > 1) {
      throw new CorruptDataException("bad step outcome " + commit);
    }
    try {
      return new XgStep(XgStep.Kind.values()[kind], txn, groups, deadline, commit == 1);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid cross-group step: " + e.getMessage());
    }
  }
}
