package org.paxoscp.paxos;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Row keys and column names of the WAL, data and meta tables (ARCHITECTURE section 3).
 *
 * <p>WAL row: {@code group UTF-8 | 0x00 | position (8-byte big-endian)}, so one group's log is one
 * contiguous, ordered key range. Data row: {@code group | 0x00 | item key}. Meta row: {@code group}.
 * Group names may not contain NUL, which keeps the separator unambiguous.
 */
public final class WalLayout {
  /** Highest promised ballot (Algorithm 1's nextBal). */
  public static final String PROMISE = "n";
  /** Ballot of the last accepted vote. */
  public static final String VOTE_BALLOT = "b";
  /** Value of the last accepted vote. */
  public static final String VOTE_VALUE = "v";
  /** The decided value, written by APPLY or catch-up. */
  public static final String CHOSEN = "c";
  /** Fast-path grant holder (section 5.3). */
  public static final String GRANT = "g";

  /** Data cell: one version per log position that wrote the item. */
  public static final String DATA_VALUE = "d";
  /** Meta cell: every position at or below it is applied to the data table here. */
  public static final String APPLIED = "a";
  /**
   * Meta cell: the GC watermark; positions at or below it are forgotten here (section 7,
   * {@link LogCollector}).
   */
  public static final String GC_WATERMARK = "w";
  /** Meta cell: WAL rows and superseded data versions up to it have been removed here. */
  public static final String COLLECTED = "x";

  public static final int MAX_GROUP_BYTES = 256;
  public static final int MAX_KEY_BYTES = 1024;

  private WalLayout() {}

  public static void validateGroup(String group) {
    validateName("group", group, MAX_GROUP_BYTES);
  }

  public static void validateKey(String key) {
    validateName("key", key, MAX_KEY_BYTES);
  }

  private static void validateName(String what, String s, int max) {
    if (s == null || s.isEmpty()) {
      throw new IllegalArgumentException(what + " must not be empty");
    }
    if (s.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(what + " must not contain NUL");
    }
    int n = s.getBytes(StandardCharsets.UTF_8).length;
    if (n > max) {
      throw new IllegalArgumentException(what + " is " + n + " bytes; the limit is " + max);
    }
  }

  public static byte[] walRow(String group, long position) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(g.length + 9).put(g).put((byte) 0).putLong(position).array();
  }

  public static byte[] dataRow(String group, String key) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(g.length + 1 + k.length).put(g).put((byte) 0).put(k).array();
  }

  public static byte[] metaRow(String group) {
    return group.getBytes(StandardCharsets.UTF_8);
  }

  public static byte[] encodeLong(long v) {
    return ByteBuffer.allocate(8).putLong(v).array();
  }

  public static long decodeLong(byte[] b) {
    if (b.length != 8) {
      throw new org.paxoscp.wal.CorruptDataException("expected 8 bytes, got " + b.length);
    }
    return ByteBuffer.wrap(b).getLong();
  }
}
