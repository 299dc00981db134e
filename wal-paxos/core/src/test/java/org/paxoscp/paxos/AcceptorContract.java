package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Acceptor.ApplyResult;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.AcceptReply;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The acceptor's rules (Algorithm 1 and the fast path of section 5.3), run against every
 * {@link KvStore}: the acceptor's safety rests entirely on the store's checkAndWrite, so each store
 * must pass the same suite.
 */
public abstract class AcceptorContract {

  /** A fresh, empty store; closed after each test. */
  protected abstract KvStore newStore();

  private static final String G = "group";
  private static final long P = 7;

  private KvStore store;
  private Acceptor acceptor;

  @BeforeEach
  void open() {
    store = newStore();
    acceptor = new Acceptor(store);
  }

  @AfterEach
  void closeStore() {
    store.close();
  }

  static LogValue value(String txnId) {
    TreeMap<String, Mutation> writes = new TreeMap<>();
    writes.put("k-" + txnId, Mutation.put(txnId.getBytes(StandardCharsets.UTF_8)));
    return LogValue.of(new LogEntry(txnId, "dc1", 3, new TreeSet<>(), writes));
  }

  static Ballot ballot(long round, long proposer) {
    return Ballot.of(round, proposer);
  }

  private PrepareReply prepare(Ballot b) {
    return acceptor.prepare(new Prepare(G, P, b));
  }

  private AcceptReply accept(Ballot b, LogValue v) {
    return acceptor.accept(new Accept(G, P, b, v));
  }

  /**
   * A PREPARE that read the row, then lost a race to an ACCEPT of the promised ballot, must not
   * promise while reporting no vote: its proposer could then pick another value although the
   * vote may already be part of a majority (two values chosen). Found by the concurrent-proposers
   * suite on HBase; replayed here deterministically by running the ACCEPT inside the PREPARE's
   * first check-and-write.
   */
  @Test
  void prepareRacingAnAcceptOfThePromisedBallotReportsTheVote() {
    Ballot b1 = ballot(1, 1);
    Ballot b2 = ballot(2, 2);
    LogValue v = value("raced");
    assertTrue(prepare(b1).promised());
    Acceptor racing = new Acceptor(new InterleavingStore(store,
        () -> assertTrue(accept(b1, v).accepted(), "the ACCEPT of b1 runs first")));
    PrepareReply r = racing.prepare(new Prepare(G, P, b2));
    assertTrue(r.promised());
    assertEquals(new Vote(b1, v), r.lastVote(), "the promise must carry the vote it follows");
  }

  /** The same race the other way round: a PREPARE wins, the ACCEPT of the old ballot fails. */
  @Test
  void acceptRacingAPrepareOfAHigherBallotIsRefused() {
    Ballot b1 = ballot(1, 1);
    Ballot b2 = ballot(2, 2);
    assertTrue(prepare(b1).promised());
    Acceptor racing = new Acceptor(new InterleavingStore(store,
        () -> assertTrue(prepare(b2).promised(), "the PREPARE of b2 runs first")));
    AcceptReply r = racing.accept(new Accept(G, P, b1, value("late")));
    assertFalse(r.accepted());
    assertEquals(b2, r.promise());
    assertNull(prepare(ballot(3, 3)).lastVote(), "no vote was written");
  }

  /** Runs {@code before} once, just before the first check-and-write reaches the store. */
  private static final class InterleavingStore extends ForwardingKvStore {
    private Runnable before;

    InterleavingStore(KvStore delegate, Runnable before) {
      super(delegate);
      this.before = before;
    }

    @Override
    public boolean checkAndWrite(Table table, byte[] row, String checkColumn, byte[] expected,
        long timestamp, Map<String, byte[]> cells) {
      Runnable r = before;
      before = null;
      if (r != null) {
        r.run();
      }
      return delegate.checkAndWrite(table, row, checkColumn, expected, timestamp, cells);
    }
  }

  @Test
  void promisesFirstBallot() {
    PrepareReply r = prepare(ballot(1, 1));
    assertTrue(r.promised());
    assertEquals(ballot(1, 1), r.promise());
    assertNull(r.lastVote());
    assertNull(r.chosen());
  }

  @Test
  void promisesHigherBallot() {
    assertTrue(prepare(ballot(1, 1)).promised());
    PrepareReply r = prepare(ballot(1, 2));
    assertTrue(r.promised());
    assertEquals(ballot(1, 2), r.promise());
  }

