package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.wal.BinaryReader;
import org.paxoscp.wal.BinaryWriter;
import org.paxoscp.wal.CorruptDataException;

@Timeout(10)
class BallotTest {

  private static final long[] IDS = {0, 1, 2, 3, 7, 1_000, Long.MAX_VALUE - 1, Long.MAX_VALUE};
  private static final long[] ROUNDS = {1, 2, 3, 100, Long.MAX_VALUE - 1};

  @Test
  void orderIsRoundFirstThenProposerId() {
    assertTrue(Ballot.of(2, 1).greaterThan(Ballot.of(1, 999)));
    assertTrue(Ballot.of(2, 3).greaterThan(Ballot.of(2, 1)));
    assertFalse(Ballot.of(2, 1).greaterThan(Ballot.of(2, 1)));
    assertEquals(0, Ballot.of(5, 5).compareTo(Ballot.of(5, 5)));
    assertEquals(Ballot.of(5, 5), Ballot.of(5, 5));

    List<Ballot> sorted = List.of(Ballot.FAST, Ballot.of(1, 0), Ballot.of(1, 2), Ballot.of(1, 9),
        Ballot.of(2, 1), Ballot.of(2, 5), Ballot.of(10, 0), Ballot.of(Long.MAX_VALUE, 0));
    List<Ballot> shuffled = new ArrayList<>(sorted);
    Collections.shuffle(shuffled, new Random(3));
    Collections.sort(shuffled);
    assertEquals(sorted, shuffled);
  }

  @Test
  void compareToAndGreaterThanAgreeAndAreAntisymmetric() {
    List<Ballot> all = new ArrayList<>();
    all.add(Ballot.FAST);
    for (long r : ROUNDS) {
      for (long id : IDS) {
        all.add(Ballot.of(r, id));
      }
    }
    for (Ballot a : all) {
      for (Ballot b : all) {
        assertEquals(a.compareTo(b) > 0, a.greaterThan(b), a + " vs " + b);
        assertEquals(Integer.signum(a.compareTo(b)), -Integer.signum(b.compareTo(a)));
        assertEquals(a.compareTo(b) == 0, a.equals(b));
      }
    }
  }

  @Test
  void fastIsTheLowestBallotAndTheOnlyFastOne() {
    assertTrue(Ballot.FAST.isFast());
    assertEquals(0, Ballot.FAST.round());
    for (long id : IDS) {
      Ballot first = Ballot.first(ProposerId.of(id));
      assertFalse(first.isFast());
      assertEquals(1, first.round());
      assertEquals(ProposerId.of(id), first.proposerId());
      assertTrue(first.greaterThan(Ballot.FAST));
      for (long r : ROUNDS) {
        assertTrue(Ballot.of(r, id).greaterThan(Ballot.FAST));
      }
    }
  }

  @Test
  void aboveIsStrictlyHigherOwnedAndMinimal() {
    List<Ballot> seen = new ArrayList<>();
    seen.add(Ballot.FAST);
    for (long r : ROUNDS) {
      for (long id : IDS) {
        seen.add(Ballot.of(r, id));
      }
    }
    Random rnd = new Random(11);
    for (int i = 0; i < 5_000; i++) {
      seen.add(Ballot.of(1 + rnd.nextInt(50), rnd.nextInt(20)));
    }
    for (Ballot s : seen) {
      for (long id : new long[] {1, 2, 3, 7, 19, 1_000}) {
        Ballot b = Ballot.above(s, ProposerId.of(id));
        assertTrue(b.greaterThan(s), b + " must be above " + s);
        assertEquals(ProposerId.of(id), b.proposerId(), "the new ballot belongs to the proposer");
        assertFalse(b.isFast());
        // Minimal: the same proposer's previous round is not above s.
        if (b.round() > 1) {
          assertFalse(Ballot.of(b.round() - 1, id).greaterThan(s),
              b + " is not the smallest above " + s);
        }
      }
    }
  }

