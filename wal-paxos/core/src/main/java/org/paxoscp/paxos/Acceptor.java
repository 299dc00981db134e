package org.paxoscp.paxos;

import static org.paxoscp.paxos.WalLayout.CHOSEN;
import static org.paxoscp.paxos.WalLayout.GRANT;
import static org.paxoscp.paxos.WalLayout.PROMISE;
import static org.paxoscp.paxos.WalLayout.VOTE_BALLOT;
import static org.paxoscp.paxos.WalLayout.VOTE_VALUE;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.AcceptReply;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantReply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;

/**
 * The acceptor of one DC (Algorithm 1): its state for every position lives in that position's WAL
 * row and is changed only with {@link KvStore#checkAndWrite}, so any number of stateless service
 * instances can run acceptors over the same store concurrently.
 *
 * <p><b>Collected positions (section 7).</b> A WAL row removed by {@link LogCollector} reads as
 * empty, exactly like a fresh position, so emptiness is never trusted: every answer for a position
 * without a chosen value is given only after reading the group's GC watermark <em>after</em> the
 * row was read, and after every successful write to the row; if the position is at or below it,
 * the answer is {@link TooOldException} instead (and a row the write recreated is removed again).
 * Because the collector raises the watermark before it deletes a row, an acceptor that read a
 * collected (empty) row always sees the raised watermark, and a write that lands after the
 * deletion is always followed by a check that sees it: no promise or vote at a collected position
 * ever reaches a proposer, and no fresh Paxos instance runs on a forgotten position. A chosen
 * value, where it is still present, is answered at any position: it never changes.
 *
 * <p><b>A DC that lost its store (section 12).</b> The same reads, through {@link RebuildGuard},
 * refuse promises, votes and grants in a group the DC has not rebuilt since it lost its store,
 * and at positions at or below a rebuilt group's fence, where what the DC promised or voted
 * before the loss may have counted ({@link RebuildingException}). Learning and recording chosen
 * values is never refused for that: a chosen value is a fact, whoever knew it before.
 *
 * <p>Thread-safe (it holds no state of its own). Store failures propagate as
 * {@link org.paxoscp.store.StoreUnavailableException}; a request that fails that way may or may
 * not have changed the row, which Paxos tolerates (it is as if the reply were lost).
 */
public final class Acceptor {

  /** Result of an APPLY: written now, already there, or a different value was already chosen. */
  public enum ApplyResult { APPLIED, ALREADY_APPLIED, CONFLICT }

  private final KvStore store;
  private final RebuildGuard guard;

  /** An acceptor with a guard of its own (one acceptor per process, or tests). */
  public Acceptor(KvStore store) {
    this(store, new RebuildGuard(store));
  }

  /** An acceptor that answers through {@code guard}, the process's one for {@code store}. */
  public Acceptor(KvStore store, RebuildGuard guard) {
    this.store = store;
    this.guard = guard;
  }

  /** The guard this acceptor votes by (the service checks requests with it too). */
  public RebuildGuard guard() {
    return guard;
  }

  /** Algorithm 1, lines 3-15: promise {@code ballot} if it is higher than any promise so far. */
  public PrepareReply prepare(Prepare m) {
    WalLayout.validateGroup(m.group());
    if (m.ballot().isFast()) {
      throw new IllegalArgumentException("PREPARE with the reserved fast-path ballot");
    }
    byte[] row = WalLayout.walRow(m.group(), m.position());
    StoreMarker at = guard.current();
    while (true) {
      State s = State.read(store, row);
      if (s.chosen == null && m.ballot().equals(s.promise)) {
        refuseVote(m.group(), m.position(), at);
        // A duplicate of the PREPARE we already promised: promise again, change nothing.
        return new PrepareReply(m.group(), m.position(), m.ballot(), true, s.promise, s.vote(),
            null);
      }
      boolean higher = s.promise == null || m.ballot().greaterThan(s.promise);
      if (s.chosen != null) {
        // The decided value answers everything; the last vote is left out so that the reply
        // carries one copy of the value, not two (it must fit in one datagram).
        return new PrepareReply(m.group(), m.position(), m.ballot(), false, s.promise, null,
            s.chosen);
      }
      refuseVote(m.group(), m.position(), at);
      if (!higher) {
        return new PrepareReply(m.group(), m.position(), m.ballot(), false, s.promise,
            s.vote(), null);
      }
      // Line 9: only raise nextBal if it has not changed since we read it.
      boolean ok = store.checkAndWrite(Table.WAL, row, PROMISE, s.promiseBytes, KvStore.UNVERSIONED,
          Map.of(PROMISE, m.ballot().encode()));
      if (ok) {
        refuseVoteAfterWrite(m.group(), m.position(), row, at);
        return new PrepareReply(m.group(), m.position(), m.ballot(), true, m.ballot(), s.vote(),
            null);
      }
    }
  }

