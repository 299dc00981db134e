package org.paxoscp.client;

import java.nio.charset.StandardCharsets;

/**
 * Exact sizes of the parts of a one-entry {@code LogCodec} encoding, so a transaction can track
 * the encoded size of its entry as it grows without encoding it on every put. Must follow the
 * format documented in {@code org.paxoscp.wal.LogCodec}; a test compares it with the real
 * encoding.
 */
final class EntrySize {
  private EntrySize() {}

  /**
   * The encoded size of a value holding one entry: version, kind and count (one byte each for
   * one entry), the entry's fixed fields, the two counts, and the CRC trailer.
   */
  static int total(int idAndOriginBytes, int readCount, int readKeyBytes, int writeCount,
      int writeBytes) {
    return 3 + idAndOriginBytes + 8 + varint(readCount) + readKeyBytes + varint(writeCount)
        + writeBytes + 4;
  }

  /**
   * What scanned ranges add to {@link #total}: nothing for none; else the range count and each
   * range, plus the step flag every entry of a value with ranges carries (format 3).
   */
  static int ranges(java.util.List<org.paxoscp.wal.KeyRange> ranges) {
    return ranges(ranges, false);
  }

  /**
   * {@link #ranges(java.util.List)} for an entry that holds a commutative update or not: one
   * that does is encoded in format 4, which carries the range count and the step flag even
   * without ranges.
   */
  static int ranges(java.util.List<org.paxoscp.wal.KeyRange> ranges, boolean updates) {
    if (ranges.isEmpty() && !updates) {
      return 0;
    }
    int n = varint(ranges.size()) + 1;
    for (org.paxoscp.wal.KeyRange r : ranges) {
      n += string(r.from()) + 1 + (r.to() == null ? 0 : string(r.to()));
    }
    return n;
  }

  /** A length-prefixed UTF-8 string. */
  static int string(String s) {
    int n = s.getBytes(StandardCharsets.UTF_8).length;
    return varint(n) + n;
  }

  /** One write: key, op byte, and for a put the length-prefixed value. */
  static int write(String key, byte[] valueOrNullForDelete) {
    int v = valueOrNullForDelete == null ? 0
        : varint(valueOrNullForDelete.length) + valueOrNullForDelete.length;
    return string(key) + 1 + v;
  }

  /** One write of any kind: key, op byte, and the value or delta it carries. */
  static int write(String key, org.paxoscp.wal.Mutation m) {
    return switch (m.kind()) {
      case PUT -> write(key, m.value().orElseThrow());
      case DELETE -> write(key, (byte[]) null);
      case ADD -> string(key) + 1 + 8;
      case SET_UPDATE -> {
        int n = string(key) + 1 + varint(m.elements().size());
        for (String e : m.elements().keySet()) {
          n += string(e) + 8;
        }
        yield n;
      }
    };
  }

  static int varint(long v) {
    int n = 1;
    while ((v & ~0x7FL) != 0) {
      v >>>= 7;
      n++;
    }
    return n;
  }
}
