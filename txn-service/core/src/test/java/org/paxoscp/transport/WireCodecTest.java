package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.paxoscp.wal.XgLocks;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Vote;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

class WireCodecTest {
  private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes();
  private static final int LIMIT = 4096;
  private final WireCodec codec = new WireCodec(KEY, LIMIT);

  static LogValue value() {
    TreeMap<String, Mutation> writes = new TreeMap<>();
    writes.put("k1", Mutation.put(new byte[] {1, 2, 3}));
    writes.put("k2", Mutation.delete());
    writes.put("k3", Mutation.put(new byte[0]));
    LogEntry a = new LogEntry("t1", "V1", 7, new TreeSet<>(Set.of("k1", "r")), writes);
    LogEntry b = new LogEntry("t2", "O1", 6, new TreeSet<>(), new TreeMap<>());
    return LogValue.of(a, b);
  }

  static Stream<Message> messages() {
    Ballot b = Ballot.of(3, 42);
    LogValue v = value();
    Map<String, byte[]> values = new TreeMap<>();
    values.put("a", new byte[] {9});
    values.put("b", new byte[0]);
    return Stream.of(
        paxos(new PaxosMessage.Prepare("g", 5, b)),
        paxos(new PaxosMessage.Accept("g", 5, b, v)),
        paxos(new PaxosMessage.Accept("g", 5, Ballot.FAST, LogValue.NOOP)),
        paxos(new PaxosMessage.Apply("g", 5, v)),
        paxos(new PaxosMessage.GrantRequest("g", 6, "V1")),
        paxos(new PaxosMessage.Learn("g", 0)),
        paxos(new PaxosMessage.PrepareReply("g", 5, b, true, b, new Vote(Ballot.FAST, v), null)),
        paxos(new PaxosMessage.PrepareReply("g", 5, b, false, null, null, v)),
        paxos(new PaxosMessage.PrepareReply("g", 5, b, true, b, null, null)),
        paxos(new PaxosMessage.AcceptReply("g", 5, b, true, b, null)),
        paxos(new PaxosMessage.AcceptReply("g", 5, b, false, null, v)),
        paxos(new PaxosMessage.GrantReply("g", 6, "V1", true)),
        paxos(new PaxosMessage.GrantReply("g", 6, "", false)),
        paxos(new PaxosMessage.LearnReply("g", 5, v)),
        paxos(new PaxosMessage.LearnReply("g", 5, null)),
        new Message.BeginRequest("group/é", Long.MAX_VALUE),
        new Message.BeginReply("g", 12, "O1"),
        new Message.BeginReply("g", 0, ""),
        new Message.BeginReply("g", 9, "V1", org.paxoscp.wal.XgLocks.EMPTY.apply(4, LogValue.of(
            new LogEntry("p", "V1", 3, new TreeSet<>(Set.of("r")),
                new TreeMap<>(Map.of("w", Mutation.put(new byte[] {7}))),
                org.paxoscp.wal.XgStep.prepare("T", List.of("a", "g"), 99))))
            .locks()),
        new Message.BeginReply("g", 9, "V1", org.paxoscp.wal.XgLocks.EMPTY.apply(4, LogValue.of(
            new LogEntry("p", "V1", 3, new TreeSet<>(Set.of("r")),
                new TreeMap<>(Map.of("w", Mutation.put(new byte[0]))),
                org.paxoscp.wal.XgStep.prepare("T", List.of("a", "g"), 99))))
            .locks(), true),
        new Message.ReadRequest("g", 12, List.of("x", "a", "x")),
        new Message.ReadRequest("g", 12, List.of()),
        new Message.ReadReply("g", 12, values),
        new Message.ReadReply("g", 12, values, Map.of("a", 3L, "b", 12L, "z", 0L)),
        new Message.ReadReply("g", 12, Map.of()),
        new Message.ErrorReply("g", 3, Message.ErrorCode.TOO_OLD, "below watermark 9"),
        new Message.ErrorReply("", 0, Message.ErrorCode.STORE_UNAVAILABLE, ""),
        new Message.ErrorReply("g", 7, Message.ErrorCode.OVERLOADED, "4096 waiting"),
        new Message.ErrorReply("g", 7, Message.ErrorCode.LEADER_UNREACHABLE, "O silent"),
        new Message.SubmitRequest("g", v.entries().get(0).readPosition() + 1, v.entries().get(0),
            8),
        new Message.SubmitRequest("g", v.entries().get(1).readPosition() + 1, v.entries().get(1),
            0).asForwarded(),
        Message.SubmitReply.committed("g", 9, "t1", 300),
        Message.SubmitReply.aborted("g", 9, "t1", "read a key written at position 9"),
        new Message.StatusRequest(""),
        new Message.StatusRequest("g"),
        new Message.StatusReply("", Map.of()),
        new Message.StatusReply("g", Map.of("dc", "V1", "uptime_s", "12", "group.applied", "7",
            "begin_p99_ms", "3.5")),
        new Message.ExtentRequest("g"),
        new Message.ExtentReply("g", 0, 0, 0, 0),
        new Message.ExtentReply("g", 120, 20, 122, 9),
        new Message.SnapshotRequest("g", 0, ""),
        new Message.SnapshotRequest("g", 120, "k17"),
        new Message.SnapshotRequest("g", 120, ""),
        new Message.SnapshotReply("g", 0, 0, XgLocks.EMPTY, null, List.of(), false),
        new Message.SnapshotReply("g", 120, 20, XgLocks.EMPTY, v,
            List.of(new Message.SnapshotItem("a", 3, new byte[] {1, 2}),
                new Message.SnapshotItem("b", 120, new byte[] {0})), true),
        // In lock pages (cluster version 7): a first page, lock pages, and their replies.
        new Message.SnapshotRequest("g", 0, "", ""),
        new Message.SnapshotRequest("g", 120, "", ""),
        new Message.SnapshotRequest("g", 120, "", "T7"),
        new Message.SnapshotReply("g", 0, 0, XgLocks.EMPTY, null, List.of(), false, false,
            digest(0)),
        new Message.SnapshotReply("g", 120, 20, XgLocks.EMPTY, v, List.of(), true, true,
            digest(1)),
        new Message.SnapshotReply("g", 120, 20, locks(), null, List.of(), true, false,
            digest(2)),
        new Message.SnapshotReply("g", 120, 20, locks(), v,
            List.of(new Message.SnapshotItem("a", 3, new byte[] {1, 2})), false, false,
            digest(3)),
        new Message.GroupsRequest(""),
        new Message.GroupsRequest("g"),
        new Message.GroupsReply("", List.of(), false),
        new Message.GroupsReply("g", List.of("h", "accounts"), true),
        new Message.RebuildRequest("g", "", "V1", "", false),
        new Message.RebuildRequest("", "", "V1", "3f2a", true),
        new Message.RebuildReply("g", "REBUILT", 120, 126, 100, "O", "3f2a"),
        new Message.ErrorReply("g", 3, Message.ErrorCode.REBUILDING, "DC V1: group g: ..."),
        new Message.RttProbe(List.of()),
        new Message.RttProbe(List.of(new Message.RttRow("V1", 0, Map.of()),
            new Message.RttRow("O", 1_764_000_000_000L, Map.of("V1", 90_100L, "C", 20_000L)))),
        new Message.RttReply(List.of()),
        new Message.RttReply(List.of(new Message.RttRow("C", 7, Map.of("O", 0L, "V1",
            Message.RttRow.MAX_RTT_MICROS)))),
        new Message.VersionRequest(),
        new Message.VersionChange(true, 0, 2),
        new Message.VersionChange(false, 2, 3),
        new Message.VersionReply(0, 0, 0, 1, 3, -1, "", ""),
        new Message.VersionReply(2, 3, 7, 2, 3, 1_200, "V1 at /127.0.0.1:4000", "refused: ..."),
        new Message.ScanRequest("g", 12, org.paxoscp.wal.KeyRange.prefix("order/"), 100, false),
        new Message.ScanRequest("g", 0, org.paxoscp.wal.KeyRange.ALL, 1, true),
        new Message.ScanRequest("g", 7, new org.paxoscp.wal.KeyRange("a\u00e9", "b\0"), 5, false),
        new Message.ScanReply("g", 12, List.of(), true, ""),
        new Message.ScanReply("g", 12, List.of(new Message.ScanItem("a", new byte[] {1}, 3),
            new Message.ScanItem("b", new byte[0], 12)), false, "c"),
        new Message.ScanReply("g", 12, List.of(new Message.ScanItem("\uD83D\uDD11", new byte[] {2},
            9), new Message.ScanItem("\uFFFD", new byte[] {1}, 3)), true, ""),
        new Message.UpdatesRequest("g", 12, "V1-7"),
        new Message.UpdatesReply("g", 12, "V1-7", true, ""),
        new Message.UpdatesReply("g", 12, "V1-7", true, "c: the add would take a count past the "
            + "64-bit range"),
        new Message.UpdatesReply("g", 12, "V1-7", false, ""),
        new Message.SubmitRequest("g", 5, new LogEntry("t", "V1", 4, new java.util.TreeSet<>(),
            new java.util.TreeMap<>(Map.of("c", org.paxoscp.wal.Mutation.add(-3), "s",
                org.paxoscp.wal.Mutation.setUpdate(Map.of("x", 1L))))), 0, false));
  }

