package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BiPredicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;
import org.paxoscp.paxos.Outcome.Status;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.AcceptReply;
import org.paxoscp.paxos.PaxosMessage.Apply;
import org.paxoscp.paxos.PaxosMessage.GrantReply;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.paxos.PaxosMessage.PrepareReply;
import org.paxoscp.paxos.Proposer.Output;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * The proposer state machine driven by hand: its messages go to real {@link Acceptor}s over three
 * {@link InMemoryKvStore}s through {@link Net}, which can drop or duplicate chosen messages, and
 * timers fire only when a test fires them.
 */
@Timeout(10)
class ProposerTest {

  private static final String G = "group-1";
  private static final List<String> DCS = List.of("dc0", "dc1", "dc2");
  private static final long P = 5;
  private static final int MAX_ATTEMPTS = 3;

  // ---- harness ----------------------------------------------------------------------------

  /** Three acceptors and a hand-cranked network: requests are served at once, in send order. */
  static final class Net {
    final List<Acceptor> acceptors = new ArrayList<>();
    /** Every message the proposer asked to send, delivered or not. */
    final List<Output.Send> sent = new ArrayList<>();
    final List<Output.StartTimer> timers = new ArrayList<>();
    BiPredicate<Integer, PaxosMessage> dropRequest = (dc, m) -> false;
    BiPredicate<Integer, PaxosMessage> dropReply = (dc, m) -> false;
    /** Requests for which the network delivers a second copy (and its reply) right after. */
    BiPredicate<Integer, PaxosMessage> duplicateRequest = (dc, m) -> false;
    /** Requests the DC's service refuses OVERLOADED: its acceptor never sees them. */
    BiPredicate<Integer, PaxosMessage> refuse = (dc, m) -> false;
    long now = 1_000_000;

    Net() {
      for (int i = 0; i < DCS.size(); i++) {
        acceptors.add(new Acceptor(new InMemoryKvStore()));
      }
    }

    Acceptor dc(int i) {
      return acceptors.get(i);
    }

    Proposer start(Proposer p) {
      deliver(p, p.start(now));
      return p;
    }

    void deliver(Proposer p, List<Output> outputs) {
      Deque<Output> queue = new ArrayDeque<>(outputs);
      while (!queue.isEmpty()) {
        Output o = queue.poll();
        if (o instanceof Output.StartTimer t) {
          timers.add(t);
          continue;
        }
        Output.Send s = (Output.Send) o;
        sent.add(s);
        assertTrue(s.dc() >= 0 && s.dc() < acceptors.size(),
            "send to a DC that does not exist: " + s);
        if (dropRequest.test(s.dc(), s.message())) {
          continue;
        }
        if (refuse.test(s.dc(), s.message())) {
          queue.addAll(p.onRefused(s.dc(), s.message(), now));
          continue;
        }
        int copies = duplicateRequest.test(s.dc(), s.message()) ? 2 : 1;
        for (int c = 0; c < copies; c++) {
          PaxosMessage reply = serve(s.dc(), s.message());
          if (reply != null && !dropReply.test(s.dc(), reply)) {
            queue.addAll(p.onReply(s.dc(), reply, now));
          }
        }
      }
    }

    PaxosMessage serve(int dc, PaxosMessage m) {
      Acceptor a = acceptors.get(dc);
      if (m instanceof Prepare x) {
        return a.prepare(x);
      } else if (m instanceof Accept x) {
        return a.accept(x);
      } else if (m instanceof GrantRequest x) {
        return a.grant(x);
      } else if (m instanceof Apply x) {
        assertNotEquals(Acceptor.ApplyResult.CONFLICT, a.apply(x),
            "DC " + dc + " was told a second chosen value for " + x.position());
        return null;
      }
      throw new AssertionError("unexpected message " + m);
    }

    long latestTimer() {
      return timers.get(timers.size() - 1).timerId();
    }

    void fire(Proposer p, long timerId) {
      deliver(p, p.onTimer(timerId, now));
    }

    void fireLatest(Proposer p) {
      Output.StartTimer t = timers.get(timers.size() - 1);
      now += t.delayMicros();
      fire(p, t.timerId());
    }

    Outcome runToEnd(Proposer p) {
      for (int i = 0; i < 100 && !p.isDone(); i++) {
        fireLatest(p);
      }
      assertTrue(p.isDone(), "proposer did not finish");
      return p.outcome();
    }

    <T extends PaxosMessage> List<T> sentOf(Class<T> type) {
      return sent.stream().map(Output.Send::message).filter(type::isInstance).map(type::cast)
          .toList();
    }

    <T extends PaxosMessage> List<Output.Send> sendsOf(Class<T> type) {
      return sent.stream().filter(s -> type.isInstance(s.message())).toList();
    }

    int indexOfFirst(Class<? extends PaxosMessage> type, long position) {
      for (int i = 0; i < sent.size(); i++) {
        PaxosMessage m = sent.get(i).message();
        if (type.isInstance(m) && m.position() == position) {
          return i;
        }
      }
      return -1;
    }
  }

