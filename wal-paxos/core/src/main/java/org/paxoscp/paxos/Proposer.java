package org.paxoscp.paxos;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.random.RandomGenerator;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.AcceptReply;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantReply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;

/**
 * The commit protocol of one transaction (Algorithm 2), as an event-driven state machine: replies
 * and timer events go in, messages and timer requests come out. It owns no threads, sockets or
 * clocks; the caller passes the current time and an injected random generator for back-off.
 *
 * <p>Runs basic Paxos ({@code findWinningVal}) or Paxos-CP ({@code enhancedFindWinningVal}) for
 * position {@code readPosition + 1}; with Paxos-CP a loser whose reads are untouched by every
 * winner since its read position is promoted to the next position. A proposer built without an
 * entry is a <em>learner</em> (section 5.4): it proposes a no-op unless a vote must be re-proposed,
 * and finishes with the position's chosen value.
 *
 * <p>Outcomes are never guessed: ABORTED only when the entry is certainly not chosen at any
 * position it was proposed for; UNKNOWN when it may still be chosen.
 *
 * <p>Not thread-safe: one caller drives it. Subclasses exist only to plant bugs in tests (the
 * protected hooks); production code uses this class as it is.
 */
public class Proposer {

  /** Something the driver must do. */
  public sealed interface Output {
    /** Send {@code message} to the DC with index {@code dc}. */
    record Send(int dc, PaxosMessage message) implements Output {}

    /**
     * Call {@link #onTimer} with {@code timerId} after {@code delayMicros}. Only the latest timer
     * matters; earlier ones may be dropped by the driver or are ignored when they fire.
     */
    record StartTimer(long timerId, long delayMicros) implements Output {}
  }

  private enum Phase { GRANT, PREPARE, GRACE, ACCEPT, BACKOFF, DONE }

  /** Why a ballot was abandoned ({@link #retry}). */
  private enum Failure {
    /** The phase timed out: some DC did not answer (a lost message, a DC down or cut off). */
    SILENT,
    /** Enough DCs answered with a higher ballot that this one cannot reach a majority. */
    CONTENDED,
    /** Enough DCs refused it OVERLOADED, or refused it and answered higher ballots. */
    OVERLOADED
  }

  /**
   * The most ballots a proposer whose entry went out at a position tries there while every
   * abandoned ballot was answered (refused by higher ballots or OVERLOADED) rather than timed
   * out, at least; {@link #settleCap}. It keeps going past {@code maxAttemptsPerPosition} so as to
   * learn the position's value instead of ending UNKNOWN while nothing failed; this cap only
   * keeps a pathological duel from running forever.
   */
  static final int SETTLE_ATTEMPTS = 64;

  /** The most ballot durations a proposer outbid by competitors waits before it retries. */
  static final long CONTENTION_SCALE_MAX = 16;

  private final ProposerConfig cfg;
  private final String group;
  private final ProposerId proposerId;
  private final LogEntry entry;
  /**
   * A leader's combined list (docs/architecture.md section 5.5), proposed like a learner's no-op;
   * or null.
   */
  private final LogValue batch;
  /** The list's proposer already holds the position's fast-path grant (asked in advance). */
  private boolean pregranted;
  private final RandomGenerator random;
  private final List<LogValue> winners = new ArrayList<>();

  private long position;
  private OptionalInt leaderDc;
  private int promotions;
  private Phase phase;
  private Ballot ballot;
  private Ballot highestSeen = Ballot.FAST;
  private int attempts;
  private long timerId;
  private long phaseStartedMicros;
  /** When the current ballot's PREPARE went out (its ACCEPT follows without a back-off). */
  private long ballotStartedMicros;
  private boolean ownEntryProposedHere;
  /** Whether some DC refused a ballot at this position (a competing proposer, not silence). */
  private boolean refusedHere;
  /** Whether some DC refused a request at this position OVERLOADED (before acting on it). */
  private boolean overloadedHere;
  /** Why the last ballot at this position was abandoned; null before any was. */
  private Failure lastFailure;
  /** Phases at this position that ended by their timeout (some DC silent). */
  private int silentAttempts;
  /** Back-offs taken because DCs refused OVERLOADED, over every position. */
  private int overloadBackoffs;
  /** Refusals OVERLOADED in a row, over positions: the overload back-off doubles with them. */
  private int overloadStreak;
  /** DCs that refused the current phase's request OVERLOADED: certainly no promise, no vote. */
  private final java.util.Set<Integer> overloadedNow = new java.util.HashSet<>();
  private LogValue proposed;
  private final Map<Integer, PrepareReply> replies = new HashMap<>();
  private final Map<Integer, Boolean> acceptReplies = new HashMap<>();
  private Outcome outcome;
  private List<Output> out;