  private static Message paxos(PaxosMessage m) {
    return new Message.Paxos(m);
  }

  /** A 32-byte digest whose bytes start at {@code seed}. */
  private static byte[] digest(int seed) {
    byte[] d = new byte[Message.SnapshotReply.DIGEST_BYTES];
    for (int i = 0; i < d.length; i++) {
      d[i] = (byte) (seed + i);
    }
    return d;
  }

  /** A table of two locks, one with a prepared value. */
  private static XgLocks locks() {
    XgLocks t = XgLocks.EMPTY;
    for (String txn : List.of("T1", "T2")) {
      t = t.apply(txn.equals("T1") ? 4 : 9, LogValue.of(new LogEntry("p" + txn, "V1", 3,
          new TreeSet<>(Set.of("r")), new TreeMap<>(Map.of("w" + txn,
              Mutation.put(new byte[] {7, 8}))),
          org.paxoscp.wal.XgStep.prepare(txn, List.of("a", "g"), 99)))).locks();
    }
    return t;
  }

  /**
   * Lock pages leave the format before them as it was (a process below cluster version 7, or of
   * the build before, reads what is sent then): their fields are appended, present only in lock
   * pages, and read in their one encoding.
   */
  @Test
  void snapshotLockPagesOnlyAppendToTheFormatBefore() {
    java.util.function.Function<Message, byte[]> enc =
        m -> WireCodec.encodeMessage(new Envelope(1, "V1", false, m));
    byte[] before = enc.apply(new Message.SnapshotRequest("g", 120, ""));
    byte[] paged = enc.apply(new Message.SnapshotRequest("g", 120, "", "T7"));
    assertArrayEquals(before, java.util.Arrays.copyOf(paged, before.length));
    assertEquals(before.length + 3, paged.length, "locksAfter:str appended");

    Message.SnapshotReply old = new Message.SnapshotReply("g", 120, 20, locks(), value(),
        List.of(), true);
    byte[] oldBytes = enc.apply(old);
    byte[] pagedBytes = enc.apply(new Message.SnapshotReply("g", 120, 20, locks(), value(),
        List.of(), true, true, digest(5)));
    assertArrayEquals(oldBytes, java.util.Arrays.copyOf(pagedBytes, oldBytes.length));
    assertEquals(oldBytes.length + 1 + 1 + 32, pagedBytes.length,
        "locksMore:bool digest:bytes appended");
    assertEquals(old, WireCodec.decodeMessage("V1", oldBytes).message(),
        "the format before reads as before: no digest");

    org.paxoscp.wal.BinaryWriter shortDigest = new org.paxoscp.wal.BinaryWriter()
        .writeRaw(oldBytes).writeByte(0).writeBytes(new byte[31]);
    org.paxoscp.wal.BinaryWriter badMark = new org.paxoscp.wal.BinaryWriter()
        .writeRaw(oldBytes).writeByte(2).writeBytes(digest(5));
    org.paxoscp.wal.BinaryWriter locksMoreWithItems = new org.paxoscp.wal.BinaryWriter()
        .writeRaw(enc.apply(new Message.SnapshotReply("g", 120, 20, locks(), null,
            List.of(new Message.SnapshotItem("a", 3, new byte[] {1})), true)))
        .writeByte(1).writeBytes(digest(5));
    org.paxoscp.wal.BinaryWriter lockPageWithAKey = new org.paxoscp.wal.BinaryWriter()
        .writeRaw(enc.apply(new Message.SnapshotRequest("g", 120, "k17"))).writeString("T7");
    org.paxoscp.wal.BinaryWriter firstPageAfterALock = new org.paxoscp.wal.BinaryWriter()
        .writeRaw(enc.apply(new Message.SnapshotRequest("g", 0, ""))).writeString("T7");
    for (org.paxoscp.wal.BinaryWriter bad : List.of(shortDigest, badMark, locksMoreWithItems,
        lockPageWithAKey, firstPageAfterALock)) {
      MalformedDatagramException e = assertThrows(MalformedDatagramException.class,
          () -> WireCodec.decodeMessage("V1", bad.toByteArray()));
      assertEquals(Reason.MALFORMED, e.reason(), e.getMessage());
    }
  }

