package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.EnumSet;
import java.util.List;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.statistics.Statistics;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.wal.ByteMutations;

/**
 * Property-based fuzzing of the datagram decoder (jqwik; 1,000 tries per property by default,
 * more with {@code -Djqwik.tries.default=N}). Whatever arrives, {@link WireCodec#decode} either
 * returns a message whose encoding is exactly the message that was sealed (canonical: one message,
 * one byte string) or throws {@link MalformedDatagramException}; no other exception escapes to the
 * transport, and bytes without a valid tag never reach the parser. Four sources of input:
 * arbitrary bytes, sealed datagrams with bytes replaced, cut or appended (stopped at the header or
 * the tag), messages of every type sealed with the key (what a buggy but authentic sender could
 * send), and valid messages with bytes replaced, cut or appended, then sealed (deep into the
 * parser).
 */
class WireCodecFuzzTest {
  private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes();
  /** The reasons a datagram that never passed the tag check may be dropped for. */
  private static final EnumSet<Reason> BEFORE_THE_TAG = EnumSet.of(Reason.TRUNCATED,
      Reason.TOO_LARGE, Reason.BAD_VERSION, Reason.UNKNOWN_KEY, Reason.BAD_MAC);
  private final WireCodec codec = new WireCodec(KEY, 4096);
  private static final List<byte[]> MESSAGES = WireCodecTest.envelopes()
      .map(WireCodec::encodeMessage).toList();
  private static final List<byte[]> DATAGRAMS = WireCodecTest.envelopes()
      .map(e -> new WireCodec(KEY, 4096).encode(e)).toList();

  /** Opens {@code datagram}, sealed by nobody with the key: it must be refused before parsing. */
  private void rejectedUnopened(byte[] datagram) {
    try {
      codec.decode(datagram);
    } catch (MalformedDatagramException rejected) {
      Statistics.collect(rejected.reason());
      assertTrue(BEFORE_THE_TAG.contains(rejected.reason()), rejected.getMessage());
      return;
    }
    assertTrue(DATAGRAMS.stream().anyMatch(d -> java.util.Arrays.equals(d, datagram)),
        "a datagram nobody sealed was opened");
  }

  /** Seals {@code message} with the key; it must be parsed canonically or refused by the parser. */
  private void parsedCanonicallyOrRefused(byte[] message) {
    byte[] datagram = codec.seal("V1", message);
    if (datagram.length > 4096) {
      return;
    }
    Envelope e;
    try {
      e = codec.decode(datagram);
    } catch (MalformedDatagramException rejected) {
      Statistics.collect(rejected.reason());
      // Only a datagram shorter than the smallest message is refused before the parser.
      assertTrue(datagram.length < WireCodec.MIN_BYTES
          ? rejected.reason() == Reason.TRUNCATED
          : EnumSet.of(Reason.BAD_TYPE, Reason.MALFORMED).contains(rejected.reason()),
          rejected.getMessage());
      return;
    }
    Statistics.collect("decoded");
    assertArrayEquals(message, WireCodec.encodeMessage(e), "non-canonical encoding accepted: " + e);
  }

  @Property
  void arbitraryBytesAreRejectedBeforeTheParser(@ForAll @Size(max = 400) byte[] bytes) {
    rejectedUnopened(bytes);
  }

  @Provide
  Arbitrary<byte[]> mutatedDatagrams() {
    return ByteMutations.of(DATAGRAMS, 0);
  }

  @Property
  void sealedDatagramsWithBytesReplacedCutOrAppendedAreRejectedBeforeTheParser(
      @ForAll("mutatedDatagrams") byte[] datagram) {
    rejectedUnopened(datagram);
  }

  @Property
  void authenticBodiesOfEveryTypeAreParsedCanonicallyOrRejected(
      @ForAll @IntRange(min = 0, max = 63) int typeIndex,
      @ForAll @Size(max = 300) byte[] rest) {
    WireCodec.Type[] types = WireCodec.Type.values();
    byte[] message = new byte[1 + rest.length];
    message[0] = (byte) types[typeIndex % types.length].code;
    System.arraycopy(rest, 0, message, 1, rest.length);
    parsedCanonicallyOrRefused(message);
  }

  @Provide
  Arbitrary<byte[]> mutatedValidMessages() {
    // The type byte stays.
    return ByteMutations.of(MESSAGES, 1);
  }

  @Property
  void validMessagesWithBytesReplacedCutOrAppendedAreDecodedCanonicallyOrRejected(
      @ForAll("mutatedValidMessages") byte[] message) {
    parsedCanonicallyOrRefused(message);
  }
}
