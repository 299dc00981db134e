package org.paxoscp.paxos;

import org.paxoscp.wal.BinaryReader;
import org.paxoscp.wal.BinaryWriter;
import org.paxoscp.wal.CorruptDataException;

/**
 * A proposal number: (round, proposerId), ordered lexicographically, so that ballots are unique
 * across proposers as long as proposer ids are (section 5.1). Proposer ids must be unique per
 * proposer <em>instance</em>, not per client: a client that starts a second commit at the same
 * position must not reuse a ballot with a different value.
 *
 * <p>Round 0 is reserved: {@link #FAST} is the fast-path ballot (section 5.3), which an acceptor
 * accepts only while it has promised nothing for the position. Regular ballots have round >= 1.
 */
public record Ballot(long round, ProposerId proposerId) implements Comparable<Ballot> {

  /** The reserved fast-path ballot, lower than every regular ballot. */
  public static final Ballot FAST = new Ballot(0, ProposerId.NONE);

  public static final int ENCODED_SIZE = 8 + ProposerId.ENCODED_SIZE;

  public Ballot {
    java.util.Objects.requireNonNull(proposerId, "proposerId");
    if (round < 0) {
      throw new IllegalArgumentException("round must be >= 0: " + round);
    }
    if (round == 0 && !proposerId.isNone()) {
      throw new IllegalArgumentException("round 0 is reserved for the fast-path ballot");
    }
  }

  /** A ballot of an allocated proposer id (see {@link ProposerId#of}); for tests and harnesses. */
  public static Ballot of(long round, long proposerId) {
    return new Ballot(round, ProposerId.of(proposerId));
  }

  /** The first regular ballot of a proposer. */
  public static Ballot first(ProposerId proposerId) {
    return new Ballot(1, proposerId);
  }

  /** The smallest ballot of {@code proposerId} that is higher than {@code seen}. */
  public static Ballot above(Ballot seen, ProposerId proposerId) {
    long round = seen.round;
    return proposerId.compareTo(seen.proposerId) > 0 ? new Ballot(Math.max(1, round), proposerId)
        : new Ballot(round + 1, proposerId);
  }

  public boolean isFast() {
    return round == 0;
  }

  @Override
  public int compareTo(Ballot o) {
    int c = Long.compare(round, o.round);
    return c != 0 ? c : proposerId.compareTo(o.proposerId);
  }

  public boolean greaterThan(Ballot o) {
    return compareTo(o) > 0;
  }

  public byte[] encode() {
    BinaryWriter w = new BinaryWriter(ENCODED_SIZE);
    writeTo(w);
    return w.toByteArray();
  }

  public void writeTo(BinaryWriter w) {
    w.writeLong(round);
    proposerId.writeTo(w);
  }

  public static Ballot readFrom(BinaryReader r) {
    long round = r.readLong("ballot round");
    ProposerId id = ProposerId.readFrom(r);
    try {
      return new Ballot(round, id);
    } catch (IllegalArgumentException e) {
      throw new CorruptDataException("invalid ballot: " + e.getMessage());
    }
  }

  public static Ballot decode(byte[] b) {
    BinaryReader r = new BinaryReader(b);
    Ballot ballot = readFrom(r);
    r.expectEnd("ballot");
    return ballot;
  }

  @Override
  public String toString() {
    return isFast() ? "FAST" : round + "." + proposerId;
  }
}
