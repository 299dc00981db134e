package org.paxoscp.sim;

import java.util.List;
import java.util.SplittableRandom;
import org.paxoscp.transport.Latency;

/**
 * The simulated WAN between locations (a location is a DC; clients live at their home DC):
 * per-pair one-way delay with jitter, loss, duplication, reordering, partitions, DC outages and
 * faults aimed at one message type.
 * Faults can be switched off for the recovery phase at the end of a run.
 */
final class SimNetwork {
  private final EventQueue events;
  private final SplittableRandom random;
  private final long[][] oneWay;
  private final long maxRtt;
  private final double jitter;
  private SimConfig.Faults faults;
  /** DC index isolated from every other DC, or -1. */
  private int isolated = -1;
  private final boolean[] down;
  private long sent;
  private long dropped;
  /** The message type that targeted faults hit, or null. */
  private String target;
  private long targetedHits;

  SimNetwork(EventQueue events, SplittableRandom random, List<String> dcs, Latency latency,
      double jitter, SimConfig.Faults faults) {
    this.events = events;
    this.random = random;
    this.jitter = jitter;
    this.faults = faults;
    int n = dcs.size();
    oneWay = new long[n][n];
    long max = 0;
    for (int a = 0; a < n; a++) {
      for (int b = 0; b < n; b++) {
        long rtt = latency.rttMicros(dcs.get(a), dcs.get(b));
        oneWay[a][b] = rtt / 2;
        max = Math.max(max, rtt);
      }
    }
    maxRtt = max;
    down = new boolean[n];
  }

  long maxRttMicros() {
    return maxRtt;
  }

  void setIsolated(int dc) {
    isolated = dc;
  }

  void setDown(int dc, boolean isDown) {
    down[dc] = isDown;
  }

  boolean isDown(int dc) {
    return down[dc];
  }

  /** Whether location {@code a} can currently reach location {@code b}. */
  boolean connected(int a, int b) {
    return a == b || (isolated != a && isolated != b);
  }

  void healAll() {
    isolated = -1;
    java.util.Arrays.fill(down, false);
    faults = SimConfig.Faults.NONE;
    target = null;
  }

  /** Aims the targeted faults at messages of {@code type} (a simple class name). */
  void setTarget(String type) {
    target = type;
  }

  /** Messages the targeted faults lost or delayed. */
  long targetedHits() {
    return targetedHits;
  }

  long sent() {
    return sent;
  }

  long dropped() {
    return dropped;
  }

  /**
   * Sends a message of type {@code type} from location {@code from} to location {@code to};
   * {@code deliver} runs on arrival unless the message is lost. {@code toDcNode} marks messages
   * addressed to a DC's service (dropped while that DC is down).
   */
  void send(int from, int to, boolean toDcNode, String type, Runnable deliver) {
    sent++;
    boolean targeted = type.equals(target);
    if (targeted) {
      targetedHits++;
    }
    if (!connected(from, to) || (toDcNode && down[to]) || chance(faults.loss())
        || (targeted && random.nextBoolean())) {
      dropped++;
      return;
    }
    schedule(from, to, toDcNode, targeted, deliver);
    if (chance(faults.duplicate())) {
      schedule(from, to, toDcNode, targeted, deliver);
    }
  }

  private void schedule(int from, int to, boolean toDcNode, boolean targeted,
      Runnable deliver) {
    long base = oneWay[from][to];
    long delay = base + (long) (base * jitter * random.nextDouble());
    if (targeted || chance(faults.reorder())) {
      delay += (long) (maxRtt * random.nextDouble());
    }
    events.after(delay, () -> {
      // A DC that went down while the message was in flight does not process it.
      if (!(toDcNode && down[to])) {
        deliver.run();
      }
    });
  }

  private boolean chance(double p) {
    return p > 0 && random.nextDouble() < p;
  }
}