  /**
   * Algorithm 1, lines 16-19: accept only for the ballot currently promised. The fast-path ballot
   * is accepted only while nothing is promised (or when it repeats the same fast-path vote).
   */
  public AcceptReply accept(Accept m) {
    WalLayout.validateGroup(m.group());
    byte[] row = WalLayout.walRow(m.group(), m.position());
    // The promise cell is rewritten with the "voted" mark, so that a PREPARE that read this row
    // before the vote fails its check-and-write and reads again (see State).
    Map<String, byte[]> vote = Map.of(PROMISE, State.votedPromise(m.ballot()),
        VOTE_BALLOT, m.ballot().encode(), VOTE_VALUE, LogCodec.encode(m.value()));
    // The GC watermark is read after the row either way: after the write when the vote is
    // taken, before the refusal otherwise.
    StoreMarker at = guard.current();
    if (m.ballot().isFast()) {
      refuseIfMayBeFenced(m.group(), m.position(), at);
    }
    if (m.ballot().isFast()
        && store.checkAndWrite(Table.WAL, row, PROMISE, null, KvStore.UNVERSIONED, vote)) {
      // The fast ballot is the lowest: a row without a promise may take it, and the
      // check-and-write is that test, so the common fast ACCEPT reads nothing first. A row that
      // holds only a chosen value (learned here, never promised or voted on) takes the vote too.
      // Paxos allows it, and it cannot make a second value chosen: a value chosen at the fast
      // ballot is the grant holder's only fast value (section 5.3), so this vote repeats it; a
      // value chosen at a higher ballot was accepted by a majority that all hold promises and
      // refuse the fast ballot, so no majority can form for it.
      refuseVoteAfterWrite(m.group(), m.position(), row, at);
      return new AcceptReply(m.group(), m.position(), m.ballot(), true, m.ballot(), null);
    }
    State s = State.read(store, row);
    if (s.chosen != null) {
      return new AcceptReply(m.group(), m.position(), m.ballot(), false, s.promise, s.chosen);
    }
    boolean ok;
    if (m.ballot().isFast()) {
      // The row holds a promise (the check-and-write failed): only a duplicate of the fast-path
      // vote already taken is answered again, changing nothing.
      ok = s.promise != null && s.promise.isFast() && s.voteValue != null
          && s.voteValue.equals(m.value());
    } else if (m.ballot().equals(s.promise)) {
      // Line 18: write the vote only if nextBal still equals this ballot.
      ok = store.checkAndWrite(Table.WAL, row, PROMISE, s.promiseBytes, KvStore.UNVERSIONED, vote);
    } else {
      ok = false;
    }
    if (ok) {
      refuseVoteAfterWrite(m.group(), m.position(), row, at);
      return new AcceptReply(m.group(), m.position(), m.ballot(), true, m.ballot(), null);
    }
    refuseVote(m.group(), m.position(), at);
    return new AcceptReply(m.group(), m.position(), m.ballot(), false,
        State.read(store, row).promise, null);
  }

