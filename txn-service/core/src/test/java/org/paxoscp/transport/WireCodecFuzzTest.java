package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import java.util.Arrays;
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
 * returns a message whose encoding is exactly the datagram (canonical: one message, one byte
 * string) or throws {@link MalformedDatagramException}; no other exception escapes to the
 * transport. Three sources of input: arbitrary bytes (stopped at the header or the tag), bodies
 * of every type behind a valid tag (what a buggy but authentic sender could send), and valid
 * messages with bytes replaced, cut or appended and then re-tagged (deep into the parser).
 */
class WireCodecFuzzTest {
  private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes();
  private final WireCodec codec = new WireCodec(KEY, 4096);
  private static final List<byte[]> VALID = WireCodecTest.envelopes()
      .map(e -> new WireCodec(KEY, 4096).encode(e)).toList();

  /** Decodes {@code datagram}; a decoded message must re-encode to the same bytes. */
  private void decodeOrReject(byte[] datagram, boolean authentic) {
    Envelope e;
    try {
      e = codec.decode(datagram);
    } catch (MalformedDatagramException rejected) {
      Statistics.collect("rejected");
      if (authentic && datagram.length >= WireCodec.MIN_BYTES && datagram.length <= 4096) {
        // Past the size, version, type and tag checks only the parser may refuse it.
        assertNotEquals(Reason.BAD_MAC, rejected.reason());
      }
      return;
    }
    Statistics.collect("decoded");
    assertArrayEquals(datagram, codec.encode(e), "non-canonical encoding accepted: " + e);
  }

  @Property
  void arbitraryBytesAreDecodedOrRejected(@ForAll @Size(max = 400) byte[] bytes) {
    decodeOrReject(bytes, false);
  }

  @Property
  void authenticBodiesOfEveryTypeAreParsedCanonicallyOrRejected(
      @ForAll @IntRange(min = 0, max = 63) int typeIndex,
      @ForAll @Size(max = 300) byte[] rest) {
    WireCodec.Type[] types = WireCodec.Type.values();
    byte[] unsigned = new byte[2 + rest.length];
    unsigned[0] = (byte) WireCodec.VERSION;
    unsigned[1] = (byte) types[typeIndex % types.length].code;
    System.arraycopy(rest, 0, unsigned, 2, rest.length);
    decodeOrReject(codec.seal(unsigned), true);
  }

  @Provide
  Arbitrary<byte[]> mutatedValidMessages() {
    // The signed part of every valid message; the version and type bytes stay.
    return ByteMutations.of(VALID.stream()
        .map(d -> Arrays.copyOf(d, d.length - WireCodec.TAG_BYTES)).toList(), 2);
  }

  @Property
  void validMessagesWithBytesReplacedCutOrAppendedAreDecodedCanonicallyOrRejected(
      @ForAll("mutatedValidMessages") byte[] signed) {
    decodeOrReject(codec.seal(signed), true);
  }
}
