package org.paxoscp.client;

import java.util.random.RandomGenerator;
import org.paxoscp.paxos.ProposerId;

/**
 * Ids for a client's transactions: one {@link ProposerId} per transaction that serves as the Paxos
 * proposer id of its commit, as its fast-path grant token and (after the home DC) as its
 * transaction id.
 *
 * <p>All three must be unique across every proposer of the cluster (see {@link ProposerId}): two
 * proposers sharing an id could both hold one position's grant and send two values at the one
 * fast-path ballot, and a client could take another's log entry for its own. Every id is therefore
 * 128 fresh bits from the client's scheduler's generator ({@code Scheduler#random}: a
 * {@link java.security.SecureRandom} on real threads) — never a per-client prefix plus a counter,
 * and never from the test-seedable back-off generator, so that two clients built with the same
 * seed still differ. In the simulator the scheduler's seeded generator makes a run replay; its
 * ids are unique within the run.
 *
 * <p>Thread-safe.
 */
final class IdSource {
  private final RandomGenerator random;

  IdSource(RandomGenerator random) {
    this.random = random;
  }

  /** A fresh id. */
  ProposerId next() {
    synchronized (random) {
      return ProposerId.random(random);
    }
  }
}