  /**
   * Algorithm 1, lines 20-21: record the decided value. Idempotent. A different value already
   * recorded means agreement (R1) was broken somewhere; the first value is kept and
   * {@link ApplyResult#CONFLICT} is returned so the caller can raise the alarm.
   */
  public ApplyResult apply(Apply m) {
    WalLayout.validateGroup(m.group());
    byte[] row = WalLayout.walRow(m.group(), m.position());
    byte[] encoded = LogCodec.encode(m.value());
    // No watermark read before the write: one after it refuses (and removes) a write that
    // landed on a collected position, whenever the collection happened.
    if (store.checkAndWrite(Table.WAL, row, CHOSEN, null, KvStore.UNVERSIONED,
        Map.of(CHOSEN, encoded))) {
      refuseIfCollectedAfterWrite(m.group(), m.position(), row);
      return ApplyResult.APPLIED;
    }
    LogValue existing = chosen(m.group(), m.position()).orElseThrow();
    return existing.equals(m.value()) ? ApplyResult.ALREADY_APPLIED : ApplyResult.CONFLICT;
  }

  /** Section 5.3: the first requester of a position's grant gets it; asking again is idempotent. */
  public GrantReply grant(GrantRequest m) {
    WalLayout.validateGroup(m.group());
    byte[] row = WalLayout.walRow(m.group(), m.position());
    byte[] who = m.requester().getBytes(StandardCharsets.UTF_8);
    StoreMarker at = guard.current();
    refuseIfMayBeFenced(m.group(), m.position(), at);
    // As in apply: the watermark read after the write is the one the answer needs.
    boolean granted = store.checkAndWrite(Table.WAL, row, GRANT, null, KvStore.UNVERSIONED,
        Map.of(GRANT, who));
    if (!granted) {
      granted = store.read(Table.WAL, row, GRANT, KvStore.LATEST)
          .map(c -> java.util.Arrays.equals(c.value(), who)).orElse(false);
    }
    refuseVoteAfterWrite(m.group(), m.position(), row, at);
    return new GrantReply(m.group(), m.position(), m.requester(), granted);
  }

  /**
   * The chosen value of a position, if this DC knows it.
   *
   * @throws TooOldException when it does not and the position is at or below the GC watermark
   *     (it was collected: "unknown" would invite a learner to decide it again)
   */
  public Optional<LogValue> chosen(String group, long position) {
    Optional<LogValue> v = store.read(Table.WAL, WalLayout.walRow(group, position), CHOSEN,
        KvStore.LATEST).map(c -> LogCodec.decode(c.value()));
    if (v.isEmpty()) {
      refuseIfCollected(group, position);
    }
    return v;
  }

  /**
   * The chosen cell of a position if this DC's WAL holds it, without the GC check of
   * {@link #chosen}: empty also for a collected position. For callers that treat empty only as
   * "stop here" and never as "not chosen" (the applier's look-ahead past its watermark); one
   * store read instead of two.
   */
  public Optional<LogValue> chosenIfRecorded(String group, long position) {
    return store.read(Table.WAL, WalLayout.walRow(group, position), CHOSEN, KvStore.LATEST)
        .map(c -> LogCodec.decode(c.value()));
  }

  /**
   * Before a promise, vote or grant is answered: {@link TooOldException} at or below the GC
   * watermark, {@link RebuildingException} at or below the rebuild fence, for a group this DC
   * does not serve, or when the store's marker is no longer {@code at}, the one the request
   * began under (docs/architecture.md section 12): a store lost under the running service answers
   * nothing it wrote after the loss.
   */
  private void refuseVote(String group, long position, StoreMarker at) {
    RebuildGuard.Bounds b = guard.bounds(group, at);
    if (position <= b.gcWatermark()) {
      throw new TooOldException(group, position, b.gcWatermark());
    }
    if (position <= b.fence()) {
      throw fenced(group, position, b.fence());
    }
  }

  /**
   * After a promise, vote or grant was written: as {@link #refuseVote}. A write that recreated a
   * collected row is removed again. A write refused for the rebuild is left where it is: it lies
   * at a position this DC never votes at again (at or below the fence the rebuild sets, see
   * docs/rebuilding.md), so no reply ever reports it, and removing it would
   * leave an HBase delete marker that hides the chosen value the DC learns there later.
   */
  private void refuseVoteAfterWrite(String group, long position, byte[] row, StoreMarker at) {
    RebuildGuard.Bounds b = guard.bounds(group, at);
    if (position <= b.gcWatermark()) {
      store.deleteRow(Table.WAL, row);
      throw new TooOldException(group, position, b.gcWatermark());
    }
    if (position <= b.fence()) {
      throw fenced(group, position, b.fence());
    }
  }