  /**
   * @param proposerId unique across every proposer instance of the cluster (ballot uniqueness)
   * @param entry the transaction to commit, or null for a learner
   * @param position the first position to try (read position + 1)
   * @param leaderDc the index of the DC that grants the fast path for {@code position}, if known
   */
  public Proposer(ProposerConfig cfg, String group, ProposerId proposerId, LogEntry entry, long position,
      OptionalInt leaderDc, RandomGenerator random) {
    this(cfg, group, proposerId, entry, null, position, leaderDc, random);
    if (entry != null && cfg.protocol() == Protocol.LEADER) {
      throw new IllegalArgumentException("in leader combination a client submits its entry to "
          + "the leader service; proposers there run for combined lists (Proposer.forList)");
    }
  }

  private Proposer(ProposerConfig cfg, String group, ProposerId proposerId, LogEntry entry,
      LogValue batch, long position, OptionalInt leaderDc, RandomGenerator random) {
    this.cfg = Objects.requireNonNull(cfg);
    this.group = Objects.requireNonNull(group);
    this.proposerId = Objects.requireNonNull(proposerId);
    this.entry = entry;
    this.batch = batch;
    this.position = position;
    this.leaderDc = Objects.requireNonNull(leaderDc);
    this.random = Objects.requireNonNull(random);
    if (proposerId.isNone()) {
      throw new IllegalArgumentException("proposerId must not be the fast-path ballot's id");
    }
    if (position < 1) {
      throw new IllegalArgumentException("position must be >= 1");
    }
    if (entry != null && entry.readPosition() >= position) {
      throw new IllegalArgumentException("entry read position " + entry.readPosition()
          + " is not below the commit position " + position);
    }
  }

  /**
   * A leader's proposer for a combined list at {@code position} (docs/architecture.md section 5.5):
   * asks {@code leaderDc}'s grant and proposes {@code list} at the fast ballot when granted, else
   * runs basic Paxos with {@code list} as its own value. Like a learner it finishes with the
   * position's chosen value ({@link Outcome.Status#LEARNED}), which may or may not be the list,
   * or UNKNOWN when no quorum answered. The caller must have checked the placement rule for
   * every entry of {@code list} at {@code position}.
   */
  public static Proposer forList(ProposerConfig cfg, String group, ProposerId proposerId,
      LogValue list, long position, OptionalInt leaderDc, RandomGenerator random) {
    if (list.isNoop()) {
      throw new IllegalArgumentException("a combined list holds at least one entry");
    }
    for (LogEntry e : list.entries()) {
      if (e.readPosition() >= position) {
        throw new IllegalArgumentException("entry " + e.txnId() + " read at "
            + e.readPosition() + ", not below the list's position " + position);
      }
    }
    return new Proposer(cfg.withProtocol(Protocol.BASIC), group, proposerId, null,
        Objects.requireNonNull(list), position, leaderDc, random);
  }

  /**
   * As {@link #forList}, for a proposer that already holds {@code position}'s fast-path grant
   * from the position's leader DC (section 5.3): it starts with ACCEPT at the fast ballot. The
   * caller must have been granted it by the DC that the value chosen at {@code position - 1}
   * makes the leader, and nobody else may use the grant.
   */
  public static Proposer forGrantedList(ProposerConfig cfg, String group, ProposerId proposerId,
      LogValue list, long position, int leaderDc, RandomGenerator random) {
    Proposer p = forList(cfg, group, proposerId, list, position, OptionalInt.of(leaderDc),
        random);
    p.pregranted = true;
    return p;
  }