  private static ProposerConfig cfg(Protocol protocol) {
    return new ProposerConfig(protocol, DCS, 1_000, 10, 100, MAX_ATTEMPTS, -1, 0.5, 6,
        Integer.MAX_VALUE);
  }

  private static Random rnd() {
    return new Random(42);
  }

  private static Proposer proposer(Protocol protocol, long id, LogEntry e) {
    return new Proposer(cfg(protocol), G, ProposerId.of(id), e, P, OptionalInt.empty(), rnd());
  }

  private static LogEntry entry(String id, String origin, Set<String> reads, Set<String> writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put((id + "=" + k).getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(id, origin, P - 1, new TreeSet<>(reads), w);
  }

  /** A value written by a client outside the test's DC list (so it names no fast-path leader). */
  private static LogValue value(String id, Set<String> reads, Set<String> writes) {
    return LogValue.of(entry(id, "elsewhere", reads, writes));
  }

  private static void promise(Acceptor a, long position, Ballot b) {
    assertTrue(a.prepare(new Prepare(G, position, b)).promised());
  }

  private static void vote(Acceptor a, long position, Ballot b, LogValue v) {
    promise(a, position, b);
    assertTrue(a.accept(new Accept(G, position, b, v)).accepted());
  }

  private static Ballot b(long round, long id) {
    return Ballot.of(round, id);
  }

  private static void assertChosenEverywhere(Net net, long position, LogValue v) {
    for (int i = 0; i < DCS.size(); i++) {
      assertEquals(Optional.of(v), net.dc(i).chosen(G, position), "chosen at DC " + i);
    }
  }

  // ---- commit paths -----------------------------------------------------------------------

  @ParameterizedTest
  @EnumSource(value = Protocol.class, names = {"BASIC", "CP"})
  void uncontendedCommitRunsPrepareAcceptApply(Protocol protocol) {
    Net net = new Net();
    LogEntry e = entry("t1", "dc0", Set.of("a"), Set.of("b"));
    Proposer p = net.start(proposer(protocol, 7, e));

    Outcome o = p.outcome();
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(e.readPosition() + 1, o.position());
    assertEquals(0, o.promotions());
    assertEquals(LogValue.of(e), o.chosen());
    assertFalse(o.combined());
    assertNull(o.reason());

    List<Prepare> prepares = net.sentOf(Prepare.class);
    assertEquals(3, prepares.size());
    Ballot ballot = prepares.get(0).ballot();
    assertFalse(ballot.isFast());
    assertEquals(ProposerId.of(7), ballot.proposerId());
    assertTrue(prepares.stream().allMatch(m -> m.ballot().equals(ballot) && m.position() == P));
    List<Accept> accepts = net.sentOf(Accept.class);
    assertEquals(3, accepts.size());
    assertTrue(accepts.stream().allMatch(m -> m.ballot().equals(ballot)
        && m.value().equals(LogValue.of(e))));
    assertEquals(List.of(Prepare.class, Prepare.class, Prepare.class, Accept.class, Accept.class,
        Accept.class, Apply.class, Apply.class, Apply.class),
        net.sent.stream().map(s -> s.message().getClass()).toList());
    assertEquals(Set.of(0, 1, 2), Set.copyOf(net.sendsOf(Apply.class).stream()
        .map(Output.Send::dc).toList()));
    assertChosenEverywhere(net, P, LogValue.of(e));
  }

  @Test
  void grantedFastPathAcceptsWithTheFastBallotAndNoPrepare() {
    Net net = new Net();
    LogEntry e = entry("t1", "dc1", Set.of("a"), Set.of("b"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP), G, ProposerId.of(7), e, P, OptionalInt.of(1), rnd()));

    Output.Send first = net.sent.get(0);
    assertEquals(1, first.dc(), "the grant request goes to the leader first");
    assertEquals(new GrantRequest(G, P, ProposerId.of(7).toString()), first.message());
    assertTrue(net.sentOf(Prepare.class).isEmpty());
    List<Accept> accepts = net.sentOf(Accept.class);
    assertEquals(3, accepts.size());
    assertTrue(accepts.stream().allMatch(a -> a.ballot().equals(Ballot.FAST)));
    assertEquals(Status.COMMITTED, p.outcome().status());
    assertEquals(P, p.outcome().position());
    for (int i = 0; i < 3; i++) {
      assertEquals(Ballot.FAST, net.dc(i).lastVote(G, P).orElseThrow().ballot());
    }
  }

  @Test
  void refusedGrantFallsBackToPrepare() {
    Net net = new Net();
    assertTrue(net.dc(1).grant(new GrantRequest(G, P, "99")).granted());
    LogEntry e = entry("t1", "dc1", Set.of("a"), Set.of("b"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP), G, ProposerId.of(7), e, P, OptionalInt.of(1), rnd()));

