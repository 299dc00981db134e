package org.paxoscp.transport;

import java.util.HashMap;
import java.util.Map;

/**
 * Round-trip times between DCs. By default a DC's region is the first letter of its name and the
 * paper's measured times apply (section 6): V-V 1.5 ms, V-O and V-C 90 ms, O-C 20 ms; two DCs of
 * one region are 1.5 ms apart. Pairs can be overridden by name. Clients sit in their home DC,
 * {@code localRttMicros} away from its service.
 */
public final class Latency {
  private final Map<String, Long> regionRtt = new HashMap<>();
  private final Map<String, Long> pairOverrides = new HashMap<>();
  private final long localRttMicros;

  private Latency(long localRttMicros) {
    this.localRttMicros = localRttMicros;
  }

  public static Latency paperRegions() {
    Latency l = new Latency(200);
    l.regionRtt.put("VV", 1_500L);
    l.regionRtt.put("OO", 1_500L);
    l.regionRtt.put("CC", 1_500L);
    l.regionRtt.put("OV", 90_000L);
    l.regionRtt.put("CV", 90_000L);
    l.regionRtt.put("CO", 20_000L);
    return l;
  }

  /**
   * No round trip known between DCs (until given with {@link #withPair}); a client is
   * {@code localRttMicros} from its home DC.
   */
  public static Latency pairsOnly(long localRttMicros) {
    if (localRttMicros < 0) {
      throw new IllegalArgumentException("RTT must be >= 0");
    }
    return new Latency(localRttMicros);
  }

  /** Overrides the RTT between DCs {@code a} and {@code b} (both directions). */
  public Latency withPair(String a, String b, long rttMicros) {
    if (rttMicros < 0) {
      throw new IllegalArgumentException("RTT must be >= 0");
    }
    Latency l = new Latency(localRttMicros);
    l.regionRtt.putAll(regionRtt);
    l.pairOverrides.putAll(pairOverrides);
    l.pairOverrides.put(pairKey(a, b), rttMicros);
    return l;
  }

  /** RTT between two DCs (or a client and its own DC when {@code a.equals(b)}). */
  public long rttMicros(String a, String b) {
    if (a.equals(b)) {
      return localRttMicros;
    }
    Long o = pairOverrides.get(pairKey(a, b));
    if (o != null) {
      return o;
    }
    char ra = Character.toUpperCase(a.charAt(0));
    char rb = Character.toUpperCase(b.charAt(0));
    String key = ra <= rb ? "" + ra + rb : "" + rb + ra;
    Long rtt = regionRtt.get(key);
    if (rtt == null) {
      throw new IllegalArgumentException("no round-trip time known between " + a + " and " + b
          + ": name DCs after a region (V, O, C) or give the pair's RTT explicitly");
    }
    return rtt;
  }

  /** Fails fast if some pair of {@code dcs} has no known RTT. */
  public void validate(Iterable<String> dcs) {
    for (String a : dcs) {
      for (String b : dcs) {
        rttMicros(a, b);
      }
    }
  }

  private static String pairKey(String a, String b) {
    return a.compareTo(b) <= 0 ? a + "|" + b : b + "|" + a;
  }
}