  /** A learner for {@code position}: finds out (or decides, with a no-op) its chosen value. */
  public static Proposer learner(ProposerConfig cfg, String group, ProposerId proposerId, long position,
      RandomGenerator random) {
    return new Proposer(cfg.withProtocol(Protocol.BASIC), group, proposerId, null, position,
        OptionalInt.empty(), random);
  }

  public List<Output> start(long nowMicros) {
    out = new ArrayList<>();
    beginPosition(nowMicros);
    return drain();
  }

  public boolean isDone() {
    return phase == Phase.DONE;
  }

  /** The outcome once {@link #isDone()}; null before. */
  public Outcome outcome() {
    return outcome;
  }

  /** The entity group this instance decides a position of. */
  public String group() {
    return group;
  }

  /** The position currently worked on. */
  public long position() {
    return position;
  }

  public int promotions() {
    return promotions;
  }

  /**
   * Whether an ACCEPT carrying this proposer's entry went out at its current position. While it
   * has not, and every earlier position was learned chosen without the entry, the entry cannot
   * be chosen anywhere yet: no acceptor holds it at this position, so no other proposer can
   * adopt it here. (A stopped proposer's caller reads this under the proposer's lock.)
   */
  public boolean entrySentHere() {
    return ownEntryProposedHere;
  }

  /** Handles a reply from DC {@code fromDc}; replies for other positions or ballots are ignored. */
  public List<Output> onReply(int fromDc, PaxosMessage reply, long nowMicros) {
    out = new ArrayList<>();
    if (phase != Phase.DONE && reply.position() == position && group.equals(reply.group())
        && fromDc >= 0 && fromDc < cfg.dcCount()) {
      if (reply instanceof GrantReply g) {
        onGrant(g, nowMicros);
      } else if (reply instanceof PrepareReply p) {
        onPrepareReply(fromDc, p, nowMicros);
      } else if (reply instanceof AcceptReply a) {
        onAcceptReply(fromDc, a, nowMicros);
      }
    }
    return drain();
  }

  public List<Output> onTimer(long firedTimerId, long nowMicros) {
    out = new ArrayList<>();
    if (firedTimerId == timerId && phase != Phase.DONE) {
      switch (phase) {
        case GRANT -> startPrepare(nowMicros);
        case GRACE -> decideValue(nowMicros);
        case BACKOFF -> startPrepare(nowMicros);
        case PREPARE, ACCEPT -> retry(Failure.SILENT, nowMicros);
        default -> { }
      }
    }
    return drain();
  }

  /**
   * DC {@code fromDc} refused {@code request} OVERLOADED: its service turned it away before its
   * acceptor read or wrote anything for it (docs/guarantees.md, "Overload"). So a refused grant
   * request granted nothing, a refused PREPARE promised nothing and a refused ACCEPT is certainly
   * not a vote; the refusal is counted as such and never as a vote. A ballot that can no longer
   * reach a majority of promises or votes is abandoned (always safe) and the position retried
   * after an overload back-off. It never makes the proposer infer that its value was not chosen:
   * an ACCEPT that reached even one acceptor may be adopted by another proposer, so a proposer
   * whose entry went out here ends only on learning the position's chosen value (or UNKNOWN, on
   * silence). Refusals of other positions, ballots or phases are ignored.
   */
  public List<Output> onRefused(int fromDc, PaxosMessage request, long nowMicros) {
    out = new ArrayList<>();
    if (phase != Phase.DONE && request.position() == position
        && group.equals(request.group()) && fromDc >= 0 && fromDc < cfg.dcCount()) {
      if (request instanceof GrantRequest g && phase == Phase.GRANT
          && g.requester().equals(proposerId.toString())) {
        // No grant was given: the slow path, as for a grant refused to us.
        overloadedHere = true;
        startPrepare(nowMicros);
      } else if (request instanceof Prepare p && p.ballot().equals(ballot)
          && (phase == Phase.PREPARE || phase == Phase.GRACE)) {
        overloadedHere = true;
        PrepareReply earlier = replies.get(fromDc);
        if (earlier == null || !earlier.promised()) {
          // (A promise from a copy of the PREPARE stands; see onPrepareReply.)
          overloadedNow.add(fromDc);
          afterPrepareAnswer(nowMicros);
        }
      } else if (request instanceof Accept a && a.ballot().equals(ballot)
          && phase == Phase.ACCEPT) {
        overloadedHere = true;
        if (!acceptReplies.getOrDefault(fromDc, false)) {
          overloadedNow.add(fromDc);
          afterAcceptAnswer(nowMicros);
        }
      }
    }
    return drain();
  }

