package org.paxoscp.nemesis;

import java.util.Set;

/**
 * What the nemesis currently does to the network, shared by every {@link FaultProxy}: DCs cut
 * off from the others, a burst of loss, duplication and delay, and replay of old datagrams.
 * Replaced as a whole, so a proxy always sees one consistent setting. Thread-safe.
 */
public final class NetRules {

  /**
   * One setting.
   *
   * @param partitioned DCs cut off from every other DC (datagrams within a DC still flow)
   * @param loss probability a datagram is dropped
   * @param duplicate probability a datagram is sent twice
   * @param maxDelayMs each copy is held back a uniform 0..maxDelayMs (reordering datagrams)
   * @param replay probability that a datagram forwarded also sends out a copy of one forwarded
   *     seconds to minutes earlier, to its destination or another DC's service, from a fresh
   *     socket ({@link FaultProxy})
   */
  public record Rules(Set<String> partitioned, double loss, double duplicate, long maxDelayMs,
      double replay) {
    public Rules {
      partitioned = Set.copyOf(partitioned);
      if (loss < 0 || loss > 1 || duplicate < 0 || duplicate > 1 || replay < 0 || replay > 1
          || maxDelayMs < 0) {
        throw new IllegalArgumentException("probabilities in [0, 1], a delay >= 0");
      }
    }

    /** Rules that replay nothing. */
    public Rules(Set<String> partitioned, double loss, double duplicate, long maxDelayMs) {
      this(partitioned, loss, duplicate, maxDelayMs, 0);
    }

    static final Rules HEALTHY = new Rules(Set.of(), 0, 0, 0, 0);

    /** Whether a datagram from DC {@code a} to DC {@code b} is cut by the partition. */
    public boolean cut(String a, String b) {
      return !a.equals(b) && (partitioned.contains(a) || partitioned.contains(b));
    }
  }

  private volatile Rules current = Rules.HEALTHY;

  public Rules current() {
    return current;
  }

  public void set(Rules rules) {
    current = rules;
  }

  /** Back to a healthy network. */
  public void heal() {
    current = Rules.HEALTHY;
  }
}