  @Test
  void aboveFastIsTheFirstBallot() {
    for (long id : IDS) {
      assertEquals(Ballot.first(ProposerId.of(id)), Ballot.above(Ballot.FAST, ProposerId.of(id)));
    }
  }

  @Test
  void aboveOwnBallotMovesToTheNextRound() {
    Ballot mine = Ballot.of(4, 7);
    assertEquals(Ballot.of(5, 7), Ballot.above(mine, ProposerId.of(7)));
    assertEquals(Ballot.of(4, 8), Ballot.above(mine, ProposerId.of(8)));
    assertEquals(Ballot.of(5, 6), Ballot.above(mine, ProposerId.of(6)));
  }

  @Test
  void aboveNeverWrapsToALowerBallot() {
    Ballot top = Ballot.of(Long.MAX_VALUE, 9);
    assertThrows(IllegalArgumentException.class, () -> Ballot.above(top, ProposerId.of(9)));
    assertThrows(IllegalArgumentException.class, () -> Ballot.above(top, ProposerId.of(1)));
    assertEquals(Ballot.of(Long.MAX_VALUE, 10), Ballot.above(top, ProposerId.of(10)));
  }

  @Test
  void encodeDecodeRoundTrip() {
    List<Ballot> all = new ArrayList<>(List.of(Ballot.FAST));
    for (long r : ROUNDS) {
      for (long id : IDS) {
        all.add(Ballot.of(r, id));
      }
    }
    all.add(Ballot.of(Long.MAX_VALUE, Long.MAX_VALUE));
    for (Ballot b : all) {
      byte[] enc = b.encode();
      assertEquals(Ballot.ENCODED_SIZE, enc.length);
      assertEquals(b, Ballot.decode(enc));
      BinaryWriter w = new BinaryWriter();
      b.writeTo(w);
      assertArrayEquals(enc, w.toByteArray(), "writeTo and encode agree");
      assertEquals(b, Ballot.readFrom(new BinaryReader(enc)));
    }
  }

  @Test
  void encodingPreservesOrderAsUnsignedBytes() {
    // Big-endian fixed width: byte order equals ballot order (rounds and ids are non-negative).
    Ballot[] bs = {Ballot.FAST, Ballot.of(1, 2), Ballot.of(1, 300), Ballot.of(2, 0),
        Ballot.of(256, 1)};
    for (int i = 0; i + 1 < bs.length; i++) {
      assertTrue(Arrays.compareUnsigned(bs[i].encode(), bs[i + 1].encode()) < 0);
    }
  }

  @Test
  void invalidBallotsAreRejectedOnConstruction() {
    assertThrows(IllegalArgumentException.class, () -> Ballot.of(0, 1));
    assertThrows(IllegalArgumentException.class, () -> Ballot.of(0, Long.MAX_VALUE));
    assertThrows(IllegalArgumentException.class, () -> Ballot.of(-1, 1));
    assertThrows(IllegalArgumentException.class, () -> Ballot.of(Long.MIN_VALUE, 0));
  }

  @Test
  void invalidEncodingsAreRejectedAsCorrupt() {
    byte[] roundZeroOwned = new BinaryWriter().writeLong(0).writeLong(1).toByteArray();
    assertThrows(CorruptDataException.class, () -> Ballot.decode(roundZeroOwned));
    byte[] negativeRound = new BinaryWriter().writeLong(-1).writeLong(1).toByteArray();
    assertThrows(CorruptDataException.class, () -> Ballot.decode(negativeRound));
    byte[] good = Ballot.of(3, 4).encode();
    for (int len = 0; len < good.length; len++) {
      byte[] cut = Arrays.copyOf(good, len);
      assertThrows(CorruptDataException.class, () -> Ballot.decode(cut), "length " + len);
    }
    byte[] longer = Arrays.copyOf(good, good.length + 1);
    assertThrows(CorruptDataException.class, () -> Ballot.decode(longer));
  }

  @Test
  void toStringNamesTheFastBallot() {
    assertEquals("FAST", Ballot.FAST.toString());
    assertEquals("3." + ProposerId.of(4), Ballot.of(3, 4).toString());
  }
}