  /** Back-offs this proposer took because DCs refused it OVERLOADED (for metrics). */
  public int overloadBackoffs() {
    return overloadBackoffs;
  }

  private List<Output> drain() {
    List<Output> o = out;
    out = null;
    return o;
  }

  // ---- phases ------------------------------------------------------------------------------

  private void beginPosition(long now) {
    attempts = 0;
    silentAttempts = 0;
    lastFailure = null;
    highestSeen = Ballot.FAST;
    ownEntryProposedHere = false;
    refusedHere = false;
    overloadedHere = false;
    if (pregranted) {
      pregranted = false;
      ballot = Ballot.FAST;
      sendAccept(ownValue(), now);
    } else if ((entry != null || batch != null) && leaderDc.isPresent()) {
      phase = Phase.GRANT;
      out.add(new Output.Send(leaderDc.getAsInt(), new GrantRequest(group, position,
          proposerId.toString())));
      // One request to one DC: waiting a whole phase for it when the leader is down would make
      // every commit after a leader's failure a phase slower. Going to PREPARE early is always
      // safe (a grant that arrives later is ignored, and nobody else can use it).
      startTimer(Math.max(1, cfg.phaseTimeoutMicros() / 4));
    } else {
      startPrepare(now);
    }
  }

  private void onGrant(GrantReply g, long now) {
    if (phase != Phase.GRANT || !g.requester().equals(proposerId.toString())) {
      return;
    }
    if (!g.granted()) {
      startPrepare(now);
      return;
    }
    // Section 5.3: the grant holder skips PREPARE; acceptors take FAST only if nothing promised.
    ballot = Ballot.FAST;
    sendAccept(ownValue(), now);
  }

  private void startPrepare(long now) {
    ballot = Ballot.above(highestSeen, proposerId);
    highestSeen = ballot;
    replies.clear();
    overloadedNow.clear();
    phase = Phase.PREPARE;
    phaseStartedMicros = now;
    ballotStartedMicros = now;
    for (int dc = 0; dc < cfg.dcCount(); dc++) {
      out.add(new Output.Send(dc, new Prepare(group, position, ballot)));
    }
    startTimer(cfg.phaseTimeoutMicros());
  }

  private void onPrepareReply(int dc, PrepareReply r, long now) {
    if ((phase != Phase.PREPARE && phase != Phase.GRACE) || !r.ballot().equals(ballot)) {
      return;
    }
    if (r.chosen() != null) {
      learnedChosen(r.chosen(), now);
      return;
    }
    noteBallot(r.promise());
    refusedHere |= !r.promised();
    // A promise, once given for this ballot, stands: a duplicated or late reply from the same DC
    // (for example a rejection of a duplicated PREPARE) must not take it back, or the quorum the
    // value is chosen from could silently shrink below a majority.
    PrepareReply earlier = replies.get(dc);
    if (earlier == null || !earlier.promised()) {
      replies.put(dc, r);
    }
    Optional<LogValue> known = knownChosen(replies.values());
    if (known.isPresent()) {
      learnedChosen(known.get(), now);
      return;
    }
    afterPrepareAnswer(now);
  }