  @Test
  void rejectsLowerBallotAndNamesTheHigherPromise() {
    assertTrue(prepare(ballot(2, 5)).promised());

    PrepareReply lower = prepare(ballot(2, 4));
    assertFalse(lower.promised());
    assertEquals(ballot(2, 5), lower.promise());

    PrepareReply lowerRound = prepare(ballot(1, 9));
    assertFalse(lowerRound.promised());
    assertEquals(ballot(2, 5), lowerRound.promise());

  }

  @Test
  void aDuplicatePrepareOfTheCurrentPromiseIsAnsweredAgainWithTheCurrentVote() {
    assertTrue(prepare(ballot(2, 5)).promised());
    assertTrue(accept(ballot(2, 5), value("t1")).accepted());

    // Idempotent: the same promise again, with the vote cast since, and nothing changed.
    PrepareReply again = prepare(ballot(2, 5));
    assertTrue(again.promised());
    assertEquals(ballot(2, 5), again.promise());
    assertEquals(new Vote(ballot(2, 5), value("t1")), again.lastVote());
    assertFalse(prepare(ballot(2, 4)).promised());
  }

  @Test
  void prepareWithFastBallotIsInvalid() {
    assertThrows(IllegalArgumentException.class, () -> prepare(Ballot.FAST));
  }

  @Test
  void acceptsOnlyForTheCurrentPromise() {
    assertTrue(prepare(ballot(2, 1)).promised());

    AcceptReply lower = accept(ballot(1, 1), value("t1"));
    assertFalse(lower.accepted());
    assertEquals(ballot(2, 1), lower.promise());

    AcceptReply higherUnpromised = accept(ballot(3, 1), value("t1"));
    assertFalse(higherUnpromised.accepted());
    assertEquals(ballot(2, 1), higherUnpromised.promise());
    assertEquals(Optional.empty(), acceptor.lastVote(G, P));

    AcceptReply current = accept(ballot(2, 1), value("t1"));
    assertTrue(current.accepted());
    assertEquals(Optional.of(new Vote(ballot(2, 1), value("t1"))), acceptor.lastVote(G, P));
  }

  @Test
  void rejectsAcceptAfterANewerPromise() {
    assertTrue(prepare(ballot(1, 1)).promised());
    assertTrue(prepare(ballot(1, 2)).promised());
    AcceptReply r = accept(ballot(1, 1), value("t1"));
    assertFalse(r.accepted());
    assertEquals(ballot(1, 2), r.promise());
    assertEquals(Optional.empty(), acceptor.lastVote(G, P));
  }

  @Test
  void fastBallotIsAcceptedBeforeAnyPromiseAndDuplicatesAreAnsweredAgain() {
    AcceptReply first = accept(Ballot.FAST, value("t1"));
    assertTrue(first.accepted());
    assertEquals(Ballot.FAST, first.promise());

    AcceptReply duplicate = accept(Ballot.FAST, value("t1"));
    assertTrue(duplicate.accepted());

    AcceptReply other = accept(Ballot.FAST, value("t2"));
    assertFalse(other.accepted());
    assertEquals(Optional.of(new Vote(Ballot.FAST, value("t1"))), acceptor.lastVote(G, P));
  }

  @Test
  void fastBallotIsRefusedAfterAPromise() {
    assertTrue(prepare(ballot(1, 1)).promised());
    AcceptReply r = accept(Ballot.FAST, value("t1"));
    assertFalse(r.accepted());
    assertEquals(ballot(1, 1), r.promise());
    assertEquals(Optional.empty(), acceptor.lastVote(G, P));
  }

  @Test
  void regularBallotOverridesAFastVote() {
    assertTrue(accept(Ballot.FAST, value("t1")).accepted());
    PrepareReply r = prepare(ballot(1, 1));
    assertTrue(r.promised());
    assertEquals(new Vote(Ballot.FAST, value("t1")), r.lastVote());
    assertFalse(accept(Ballot.FAST, value("t1")).accepted(), "fast duplicate after a promise");
    assertTrue(accept(ballot(1, 1), value("t1")).accepted());
  }

