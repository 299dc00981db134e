package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.PaxosMessage.Accept;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.paxos.PaxosMessage.Prepare;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Why proposer ids must be unique by construction (section 5.3): the schedule that two clients
 * sharing one proposer id could run, replayed on three acceptors.
 *
 * <p>Clients used to draw a 40-bit random prefix and count transactions after it; two clients that
 * drew the same prefix gave their n-th transactions the same proposer id, and so the same grant
 * token. The fast-path grant is idempotent for its holder (a duplicate request is granted again),
 * so both were granted position 1 and both sent a value at the one FAST ballot. Two values at one
 * ballot break Paxos: a later proposer sees two votes of equal ballot and may pick the one that was
 * not chosen. Ids are now 128 random bits per proposer, so a second requester holds a different
 * token and is refused.
 */
@Timeout(10)
class ProposerIdCollisionTest {
  private static final String G = "g";
  private final List<Acceptor> acceptors = List.of(new Acceptor(new InMemoryKvStore()),
      new Acceptor(new InMemoryKvStore()), new Acceptor(new InMemoryKvStore()));
  private final ProposerConfig cfg = ProposerConfig.defaults(Protocol.BASIC,
      List.of("A", "B", "C"));

  private static LogEntry entry(String id, String key) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put(key, Mutation.put(id.getBytes(StandardCharsets.UTF_8)));
    return new LogEntry(id, "A", 0, new TreeSet<>(), w);
  }

  private final LogValue v1 = LogValue.of(entry("client1-txn", "x"));
  private final LogValue v2 = LogValue.of(entry("client2-txn", "x"));

  /**
   * Replays the schedule with two grant tokens: both requests go to the leader (DC A), then the
   * holders' FAST ACCEPTs race, then a learner with a higher ballot hears A and B.
   *
   * @return the values chosen at position 1: by a FAST majority, and by the learner's ballot
   */
  private Set<LogValue> replay(ProposerId client1, ProposerId client2) {
    Set<LogValue> chosen = new HashSet<>();
    boolean granted1 = acceptors.get(0).grant(new GrantRequest(G, 1, client1.toString())).granted();
    boolean granted2 = acceptors.get(0).grant(new GrantRequest(G, 1, client2.toString())).granted();
    assertTrue(granted1, "the first requester holds the grant");
    // Client 1 reaches B and C first: v1 is chosen at FAST by a majority.
    int fast1 = 0;
    for (int dc : new int[] {1, 2}) {
      fast1 += acceptors.get(dc).accept(new Accept(G, 1, Ballot.FAST, v1)).accepted() ? 1 : 0;
    }
    if (fast1 >= 2) {
      chosen.add(v1);
    }
    if (granted2) {
      // Client 2, believing it holds the grant too, skips PREPARE and reaches A.
      acceptors.get(0).accept(new Accept(G, 1, Ballot.FAST, v2));
    }
    // A learner at a regular ballot prepares A and B and re-proposes the highest-ballot vote.
    Proposer learner = Proposer.learner(cfg, G, ProposerId.of(99), 1, new SplittableRandom(1));
    List<Proposer.Output> out = learner.start(0);
    deliver(learner, out, Set.of(0, 1));
    if (learner.isDone() && learner.outcome().chosen() != null) {
      chosen.add(learner.outcome().chosen());
    }
    return chosen;
  }

  /**
   * Delivers the learner's messages to the DCs in {@code reachable} (the others stay silent) and
   * fires its timers, until it is done.
   */
  private void deliver(Proposer p, List<Proposer.Output> out, Set<Integer> reachable) {
    long now = 0;
    for (int step = 0; step < 100 && !p.isDone(); step++) {
      List<Proposer.Output> next = new java.util.ArrayList<>();
      Proposer.Output.StartTimer timer = null;
      for (Proposer.Output o : out) {
        if (o instanceof Proposer.Output.Send s && reachable.contains(s.dc())) {
          PaxosMessage reply = handle(s.dc(), s.message());
          if (reply != null) {
            next.addAll(p.onReply(s.dc(), reply, now));
          }
        } else if (o instanceof Proposer.Output.StartTimer t) {
          timer = t;
        }
      }
      if (next.isEmpty() && timer != null) {
        now += timer.delayMicros();
        next.addAll(p.onTimer(timer.timerId(), now));
      }
      out = next;
    }
  }

  private PaxosMessage handle(int dc, PaxosMessage m) {
    Acceptor a = acceptors.get(dc);
    if (m instanceof Prepare p) {
      return a.prepare(p);
    } else if (m instanceof Accept ac) {
      return a.accept(ac);
    } else if (m instanceof PaxosMessage.Apply ap) {
      a.apply(ap);
    }
    return null;
  }

  @Test
  void twoHoldersOfOneTokenGetTwoValuesChosenAtOnePosition() {
    // The old scheme: same 40-bit prefix, same counter value -> the same id for both clients.
    ProposerId shared = ProposerId.of((0xABCDEL << 23) | 5);
    Set<LogValue> chosen = replay(shared, shared);
    assertEquals(Set.of(v1, v2), chosen,
        "with a shared token both clients are granted and two values are chosen at position 1");
  }

  @Test
  void distinctRandomTokensAllowOneGrantAndOneValue() {
    ProposerId c1 = ProposerId.random();
    ProposerId c2 = ProposerId.random();
    assertNotEquals(c1, c2);
    assertTrue(acceptors.get(1).grant(new GrantRequest(G, 7, c1.toString())).granted());
    assertFalse(acceptors.get(1).grant(new GrantRequest(G, 7, c2.toString())).granted(),
        "a second, different token is refused the grant");
    Set<LogValue> chosen = replay(c1, c2);
    assertEquals(Set.of(v1), chosen, "only the grant holder's value can be chosen");
  }

  @Test
  void idsCarry128RandomBitsAndNeverRepeat() {
    // Two id sources that share every bit of the old 40-bit prefix space still differ: each id is
    // 128 fresh bits, not a per-client prefix with a counter.
    Set<ProposerId> seen = new HashSet<>();
    long highBits = 0;
    long lowBits = 0;
    for (int i = 0; i < 200_000; i++) {
      ProposerId id = ProposerId.random();
      assertTrue(seen.add(id), "id repeated after " + i + " draws");
      highBits |= id.high();
      lowBits |= id.low();
    }
    assertEquals(-1L, highBits, "every bit of the high word is drawn");
    assertEquals(-1L, lowBits, "every bit of the low word is drawn");
  }

  @Test
  void idsRoundTripThroughTheirTokenAndBallotEncoding() {
    ProposerId id = ProposerId.random();
    assertEquals(id, ProposerId.parse(id.toString()));
    Ballot b = Ballot.first(id);
    assertEquals(b, Ballot.decode(b.encode()));
    assertEquals(Ballot.ENCODED_SIZE, b.encode().length);
    // Unsigned order: an id with the top bit set is above one without it.
    assertTrue(new ProposerId(-1L, 0).compareTo(new ProposerId(1L, 0)) > 0);
  }
}
