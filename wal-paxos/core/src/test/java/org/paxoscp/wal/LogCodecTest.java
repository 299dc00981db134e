package org.paxoscp.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The WAL value codec: round trips, canonical bytes, and rejection of every malformed input with
 * {@link CorruptDataException} and nothing else.
 *
 * <p>Structural rejections (unknown op, unsorted keys, ...) are tested on hand-built bytes whose
 * CRC-32C trailer is recomputed by {@link #sealed}, so that the structural check, not the
 * checksum, is what rejects them; each such test also asserts the reason in the message.
 */
@Timeout(10)
class LogCodecTest {

  // ---- fixtures ---------------------------------------------------------------------------

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static LogEntry entry(String txnId, String origin, long readPosition, Set<String> reads,
      Map<String, Mutation> writes) {
    return new LogEntry(txnId, origin, readPosition, new TreeSet<>(reads), new TreeMap<>(writes));
  }

  private static LogEntry simple(String txnId, long readPosition) {
    return entry(txnId, "dc-a", readPosition, Set.of("r1", "r2"),
        Map.of("w1", Mutation.put(bytes("one")), "w2", Mutation.delete()));
  }

  /** A handful of encodings that exercise every field. */
  private static List<LogValue> samples() {
    return List.of(
        LogValue.NOOP,
        LogValue.of(simple("t1", 7)),
        LogValue.of(simple("t3", 1), simple("t1", 2),
            entry("t2", "", 0, Set.of(), Map.of()),
            entry("t\u00e9", "dc-\u00fc", Long.MAX_VALUE, Set.of("\u00e4", "\uD83D\uDD11"),
                Map.of("k", Mutation.put(new byte[0]), "\u00e4", Mutation.delete()))),
        LogValue.of(simple("t4", 3),
            new LogEntry("p", "dc", 3, new TreeSet<>(Set.of("r")),
                new TreeMap<>(Map.of("w", Mutation.put(new byte[] {1}))),
                XgStep.prepare("T", List.of("a", "b"), 12345)),
            new LogEntry("d", "dc", 2, new TreeSet<>(Set.of(XgStep.decisionKey("T"))),
                new TreeMap<>(Map.of(XgStep.decisionKey("T"), Mutation.put(XgStep.ABORT_VALUE))),
                XgStep.decide("T", List.of("a", "b"), false))),
        LogValue.of(simple("t5", 4),
            new LogEntry("s", "dc", 4, new TreeSet<>(Set.of("r")),
                List.of(KeyRange.prefix("o/"), new KeyRange("\uD83D\uDD11", null)),
                new TreeMap<>(Map.of("o/1", Mutation.put(new byte[] {2}))))));
  }

  /** Appends a correct CRC-32C trailer to {@code body}. */
  private static byte[] sealed(byte[] body) {
    CRC32C crc = new CRC32C();
    crc.update(body);
    return new BinaryWriter().writeRaw(body).writeInt((int) crc.getValue()).toByteArray();
  }

  private static byte[] sealed(BinaryWriter body) {
    return sealed(body.toByteArray());
  }

  /** The encoding without its 4-byte trailer. */
  private static byte[] body(byte[] encoded) {
    return Arrays.copyOf(encoded, encoded.length - 4);
  }

  /** Version 1, kind 0, {@code count} entries. */
  private static BinaryWriter header(long count) {
    return header(LogCodec.VERSION_1, count);
  }

  private static BinaryWriter header(int version, long count) {
    return new BinaryWriter().writeByte(version).writeByte(0).writeVarint(count);
  }

  /** The fixed part of an entry up to (not including) the read count. */
  private static BinaryWriter entryStart(BinaryWriter w, String txnId, String origin,
      long readPos) {
    return w.writeString(txnId).writeString(origin).writeLong(readPos);
  }

  /** A one-entry value with no reads and one put; the smallest useful valid craft. */
  private static BinaryWriter oneEntry(String txnId) {
    return entryStart(header(1), txnId, "o", 0).writeVarint(0).writeVarint(1)
        .writeString("k").writeByte(0).writeBytes(bytes("v"));
  }

  private static CorruptDataException assertCorrupt(byte[] input) {
    return assertThrows(CorruptDataException.class, () -> LogCodec.decode(input),
        () -> "accepted " + Arrays.toString(input));
  }

  private static void assertCorrupt(byte[] input, String reasonFragment) {
    CorruptDataException e = assertCorrupt(input);
    assertTrue(e.getMessage().contains(reasonFragment),
        "expected a rejection for '" + reasonFragment + "', got: " + e.getMessage());
  }

  private static LogValue roundTrip(LogValue v) {
    byte[] encoded = LogCodec.encode(v);
    LogValue decoded = LogCodec.decode(encoded);
    assertEquals(v, decoded);
    assertArrayEquals(encoded, LogCodec.encode(decoded), "re-encoding must give the same bytes");
    return decoded;
  }

  // ---- round trips ------------------------------------------------------------------------

  @Test
  void noopRoundTripsInSevenBytes() {
    byte[] encoded = LogCodec.encode(LogValue.NOOP);
    assertEquals(7, encoded.length, "version, kind, count 0 and a 4-byte CRC");
    LogValue decoded = LogCodec.decode(encoded);
    assertTrue(decoded.isNoop());
    assertEquals(LogValue.NOOP, decoded);
  }

  @Test
  void singleEntryRoundTripsFieldByField() {
    LogEntry e = simple("txn-42", 9);
    LogEntry back = roundTrip(LogValue.of(e)).entries().get(0);
    assertEquals("txn-42", back.txnId());
    assertEquals("dc-a", back.originDc());
    assertEquals(9, back.readPosition());
    assertEquals(Set.of("r1", "r2"), back.readSet());
    assertArrayEquals(bytes("one"), back.writes().get("w1").value().orElseThrow());
    assertTrue(back.writes().get("w2").isDelete());
  }

  @Test
  void combinedListKeepsItsOrder() {
    LogValue v = LogValue.of(simple("t3", 1), simple("t1", 2), simple("t2", 3));
    LogValue back = roundTrip(v);
    assertEquals(List.of("t3", "t1", "t2"),
        back.entries().stream().map(LogEntry::txnId).toList());
  }

  @Test
  void deletesStayTombstonesAndEmptyPutsStayPuts() {
    LogValue v = LogValue.of(entry("t", "d", 0, Set.of(),
        Map.of("gone", Mutation.delete(), "empty", Mutation.put(new byte[0]))));
    LogEntry back = roundTrip(v).entries().get(0);
    assertTrue(back.writes().get("gone").isDelete());
    assertFalse(back.writes().get("empty").isDelete());
    assertArrayEquals(new byte[0], back.writes().get("empty").value().orElseThrow());
  }

  @Test
  void emptyReadAndWriteSetsRoundTrip() {
    LogEntry back = roundTrip(LogValue.of(entry("t", "", 0, Set.of(), Map.of())))
        .entries().get(0);
    assertTrue(back.readSet().isEmpty());
    assertTrue(back.writes().isEmpty());
    assertEquals("", back.originDc());
  }

  @Test
  void unicodeKeysIdsAndOriginsRoundTrip() {
    // Latin-1, CJK, a supplementary character (surrogate pair), U+FFFD, a combining sequence:
    // UTF-16 order (String.compareTo) and UTF-8 byte order differ for the last two.
    Set<String> keys = Set.of("caf\u00e9", "\u9375", "\uD83D\uDD11", "\uFFFD", "e\u0301", "");
    Map<String, Mutation> writes = new TreeMap<>();
    for (String k : keys) {
      writes.put(k, Mutation.put(bytes("v-" + k)));
    }
    LogEntry back = roundTrip(LogValue.of(entry("\u4e8b\u52a1-1", "\u00dcberlingen", 3, keys,
        writes))).entries().get(0);
    assertEquals("\u4e8b\u52a1-1", back.txnId());
    assertEquals("\u00dcberlingen", back.originDc());
    assertEquals(keys, back.readSet());
    assertArrayEquals(bytes("v-\uD83D\uDD11"),
        back.writes().get("\uD83D\uDD11").value().orElseThrow());
  }

  @Test
  void largeValuesAndManyKeysRoundTrip() {
    byte[] big = new byte[1 << 20];
    new Random(7).nextBytes(big);
    Map<String, Mutation> writes = new TreeMap<>();
    Set<String> reads = new TreeSet<>();
    for (int i = 0; i < 2_000; i++) {
      writes.put("key-" + i, i % 3 == 0 ? Mutation.delete() : Mutation.put(bytes("v" + i)));
      reads.add("read-" + i);
    }
    writes.put("big", Mutation.put(big));
    LogEntry back = roundTrip(LogValue.of(entry("t", "d", 1L << 40, reads, writes)))
        .entries().get(0);
    assertArrayEquals(big, back.writes().get("big").value().orElseThrow());
    assertEquals(2_001, back.writes().size());
    assertEquals(1L << 40, back.readPosition());
  }

  @Test
  void extremeReadPositionsRoundTrip() {
    assertEquals(0, roundTrip(LogValue.of(simple("a", 0))).entries().get(0).readPosition());
    assertEquals(Long.MAX_VALUE,
        roundTrip(LogValue.of(simple("a", Long.MAX_VALUE))).entries().get(0).readPosition());
  }

  // ---- canonical encoding -----------------------------------------------------------------

  @Test
  void equalValuesBuiltDifferentlyEncodeToEqualBytes() {
    Set<String> readsA = new HashSet<>(List.of("z", "a", "m"));
    Set<String> readsB = new TreeSet<>(List.of("m", "z", "a"));
    Map<String, Mutation> writesA = new LinkedHashMap<>();
    writesA.put("y", Mutation.put(bytes("1")));
    writesA.put("b", Mutation.delete());
    Map<String, Mutation> writesB = new LinkedHashMap<>();
    writesB.put("b", Mutation.delete());
    writesB.put("y", Mutation.put(bytes("1")));
    LogValue a = LogValue.of(entry("t", "d", 4, readsA, writesA));
    LogValue b = LogValue.of(entry("t", "d", 4, readsB, writesB));
    assertEquals(a, b);
    assertArrayEquals(LogCodec.encode(a), LogCodec.encode(b));
  }

  @Test
  void differentValuesEncodeToDifferentBytes() {
    LogValue a = LogValue.of(simple("t1", 1), simple("t2", 1));
    LogValue swapped = LogValue.of(simple("t2", 1), simple("t1", 1));
    assertFalse(Arrays.equals(LogCodec.encode(a), LogCodec.encode(swapped)),
        "list order is part of the value");
    LogValue put =
        LogValue.of(entry("t", "d", 0, Set.of(), Map.of("k", Mutation.put(new byte[0]))));
    LogValue del = LogValue.of(entry("t", "d", 0, Set.of(), Map.of("k", Mutation.delete())));
    assertFalse(Arrays.equals(LogCodec.encode(put), LogCodec.encode(del)));
  }

  @Test
  void handCraftedBytesMatchTheEncoder() {
    // Validates the crafting helpers, so that the rejections below are caused by the one field
    // each test tampers with.
    LogValue v = LogValue.of(entry("t", "o", 0, Set.of(), Map.of("k", Mutation.put(bytes("v")))));
    assertArrayEquals(LogCodec.encode(v), sealed(oneEntry("t")));
    assertArrayEquals(LogCodec.encode(LogValue.NOOP), sealed(header(0)));
  }

  // ---- rejection: truncation, trailing bytes, bit flips -----------------------------------

  @Test
  void nullAndEmptyInputAreRejected() {
    assertCorrupt(null);
    assertCorrupt(new byte[0]);
  }

  @Test
  void everyTruncationIsRejected() {
    for (LogValue v : samples()) {
      byte[] full = LogCodec.encode(v);
      for (int len = 0; len < full.length; len++) {
        assertCorrupt(Arrays.copyOf(full, len));
      }
    }
  }

  @Test
  void everyTruncationOfTheBodyIsRejectedEvenWithAValidChecksum() {
    for (LogValue v : samples()) {
      byte[] body = body(LogCodec.encode(v));
      for (int len = 0; len < body.length; len++) {
        assertCorrupt(sealed(Arrays.copyOf(body, len)));
      }
    }
  }

  @Test
  void trailingBytesAreRejected() {
    for (LogValue v : samples()) {
      byte[] full = LogCodec.encode(v);
      for (int extra = 1; extra <= 8; extra++) {
        assertCorrupt(Arrays.copyOf(full, full.length + extra));
      }
      // Trailing bytes inside a correctly checksummed body.
      byte[] body = body(full);
      assertCorrupt(sealed(Arrays.copyOf(body, body.length + 1)), "trailing");
      byte[] junk = Arrays.copyOf(body, body.length + 3);
      junk[body.length] = 0x01;
      assertCorrupt(sealed(junk), "trailing");
    }
  }

  @Test
  void everySingleBitFlipIsRejected() {
    for (LogValue v : samples()) {
      byte[] good = LogCodec.encode(v);
      for (int i = 0; i < good.length; i++) {
        for (int bit = 0; bit < 8; bit++) {
          byte[] bad = good.clone();
          bad[i] ^= (byte) (1 << bit);
          assertCorrupt(bad);
        }
      }
    }
  }

  @Test
  void bitFlipsUnderAValidChecksumDecodeCanonicallyOrFailCleanly() {
    // With the checksum recomputed, a flip may yield another valid value; then decoding must be
    // exact (re-encoding gives the same bytes). Any other exception type fails the test.
    int decoded = 0;
    for (LogValue v : samples()) {
      byte[] body = body(LogCodec.encode(v));
      for (int i = 0; i < body.length; i++) {
        for (int bit = 0; bit < 8; bit++) {
          byte[] bad = body.clone();
          bad[i] ^= (byte) (1 << bit);
          decoded += decodesCanonicallyOrIsCorrupt(sealed(bad)) ? 1 : 0;
        }
      }
    }
    assertTrue(decoded > 0, "some flips (inside values) should still decode");
  }

  @Test
  void randomCorruptionUnderAValidChecksumDecodesCanonicallyOrFailsCleanly() {
    Random rnd = new Random(20240601);
    List<LogValue> samples = samples();
    for (int i = 0; i < 20_000; i++) {
      byte[] body = body(LogCodec.encode(samples.get(rnd.nextInt(samples.size()))));
      int edits = 1 + rnd.nextInt(4);
      for (int e = 0; e < edits && body.length > 0; e++) {
        body[rnd.nextInt(body.length)] = (byte) rnd.nextInt(256);
      }
      decodesCanonicallyOrIsCorrupt(sealed(body));
    }
  }

  private static boolean decodesCanonicallyOrIsCorrupt(byte[] input) {
    LogValue v;
    try {
      v = LogCodec.decode(input);
    } catch (CorruptDataException expected) {
      return false;
    } catch (RuntimeException e) {
      fail("decode threw " + e + " instead of CorruptDataException for "
          + Arrays.toString(input), e);
      return false;
    }
    assertArrayEquals(input, LogCodec.encode(v),
        "decode accepted bytes that are not the canonical encoding of what it returned");
    return true;
  }

  // ---- rejection: structural errors under a valid checksum --------------------------------

  @Test
  void unknownVersionIsRejected() {
    for (int version : new int[] {0, 5, 0x7F, 0xFF}) {
      byte[] body = body(LogCodec.encode(LogValue.of(simple("t", 1))));
      body[0] = (byte) version;
      assertCorrupt(sealed(body), "version");
    }
  }

  @Test
  void crossGroupStepsRoundTripInVersion2AndOnlyThere() {
    List<String> groups = List.of("a", "b");
    LogEntry prepare = new LogEntry("p", "dc", 3, new TreeSet<>(Set.of("r")),
        new TreeMap<>(Map.of("w", Mutation.put(new byte[] {1}))),
        XgStep.prepare("T", groups, 12345));
    LogEntry resolve = new LogEntry("r", "dc", 4, new TreeSet<>(), new TreeMap<>(),
        XgStep.resolve("T", groups, false));
    LogValue v = LogValue.of(simple("t", 1), prepare, resolve);
    byte[] bytes = LogCodec.encode(v);
    assertEquals(LogCodec.VERSION_2, bytes[0]);
    assertEquals(v, LogCodec.decode(bytes));
    assertEquals(LogCodec.VERSION_1, LogCodec.encode(LogValue.of(simple("t", 1)))[0],
        "a value without steps keeps the version 1 bytes");
    // The same single entry in version 2, its step flag 0 ("none") appended: not canonical.
    byte[] v1 = body(LogCodec.encode(LogValue.of(simple("t", 1))));
    byte[] body = Arrays.copyOf(v1, v1.length + 1);
    body[0] = LogCodec.VERSION_2;
    assertCorrupt(sealed(body), "version 2");
  }

  @Test
  void keyRangesRoundTripInVersion3AndOnlyThere() {
    LogEntry scan = new LogEntry("s", "dc", 5, new TreeSet<>(Set.of("k")),
        List.of(KeyRange.prefix("order/"), new KeyRange("a", "b\0"), new KeyRange("z", null)),
        new TreeMap<>(Map.of("w", Mutation.put(new byte[] {1}))));
    LogEntry prepare = new LogEntry("p", "dc", 3, new TreeSet<>(), List.of(KeyRange.ALL),
        new TreeMap<>(Map.of("w2", Mutation.delete())), XgStep.prepare("T", List.of("a", "b"), 9));
    LogValue v = LogValue.of(simple("t", 1), scan, prepare);
    byte[] bytes = LogCodec.encode(v);
    assertEquals(LogCodec.VERSION_3, bytes[0]);
    assertEquals(v, LogCodec.decode(bytes));
    assertEquals(List.of(new KeyRange("a", "b\0"), KeyRange.prefix("order/"),
        new KeyRange("z", null)), LogCodec.decode(bytes).entries().get(1).readRanges());
    // A version 2 value re-labelled version 3 (no range count after the reads): rejected.
    LogValue stepOnly = LogValue.of(new LogEntry("r", "dc", 4, new TreeSet<>(), new TreeMap<>(),
        XgStep.resolve("T", List.of("a", "b"), false)));
    byte[] v2 = body(LogCodec.encode(stepOnly));
    assertEquals(LogCodec.VERSION_2, v2[0]);
    v2[0] = LogCodec.VERSION_3;
    assertTrue(rejects(sealed(v2)), "a version 2 body read as version 3");
    // Version 3 whose entries hold no range (a zero range count each): not canonical.
    BinaryWriter w = entryStart(header(3, 1), "t", "o", 0).writeVarint(0).writeVarint(0)
        .writeVarint(0).writeByte(0);
    assertCorrupt(sealed(w), "version 3");
    // Ranges out of order or overlapping: not canonical.
    BinaryWriter unsorted = entryStart(header(3, 1), "t", "o", 0).writeVarint(0).writeVarint(2)
        .writeString("m").writeByte(0).writeString("a").writeByte(1).writeString("b")
        .writeVarint(0).writeByte(0);
    assertCorrupt(sealed(unsorted), "canonical");
    BinaryWriter empty = entryStart(header(3, 1), "t", "o", 0).writeVarint(0).writeVarint(1)
        .writeString("b").writeByte(1).writeString("a").writeVarint(0).writeByte(0);
    assertCorrupt(sealed(empty), "range");
  }

  private static boolean rejects(byte[] bytes) {
    try {
      LogCodec.decode(bytes);
      return false;
    } catch (CorruptDataException e) {
      return true;
    }
  }

  @Test
  void unknownKindIsRejected() {
    for (int kind : new int[] {1, 2, 0xFF}) {
      byte[] body = body(LogCodec.encode(LogValue.of(simple("t", 1))));
      body[1] = (byte) kind;
      assertCorrupt(sealed(body), "kind");
    }
  }

  @Test
  void unknownWriteOpIsRejected() {
    for (int op : new int[] {4, 0x80, 0xFF}) {
      BinaryWriter w = entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(1)
          .writeString("k").writeByte(op).writeBytes(bytes("v"));
      assertCorrupt(sealed(w), "op");
    }
  }

  @Test
  void updatesRoundTripInVersion4AndOnlyThere() {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("c", Mutation.add(-7));
    w.put("p", Mutation.put(bytes("v")));
    w.put("s", Mutation.setUpdate(Map.of("x", 1L, "y", -2L)));
    LogValue v = LogValue.of(new LogEntry("t", "o", 3, new TreeSet<>(Set.of("r")), w));
    byte[] enc = LogCodec.encode(v);
    assertEquals(LogCodec.VERSION_4, enc[0]);
    assertEquals(v, LogCodec.decode(enc));
    // A value without an update keeps its old format, byte for byte.
    assertEquals(LogCodec.VERSION_1, LogCodec.encode(LogValue.of(simple("t", 1)))[0]);
    // An add or a set update in a value of an earlier version is refused.
    for (int op : new int[] {2, 3}) {
      BinaryWriter b = entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(1)
          .writeString("k").writeByte(op).writeLong(1);
      assertCorrupt(sealed(b), "version before 4");
    }
  }

  @Test
  void version4WithoutAnUpdateIsNotCanonical() {
    byte[] body = body(LogCodec.encode(LogValue.of(new LogEntry("t", "o", 0, new TreeSet<>(),
        List.of(new KeyRange("a", "b")), new TreeMap<>()))));
    body[0] = LogCodec.VERSION_4;
    assertCorrupt(sealed(body), "without an update");
  }

  @Test
  void setUpdatesAreCanonical() {
    // Elements out of order, or a zero delta, are refused.
    BinaryWriter b = entryStart(header(4, 1), "t", "o", 0).writeVarint(0).writeVarint(0)
        .writeVarint(1).writeString("k").writeByte(3).writeVarint(2).writeString("b").writeLong(1)
        .writeString("a").writeLong(1).writeByte(0);
    assertCorrupt(sealed(b), "not strictly sorted");
    BinaryWriter z = entryStart(header(4, 1), "t", "o", 0).writeVarint(0).writeVarint(0)
        .writeVarint(1).writeString("k").writeByte(3).writeVarint(1).writeString("a").writeLong(0)
        .writeByte(0);
    assertCorrupt(sealed(z), "zero delta");
  }

  @Test
  void aCrossGroupStepWithAnUpdateIsRefused() {
    TreeMap<String, Mutation> w = new TreeMap<>(Map.of("c", Mutation.add(1)));
    XgStep step = new XgStep(XgStep.Kind.PREPARE, "T", List.of("a", "b"), 1, false);
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> new LogEntry("t", "o", 0, new TreeSet<>(), w, step));
  }

  @Test
  void countsLargerThanTheRemainingInputAreRejectedBeforeAllocating() {
    for (long huge : new long[] {1_000, 1L << 20, Integer.MAX_VALUE, 1L << 40, Long.MAX_VALUE}) {
      // Entry count (each entry needs at least 12 bytes; only a few follow).
      assertCorrupt(sealed(header(huge).writeString("t").writeString("o")), "exceeds");
      // Read count.
      assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(huge).writeString("k")
          .writeVarint(0)), "exceeds");
      // Write count.
      assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(huge)
          .writeString("k").writeByte(1)), "exceeds");
      // String and value lengths.
      assertCorrupt(sealed(header(1).writeVarint(huge).writeRaw(bytes("txn-and-more-bytes"))),
          "exceeds");
      assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(1)
          .writeString("k").writeByte(0).writeVarint(huge).writeRaw(bytes("v"))), "exceeds");
    }
  }

  @Test
  void overlongVarintsAreRejected() {
    // Eleven continuation bytes: longer than any 64-bit varint.
    BinaryWriter w = new BinaryWriter().writeByte(LogCodec.VERSION_1).writeByte(0);
    for (int i = 0; i < 11; i++) {
      w.writeByte(0xFF);
    }
    w.writeByte(0x01);
    w.writeRaw(new byte[32]);
    assertCorrupt(sealed(w), "varint");
  }

  @Test
  void nonMinimalVarintsAreRejected() {
    // 0x80 0x00 is a redundant encoding of 0; nine 0x80 bytes and 0x02 put a payload bit past bit
    // 63 (it would be dropped, decoding as 0). Either way the bytes are not the canonical encoding
    // of any value, so accepting them would make two byte strings decode to one value.
    BinaryWriter redundantZero = new BinaryWriter().writeByte(LogCodec.VERSION_1).writeByte(0)
        .writeByte(0x80).writeByte(0x00);
    assertCorrupt(sealed(redundantZero), "varint");
    BinaryWriter droppedBits = new BinaryWriter().writeByte(LogCodec.VERSION_1).writeByte(0);
    for (int i = 0; i < 9; i++) {
      droppedBits.writeByte(0x80);
    }
    droppedBits.writeByte(0x02);
    assertCorrupt(sealed(droppedBits), "varint");
    // A redundant length inside an entry: "t" as 0x81 0x00 't'.
    BinaryWriter redundantLength = header(1).writeByte(0x81).writeByte(0x00).writeRaw(bytes("t"))
        .writeString("o").writeLong(0).writeVarint(0).writeVarint(0);
    assertCorrupt(sealed(redundantLength), "varint");
  }

  @Test
  void varintsRoundTripAtEveryLengthBoundary() {
    // The strict reader must still take every encoding the writer produces, up to nine bytes.
    for (int bits = 0; bits <= 63; bits++) {
      long max = bits == 63 ? Long.MAX_VALUE : (1L << bits) - 1;
      for (long v : new long[] {max, Math.max(0, max - 1), max / 2}) {
        byte[] b = new BinaryWriter().writeVarint(v).toByteArray();
        BinaryReader r = new BinaryReader(b);
        assertEquals(v, r.readVarint("v"));
        r.expectEnd("v");
      }
    }
    assertEquals(9, new BinaryWriter().writeVarint(Long.MAX_VALUE).size());
  }

  @Test
  void invalidUtf8IsRejectedInEveryStringField() {
    byte[][] invalid = {
        {(byte) 0xFF},                          // never valid
        {(byte) 0xC3, 0x28},                    // bad continuation
        {(byte) 0xC0, (byte) 0xAF},             // overlong '/'
        {(byte) 0xED, (byte) 0xA0, (byte) 0x80}, // UTF-8-encoded surrogate
        {(byte) 0xE2, (byte) 0x82},             // truncated sequence
    };
    for (byte[] bad : invalid) {
      assertCorrupt(sealed(header(1).writeBytes(bad).writeString("o").writeLong(0).writeVarint(0)
          .writeVarint(0)), "UTF-8 in txnId");
      assertCorrupt(sealed(header(1).writeString("t").writeBytes(bad).writeLong(0).writeVarint(0)
          .writeVarint(0)), "UTF-8 in originDc");
      assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(1).writeBytes(bad)
          .writeVarint(0)), "UTF-8 in read key");
      assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(1)
          .writeBytes(bad).writeByte(1)), "UTF-8 in write key");
    }
  }

  @Test
  void unsortedOrDuplicateReadKeysAreRejected() {
    assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(2)
        .writeString("b").writeString("a").writeVarint(0)), "not strictly sorted");
    assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(2)
        .writeString("a").writeString("a").writeVarint(0)), "not strictly sorted");
  }

  @Test
  void unsortedOrDuplicateWriteKeysAreRejected() {
    assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(2)
        .writeString("b").writeByte(1).writeString("a").writeByte(1)), "not strictly sorted");
    assertCorrupt(sealed(entryStart(header(1), "t", "o", 0).writeVarint(0).writeVarint(2)
        .writeString("a").writeByte(0).writeBytes(bytes("1"))
        .writeString("a").writeByte(0).writeBytes(bytes("2"))), "not strictly sorted");
  }

  @Test
  void duplicateTxnIdsInOneListAreRejected() {
    BinaryWriter w = header(2);
    for (int i = 0; i < 2; i++) {
      entryStart(w, "same", "o" + i, i).writeVarint(0).writeVarint(0);
    }
    assertCorrupt(sealed(w), "duplicate txn id");
  }

  @Test
  void impossibleEntryFieldsAreRejected() {
    assertCorrupt(sealed(entryStart(header(1), "", "o", 0).writeVarint(0).writeVarint(0)),
        "txnId must not be empty");
    assertCorrupt(sealed(entryStart(header(1), "t", "o", -1).writeVarint(0).writeVarint(0)),
        "readPosition");
    assertCorrupt(sealed(entryStart(header(1), "t", "o", Long.MIN_VALUE).writeVarint(0)
        .writeVarint(0)), "readPosition");
  }

  @Test
  void checksumMismatchIsReportedAsSuch() {
    byte[] good = LogCodec.encode(LogValue.of(simple("t", 1)));
    good[good.length - 1] ^= 1;
    assertCorrupt(good, "checksum");
  }
}
