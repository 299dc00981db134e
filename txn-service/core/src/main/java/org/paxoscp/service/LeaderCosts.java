package org.paxoscp.service;

import java.util.Map;
import org.paxoscp.transport.Latency;

/**
 * What {@link BatcherPlacement} knows of the cluster's round trips: what leading a group's
 * positions costs at each DC (its nearest-majority RTT, µs) and the RTTs between DCs, either
 * configured ({@code ClusterConfig.leaderCosts()} and the emulated WAN's table) or measured by
 * the services ({@link RoundTrips}).
 *
 * @param lead what leading costs per DC; empty when nothing is known
 * @param rtts the RTTs between DCs, or null: the weighted rule is off (leader costs alone)
 */
record LeaderCosts(Map<String, Long> lead, Latency rtts) {
  /** Nothing known: the rule without costs. */
  static final LeaderCosts NONE = new LeaderCosts(Map.of(), null);

  LeaderCosts {
    lead = Map.copyOf(lead);
    rtts = lead.isEmpty() ? null : rtts;
  }

  boolean known() {
    return !lead.isEmpty();
  }

  /** What leading costs at {@code dc} (0 when not known). */
  long lead(String dc) {
    return lead.getOrDefault(dc, 0L);
  }
}