  @Test
  void prepareAfterAnAcceptedVoteReturnsThatVote() {
    assertTrue(prepare(ballot(1, 1)).promised());
    assertTrue(accept(ballot(1, 1), value("t1")).accepted());

    PrepareReply higher = prepare(ballot(2, 2));
    assertTrue(higher.promised());
    assertEquals(new Vote(ballot(1, 1), value("t1")), higher.lastVote());

    PrepareReply rejected = prepare(ballot(1, 3));
    assertFalse(rejected.promised());
    assertEquals(new Vote(ballot(1, 1), value("t1")), rejected.lastVote());
  }

  @Test
  void applyIsIdempotentAndKeepsTheFirstValue() {
    assertEquals(ApplyResult.APPLIED, acceptor.apply(new Apply(G, P, value("t1"))));
    assertEquals(ApplyResult.ALREADY_APPLIED, acceptor.apply(new Apply(G, P, value("t1"))));
    assertEquals(ApplyResult.CONFLICT, acceptor.apply(new Apply(G, P, value("t2"))));
    assertEquals(Optional.of(value("t1")), acceptor.chosen(G, P));
  }

  @Test
  void repliesCarryTheChosenValueOnceApplied() {
    assertTrue(prepare(ballot(1, 1)).promised());
    assertTrue(accept(ballot(1, 1), value("t1")).accepted());
    acceptor.apply(new Apply(G, P, value("t1")));

    PrepareReply p = prepare(ballot(5, 5));
    assertFalse(p.promised());
    assertEquals(value("t1"), p.chosen());

    AcceptReply a = accept(ballot(1, 1), value("t2"));
    assertFalse(a.accepted());
    assertEquals(value("t1"), a.chosen());
  }

  @Test
  void aFastAcceptOnAPromisedChosenRowIsAnsweredWithTheChosenValue() {
    assertTrue(prepare(ballot(1, 1)).promised());
    assertTrue(accept(ballot(1, 1), value("t1")).accepted());
    acceptor.apply(new Apply(G, P, value("t1")));

    AcceptReply a = accept(Ballot.FAST, value("t2"));
    assertFalse(a.accepted());
    assertEquals(value("t1"), a.chosen());
  }

  @Test
  void aFastAcceptOnARowHoldingOnlyALearnedChosenValueVotesAndKeepsTheChosenValue() {
    // The DC learned the value (an APPLY) without promising or voting: the fast ballot is
    // accepted there as on a fresh row (see Acceptor#accept for why that is safe); the chosen
    // value stays and is what every later request is answered with.
    acceptor.apply(new Apply(G, P, value("t1")));
    assertTrue(accept(Ballot.FAST, value("t1")).accepted());
    assertEquals(Optional.of(value("t1")), acceptor.chosen(G, P));
    PrepareReply p = prepare(ballot(1, 1));
    assertFalse(p.promised());
    assertEquals(value("t1"), p.chosen());
    AcceptReply again = accept(Ballot.FAST, value("t1"));
    assertFalse(again.accepted());
    assertEquals(value("t1"), again.chosen());
  }

  @Test
  void positionsAreIndependent() {
    assertTrue(prepare(ballot(3, 1)).promised());
    PrepareReply other = acceptor.prepare(new Prepare(G, P + 1, ballot(1, 1)));
    assertTrue(other.promised());
    PrepareReply otherGroup = acceptor.prepare(new Prepare(G + "2", P, ballot(1, 1)));
    assertTrue(otherGroup.promised());
    assertEquals(Optional.empty(), acceptor.chosen(G, P + 1));
  }

  @Test
  void grantGoesToTheFirstRequesterOnlyAndIsIdempotent() {
    assertTrue(acceptor.grant(new GrantRequest(G, P, "client-a")).granted());
    assertFalse(acceptor.grant(new GrantRequest(G, P, "client-b")).granted());
    assertTrue(acceptor.grant(new GrantRequest(G, P, "client-a")).granted());
    assertTrue(acceptor.grant(new GrantRequest(G, P + 1, "client-b")).granted());
    assertFalse(acceptor.grant(new GrantRequest(G, P + 1, "client-a")).granted());
  }

  @Test
  void invalidGroupChangesNothing() {
    assertThrows(IllegalArgumentException.class,
        () -> acceptor.prepare(new Prepare("bad\0group", P, ballot(1, 1))));
    assertEquals(Map.of(), store.readRow(KvStore.Table.WAL, WalLayout.walRow(G, P)));
  }
}
