package org.paxoscp.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Latency;

/** The WAN emulation the local-cluster commands ({@code demo}, {@code cluster}) set up. */
public final class WanOptions {
  private WanOptions() {}

  /**
   * The paper's regions, with {@code A:B=ms} round-trip overrides.
   *
   * @throws IllegalArgumentException for a malformed override, or (when enabled) a DC whose
   *     round-trip times are unknown
   */
  public static ClusterConfig.Wan wan(List<String> dcs, List<String> overrides, boolean enabled) {
    Latency latency = Latency.paperRegions();
    for (String o : overrides) {
      String[] kv = o.split("=");
      String[] pair = kv[0].split(":");
      if (kv.length != 2 || pair.length != 2) {
        throw new IllegalArgumentException("--rtt expects A:B=MS, was " + o);
      }
      double ms;
      try {
        ms = Double.parseDouble(kv[1]);
      } catch (NumberFormatException e) {
        throw new IllegalArgumentException("--rtt expects A:B=MS, was " + o);
      }
      latency = latency.withPair(pair[0], pair[1], Math.round(ms * 1000));
    }
    if (enabled) {
      latency.validate(dcs);
    }
    return new ClusterConfig.Wan(enabled, latency, 0, 0.1, 0, 0, Set.of());
  }

  /** {@code V1-V2 1.0ms V1-O 80.0ms ...}: the round-trip time of every DC pair. */
  public static String rttSummary(ClusterConfig.Wan wan, List<String> dcs) {
    List<String> parts = new ArrayList<>();
    for (int i = 0; i < dcs.size(); i++) {
      for (int j = i + 1; j < dcs.size(); j++) {
        parts.add(String.format(Locale.ROOT, "%s-%s %.1fms", dcs.get(i), dcs.get(j),
            wan.latency().rttMicros(dcs.get(i), dcs.get(j)) / 1000.0));
      }
    }
    return String.join(" ", parts);
  }
}
