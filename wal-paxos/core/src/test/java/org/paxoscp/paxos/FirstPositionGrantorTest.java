package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.PaxosMessage.GrantRequest;
import org.paxoscp.store.InMemoryKvStore;

/**
 * A group's first position has a grantor too ({@link Proposer#leaderOfFirst}): one DC, the same
 * for every proposer, so that a new group's first commit takes the fast path without ever having
 * two grant holders (docs/architecture.md section 5.3; {@code FastWithoutGrantCounterexampleTest}
 * shows the checker catching two fast values at one position).
 */
class FirstPositionGrantorTest {
  private static final List<String> DCS = List.of("V1", "V2", "O");

  @Test
  void everyProposerAsksTheSameDcAndNewGroupsSpreadOverTheDcs() {
    int[] perDc = new int[DCS.size()];
    for (int i = 0; i < 30_000; i++) {
      String group = "user-" + i;
      int dc = Proposer.leaderOfFirst(DCS, group).getAsInt();
      // A function of the group and the DC list only: no proposer can compute another.
      assertEquals(dc, Proposer.leaderOfFirst(List.copyOf(DCS), new String(group)).getAsInt());
      perDc[dc]++;
    }
    for (int n : perDc) {
      assertTrue(Math.abs(n - 10_000) < 500, java.util.Arrays.toString(perDc));
    }
  }

  /**
   * The bug the rule prevents: were each client's own DC the grantor of position 1, two clients
   * in two DCs would both hold a grant and both send ACCEPT(FAST) — the precondition of two
   * values chosen. With the rule both ask one DC, which grants once.
   */
  @Test
  void oneGrantorGrantsPositionOneOnceWhereTwoWouldGrantItTwice() {
    List<Acceptor> acceptors = List.of(new Acceptor(new InMemoryKvStore()),
        new Acceptor(new InMemoryKvStore()), new Acceptor(new InMemoryKvStore()));
    String group = "new-group";
    // Planted: client 1 of V1 and client 2 of V2 each ask their own DC.
    assertTrue(acceptors.get(0).grant(new GrantRequest(group, 1, "client-1")).granted());
    assertTrue(acceptors.get(1).grant(new GrantRequest(group, 1, "client-2")).granted(),
        "two grantors: two grant holders of one position");

    List<Acceptor> fresh = List.of(new Acceptor(new InMemoryKvStore()),
        new Acceptor(new InMemoryKvStore()), new Acceptor(new InMemoryKvStore()));
    Acceptor grantor = fresh.get(Proposer.leaderOfFirst(DCS, group).getAsInt());
    assertTrue(grantor.grant(new GrantRequest(group, 1, "client-1")).granted());
    assertFalse(grantor.grant(new GrantRequest(group, 1, "client-2")).granted(),
        "the one grantor refuses the second client, which then runs the slow path");
  }
}
