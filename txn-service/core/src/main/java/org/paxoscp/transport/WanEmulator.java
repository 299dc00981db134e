package org.paxoscp.transport;

import java.util.Set;
import java.util.random.RandomGenerator;

/**
 * Decides what the emulated WAN does to one datagram (docs/architecture.md section 6): lose it, or
 * deliver one or two copies, each after the DC pair's one-way delay with uniform jitter. Pure
 * logic: the caller supplies the randomness and does the scheduling, so it is testable without
 * sockets.
 *
 * <p>Thread-safe; the partitioned set can be replaced at run time.
 */
final class WanEmulator {
  private static final long[] DROP = {};
  private static final long[] NOW = {0};

  private final ClusterConfig.Wan wan;
  private final String localDc;
  private volatile Set<String> partitioned;

  WanEmulator(ClusterConfig.Wan wan, String localDc) {
    this.wan = wan;
    this.localDc = localDc;
    this.partitioned = wan.enabled() ? wan.partitioned() : Set.of();
  }

  void setPartitioned(Set<String> dcs) {
    partitioned = Set.copyOf(dcs);
  }

  Set<String> partitioned() {
    return partitioned;
  }

  /**
   * The delays in microseconds after which to send each copy of a datagram from this DC to DC
   * {@code toDc}: empty when it is lost or cut off by a partition, {@code {0}} when emulation is
   * off, two entries when it is duplicated.
   */
  long[] delaysMicros(String toDc, RandomGenerator rnd) {
    Set<String> cut = partitioned;
    if (!localDc.equals(toDc) && (cut.contains(localDc) || cut.contains(toDc))) {
      return DROP;
    }
    if (!wan.enabled()) {
      return NOW;
    }
    if (wan.loss() > 0 && rnd.nextDouble() < wan.loss()) {
      return DROP;
    }
    long[] delays = new long[wan.duplicate() > 0 && rnd.nextDouble() < wan.duplicate() ? 2 : 1];
    long oneWay = wan.oneWayMicros(localDc, toDc);
    for (int i = 0; i < delays.length; i++) {
      double factor = wan.jitter() > 0 ? 1 + rnd.nextDouble(-wan.jitter(), wan.jitter()) : 1;
      delays[i] = Math.max(0, Math.round(oneWay * factor));
    }
    return delays;
  }

  @Override
  public String toString() {
    return wan.enabled() ? "on (jitter " + wan.jitter() + ", loss " + wan.loss() + ", duplicate "
        + wan.duplicate() + ", partitioned " + partitioned + ")" : "off";
  }
}
