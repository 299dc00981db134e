package org.paxoscp.nemesis;

import java.util.Set;

/**
 * What the nemesis currently does to the network, shared by every {@link FaultProxy}: DCs cut
 * off from the others, and a burst of loss, duplication and delay. Replaced as a whole, so a
 * proxy always sees one consistent setting. Thread-safe.
 */
public final class NetRules {

  /**
   * One setting.
   *
   * @param partitioned DCs cut off from every other DC (datagrams within a DC still flow)
   * @param loss probability a datagram is dropped
   * @param duplicate probability a datagram is sent twice
   * @param maxDelayMs each copy is held back a uniform 0..maxDelayMs (reordering datagrams)
   */
  public record Rules(Set<String> partitioned, double loss, double duplicate, long maxDelayMs) {
    public Rules {
      partitioned = Set.copyOf(partitioned);
    }

    static final Rules HEALTHY = new Rules(Set.of(), 0, 0, 0);

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