    assertTrue(net.sent.get(0).message() instanceof GrantRequest);
    assertEquals(3, net.sentOf(Prepare.class).size());
    assertTrue(net.sentOf(Prepare.class).stream().noneMatch(m -> m.ballot().isFast()));
    assertTrue(net.sentOf(Accept.class).stream().noneMatch(m -> m.ballot().isFast()));
    assertEquals(Status.COMMITTED, p.outcome().status());
  }

  @Test
  void lostGrantReplyFallsBackToPrepareOnTimeout() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> m instanceof GrantRequest;
    LogEntry e = entry("t1", "dc1", Set.of("a"), Set.of("b"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP), G, ProposerId.of(7), e, P, OptionalInt.of(1), rnd()));
    assertFalse(p.isDone());
    assertTrue(net.sentOf(Prepare.class).isEmpty(), "waits for the grant first");
    net.fireLatest(p);
    assertEquals(3, net.sentOf(Prepare.class).size());
    assertEquals(Status.COMMITTED, p.outcome().status());
    assertTrue(net.sentOf(Accept.class).stream().noneMatch(m -> m.ballot().isFast()));
  }

  // ---- losing a position: abort, promotion, cap --------------------------------------------

  @Test
  void basicPaxosAbortsWhenThePositionIsAlreadyChosen() {
    Net net = new Net();
    LogValue w = value("w", Set.of(), Set.of("x"));
    vote(net.dc(0), P, b(1, 1), w);
    vote(net.dc(1), P, b(1, 1), w);
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));

    Outcome o = p.outcome();
    assertEquals(Status.ABORTED, o.status());
    assertEquals(P, o.position());
    assertEquals(w, o.chosen());
    assertTrue(o.reason().contains("lost position " + P), o.reason());
    assertTrue(net.sentOf(Accept.class).isEmpty(), "the chosen value was learned from the votes");
    assertChosenEverywhere(net, P, w);
  }

  @Test
  void paxosCpPromotesPastANonConflictingWinnerAndCommitsAtTheNextPosition() {
    Net net = new Net();
    // The winner came from dc2, so dc2 leads (grants the fast path of) the next position.
    LogValue w = LogValue.of(entry("w", "dc2", Set.of(), Set.of("x")));
    vote(net.dc(0), P, b(1, 1), w);
    vote(net.dc(1), P, b(1, 1), w);
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));

    Outcome o = p.outcome();
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(P + 1, o.position());
    assertEquals(1, o.promotions());
    assertEquals(1, p.promotions());
    assertEquals(LogValue.of(e), o.chosen());
    assertEquals(List.of(new Output.Send(2, new GrantRequest(G, P + 1, ProposerId.of(7).toString()))),
        net.sendsOf(GrantRequest.class));
    assertChosenEverywhere(net, P, w);
    assertChosenEverywhere(net, P + 1, LogValue.of(e));
  }

  @Test
  void paxosCpAbortsWhenTheWinnerWroteAKeyTheEntryRead() {
    Net net = new Net();
    LogValue w = value("w", Set.of(), Set.of("y", "q"));
    vote(net.dc(0), P, b(1, 1), w);
    vote(net.dc(1), P, b(1, 1), w);
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));

    Outcome o = p.outcome();
    assertEquals(Status.ABORTED, o.status());
    assertEquals(P, o.position());
    assertEquals(0, o.promotions());
    assertEquals(w, o.chosen());
    assertTrue(o.reason().contains("[w]"), o.reason());
    assertTrue(net.sent.stream().noneMatch(s -> s.message().position() != P),
        "nothing is sent for a later position");
  }

  @Test
  void promotionCapZeroAbortsInsteadOfPromoting() {
    Net net = new Net();
    LogValue w = value("w", Set.of(), Set.of("x"));
    vote(net.dc(0), P, b(1, 1), w);
    vote(net.dc(1), P, b(1, 1), w);
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP).withMaxPromotions(0), G, ProposerId.of(7), e, P,
        OptionalInt.empty(), rnd()));

    Outcome o = p.outcome();
    assertEquals(Status.ABORTED, o.status());
    assertEquals(P, o.position());
    assertEquals(0, o.promotions());
    assertTrue(o.reason().contains("cap"), o.reason());
    assertTrue(net.sent.stream().noneMatch(s -> s.message().position() != P));
  }

  @ParameterizedTest
  @ValueSource(ints = {-1, 1, 2})
  void promotionCapCountsEveryPromotion(int cap) {
    Net net = new Net();
    LogValue w1 = value("w1", Set.of(), Set.of("x1"));
    LogValue w2 = value("w2", Set.of(), Set.of("x2"));
    for (int dc = 0; dc < 2; dc++) {
      vote(net.dc(dc), P, b(1, 1), w1);
      vote(net.dc(dc), P + 1, b(1, 2), w2);
    }
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP).withMaxPromotions(cap), G, ProposerId.of(7), e, P,
        OptionalInt.empty(), rnd()));
    Outcome o = net.runToEnd(p);
    if (cap == 1) {
      assertEquals(Status.ABORTED, o.status());
      assertEquals(P + 1, o.position());
      assertEquals(1, o.promotions());
      assertEquals(w2, o.chosen());
    } else {
      assertEquals(Status.COMMITTED, o.status());
      assertEquals(P + 2, o.position());
      assertEquals(2, o.promotions());
    }
  }

  @Test
  void aChosenValueInAPrepareReplyIsUsedWithoutAnAcceptPhase() {
    Net net = new Net();
    LogValue w = value("w", Set.of(), Set.of("x"));
    assertEquals(Acceptor.ApplyResult.APPLIED, net.dc(0).apply(new Apply(G, P, w)));
    // Only DC 0 answers: one reply carrying the decision is enough, no quorum needed.
    net.dropRequest = (dc, m) -> dc != 0 && m instanceof Prepare;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));

    assertTrue(p.isDone());
    assertEquals(Status.ABORTED, p.outcome().status());
    assertEquals(w, p.outcome().chosen());
    assertTrue(net.sentOf(Accept.class).isEmpty());
    assertChosenEverywhere(net, P, w);
  }

  // ---- known chosen: one ballot, not one value --------------------------------------------

  private static final LogValue COUNTER_V = value("v", Set.of(), Set.of("vk"));
  /** W writes k, which the proposer's entry reads: promoting past V would be unserializable. */
  private static final LogValue COUNTER_W = value("w", Set.of(), Set.of("k"));
  private static final LogEntry COUNTER_E = entry("e", "dc0", Set.of("k"), Set.of("ek"));

  /**
   * docs/architecture.md section 5.2's counterexample: V has votes at A (ballot 1.1) and B (ballot
   * 3.3), W one at C (2.2). No ballot has a majority and W can still be chosen, so a proposer that
   * reaches only A and B must not treat V as chosen (nor promote past it): it must run an ACCEPT
   * phase.
   */
  private static Net counterexample() {
    Net net = new Net();
    Acceptor dcA = net.dc(0);
    Acceptor dcB = net.dc(1);
    Acceptor dcC = net.dc(2);
    vote(dcA, P, b(1, 1), COUNTER_V);
    promise(dcB, P, b(2, 2));
    vote(dcC, P, b(2, 2), COUNTER_W);
    promise(dcA, P, b(3, 3));
    vote(dcB, P, b(3, 3), COUNTER_V);
    net.dropRequest = (dc, m) -> dc == 2;
    return net;
  }

  @Test
  void votesForOneValueInDifferentBallotsAreNotKnownChosen() {
    Net net = counterexample();
    Proposer p = net.start(proposer(Protocol.CP, 4, COUNTER_E));
    // First round: A and B reject ballot 1.4 but report V@1.1 and V@3.3.
    assertEquals(3, net.sentOf(Prepare.class).size());
    assertTrue(net.sentOf(Prepare.class).stream().allMatch(m -> m.ballot().equals(b(1, 4))));
    assertFalse(p.isDone());
    assertEquals(P, p.position());
    assertTrue(net.sentOf(Apply.class).isEmpty(), "V must not be taken as chosen");

    Outcome o = net.runToEnd(p);
    // V is proposed in a real ACCEPT phase (the highest-ballot vote among A and B) and only
    // applied after a majority accepted it in one ballot.
    int firstAccept = net.indexOfFirst(Accept.class, P);
    int firstApply = net.indexOfFirst(Apply.class, P);
    assertTrue(firstAccept >= 0 && firstApply > firstAccept, "ACCEPT before APPLY");
    Accept accept = (Accept) net.sent.get(firstAccept).message();
    assertEquals(COUNTER_V, accept.value());
    assertEquals(accept.ballot(), net.dc(0).lastVote(G, P).orElseThrow().ballot());
    assertEquals(accept.ballot(), net.dc(1).lastVote(G, P).orElseThrow().ballot());
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(P + 1, o.position());
  }

  /**
   * The planted bug docs/architecture.md section 5.2 warns about: "known chosen" counted per
   * value.
   */
  static final class PerValueCounting extends Proposer {
    PerValueCounting(ProposerConfig cfg, LogEntry e) {
      super(cfg, G, ProposerId.of(4), e, P, OptionalInt.empty(), rnd());
    }

    @Override
    protected Optional<LogValue> knownChosen(Iterable<PrepareReply> replies) {
      Map<LogValue, Integer> n = new HashMap<>();
      for (PrepareReply r : replies) {
        if (r.lastVote() != null && n.merge(r.lastVote().value(), 1, Integer::sum) >= majority()) {
          return Optional.of(r.lastVote().value());
        }
      }
      return Optional.empty();
    }
  }

  @Test
  void theCounterexampleCatchesPerValueCounting() {
    // Proves the test above can fail: the planted bug applies V at once, without an ACCEPT.
    Net net = counterexample();
    Proposer p = net.start(new PerValueCounting(cfg(Protocol.CP), COUNTER_E));
    assertTrue(net.indexOfFirst(Apply.class, P) >= 0);
    assertEquals(-1, net.indexOfFirst(Accept.class, P));
    assertEquals(P + 1, p.position(), "promoted on a value that was never chosen");
  }

  // ---- combination ------------------------------------------------------------------------

  @Test
  void whenNoValueCanHaveAMajorityTheAcceptCarriesOwnEntryPlusNonConflictingVotes() {
    Net net = new Net();
    LogEntry x = entry("x", "elsewhere", Set.of("a"), Set.of("b"));
    LogEntry y = entry("y", "elsewhere", Set.of("k1"), Set.of("c")); // reads what own writes
    vote(net.dc(0), P, b(1, 1), LogValue.of(x));
    vote(net.dc(1), P, b(1, 2), LogValue.of(y));
    LogEntry e = entry("e", "dc0", Set.of("r"), Set.of("k1"));
    Proposer p = net.start(proposer(Protocol.CP, 9, e));

    List<Accept> accepts = net.sentOf(Accept.class);
    assertEquals(3, accepts.size());
    assertEquals(LogValue.of(e, x), accepts.get(0).value());
    Outcome o = p.outcome();
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(P, o.position());
    assertEquals(LogValue.of(e, x), o.chosen());
    assertTrue(o.combined());
  }

  @Test
  void combinationStopsBeforeTheValueOutgrowsTheTransportLimit() {
    Net net = new Net();
    LogEntry x = entry("x", "elsewhere", Set.of("a"), Set.of("b"));
    LogEntry y = entry("y", "elsewhere", Set.of("a2"), Set.of("c"));
    vote(net.dc(0), P, b(1, 1), LogValue.of(x));
    vote(net.dc(1), P, b(1, 2), LogValue.of(y));
    LogEntry e = entry("e", "dc0", Set.of("r"), Set.of("k1"));
    int twoEntries = LogCodec.encode(LogValue.of(e, x)).length;
    assertTrue(LogCodec.encode(LogValue.of(e, x, y)).length > twoEntries);
    ProposerConfig limited = cfg(Protocol.CP).withMaxValueBytes(twoEntries);
    Proposer p = net.start(new Proposer(limited, G, ProposerId.of(9), e, P, OptionalInt.empty(), rnd()));

    Accept first = net.sentOf(Accept.class).get(0);
    assertEquals(2, first.value().entries().size(), "trimmed to the limit, own entry first");
    assertEquals(e, first.value().entries().get(0));
    assertTrue(LogCodec.encode(first.value()).length <= twoEntries);
    assertEquals(Status.COMMITTED, p.outcome().status());
  }

  @Test
  void withOnlyAMajorityRespondingAVotedValueMayBeChosenSoNoCombination() {
    Net net = new Net();
    LogEntry x = entry("x", "elsewhere", Set.of("a"), Set.of("b"));
    LogEntry y = entry("y", "elsewhere", Set.of("k1"), Set.of("c"));
    vote(net.dc(0), P, b(1, 1), LogValue.of(x));
    vote(net.dc(1), P, b(1, 2), LogValue.of(y));
    net.dropRequest = (dc, m) -> dc == 2;
    LogEntry e = entry("e", "dc0", Set.of("r"), Set.of("k1"));
    Proposer p = net.start(proposer(Protocol.CP, 9, e));
    Outcome o = net.runToEnd(p);

    Accept first = net.sentOf(Accept.class).get(0);
    assertEquals(P, first.position());
    assertEquals(LogValue.of(y), first.value(), "the highest-ballot vote, unchanged");
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(P + 1, o.position(), "promoted past y (y wrote nothing e read)");
  }

  @Test
  void combinationIsNeverUsedByBasicPaxos() {
    Net net = new Net();
    LogEntry x = entry("x", "elsewhere", Set.of("a"), Set.of("b"));
    vote(net.dc(0), P, b(1, 1), LogValue.of(x));
    LogEntry e = entry("e", "dc0", Set.of("r"), Set.of("k1"));
    Proposer p = net.start(proposer(Protocol.BASIC, 9, e));
    assertEquals(LogValue.of(x), net.sentOf(Accept.class).get(0).value());
    assertEquals(Status.ABORTED, p.outcome().status());
  }

  // ---- timeouts: ABORTED only when the entry certainly is not chosen ----------------------

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void silenceWithoutAnyAcceptEndsAborted(boolean fastPath) {
    Net net = new Net();
    net.dropRequest = (dc, m) -> true;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP), G, ProposerId.of(7), e, P,
        fastPath ? OptionalInt.of(0) : OptionalInt.empty(), rnd()));
    Outcome o = net.runToEnd(p);

    assertEquals(Status.ABORTED, o.status());
    assertEquals(P, o.position());
    assertNull(o.chosen());
    assertTrue(o.reason().contains("no quorum"), o.reason());
    assertTrue(net.sentOf(Accept.class).isEmpty());
    assertEquals(3 * MAX_ATTEMPTS, net.sentOf(Prepare.class).size(), "one round per attempt");
    assertEquals(MAX_ATTEMPTS, net.sentOf(Prepare.class).stream().map(Prepare::ballot).distinct()
        .count(), "a new ballot per attempt");
  }

  @Test
  void silenceAfterAnAcceptWithTheEntryEndsUnknownAndTheEntryMayIndeedBeChosen() {
    Net net = new Net();
    int[] acceptsDelivered = {0};
    // The ACCEPTs arrive and are taken, their replies are lost, then the network goes dark.
    net.dropRequest = (dc, m) -> {
      if (acceptsDelivered[0] >= 3) {
        return true;
      }
      if (m instanceof Accept) {
        acceptsDelivered[0]++;
      }
      return false;
    };
    net.dropReply = (dc, m) -> m instanceof AcceptReply;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));
    Outcome o = net.runToEnd(p);

    assertEquals(Status.UNKNOWN, o.status(), "never ABORTED once an ACCEPT carried the entry");
    assertEquals(P, o.position());
    assertTrue(net.sentOf(Accept.class).stream().anyMatch(a -> a.value().contains("t1")));

    // Indeed, the entry was chosen: a learner finds it.
    net.dropRequest = (dc, m) -> false;
    net.dropReply = (dc, m) -> false;
    Proposer learner = net.start(Proposer.learner(cfg(Protocol.CP), G, ProposerId.of(8), P, rnd()));
    assertEquals(Status.LEARNED, net.runToEnd(learner).status());
    assertTrue(learner.outcome().chosen().contains("t1"));
  }

  @ParameterizedTest
  @ValueSource(booleans = {false, true})
  void acceptsThatNeverArriveStillEndUnknown(boolean fastPath) {
    Net net = new Net();
    net.dropRequest = (dc, m) -> m instanceof Accept;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(new Proposer(cfg(Protocol.CP), G, ProposerId.of(7), e, P,
        fastPath ? OptionalInt.of(0) : OptionalInt.empty(), rnd()));
    Outcome o = net.runToEnd(p);

    assertEquals(Status.UNKNOWN, o.status(), "the proposer cannot know the ACCEPTs were lost");
    assertEquals(fastPath, net.sentOf(Accept.class).get(0).ballot().isFast());
  }

  // ---- what is ignored --------------------------------------------------------------------

  @Test
  void repliesForOtherPositionsBallotsGroupsOrUnknownDcsAreIgnored() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> true;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));
    Ballot mine = net.sentOf(Prepare.class).get(0).ballot();
    LogValue w = value("w", Set.of(), Set.of("x"));
    long now = net.now;

    List<PrepareReply> wrong = List.of(
        new PrepareReply(G, P + 1, mine, false, mine, null, w),
        new PrepareReply(G, P - 1, mine, false, mine, null, w),
        new PrepareReply(G, P, b(mine.round() + 1, 8), false, mine, null, w),
        new PrepareReply("other-group", P, mine, false, mine, null, w));
    for (PrepareReply r : wrong) {
      assertEquals(List.of(), p.onReply(0, r, now), r.toString());
    }
    PrepareReply right = new PrepareReply(G, P, mine, false, mine, null, w);
    for (int dc : new int[] {-1, 3, 17, Integer.MAX_VALUE, Integer.MIN_VALUE}) {
      assertEquals(List.of(), p.onReply(dc, right, now), "from DC " + dc);
    }
    // Replies of another phase with our ballot: ACCEPT acks and a grant while preparing.
    assertEquals(List.of(), p.onReply(0, new AcceptReply(G, P, mine, true, mine, null), now));
    assertEquals(List.of(), p.onReply(1, new AcceptReply(G, P, mine, true, mine, null), now));
    assertEquals(List.of(), p.onReply(0, new GrantReply(G, P, ProposerId.of(7).toString(), true), now));
    assertFalse(p.isDone());

    // The same reply from a real DC is taken.
    assertFalse(p.onReply(0, right, now).isEmpty());
    assertEquals(Status.ABORTED, p.outcome().status());
    assertEquals(w, p.outcome().chosen());
  }

  @Test
  void promisesCountOncePerValidDc() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> true;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));
    Ballot mine = net.sentOf(Prepare.class).get(0).ballot();
    PrepareReply yes = new PrepareReply(G, P, mine, true, mine, null, null);
    long now = net.now;

    assertEquals(List.of(), p.onReply(3, yes, now));
    assertEquals(List.of(), p.onReply(-1, yes, now));
    assertEquals(List.of(), p.onReply(0, yes, now));
    assertEquals(List.of(), p.onReply(0, yes, now), "a duplicate is not a second promise");
    List<Output> out = p.onReply(1, yes, now);
    assertEquals(1, out.size(), "a majority: wait a grace period for the third reply");
    assertTrue(out.get(0) instanceof Output.StartTimer);
  }

  @Test
  void staleAndUnknownTimerIdsAreIgnored() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> true;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));
    long prepareTimer = net.latestTimer();
    net.fire(p, prepareTimer); // PREPARE timed out: back off
    long backoffTimer = net.latestTimer();
    assertNotEquals(prepareTimer, backoffTimer);
    assertEquals(3, net.sentOf(Prepare.class).size());

    assertEquals(List.of(), p.onTimer(prepareTimer, net.now));
    assertEquals(List.of(), p.onTimer(backoffTimer + 1, net.now));
    assertEquals(List.of(), p.onTimer(0, net.now));
    assertEquals(List.of(), p.onTimer(-1, net.now));
    assertEquals(3, net.sentOf(Prepare.class).size(), "no stale timer started a round");

    net.fire(p, backoffTimer);
    List<Prepare> prepares = net.sentOf(Prepare.class);
    assertEquals(6, prepares.size());
    assertTrue(prepares.get(3).ballot().greaterThan(prepares.get(0).ballot()));
  }

  @Test
  void aFinishedProposerIgnoresEverything() {
    Net net = new Net();
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.CP, 7, e));
    Outcome o = p.outcome();
    assertEquals(Status.COMMITTED, o.status());
    assertEquals(List.of(), p.onTimer(net.latestTimer(), net.now));
    assertEquals(List.of(), p.onReply(0, new PrepareReply(G, P, b(9, 9), false, b(9, 9), null,
        value("w", Set.of(), Set.of())), net.now));
    assertEquals(o, p.outcome());
  }

  // ---- duplicated replies never take back a promise or an acceptance ----------------------

  @Test
  void aDuplicatedPrepareCannotShrinkTheQuorumAndOverwriteAChosenValue() {
    Net net = new Net();
    // V is chosen: DCs 1 and 2 accepted it in ballot 1.1. DC 2 is unreachable.
    LogValue v = value("v", Set.of(), Set.of("x"));
    vote(net.dc(1), P, b(1, 1), v);
    vote(net.dc(2), P, b(1, 1), v);
    net.dropRequest = (dc, m) -> dc == 2;
    // DC 1 gets our PREPARE twice; it rejects the copy (the ballot is not above its promise).
    net.duplicateRequest = (dc, m) -> dc == 1 && m instanceof Prepare;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));
    Outcome o = net.runToEnd(p);

    assertEquals(v, net.sentOf(Accept.class).get(0).value(),
        "the quorum {0, 1} reports V, so V must be proposed");
    assertEquals(Status.ABORTED, o.status());
    assertEquals(v, o.chosen());
  }

  @Test
  void aPromiseStandsAgainstALaterRejectionFromTheSameDc() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> true;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));
    Ballot mine = net.sentOf(Prepare.class).get(0).ballot();
    LogValue v = value("v", Set.of(), Set.of("x"));
    Vote vote = new Vote(b(1, 1), v);
    long now = net.now;
    p.onReply(0, new PrepareReply(G, P, mine, true, mine, null, null), now);
    List<Output> grace = p.onReply(1, new PrepareReply(G, P, mine, true, mine, vote, null), now);
    assertEquals(1, grace.size());
    p.onReply(1, new PrepareReply(G, P, mine, false, mine, vote, null), now);
    net.deliver(p, p.onTimer(((Output.StartTimer) grace.get(0)).timerId(), now));
    assertEquals(List.of(v, v, v), net.sentOf(Accept.class).stream().map(Accept::value).toList());
  }

  @Test
  void anAcceptanceStandsAgainstALaterRejectionFromTheSameDc() {
    Net net = new Net();
    net.dropRequest = (dc, m) -> m instanceof Accept;
    LogEntry e = entry("t1", "dc0", Set.of("y"), Set.of("z"));
    Proposer p = net.start(proposer(Protocol.BASIC, 7, e));
    Ballot mine = net.sentOf(Accept.class).get(0).ballot();
    long now = net.now;
    // DC 0 accepted; a duplicate of the ACCEPT reached it after a higher PREPARE and was refused.
    assertEquals(List.of(), p.onReply(0, new AcceptReply(G, P, mine, true, mine, null), now));
    p.onReply(0, new AcceptReply(G, P, mine, false, b(9, 9), null), now);
    p.onReply(1, new AcceptReply(G, P, mine, true, mine, null), now);
    assertTrue(p.isDone(), "DCs 0 and 1 accepted in one ballot: the value is chosen");
    assertEquals(Status.COMMITTED, p.outcome().status());
  }

  // ---- learners ---------------------------------------------------------------------------

  @Test
  void aLearnerOnAnEmptyPositionDecidesTheNoop() {
    Net net = new Net();
    Proposer l = net.start(Proposer.learner(cfg(Protocol.CP), G, ProposerId.of(7), P, rnd()));
    Outcome o = l.outcome();
    assertEquals(Status.LEARNED, o.status());
    assertEquals(P, o.position());
    assertEquals(LogValue.NOOP, o.chosen());
    assertTrue(net.sentOf(Accept.class).stream().allMatch(a -> a.value().isNoop()));
    assertTrue(net.sentOf(GrantRequest.class).isEmpty());
    assertChosenEverywhere(net, P, LogValue.NOOP);
  }

  @Test
  void aLearnerReProposesAVoteInsteadOfTheNoop() {
    Net net = new Net();
    LogValue v = value("v", Set.of("a"), Set.of("b"));
    vote(net.dc(0), P, b(1, 1), v);
    Proposer l = net.start(Proposer.learner(cfg(Protocol.CP), G, ProposerId.of(7), P, rnd()));
    assertEquals(Status.LEARNED, l.outcome().status());
    assertEquals(v, l.outcome().chosen());
    assertEquals(v, net.sentOf(Accept.class).get(0).value());
    assertChosenEverywhere(net, P, v);
  }

  @Test
  void aLearnerTakesAKnownDecisionFromAPrepareReply() {
    Net net = new Net();
    LogValue w = value("w", Set.of(), Set.of("x"));
    net.dc(2).apply(new Apply(G, P, w));
    Proposer l = net.start(Proposer.learner(cfg(Protocol.CP), G, ProposerId.of(7), P, rnd()));
    assertEquals(Status.LEARNED, l.outcome().status());
    assertEquals(w, l.outcome().chosen());
    assertTrue(net.sentOf(Accept.class).isEmpty());
    assertChosenEverywhere(net, P, w);
  }

  // ---- OVERLOADED refusals (docs/guarantees.md, "Overload") ------------------------------

  @Test
  void preparesRefusedByAMajorityAbortOverloadedAndNothingIsInTheLog() {
    Net net = new Net();
    net.refuse = (dc, m) -> m instanceof Prepare && dc != 0;
    Proposer p = net.start(proposer(Protocol.CP, 1, entry("t1", "dc0", Set.of("a"),
        Set.of("b"))));
    Outcome o = net.runToEnd(p);
    assertEquals(Status.ABORTED, o.status());
    assertTrue(o.overloaded(), o.toString());
    assertTrue(net.sentOf(Accept.class).isEmpty(), "an ACCEPT went out: " + net.sent);
    assertEquals(MAX_ATTEMPTS - 1, p.overloadBackoffs());
    // Abandoned at the refusals, not at a timeout: no phase timer fired before each retry.
    assertEquals(MAX_ATTEMPTS, net.sentOf(Prepare.class).stream().map(Prepare::ballot)
        .distinct().count());
  }

  @Test
  void refusedAcceptsAreNeverVotesAndTheProposerLearnsTheValueInsteadOfGivingUp() {
    Net net = new Net();
    // Every ACCEPT to dc1 and dc2 is refused for far more ballots than MAX_ATTEMPTS; dc0 votes.
    int[] refusals = {0};
    net.refuse = (dc, m) -> m instanceof Accept && dc != 0 && refusals[0]++ < 4 * MAX_ATTEMPTS;
    LogEntry e = entry("t1", "dc0", Set.of("a"), Set.of("b"));
    Proposer p = net.start(proposer(Protocol.CP, 1, e));
    Outcome o = net.runToEnd(p);
    // A refusal counted as a vote would have made it chosen with dc0 alone; it is chosen only
    // once a second DC really voted.
    assertEquals(Status.COMMITTED, o.status(), o.toString());
    assertTrue(p.overloadBackoffs() >= MAX_ATTEMPTS, "backed off " + p.overloadBackoffs());
    long voters = net.acceptors.stream().filter(a -> a.lastVote(G, P).isPresent()).count();
    assertTrue(voters >= 2, "chosen with " + voters + " vote(s)");
  }

  @Test
  void afterItsEntryWentOutOnlyTimeoutsEndItUnknown() {
    Net net = new Net();
    // dc1 refuses every ACCEPT, dc2 is silent: each ballot ends at its phase timeout.
    net.refuse = (dc, m) -> m instanceof Accept && dc == 1;
    net.dropRequest = (dc, m) -> m instanceof Accept && dc == 2;
    Proposer p = net.start(proposer(Protocol.CP, 1, entry("t1", "dc0", Set.of("a"),
        Set.of("b"))));
    Outcome o = net.runToEnd(p);
    assertEquals(Status.UNKNOWN, o.status(), o.toString());
    assertEquals(MAX_ATTEMPTS, net.sentOf(Prepare.class).stream().map(Prepare::ballot)
        .distinct().count());
  }

  @Test
  void aDcDownAndOneRefusingIsUnavailabilityNotOverload() {
    Net net = new Net();
    // dc2 is down (silent); dc1 refuses PREPAREs OVERLOADED. No majority can answer because dc2
    // is down: every ballot ends at its timeout, so the outcome is not typed overloaded.
    net.refuse = (dc, m) -> m instanceof Prepare && dc == 1;
    net.dropRequest = (dc, m) -> dc == 2;
    Proposer p = net.start(proposer(Protocol.CP, 1, entry("t1", "dc0", Set.of("a"),
        Set.of("b"))));
    Outcome o = net.runToEnd(p);
    assertEquals(Status.ABORTED, o.status());
    assertFalse(o.overloaded(), "typed overloaded though every ballot ended at its timeout: " + o);
    assertFalse(o.contended(), o.toString());
  }

  @Test
  void twoDcsRefusingIsOverload() {
    Net net = new Net();
    // As above with dc2 refusing too: refusals end every ballot, and the outcome says so.
    net.refuse = (dc, m) -> m instanceof Prepare && dc >= 1;
    Proposer p = net.start(proposer(Protocol.CP, 1, entry("t1", "dc0", Set.of("a"),
        Set.of("b"))));
    Outcome o = net.runToEnd(p);
    assertEquals(Status.ABORTED, o.status());
    assertTrue(o.overloaded(), o.toString());
  }
}
