package org.paxoscp.paxos;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Objects;
import java.util.random.RandomGenerator;
import org.paxoscp.wal.BinaryReader;
import org.paxoscp.wal.BinaryWriter;
import org.paxoscp.wal.CorruptDataException;

/**
 * The identity of one proposer instance: 128 bits, compared as an unsigned number.
 *
 * <p>Three safety rules rest on it being unique across every proposer of the cluster (sections
 * 5.1 and 5.3): ballots are (round, proposer id) pairs, so two proposers sharing an id could send
 * two values under one ballot; the fast-path grant names its holder by this id, so two proposers
 * sharing it would both hold the grant of a position and both send a value at the one
 * {@link Ballot#FAST} ballot; and a client's transaction id is derived from it. Production ids
 * are therefore drawn with {@link #random} from a {@link SecureRandom}: 128 random bits per
 * proposer, not a short per-client prefix, so that a collision between any two of a cluster's
 * proposers is as likely as guessing a random UUID twice (about n^2 / 2^129 for n proposers).
 * Deterministic harnesses (the simulator, tests) allocate distinct ids with {@link #of(long)}.
 *
 * <p>The zero id is reserved for the fast-path ballot.
 */
public record ProposerId(long high, long low) implements Comparable<ProposerId> {

  /** The reserved id of the fast-path ballot. */
  public static final ProposerId NONE = new ProposerId(0, 0);

  /** Bytes in the encoded form. */
  public static final int ENCODED_SIZE = 16;

  private static final SecureRandom SECURE = new SecureRandom();

  /** A fresh random id from this process's {@link SecureRandom}. */
  public static ProposerId random() {
    return random(SECURE);
  }

  /**
   * A fresh id of 128 random bits from {@code random}. Never {@link #NONE}. Production code passes
   * a {@link SecureRandom}; a seedable generator is for deterministic harnesses only, where two
   * generators with the same seed give the same ids.
   */
  public static ProposerId random(RandomGenerator random) {
    Objects.requireNonNull(random);
    while (true) {
      ProposerId id = new ProposerId(random.nextLong(), random.nextLong());
      if (!id.equals(NONE)) {
        return id;
      }
    }
  }

  /** An allocated id for deterministic harnesses: distinct values give distinct ids. */
  public static ProposerId of(long value) {
    return new ProposerId(0, value);
  }

  public boolean isNone() {
    return equals(NONE);
  }

  @Override
  public int compareTo(ProposerId o) {
    int c = Long.compareUnsigned(high, o.high);
    return c != 0 ? c : Long.compareUnsigned(low, o.low);
  }

  public void writeTo(BinaryWriter w) {
    w.writeLong(high).writeLong(low);
  }

  public static ProposerId readFrom(BinaryReader r) {
    return new ProposerId(r.readLong("proposer id high"), r.readLong("proposer id low"));
  }

  /** 32 lower-case hex digits; the grant token and the tail of a client's transaction id. */
  @Override
  public String toString() {
    return HexFormat.of().toHexDigits(high) + HexFormat.of().toHexDigits(low);
  }

  /**
   * Parses {@link #toString()}'s form.
   *
   * @throws CorruptDataException if {@code s} is not 32 hex digits
   */
  public static ProposerId parse(String s) {
    if (s == null || s.length() != 32) {
      throw new CorruptDataException("proposer id must be 32 hex digits: " + s);
    }
    try {
      return new ProposerId(HexFormat.fromHexDigitsToLong(s, 0, 16),
          HexFormat.fromHexDigitsToLong(s, 16, 32));
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("proposer id must be 32 hex digits: " + s);
    }
  }
}