  /**
   * After a PREPARE reply or refusal: abandon the ballot once more DCs refused it (a higher
   * ballot, or OVERLOADED) than may stay out of a majority; decide a value once a majority
   * promised and every DC answered (else after the grace period).
   */
  private void afterPrepareAnswer(long now) {
    int promised = 0;
    int refused = 0;
    for (PrepareReply p : replies.values()) {
      promised += p.promised() ? 1 : 0;
      refused += p.promised() ? 0 : 1;
    }
    int overloaded = 0;
    for (int dc : overloadedNow) {
      if (!replies.containsKey(dc)) {
        overloaded++;
      }
    }
    if (refused + overloaded > cfg.dcCount() - cfg.majority()) {
      if (phase == Phase.PREPARE) {
        retry(overloaded > 0 ? Failure.OVERLOADED : Failure.CONTENDED, now);
      } else {
        // GRACE: a majority promised already; nobody else will answer, so decide now.
        decideValue(now);
      }
    } else if (promised >= cfg.majority()) {
      if (replies.size() + overloaded == cfg.dcCount() || cfg.graceFraction() == 0) {
        decideValue(now);
      } else if (phase == Phase.PREPARE) {
        phase = Phase.GRACE;
        startTimer(Math.max(1, (long) ((now - phaseStartedMicros) * cfg.graceFraction())));
      }
    }
  }

  /** Algorithm 2 line 43: pick the value to propose from a quorum of promises. */
  private void decideValue(long now) {
    List<Vote> votes = new ArrayList<>();
    int responses = 0;
    for (PrepareReply p : replies.values()) {
      if (p.promised()) {
        responses++;
        if (p.lastVote() != null) {
          votes.add(p.lastVote());
        }
      }
    }
    if (responses < cfg.majority()) {
      // Only reachable if promises were lost from the quorum; proposing now would be unsafe.
      throw new IllegalStateException("deciding a value with " + responses + " promises");
    }
    Vote highest = null;
    for (Vote v : votes) {
      if (highest == null || v.ballot().greaterThan(highest.ballot())) {
        highest = v;
      }
    }
    LogValue own = ownValue();
    LogValue value;
    if (cfg.protocol() == Protocol.CP && entry != null
        && noValueCanBeChosen(votes, responses)) {
      // Section 5.2, combination: with per-value counts (any ballot) no value can have a
      // majority, so any value may be proposed; propose a serializable list led by our entry.
      List<LogEntry> candidates = new ArrayList<>();
      for (Vote v : votes) {
        candidates.addAll(v.value().entries());
      }
      value = combine(entry, candidates, position);
      // Any prefix of a valid list led by our entry is valid too (removing entries removes
      // constraints), so trimming the tail to what the transport can carry stays safe.
      while (value.entries().size() > 1 && LogCodec.encode(value).length > cfg.maxValueBytes()) {
        value = new LogValue(value.entries().subList(0, value.entries().size() - 1));
      }
    } else {
      // findWinningVal (lines 66-75): the highest-ballot vote, else our own value.
      value = highest != null ? highest.value() : own;
    }
    sendAccept(value, now);
  }

  /** maxVotes + (D - |R|) < M, votes counted per value across ballots (enhancedFindWinningVal). */
  private boolean noValueCanBeChosen(List<Vote> votes, int responses) {
    Map<LogValue, Integer> perValue = new HashMap<>();
    int max = 0;
    for (Vote v : votes) {
      max = Math.max(max, perValue.merge(v.value(), 1, Integer::sum));
    }
    return max + (cfg.dcCount() - responses) < cfg.majority();
  }

  private void sendAccept(LogValue value, long now) {
    proposed = value;
    if (ballot.equals(Ballot.FAST)) {
      ballotStartedMicros = now;
    }
    if (entry != null && value.contains(entry.txnId())) {
      ownEntryProposedHere = true;
    }
    acceptReplies.clear();
    overloadedNow.clear();
    phase = Phase.ACCEPT;
    phaseStartedMicros = now;
    for (int dc = 0; dc < cfg.dcCount(); dc++) {
      out.add(new Output.Send(dc, new Accept(group, position, ballot, value)));
    }
    startTimer(cfg.phaseTimeoutMicros());
  }

