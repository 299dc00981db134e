package org.paxoscp.service;

import java.util.Arrays;
import java.util.List;

/**
 * Where this service's committed transactions come from: per DC, the share of recent entries
 * whose client is homed there, over every group this DC records, each entry's weight decaying by
 * {@code 1/HORIZON} per later entry (so the last {@value #HORIZON} or so entries count most).
 * Every DC records every chosen value once ({@link CatchUp#record}), so every DC sees the same
 * entries and, but for their interleaving across groups, the same shares.
 *
 * <p>One set of shares per service, not per group: a group costs nothing more here, at the price
 * that a group whose clients sit elsewhere than the cluster's mix is placed by the mix. Used by
 * {@link BatcherPlacement}; has no part in safety. Thread-safe.
 */
final class OriginShares {
  /** Entries over which a weight decays to about a third. */
  static final int HORIZON = 128;
  private static final double KEEP = 1.0 - 1.0 / HORIZON;

  private final List<String> dcs;
  private final double[] weights;
  private long entries;

  OriginShares(List<String> dcs) {
    this.dcs = List.copyOf(dcs);
    this.weights = new double[this.dcs.size()];
  }

  /** Counts one committed entry whose client is homed at {@code originDc} (others ignored). */
  synchronized void record(String originDc) {
    int i = dcs.indexOf(originDc);
    if (i < 0) {
      return;
    }
    for (int d = 0; d < weights.length; d++) {
      weights[d] *= KEEP;
    }
    weights[i] += 1;
    entries++;
  }

  /** Per DC (in cluster order), its share of recent entries; all 0 before the first. */
  synchronized double[] shares() {
    double sum = Arrays.stream(weights).sum();
    double[] s = new double[weights.length];
    for (int d = 0; d < s.length && sum > 0; d++) {
      s[d] = weights[d] / sum;
    }
    return s;
  }

  /** Entries counted so far. */
  synchronized long entries() {
    return entries;
  }
}