  /**
   * Before a write that reads nothing first (the fast-path ACCEPT, a grant): refuses at a fenced
   * position without writing, in a store that may have fences at all (one meta read; none in a
   * store that never lost its contents).
   */
  private void refuseIfMayBeFenced(String group, long position, StoreMarker at) {
    if (RebuildGuard.mayFence(at)) {
      refuseVote(group, position, at);
    }
  }

  private static RebuildingException fenced(String group, long position, long fence) {
    return new RebuildingException(group, "position " + position + " is at or below the "
        + "group's rebuild fence " + fence + " here: this DC lost what it promised and voted "
        + "there, so it does not vote there");
  }

  /** Throws {@link TooOldException} if {@code position} is at or below the GC watermark. */
  private void refuseIfCollected(String group, long position) {
    long gc = LogCollector.gcWatermark(store, group);
    if (position <= gc) {
      throw new TooOldException(group, position, gc);
    }
  }

  /**
   * After a successful write to a row: if the watermark has meanwhile reached the position, the
   * write may have recreated a collected row; it is removed again and the answer is TOO_OLD.
   */
  private void refuseIfCollectedAfterWrite(String group, long position, byte[] row) {
    long gc = LogCollector.gcWatermark(store, group);
    if (position <= gc) {
      store.deleteRow(Table.WAL, row);
      throw new TooOldException(group, position, gc);
    }
  }

  /** The acceptor's last vote for a position (for catch-up and tests). */
  public Optional<Vote> lastVote(String group, long position) {
    return Optional.ofNullable(State.read(store, WalLayout.walRow(group, position)).vote());
  }

  /**
   * One position's acceptor row, decoded.
   *
   * <p>Every change to the row is a check-and-write on the promise cell alone, so every change
   * must also change that cell's bytes: otherwise a PREPARE that read the row, then lost a race
   * to an ACCEPT of the promised ballot (which keeps the promise), would still succeed in raising
   * the promise and would report the vote it read before, i.e. none. Its proposer could then
   * propose a value other than one a majority had just accepted: two values chosen. An ACCEPT
   * therefore writes the promise followed by a {@link #VOTED} mark byte; a PREPARE writes the
   * bare ballot.
   */
  private record State(byte[] promiseBytes, Ballot promise, Ballot voteBallot, LogValue voteValue,
      LogValue chosen) {
    static final byte VOTED = 1;

    static byte[] votedPromise(Ballot b) {
      byte[] out = java.util.Arrays.copyOf(b.encode(), Ballot.ENCODED_SIZE + 1);
      out[Ballot.ENCODED_SIZE] = VOTED;
      return out;
    }

    static Ballot decodePromise(byte[] p) {
      if (p.length == Ballot.ENCODED_SIZE + 1 && p[Ballot.ENCODED_SIZE] == VOTED) {
        return Ballot.decode(java.util.Arrays.copyOf(p, Ballot.ENCODED_SIZE));
      }
      return Ballot.decode(p);
    }

    static State read(KvStore store, byte[] row) {
      Map<String, Cell> cells = store.readRow(Table.WAL, row);
      byte[] p = bytes(cells, PROMISE);
      byte[] vb = bytes(cells, VOTE_BALLOT);
      byte[] vv = bytes(cells, VOTE_VALUE);
      byte[] c = bytes(cells, CHOSEN);
      return new State(p, p == null ? null : decodePromise(p),
          vb == null ? null : Ballot.decode(vb), vv == null ? null : LogCodec.decode(vv),
          c == null ? null : LogCodec.decode(c));
    }

    private static byte[] bytes(Map<String, Cell> cells, String col) {
      Cell cell = cells.get(col);
      return cell == null ? null : cell.value();
    }

    Vote vote() {
      return voteBallot == null ? null : new Vote(voteBallot, voteValue);
    }
  }
}