  private void onAcceptReply(int dc, AcceptReply r, long now) {
    if (phase != Phase.ACCEPT || !r.ballot().equals(ballot)) {
      return;
    }
    if (r.chosen() != null) {
      learnedChosen(r.chosen(), now);
      return;
    }
    if (r.promise() != null) {
      noteBallot(r.promise());
    }
    // As for promises: an acceptance is a fact about this ballot and is never taken back.
    acceptReplies.merge(dc, r.accepted(), Boolean::logicalOr);
    refusedHere |= !r.accepted();
    afterAcceptAnswer(now);
  }

  /**
   * After an ACCEPT reply or refusal: chosen once a majority voted in this ballot; the ballot
   * abandoned once more DCs refused it (a higher ballot, or OVERLOADED, neither a vote) than may
   * stay out of a majority. Abandoning says only that this ballot cannot be chosen: a value it
   * carried may still be, through another proposer that adopts a vote it left, so the proposer
   * retries the position and never infers "not chosen" from it.
   */
  private void afterAcceptAnswer(long now) {
    int yes = 0;
    for (boolean b : acceptReplies.values()) {
      yes += b ? 1 : 0;
    }
    int no = acceptReplies.size() - yes;
    int overloaded = 0;
    for (int dc : overloadedNow) {
      if (!acceptReplies.containsKey(dc)) {
        overloaded++;
      }
    }
    if (yes >= cfg.majority()) {
      learnedChosen(proposed, now);
    } else if (no + overloaded > cfg.dcCount() - cfg.majority()) {
      retry(overloaded > 0 ? Failure.OVERLOADED : Failure.CONTENDED, now);
    }
  }

  /**
   * Abandons the current ballot: gives up once the position's attempts are spent, else backs off
   * and prepares a higher ballot. While its entry has not gone out here, {@code
   * maxAttemptsPerPosition} ballots of any kind end it (ABORTED: certainly not in the log). Once
   * its entry went out, only ballots that timed out count against that bound; ballots refused by
   * answering DCs (contention, overload) go on, up to {@link #settleCap}, since giving up would
   * make the outcome UNKNOWN where no message was lost and no process failed. An OVERLOADED
   * refusal backs off longer: {@link #overloadBackoffMicros}; a ballot outbid by competing
   * proposers backs off for {@link #contentionBackoffMicros}.
   */
  private void retry(Failure why, long now) {
    attempts++;
    lastFailure = why;
    if (why == Failure.SILENT) {
      silentAttempts++;
    }
    boolean settling = entry != null && ownEntryProposedHere && settlesPastAnsweredRefusals();
    boolean spent = settling
        ? silentAttempts >= cfg.maxAttemptsPerPosition() || attempts >= settleCap()
        : attempts >= cfg.maxAttemptsPerPosition();
    if (spent) {
      giveUp();
      return;
    }
    phase = Phase.BACKOFF;
    long delay;
    if (why == Failure.OVERLOADED) {
      overloadBackoffs++;
      overloadStreak++;
      delay = overloadBackoffMicros();
    } else {
      overloadStreak = 0;
      long bound = Math.min(cfg.backoffMaxMicros(),
          cfg.backoffBaseMicros() << Math.min(20, attempts - 1));
      if (why == Failure.CONTENDED) {
        bound = Math.max(bound, contentionBackoffMicros(now));
      }
      delay = 1 + random.nextLong(bound);
    }
    startTimer(delay);
  }

  /**
   * The back-off bound after a ballot outbid by competing proposers, scaled to how long the
   * ballot took: the time from its PREPARE until it was abandoned, doubled per ballot lost at
   * the position, from 2 up to {@link #CONTENTION_SCALE_MAX} times. Duelling proposers settle
   * once one of them gets through PREPARE and ACCEPT while the others wait, so their waits must
   * spread over several ballots' durations; a fixed bound ({@code backoffMax}) does that on an
   * idle network but not when queueing at busy services stretches each phase to hundreds of
   * milliseconds. A ballot is never measured longer than two phase timeouts.
   */
  private long contentionBackoffMicros(long now) {
    long took = Math.min(2 * cfg.phaseTimeoutMicros(), Math.max(0, now - ballotStartedMicros));
    long scale = Math.min(CONTENTION_SCALE_MAX, 2L << Math.min(20, attempts - 1));
    return Math.max(1, took * scale);
  }

