package org.paxoscp.client;

import java.security.SecureRandom;

/**
 * Ids for a client's transactions: one number per transaction that serves both as the Paxos
 * proposer id of its commit and (with the home DC) as its transaction id.
 *
 * <p>Ballots are (round, proposerId) pairs, so two proposers with the same id working on the same
 * log position in the same round could send different values under one ballot and break Paxos's
 * safety; the id must therefore be unique across every proposer of the cluster. An id is a random
 * 40-bit prefix, drawn once per client from {@link SecureRandom} (never from the test-seedable
 * generator, so that two clients built with the same seed still differ), followed by a 23-bit
 * counter; when the counter runs out a fresh prefix is drawn. Distinct clients collide only if they
 * draw the same prefix (probability about n^2 / 2^41 for n clients) and then also use the same
 * counter value at the same position and round. Within one client ids never repeat while a prefix
 * lasts, and a transaction runs at most one proposer.
 *
 * <p>Thread-safe.
 */
final class IdSource {
  static final int COUNTER_BITS = 23;
  private static final long PREFIX_LIMIT = 1L << 40;

  private final SecureRandom secure = new SecureRandom();
  private long prefix;
  private long counter;

  IdSource() {
    prefix = drawPrefix();
  }

  /** A positive id, unique for this client and with high probability across the cluster. */
  synchronized long next() {
    if (counter == 1L << COUNTER_BITS) {
      prefix = drawPrefix();
      counter = 0;
    }
    return (prefix << COUNTER_BITS) | counter++;
  }

  private long drawPrefix() {
    // In [1, 2^40): the id is then positive, as proposer ids must be, and fits in 63 bits.
    return 1 + (secure.nextLong() & Long.MAX_VALUE) % (PREFIX_LIMIT - 1);
  }
}