  static Stream<Envelope> envelopes() {
    long[] ids = {0, 1, -1, Long.MIN_VALUE, 0x1234_5678_9abcL};
    List<Envelope> out = new ArrayList<>();
    int i = 0;
    for (Message m : messages().toList()) {
      out.add(new Envelope(ids[i % ids.length], i % 2 == 0 ? "V1" : "C2", i % 3 == 0, m));
      i++;
    }
    return out.stream();
  }

  @Test
  void everyWireTypeIsCovered() {
    EnumSet<WireCodec.Type> seen = EnumSet.noneOf(WireCodec.Type.class);
    messages().forEach(m -> seen.add(WireCodec.Type.of(m)));
    assertEquals(EnumSet.allOf(WireCodec.Type.class), seen);
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void roundTrips(Envelope e) {
    byte[] bytes = codec.encode(e);
    Envelope back = codec.decode(bytes);
    assertEquals(e, back);
    assertArrayEquals(WireCodec.encodeMessage(e), WireCodec.encodeMessage(back),
        "canonical encoding");
    assertEquals(WireCodec.VERSION, bytes[0]);
    assertEquals(WireCodec.FLAG_ENCRYPTED, bytes[1]);
  }

  /** What a router or the nemesis' fault proxy reads from the clear header: the sending DC. */
  @ParameterizedTest
  @MethodSource("envelopes")
  void theSendingDcIsReadableWithoutTheKey(Envelope e) {
    for (WireCodec sender : List.of(codec, new WireCodec(KEY, List.of(), false, LIMIT))) {
      byte[] d = sender.encode(e);
      assertEquals(java.util.Optional.of(e.fromDc()), UdpTransport.senderDc(d, d.length));
      assertEquals(java.util.Optional.empty(), UdpTransport.senderDc(d, 20), "cut header");
    }
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void roundTripsAuthenticatedOnlyAndEitherKindOpensAnywhere(Envelope e) {
    WireCodec clear = new WireCodec(KEY, List.of(), false, LIMIT);
    byte[] bytes = clear.encode(e);
    assertEquals(0, bytes[1]);
    assertEquals(e, clear.decode(bytes));
    assertEquals(e, codec.decode(bytes), "an encrypting receiver opens a clear datagram");
    assertEquals(e, clear.decode(codec.encode(e)), "a clear sender opens an encrypted datagram");
  }

  @Test
  void encryptionHidesTheMessageAndAuthenticationOnlyDoesNot() {
    String secret = "the-balance-of-account-4711";
    Envelope e = new Envelope(1, "V1", false, new Message.ReadRequest("g", 1, List.of(secret)));
    byte[] mark = secret.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertFalse(contains(codec.encode(e), mark), "an encrypted datagram shows the key it reads");
    assertTrue(contains(new WireCodec(KEY, List.of(), false, LIMIT).encode(e), mark));
    // The sending DC is routing metadata, in the clear either way.
    assertTrue(contains(codec.encode(e), "V1".getBytes(java.nio.charset.StandardCharsets.UTF_8)));
  }

  @Test
  void noTwoDatagramsShareANonce() {
    Envelope e = new Envelope(1, "V1", false, new Message.BeginRequest("g", 1));
    WireCodec other = new WireCodec(KEY, LIMIT);
    Set<String> nonces = new java.util.HashSet<>();
    for (WireCodec c : List.of(codec, other)) {
      for (int i = 0; i < 100; i++) {
        byte[] d = c.encode(e);
        // sender id and counter: bytes 6..29 of the header
        String nonce = java.util.HexFormat.of().formatHex(d, 6, 6 + 16 + 8);
        assertTrue(nonces.add(nonce), "nonce used twice: " + nonce);
        assertEquals(e, codec.decode(d));
      }
    }
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void everyTruncationIsRejected(Envelope e) {
    byte[] bytes = codec.encode(e);
    for (int len = 0; len < bytes.length; len++) {
      int n = len;
      MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
          () -> codec.decode(bytes, 0, n), "prefix of " + n + " bytes");
      assertTrue(x.reason() == Reason.TRUNCATED || x.reason() == Reason.BAD_MAC,
          "prefix of " + n + ": " + x.reason());
    }
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void trailingBytesAreRejected(Envelope e) {
    byte[] bytes = codec.encode(e);
    byte[] longer = java.util.Arrays.copyOf(bytes, bytes.length + 1);
    assertThrows(MalformedDatagramException.class, () -> codec.decode(longer));
  }

  /**
   * Every bit of the header and the sealed part is covered: the version byte and unknown flags
   * are refused as a format this build does not speak, the key id as an unknown key, the DC
   * names' lengths as a datagram too short for its header (or by the tag), anything else (the
   * time, the destination, the sender and counter too) by the tag.
   */
  @ParameterizedTest
  @MethodSource("envelopes")
  void everyBitFlipIsRejected(Envelope e) {
    for (WireCodec sender : List.of(codec, new WireCodec(KEY, List.of(), false, LIMIT))) {
      byte[] bytes = sender.encode(e);
      for (int bit = 0; bit < bytes.length * 8; bit++) {
        byte[] flipped = bytes.clone();
        flipped[bit / 8] ^= (byte) (1 << (bit % 8));
        int b = bit;
        MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
            () -> codec.decode(flipped), "bit " + b);
        Set<Reason> expected;
        if (bit < 8 || (bit >= 9 && bit < 16)) {
          expected = Set.of(Reason.BAD_VERSION);
        } else if (bit >= 16 && bit < 48) {
          expected = Set.of(Reason.UNKNOWN_KEY);
        } else if (bit / 8 == WireCodec.FIXED_HEADER_BYTES - 2
            || bit / 8 == WireCodec.FIXED_HEADER_BYTES - 1 + bytes[WireCodec.FIXED_HEADER_BYTES - 2]) {
          expected = Set.of(Reason.TRUNCATED, Reason.BAD_MAC);
        } else {
          expected = Set.of(Reason.BAD_MAC);
        }
        assertTrue(expected.contains(x.reason()), "bit " + b + ": " + x.reason());
      }
    }
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void anotherClustersKeyIsRejectedNamingTheKeyIds(Envelope e) {
    byte[] otherKey = KEY.clone();
    otherKey[0] ^= 1;
    byte[] forged = new WireCodec(otherKey, LIMIT).encode(e);
    MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
        () -> codec.decode(forged));
    assertEquals(Reason.UNKNOWN_KEY, x.reason());
    assertTrue(x.getMessage().contains(DatagramKeys.keyIdText(
        DatagramKeys.keyId(Role.SERVICE.keyFrom(otherKey))))
        && x.getMessage().contains(DatagramKeys.keyIdText(
            DatagramKeys.keyId(Role.SERVICE.keyFrom(KEY)))),
        x.getMessage());
  }

  /** A datagram carrying our key's id but sealed under another key fails the tag. */
  @Test
  void aForgedKeyIdFailsTheTag() {
    byte[] otherKey = KEY.clone();
    otherKey[3] ^= 0x10;
    byte[] forged = new WireCodec(otherKey, LIMIT).encode(
        new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    java.nio.ByteBuffer.wrap(forged).putInt(2, DatagramKeys.keyId(Role.SERVICE.keyFrom(KEY)));
    assertEquals(Reason.BAD_MAC, rejection(forged));
  }

  /**
   * A rolling key change, step by step: every process accepts the new key, then seals with it
   * while accepting the old one, then forgets the old one. A rolling restart leaves processes in
   * at most two adjacent steps at once, and any two of adjacent steps understand each other; a
   * process of the first step and one of the last do not, and say why.
   */
  @Test
  void aRollingKeyChangeKeepsAdjacentStepsTalking() {
    byte[] oldKey = KEY;
    byte[] newKey = "fedcba9876543210fedcba9876543210".getBytes();
    List<WireCodec> steps = List.of(
        new WireCodec(oldKey, List.of(), true, LIMIT),
        new WireCodec(oldKey, List.of(newKey), true, LIMIT),
        new WireCodec(newKey, List.of(oldKey), true, LIMIT),
        new WireCodec(newKey, List.of(), true, LIMIT));
    Envelope e = new Envelope(5, "O1", true, new Message.BeginReply("g", 1, "V1"));
    for (int i = 0; i < steps.size(); i++) {
      for (int j = 0; j < steps.size(); j++) {
        byte[] d = steps.get(i).encode(e);
        WireCodec receiver = steps.get(j);
        boolean sealsWithOld = i <= 1;
        boolean accepts = sealsWithOld ? j <= 2 : j >= 1;
        assertTrue(accepts || Math.abs(i - j) > 1, "adjacent steps " + i + ", " + j);
        if (accepts) {
          assertEquals(e, receiver.decode(d), "step " + i + " to step " + j);
        } else {
          assertThrows(MalformedDatagramException.class, () -> receiver.decode(d),
              "step " + i + " to step " + j);
        }
      }
    }
    assertEquals(Reason.UNKNOWN_KEY, assertThrows(MalformedDatagramException.class,
        () -> steps.get(3).decode(steps.get(0).encode(e))).reason());
  }

  /** Version 2 authenticated with an HMAC and had no key id; its datagrams are refused. */
  @Test
  void unknownVersionIsRejected() {
    byte[] bytes = codec.encode(new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    for (int v : new int[] {0, 1, 2, WireCodec.VERSION + 1, 255}) {
      bytes[0] = (byte) v;
      assertEquals(Reason.BAD_VERSION, rejection(bytes));
    }
  }

  @Test
  void statusMessagesAreReadInTheirOneEncodingOnly() {
    // type 28 STATUS_REPLY, request id, reply flag, group, position, then the fields.
    java.util.function.BiFunction<Long, List<String>, byte[]> reply = (position, kv) -> {
      org.paxoscp.wal.BinaryWriter w = new org.paxoscp.wal.BinaryWriter();
      w.writeByte(28).writeLong(1).writeByte(1).writeString("g").writeLong(position)
          .writeVarint(kv.size() / 2);
      kv.forEach(w::writeString);
      return w.toByteArray();
    };
    Envelope ok = WireCodec.decodeMessage("V1", reply.apply(0L, List.of("a", "1", "b", "2")));
    assertEquals(new Message.StatusReply("g", Map.of("a", "1", "b", "2")), ok.message());
    List<String> many = new ArrayList<>();
    for (int i = 0; i < Message.StatusReply.MAX_FIELDS + 1; i++) {
      many.add(String.format("f%03d", i));
      many.add("v");
    }
    for (byte[] bad : List.of(
        reply.apply(5L, List.of("a", "1")),                 // a status has position 0
        reply.apply(0L, List.of("b", "2", "a", "1")),       // field names out of order
        reply.apply(0L, List.of("a", "1", "a", "2")),       // a field twice
        reply.apply(0L, many))) {                           // too many fields
      MalformedDatagramException e = assertThrows(MalformedDatagramException.class,
          () -> WireCodec.decodeMessage("V1", bad));
      assertEquals(Reason.MALFORMED, e.reason(), e.getMessage());
    }
  }

  @Test
  void anAuthenticUnknownTypeIsRejectedAsSuch() {
    byte[] message = WireCodec.encodeMessage(
        new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    message[0] = 99;
    byte[] bytes = codec.seal("V1", message);
    assertEquals(Reason.BAD_TYPE, rejection(bytes));
  }

  @Test
  void authenticButInvalidBodyIsMalformed() {
    // A sender with the key that writes a boolean of 2: the tag is right, the body is not.
    byte[] message = WireCodec.encodeMessage(new Envelope(1, "V1", false,
        paxos(new PaxosMessage.GrantReply("g", 6, "V1", true))));
    message[message.length - 1] = 2;
    byte[] sealed = codec.seal("V1", message);
    assertEquals(Reason.MALFORMED, rejection(sealed));
  }

  @Test
  void anAuthenticSenderNameOutsideTheDcAlphabetIsMalformed() {
    byte[] message = WireCodec.encodeMessage(
        new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    byte[] sealed = codec.seal("V-1", message);
    assertEquals(Reason.MALFORMED, rejection(sealed));
  }

  @Test
  void shortKeysAreRefused() {
    assertThrows(IllegalArgumentException.class, () -> new WireCodec(new byte[15], LIMIT));
    assertThrows(IllegalArgumentException.class,
        () -> new WireCodec(KEY, List.of(new byte[8]), true, LIMIT));
  }

  @Test
  void oversizedDatagramIsRejectedOnReceipt() {
    byte[] big = new byte[LIMIT + 1];
    big[0] = WireCodec.VERSION;
    assertEquals(Reason.TOO_LARGE, rejection(big));
  }

  @Test
  void oversizedMessageIsRefusedWithTheLimitGroupAndPosition() {
    TreeMap<String, Mutation> writes = new TreeMap<>();
    writes.put("k", Mutation.put(new byte[LIMIT]));
    LogValue big = LogValue.of(new LogEntry("t", "V1", 0, new TreeSet<>(), writes));
    Envelope e = new Envelope(1, "V1", false,
        paxos(new PaxosMessage.Accept("grp", 77, Ballot.first(ProposerId.of(1)), big)));
    MessageTooLargeException x = assertThrows(MessageTooLargeException.class,
        () -> codec.encode(e));
    assertTrue(x.getMessage().contains(Integer.toString(LIMIT)), x.getMessage());
    assertTrue(x.getMessage().contains("grp"), x.getMessage());
    assertTrue(x.getMessage().contains("77"), x.getMessage());
  }

  @Test
  void aMessageExactlyAtTheLimitFits() {
    Message small = new Message.ReadRequest("g", 1, List.of(""));
    int base = codec.encode(new Envelope(1, "V1", false, small)).length;
    // The empty key's 1-byte length becomes n bytes plus a 2-byte length (n in 128..16383).
    String key = "x".repeat(LIMIT - base - 1);
    Envelope fits = new Envelope(1, "V1", false, new Message.ReadRequest("g", 1, List.of(key)));
    assertEquals(LIMIT, codec.encode(fits).length);
    assertEquals(fits, codec.decode(codec.encode(fits)));
    Envelope over = new Envelope(1, "V1", false,
        new Message.ReadRequest("g", 1, List.of(key + "x")));
    assertThrows(MessageTooLargeException.class, () -> codec.encode(over));
  }

  /** Why {@link #codec} refuses {@code datagram} (it must refuse it). */
  /**
   * A codec of a process at cluster version {@code clusterVersion}; {@code openV4} false stands
   * for a build before wire version 4 (it opens version 3 only).
   */
  private static WireCodec atClusterVersion(int clusterVersion, boolean openV4) {
    WireCodec c = new WireCodec(new DatagramKeys(KEY, List.of(), null, EnumSet.allOf(Role.class),
        true, System::nanoTime, System::currentTimeMillis), true, LIMIT, WireCodec.VERSION,
        false, true, System::currentTimeMillis, openV4);
    c.clusterVersion(clusterVersion);
    return c;
  }

  /**
   * The rolling upgrade of the wire from version 3 (docs/upgrading.md): a build that speaks 3;
   * this build at cluster version 1 (sends 3, opens both), 2 (sends 4, opens both) and 3 (opens
   * 4 only). A reply goes in its request's version. What is refused, and why finalization
   * raises the version one step at a time once every process speaks the next: version 2 sends
   * what the earlier build cannot open; version 3 opens nothing a process at version 1 sends.
   */
  @Test
  void aRollingWireUpgradeKeepsAdjacentStepsTalking() {
    List<WireCodec> steps = List.of(atClusterVersion(1, false), atClusterVersion(1, true),
        atClusterVersion(2, true), atClusterVersion(3, true));
    Envelope request = new Envelope(5, "V1", false, new Message.BeginRequest("g", 1));
    Envelope reply = new Envelope(5, "O", true, new Message.BeginReply("g", 1, "V1"));
    Set<List<Integer>> refusedPairs = Set.of(List.of(0, 3), List.of(1, 3), List.of(2, 0),
        List.of(3, 0));
    int talked = 0;
    int refused = 0;
    for (int a = 0; a < steps.size(); a++) {
      for (int b = 0; b < steps.size(); b++) {
        WireCodec from = steps.get(a);
        WireCodec to = steps.get(b);
        byte[] q = from.encode(request, Role.CLIENT, "O", from.sendVersion());
        if (refusedPairs.contains(List.of(a, b))) {
          MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
              () -> to.open(q, 0, q.length), "step " + a + " to step " + b);
          assertEquals(Reason.BAD_VERSION, x.reason());
          refused++;
          continue;
        }
        WireCodec.Opened opened = to.open(q, 0, q.length);
        assertEquals(request, opened.envelope());
        byte[] r = to.encode(reply, Role.CLIENT, "V1", opened.version());
        assertEquals(q[0], r[0], "step " + b + " answers step " + a + " in its version");
        assertEquals(reply, from.decode(r));
        talked++;
      }
    }
    assertEquals(12, talked);
    assertEquals(4, refused);
    byte[] old = steps.get(0).encode(request, Role.CLIENT, "O", 3);
    MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
        () -> steps.get(3).decode(old));
    assertEquals(Reason.BAD_VERSION, x.reason());
    assertTrue(x.getMessage().contains("cluster version is 3"), x.getMessage());
  }

  /**
   * The cluster key seals version 3 only and a role's key version 4 only: a version 4 datagram
   * under the cluster key would be opened without a role, and so without the role's limits.
   */
  @Test
  void aVersion4DatagramUnderTheClusterKeyIsRefused() {
    WireCodec c = atClusterVersion(2, true);
    Envelope request = new Envelope(5, "V1", false, new Message.BeginRequest("g", 1));
    byte[] v3 = c.encode(request, Role.CLIENT, "O", 3);
    byte[] forged = v3.clone();
    forged[0] = 4;
    MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
        () -> c.open(forged, 0, forged.length));
    assertEquals(Reason.UNKNOWN_KEY, x.reason(), x.getMessage());
  }

  /** A process holding only the client key seals as a client and opens nothing else. */
  @Test
  void aRoleKeySealsAsItsRoleOnly() {
    byte[] clientKey = Role.CLIENT.keyFrom(KEY);
    WireCodec client = new WireCodec(new DatagramKeys(clientKey, List.of(), Role.CLIENT,
        EnumSet.of(Role.CLIENT), false, System::nanoTime, System::currentTimeMillis), true,
        LIMIT, 4, false, true, System::currentTimeMillis);
    Envelope e = new Envelope(9, "V1", false, new Message.BeginRequest("g", 1));
    WireCodec.Opened opened = codec.open(client.encode(e, Role.CLIENT, "O", 4), 0,
        client.encode(e, Role.CLIENT, "O", 4).length);
    assertEquals(Role.CLIENT, opened.role(), "a service knows the client key from the cluster key");
    assertThrows(IllegalArgumentException.class, () -> client.encode(e, Role.SERVICE, "O", 4));
    assertThrows(IllegalArgumentException.class, () -> client.encode(e, Role.OPERATOR, "O", 4));
    assertThrows(IllegalArgumentException.class, () -> client.encode(e, Role.CLIENT, "O", 3),
        "version 3 needs the cluster key");
    byte[] fromService = codec.encode(e, Role.SERVICE, "V1", 4);
    assertEquals(Reason.UNKNOWN_KEY, assertThrows(MalformedDatagramException.class,
        () -> client.decode(fromService)).reason());
  }

  private Reason rejection(byte[] datagram) {
    return assertThrows(MalformedDatagramException.class, () -> codec.decode(datagram)).reason();
  }

  private static boolean contains(byte[] haystack, byte[] needle) {
    outer:
    for (int i = 0; i + needle.length <= haystack.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (haystack[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }
}
