package org.paxoscp.wal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.statistics.Statistics;

/**
 * Property-based fuzzing of the log-entry decoder (jqwik; 1,000 tries per property by default,
 * more with {@code -Djqwik.tries.default=N}): {@link LogCodec#decode} either returns a value whose
 * encoding is exactly its input or throws {@link CorruptDataException}; nothing else escapes to
 * the acceptor or the log applier that read WAL cells with it.
 */
class LogCodecFuzzTest {

  private static final List<byte[]> VALID = List.of(
      LogCodec.encode(LogValue.NOOP),
      LogCodec.encode(LogValue.of(entry("t1", "k", "v"))),
      LogCodec.encode(LogValue.of(entry("t1", "a", "1"), entry("t2", "b", "2"),
          new LogEntry("t3", "O", 9, new TreeSet<>(Set.of("a", "b")), deletes("c")))));

  private static LogEntry entry(String id, String key, String value) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.put(value.getBytes(StandardCharsets.UTF_8)));
    return new LogEntry(id, "V1", 3, new TreeSet<>(Set.of(key)), w);
  }

  private static TreeMap<String, Mutation> deletes(String key) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.delete());
    return w;
  }

  private static void decodeOrReject(byte[] bytes) {
    LogValue v;
    try {
      v = LogCodec.decode(bytes);
    } catch (CorruptDataException rejected) {
      Statistics.collect("rejected");
      return;
    }
    Statistics.collect("decoded");
    assertArrayEquals(bytes, LogCodec.encode(v), "non-canonical encoding accepted: " + v);
  }

  @Property
  void arbitraryBytesAreDecodedOrRejected(@ForAll @Size(max = 300) byte[] bytes) {
    decodeOrReject(bytes);
  }

  @Provide
  Arbitrary<byte[]> mutatedValidValues() {
    return ByteMutations.of(VALID, 0);
  }

  @Property
  void validValuesWithBytesReplacedCutOrAppendedAreDecodedCanonicallyOrRejected(
      @ForAll("mutatedValidValues") byte[] bytes) {
    decodeOrReject(bytes);
  }
}
