package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
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
        Message.SubmitReply.aborted("g", 9, "t1", "read a key written at position 9"));
  }

  private static Message paxos(PaxosMessage m) {
    return new Message.Paxos(m);
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
    assertArrayEquals(bytes, codec.encode(back), "canonical encoding");
    assertEquals(WireCodec.VERSION, bytes[0]);
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

  @ParameterizedTest
  @MethodSource("envelopes")
  void everyBitFlipIsRejected(Envelope e) {
    byte[] bytes = codec.encode(e);
    for (int bit = 0; bit < bytes.length * 8; bit++) {
      byte[] flipped = bytes.clone();
      flipped[bit / 8] ^= (byte) (1 << (bit % 8));
      int b = bit;
      MalformedDatagramException x = assertThrows(MalformedDatagramException.class,
          () -> codec.decode(flipped), "bit " + b);
      Reason expected = bit < 8 ? Reason.BAD_VERSION : null;
      if (expected != null) {
        assertEquals(expected, x.reason(), "bit " + b);
      } else {
        assertTrue(EnumSet.of(Reason.BAD_TYPE, Reason.BAD_MAC).contains(x.reason()),
            "bit " + b + ": " + x.reason());
      }
    }
  }

  @ParameterizedTest
  @MethodSource("envelopes")
  void anotherClustersKeyIsRejected(Envelope e) {
    byte[] otherKey = KEY.clone();
    otherKey[0] ^= 1;
    byte[] forged = new WireCodec(otherKey, LIMIT).encode(e);
    assertEquals(Reason.BAD_MAC,
        assertThrows(MalformedDatagramException.class, () -> codec.decode(forged)).reason());
  }

  /** Version 1 carried 64-bit proposer ids; its datagrams are refused, not misparsed. */
  @Test
  void unknownVersionIsRejected() {
    byte[] bytes = codec.encode(new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    for (int v : new int[] {0, 1, WireCodec.VERSION + 1, 255}) {
      bytes[0] = (byte) v;
      assertEquals(Reason.BAD_VERSION,
          assertThrows(MalformedDatagramException.class, () -> codec.decode(bytes)).reason());
    }
  }

  @Test
  void unknownTypeIsRejectedBeforeTheMac() {
    byte[] bytes = codec.encode(new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)));
    bytes[1] = 99;
    assertEquals(Reason.BAD_TYPE,
        assertThrows(MalformedDatagramException.class, () -> codec.decode(bytes)).reason());
  }

  @Test
  void authenticButInvalidBodyIsMalformed() {
    // A sender with the key that writes a boolean of 2: the tag is right, the body is not.
    byte[] bytes = codec.encode(new Envelope(1, "V1", false,
        paxos(new PaxosMessage.GrantReply("g", 6, "V1", true))));
    byte[] unsigned = java.util.Arrays.copyOf(bytes, bytes.length - WireCodec.TAG_BYTES);
    unsigned[unsigned.length - 1] = 2;
    byte[] resigned = resign(unsigned);
    assertEquals(Reason.MALFORMED,
        assertThrows(MalformedDatagramException.class, () -> codec.decode(resigned)).reason());
  }

  @Test
  void oversizedDatagramIsRejectedOnReceipt() {
    byte[] big = new byte[LIMIT + 1];
    big[0] = WireCodec.VERSION;
    assertEquals(Reason.TOO_LARGE,
        assertThrows(MalformedDatagramException.class, () -> codec.decode(big)).reason());
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

  private static byte[] resign(byte[] unsigned) {
    try {
      javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
      mac.init(new javax.crypto.spec.SecretKeySpec(KEY, "HmacSHA256"));
      byte[] tag = mac.doFinal(unsigned);
      byte[] out = java.util.Arrays.copyOf(unsigned, unsigned.length + WireCodec.TAG_BYTES);
      System.arraycopy(tag, 0, out, unsigned.length, WireCodec.TAG_BYTES);
      return out;
    } catch (java.security.GeneralSecurityException e) {
      throw new AssertionError(e);
    }
  }
}
