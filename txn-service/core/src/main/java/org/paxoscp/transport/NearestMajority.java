package org.paxoscp.transport;

import java.util.ArrayList;
import java.util.List;

/**
 * The round-trip time from a DC to its nearest majority: a proposer in DC {@code home} needs
 * {@code M - 1} acceptances besides its own DC's (M = a majority of the DCs), so an uncontended
 * fast-path commit waits for the {@code (M-1)}-th closest other DC. Pure logic.
 */
public final class NearestMajority {
  private NearestMajority() {}

  /** A majority of {@code n} DCs. */
  public static int majority(int n) {
    return n / 2 + 1;
  }

  /**
   * The RTT in microseconds from {@code home} to the {@code (M-1)}-th closest other DC of
   * {@code dcs}; 0 for a single DC (the home DC alone is a majority).
   *
   * @throws IllegalArgumentException if {@code home} is not in {@code dcs}, or a pair's RTT is
   *     unknown to {@code latency}
   */
  public static long rttMicros(Latency latency, List<String> dcs, String home) {
    if (!dcs.contains(home)) {
      throw new IllegalArgumentException("DC " + home + " is not in " + dcs);
    }
    List<Long> others = new ArrayList<>();
    for (String dc : dcs) {
      if (!dc.equals(home)) {
        others.add(latency.rttMicros(home, dc));
      }
    }
    int needed = majority(dcs.size()) - 1;
    if (needed == 0) {
      return 0;
    }
    others.sort(null);
    return others.get(needed - 1);
  }
}
