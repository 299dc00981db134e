package org.paxoscp.paxos;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32C;
import org.paxoscp.wal.XgStep;

/**
 * Row keys and column names of the WAL, data and meta tables (docs/architecture.md section 3).
 *
 * <p>Every row starts with the group's {@link #bucket} (2 bytes, a hash of the group name), so
 * that many groups spread evenly over a table's regions (docs/architecture.md section 9) while one
 * group's rows stay contiguous. WAL row: {@code bucket | group UTF-8 | 0x00 | position (8-byte
 * big-endian)}, so one group's log is one contiguous, ordered key range. Data row:
 * {@code bucket | group | 0x00 | item key}. Meta row: {@code bucket | group}. Group names may not
 * contain NUL, which keeps the separator unambiguous.
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
  /**
   * Meta cell of a group rebuilt at this DC (docs/architecture.md section 12): this
   * DC never promises, votes or grants at positions at or below it ({@link RebuildGuard}).
   */
  public static final String FENCE = "f";
  /**
   * Meta cell of a group rebuilt at this DC: the id of the rebuild that installed the row
   * ({@link org.paxoscp.store.StoreMarker#id}). While the store is being rebuilt, only rows of
   * the rebuild under way make their groups served ({@link RebuildGuard}).
   */
  public static final String REBUILT_BY = "r";
  /**
   * Meta cell written with a group's first applied watermark: the id of the store marker the
   * applier saw then. Only versions with store markers write it (and {@link #REBUILT_BY},
   * {@link #FENCE}), which tells a store that lost its marker from one written before markers
   * existed ({@link org.paxoscp.store.StoreMarker#initializeIfFromEarlierVersion}).
   */
  public static final String STORE_ID = "i";
  /**
   * Meta cell of a group rebuilt at this DC: the position it was copied at. The store holds each
   * key's newest version at or below it and nothing older, so no position at or below it is
   * folded here again (a commutative update needs the versions below its position:
   * {@link LogApplier}).
   */
  public static final String FOLD_FLOOR = "o";
  /** The meta cells only versions with store markers write (see {@link #STORE_ID}). */
  public static final java.util.Set<String> MARKED_META_COLUMNS =
      java.util.Set.of(FENCE, REBUILT_BY, STORE_ID, FOLD_FLOOR);


  public static final int MAX_GROUP_BYTES = 256;
  public static final int MAX_KEY_BYTES = 1024;

  private WalLayout() {}

  public static void validateGroup(String group) {
    validateName("group", group, MAX_GROUP_BYTES);
  }

  /**
   * An application's key: non-empty, at most {@link #MAX_KEY_BYTES} of UTF-8, no NUL, no half
   * of a surrogate pair.
   */
  public static void validateKey(String key) {
    validateName("key", key, MAX_KEY_BYTES);
  }

  /**
   * A key the store may hold: an application's key ({@link #validateKey}) or a cross-group
   * transaction's decision or close key ({@link XgStep#decisionKey}, {@link XgStep#closeKey}),
   * which the NUL in its prefix keeps apart from every application key.
   */
  public static void validateStoredKey(String key) {
    if (key != null && key.startsWith(XgStep.DECISION_PREFIX)) {
      validateName("decision key", key.substring(XgStep.DECISION_PREFIX.length()),
          MAX_KEY_BYTES);
    } else if (key != null && key.startsWith(XgStep.CLOSE_PREFIX)) {
      validateName("close key", key.substring(XgStep.CLOSE_PREFIX.length()), MAX_KEY_BYTES);
    } else {
      validateKey(key);
    }
  }

  private static void validateName(String what, String s, int max) {
    if (s == null || s.isEmpty()) {
      throw new IllegalArgumentException(what + " must not be empty");
    }
    if (s.indexOf('\0') >= 0) {
      throw new IllegalArgumentException(what + " must not contain NUL");
    }
    if (org.paxoscp.wal.KeyRange.hasUnpairedSurrogate(s)) {
      throw new IllegalArgumentException(what + " holds half of a UTF-16 surrogate pair, which "
          + "has no UTF-8 form");
    }
    int n = s.getBytes(StandardCharsets.UTF_8).length;
    if (n > max) {
      throw new IllegalArgumentException(what + " is " + n + " bytes; the limit is " + max);
    }
  }

  /** Bytes of the hashed prefix of every row key. */
  public static final int BUCKET_BYTES = 2;

  /**
   * The group's bucket: the low 16 bits of the CRC-32C of its UTF-8 name, the first two bytes
   * of each of its row keys. Stable across versions (it is part of the stored layout).
   */
  public static int bucket(String group) {
    return bucket(group.getBytes(StandardCharsets.UTF_8));
  }

  private static int bucket(byte[] utf8) {
    CRC32C crc = new CRC32C();
    crc.update(utf8);
    return (int) (crc.getValue() & 0xFFFF);
  }

  public static byte[] walRow(String group, long position) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(BUCKET_BYTES + g.length + 9).putShort((short) bucket(g)).put(g)
        .put((byte) 0).putLong(position).array();
  }

  public static byte[] dataRow(String group, String key) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    byte[] k = key.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(BUCKET_BYTES + g.length + 1 + k.length)
        .putShort((short) bucket(g)).put(g).put((byte) 0).put(k).array();
  }

  /**
   * The first row key of {@code group}'s rows in the WAL or data table ({@code bucket | group |
   * 0x00}); {@link #groupRowsEnd} is the first key past them.
   */
  public static byte[] groupRowsStart(String group) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(BUCKET_BYTES + g.length + 1).putShort((short) bucket(g)).put(g)
        .put((byte) 0).array();
  }

  /** The first row key after every WAL or data row of {@code group}. */
  public static byte[] groupRowsEnd(String group) {
    byte[] start = groupRowsStart(group);
    start[start.length - 1] = 1;
    return start;
  }

  /** The position of a WAL row of {@code group} (the row's last 8 bytes). */
  public static long positionOf(String group, byte[] walRow) {
    int prefix = groupRowsStart(group).length;
    if (walRow.length != prefix + 8) {
      throw new org.paxoscp.wal.CorruptDataException("WAL row of " + walRow.length
          + " bytes for group " + group + ", expected " + (prefix + 8));
    }
    return ByteBuffer.wrap(walRow, prefix, 8).getLong();
  }

  /** The item key of a data row of {@code group}. */
  public static String keyOf(String group, byte[] dataRow) {
    int prefix = groupRowsStart(group).length;
    if (dataRow.length <= prefix) {
      throw new org.paxoscp.wal.CorruptDataException("data row of " + dataRow.length
          + " bytes for group " + group);
    }
    return new String(dataRow, prefix, dataRow.length - prefix, StandardCharsets.UTF_8);
  }

  /**
   * The group of a WAL, data or meta row ({@code bucket | group [| 0x00 | ...]}); empty for the
   * store row and anything else that is no group's.
   */
  public static java.util.Optional<String> groupOf(byte[] row) {
    if (row.length <= BUCKET_BYTES || row[BUCKET_BYTES] == 0) {
      return java.util.Optional.empty();
    }
    int end = BUCKET_BYTES;
    while (end < row.length && row[end] != 0) {
      end++;
    }
    String g = new String(row, BUCKET_BYTES, end - BUCKET_BYTES, StandardCharsets.UTF_8);
    return bucket(g) == (((row[0] & 0xFF) << 8) | (row[1] & 0xFF))
        ? java.util.Optional.of(g) : java.util.Optional.empty();
  }

  public static byte[] metaRow(String group) {
    byte[] g = group.getBytes(StandardCharsets.UTF_8);
    return ByteBuffer.allocate(BUCKET_BYTES + g.length).putShort((short) bucket(g)).put(g)
        .array();
  }

  /**
   * Row keys that split a table into {@code regions} regions of equal bucket ranges (none for
   * one region): for pre-splitting, so that a new table spreads groups at once.
   */
  public static byte[][] splitKeys(int regions) {
    if (regions < 1 || regions > 1 << 16) {
      throw new IllegalArgumentException("regions must be in [1, 65536], was " + regions);
    }
    byte[][] keys = new byte[regions - 1][];
    for (int i = 1; i < regions; i++) {
      int b = (int) ((long) i * (1 << 16) / regions);
      keys[i - 1] = new byte[] {(byte) (b >>> 8), (byte) b};
    }
    return keys;
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
