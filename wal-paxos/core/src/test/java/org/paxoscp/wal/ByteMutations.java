package org.paxoscp.wal;

import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;

/**
 * Inputs for fuzzing a decoder: valid encodings with a few bytes replaced, cut short, or with
 * bytes appended. They reach far deeper into a parser than random bytes, which most decoders
 * refuse at their first length or marker.
 */
public final class ByteMutations {
  private ByteMutations() {}

  /**
   * Mutations of the encodings in {@code valid}; bytes before {@code firstMutable} are kept (a
   * version and type header, say, that would only be refused early).
   */
  public static Arbitrary<byte[]> of(List<byte[]> valid, int firstMutable) {
    return Arbitraries.integers().between(0, valid.size() - 1).flatMap(i -> {
      byte[] base = valid.get(i);
      Arbitrary<Integer> at = Arbitraries.integers().between(firstMutable, base.length - 1);
      Arbitrary<byte[]> replace = Arbitraries.bytes().array(byte[].class).ofMinSize(1)
          .ofMaxSize(8).flatMap(bytes -> at.map(pos -> {
            byte[] out = base.clone();
            for (int k = 0; k < bytes.length && pos + k < out.length; k++) {
              out[pos + k] = bytes[k];
            }
            return out;
          }));
      Arbitrary<byte[]> cut = at.map(pos -> Arrays.copyOf(base, pos));
      Arbitrary<byte[]> append = Arbitraries.bytes().array(byte[].class).ofMinSize(1)
          .ofMaxSize(16).map(extra -> {
            byte[] out = Arrays.copyOf(base, base.length + extra.length);
            System.arraycopy(extra, 0, out, base.length, extra.length);
            return out;
          });
      return Arbitraries.oneOf(replace, cut, append);
    });
  }
}