  /**
   * The wait after an OVERLOADED refusal: exponential in the refusals in a row, from a quarter
   * of {@code backoffMax} up to four times it, with "equal jitter" (uniform in the upper half of
   * the bound), so a refused proposer always waits a while and refused proposers spread out.
   */
  private long overloadBackoffMicros() {
    long first = Math.max(cfg.backoffBaseMicros(), cfg.backoffMaxMicros() / 4);
    long bound = Math.min(4 * cfg.backoffMaxMicros(),
        first << Math.min(20, overloadStreak - 1));
    long half = Math.max(1, bound / 2);
    return half + random.nextLong(half);
  }

  /** Ballots a proposer whose entry went out at a position tries there at most. */
  private int settleCap() {
    return Math.max(SETTLE_ATTEMPTS, 8 * cfg.maxAttemptsPerPosition());
  }

  private void giveUp() {
    String why = "no quorum at position " + position + " after " + attempts + " attempts ("
        + (lastFailure == Failure.SILENT
            ? "too few DCs answered" + (overloadedHere ? "; some refused it OVERLOADED" : "")
        : overloadedHere ? "DCs refused it OVERLOADED" + (refusedHere
            ? ", competing proposers held higher ballots" : "")
        : refusedHere ? "competing proposers held higher ballots" : "too few DCs answered")
        + ")";
    if (entry == null || ownEntryProposedHere) {
      // Our entry went out in an ACCEPT here: it may be chosen later by anyone who finishes the
      // instance. Never report ABORTED for it.
      finish(Outcome.Status.UNKNOWN, null, why);
    } else {
      // Every earlier position is decided without our entry, and no ACCEPT carried it here.
      finish(Outcome.Status.ABORTED, null, why);
    }
  }

  /** A value is known chosen at {@code position}: finish, abort, or promote. */
  private void learnedChosen(LogValue chosen, long now) {
    for (int dc = 0; dc < cfg.dcCount(); dc++) {
      out.add(new Output.Send(dc, new Apply(group, position, chosen)));
    }
    if (entry == null) {
      finish(Outcome.Status.LEARNED, chosen, null);
      return;
    }
    if (chosen.contains(entry.txnId())) {
      finish(Outcome.Status.COMMITTED, chosen, null);
      return;
    }
    winners.add(chosen);
    if (cfg.protocol() != Protocol.CP) {
      finish(Outcome.Status.ABORTED, chosen, "lost position " + position);
      return;
    }
    if (conflictsWithWinner(entry, chosen)) {
      finish(Outcome.Status.ABORTED, chosen,
          "read a key written at position " + position + ", or would break a cross-group lock "
              + "taken there, by " + writersOf(chosen));
      return;
    }
    if (cfg.maxPromotions() >= 0 && promotions >= cfg.maxPromotions()) {
      finish(Outcome.Status.ABORTED, chosen, "promotion cap " + cfg.maxPromotions() + " reached");
      return;
    }
    // Promotion (section 5): the entry read nothing written by any winner since its read
    // position (each winner was checked as it was learned), so it is valid at position + 1.
    promotions++;
    position++;
    leaderDc = leaderOf(chosen);
    beginPosition(now);
  }

  /** What this proposer proposes when no vote forces a value. */
  private LogValue ownValue() {
    if (entry != null) {
      return LogValue.of(entry);
    }
    return batch != null ? batch : LogValue.NOOP;
  }

  private String writersOf(LogValue v) {
    List<String> ids = new ArrayList<>();
    for (LogEntry e : v.entries()) {
      if (Placement.conflicts(e, entry)) {
        ids.add(e.txnId());
      }
    }
    return ids.toString();
  }

  private OptionalInt leaderOf(LogValue chosen) {
    return leaderAfter(cfg.dcs(), chosen);
  }

