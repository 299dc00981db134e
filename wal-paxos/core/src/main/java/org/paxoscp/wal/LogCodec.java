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
 * value   := version:u8 (=1) kind:u8 (0 = entry list) count:varint entry* crc32c:u32
 * entry   := txnId:str originDc:str readPosition:u64 nReads:varint key:str* nWrites:varint write*
 * write   := key:str op:u8 (0 = put, 1 = delete) [value:bytes if put]
 * str     := len:varint utf8-bytes ; bytes := len:varint raw
 * </pre>
 *
 * Keys are written in sorted order without duplicates, so the encoding is canonical: equal values
 * encode to equal bytes. A new format gets a new version byte; a decoder rejects versions it does
 * not know rather than guessing. The CRC-32C trailer covers everything before it, so a flipped bit
 * anywhere is rejected instead of silently changing a transaction.
 */
public final class LogCodec {
  public static final int VERSION_1 = 1;
  private static final int KIND_ENTRY_LIST = 0;
  private static final int OP_PUT = 0;
  private static final int OP_DELETE = 1;
  /** Smallest possible encoded entry: two empty strings, a u64 and two zero counts. */
  private static final int MIN_ENTRY_BYTES = 1 + 1 + 8 + 1 + 1;

  private LogCodec() {}

  public static byte[] encode(LogValue value) {
    BinaryWriter w = new BinaryWriter(128);
    w.writeByte(VERSION_1).writeByte(KIND_ENTRY_LIST).writeVarint(value.entries().size());
    for (LogEntry e : value.entries()) {
      w.writeString(e.txnId()).writeString(e.originDc()).writeLong(e.readPosition());
      w.writeVarint(e.readSet().size());
      for (String k : e.readSet()) {
        w.writeString(k);
      }
      w.writeVarint(e.writes().size());
      for (var m : e.writes().entrySet()) {
        w.writeString(m.getKey());
        if (m.getValue().isDelete()) {
          w.writeByte(OP_DELETE);
        } else {
          w.writeByte(OP_PUT).writeBytes(m.getValue().rawValue());
        }
      }
    }
    byte[] body = w.toByteArray();
    CRC32C crc = new CRC32C();
    crc.update(body);
    return new BinaryWriter(body.length + 4).writeRaw(body).writeInt((int) crc.getValue())
        .toByteArray();
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
    if (version != VERSION_1) {
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
      entries.add(readEntry(r));
    }
    r.expectEnd("log value");
    try {
      return new LogValue(entries);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid log value: " + e.getMessage());
    }
  }

  private static LogEntry readEntry(BinaryReader r) {
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
        default -> throw new CorruptDataException("unknown write op " + op);
      };
      writes.put(k, m);
      prev = k;
    }
    try {
      return new LogEntry(txnId, origin, readPos, reads, writes);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid log entry: " + e.getMessage());
    }
  }
}