  /**
   * Section 5.3 for a group's first position, which has no value before it: its grantor is the
   * DC whose index is the group's row-key bucket ({@link WalLayout#bucket}) modulo the number of
   * DCs — a function of the group alone, so every proposer that takes the fast path at position
   * 1 asks the same DC (one grantor per position), and new groups' first grants spread over the
   * DCs. A proposer that does not use it runs the slow path there, which is always safe.
   */
  public static OptionalInt leaderOfFirst(List<String> dcs, String group) {
    return OptionalInt.of(WalLayout.bucket(group) % dcs.size());
  }

  /**
   * Section 5.3: the leader (fast-path grantor) of position p+1 is the DC of the first entry of
   * the value chosen at p; none after a no-op. Every caller must use this one rule, since the
   * fast path is safe only while each position has a single grantor.
   */
  public static OptionalInt leaderAfter(List<String> dcs, LogValue chosen) {
    if (chosen.isNoop()) {
      return OptionalInt.empty();
    }
    int idx = dcs.indexOf(chosen.entries().get(0).originDc());
    return idx < 0 ? OptionalInt.empty() : OptionalInt.of(idx);
  }

  private void finish(Outcome.Status status, LogValue chosen, String reason) {
    phase = Phase.DONE;
    // Overloaded only when refusals OVERLOADED ended the last ballot: one that ended at its
    // timeout (a DC silent, down or cut off) is unavailability even if another DC refused it.
    outcome = new Outcome(status, position, promotions, chosen, reason,
        chosen == null && refusedHere, chosen == null ? 0 : chosen.entries().size(), position,
        chosen == null && overloadedHere && lastFailure == Failure.OVERLOADED);
  }

  private void noteBallot(Ballot b) {
    if (b != null && b.greaterThan(highestSeen)) {
      highestSeen = b;
    }
  }

  private void startTimer(long delay) {
    timerId++;
    out.add(new Output.StartTimer(timerId, delay));
  }

  // ---- the two safety-critical rules, overridable only to plant bugs in tests -------------

  /**
   * docs/architecture.md section 5.2: a value is <em>known chosen</em> only if a majority of DCs
   * report their last vote for it in the <em>same</em> ballot. Counting votes per value across
   * ballots is not enough (see the counterexample there).
   */
  protected Optional<LogValue> knownChosen(Iterable<PrepareReply> prepareReplies) {
    Map<Ballot, List<LogValue>> byBallot = new LinkedHashMap<>();
    for (PrepareReply p : prepareReplies) {
      if (p.lastVote() != null) {
        byBallot.computeIfAbsent(p.lastVote().ballot(), b -> new ArrayList<>())
            .add(p.lastVote().value());
      }
    }
    for (List<LogValue> vs : byBallot.values()) {
      // One ballot carries one value; the check guards against a broken fast-path grant.
      if (vs.size() >= cfg.majority() && vs.stream().distinct().count() == 1) {
        return Optional.of(vs.get(0));
      }
    }
    return Optional.empty();
  }

  /**
   * Promotion test: does our entry read a key that {@code winner} wrote, or break the locks of a
   * PREPARE in it ({@link Placement})?
   */
  protected boolean conflictsWithWinner(LogEntry own, LogValue winner) {
    return Placement.conflicts(winner, own);
  }

  /**
   * Section 5, combination: the list to propose at {@code position}, led by our entry, from the
   * entries voted for there ({@link Combination}: no entry reads what an earlier one writes, by
   * key or inside a scanned range, nor breaks an earlier PREPARE's locks).
   */
  protected LogValue combine(LogEntry own, List<LogEntry> candidates, long position) {
    return Combination.combine(own, candidates, position, cfg.exhaustiveCombinationLimit());
  }

  /**
   * Whether a proposer whose entry went out at its position keeps trying there past {@code
   * maxAttemptsPerPosition} while the abandoned ballots were answered rather than timed out
   * ({@link #retry}); a planted bug says no, and reports UNKNOWN where nothing failed.
   */
  protected boolean settlesPastAnsweredRefusals() {
    return true;
  }

  /** Number of DCs that make a majority; for subclasses. */
  protected final int majority() {
    return cfg.majority();
  }
}
