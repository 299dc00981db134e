package org.paxoscp.sim;

import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Consumer;
import java.util.function.IntFunction;
import org.paxoscp.transport.Latency;

/**
 * The simulated WAN between locations (a location is a DC; clients live at their home DC):
 * per-pair one-way delay with jitter, loss, duplication, reordering, partitions, DC outages,
 * faults aimed at one message type, and late copies of delivered messages, to their
 * destination or redirected to another DC ({@link SimConfig.Replay}).
 * Faults can be switched off for the recovery phase at the end of a run; copies already taken
 * still arrive then, as datagrams already on the wire would.
 */
final class SimNetwork {
  private final EventQueue events;
  private final SplittableRandom random;
  private final long[][] oneWay;
  private final long maxRtt;
  private final double jitter;
  private final List<String> names;
  private SimConfig.Faults faults;
  /** DC index isolated from every other DC, or -1. */
  private int isolated = -1;
  private final boolean[] down;
  private long sent;
  private long dropped;
  /** The message type that targeted faults hit, or null. */
  private String target;
  private long targetedHits;
  private long replayed;
  private long redirected;
  private long unmatched;
  private Consumer<String> trace;

  SimNetwork(EventQueue events, SplittableRandom random, List<String> dcs, Latency latency,
      double jitter, SimConfig.Faults faults) {
    this.events = events;
    this.random = random;
    this.jitter = jitter;
    this.names = List.copyOf(dcs);
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

  /** Prints each replayed copy to {@code sink}. */
  void trace(Consumer<String> sink) {
    this.trace = sink;
  }

  /** What replay did so far. */
  SimResult.Replays replays() {
    return new SimResult.Replays(replayed, redirected, unmatched);
  }

  /**
   * A reply reached a node where no request matches it (a copy of a reply redirected there, or
   * the answer to a redirected copy of a request): the real transport ignores it, and so does
   * the simulator; counted.
   */
  void matchedNothing() {
    unmatched++;
  }

  /**
   * Sends a message of type {@code type} from location {@code from} to location {@code to};
   * {@code deliver} runs on arrival unless the message is lost. {@code toDcNode} marks messages
   * addressed to a DC's service (dropped while that DC is down). {@code elsewhere} gives what a
   * copy of the message does when it is redirected to another DC's service (taking that DC's
   * index), or is null when nothing there would match it (a reply): such a copy is ignored.
   */
  void send(int from, int to, boolean toDcNode, String type, Runnable deliver,
      IntFunction<Runnable> elsewhere) {
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
    if (chance(faults.replay().probability())) {
      replayLater(from, to, toDcNode, type, deliver, elsewhere);
    }
  }

  /**
   * Keeps a copy of a delivered message and sends it again, the replay's delay later, to its
   * destination or (half of the time, with more than one DC) to another DC's service. A copy is
   * not replayed again, and crosses the network as it is then (partitions, outages).
   */
  private void replayLater(int from, int to, boolean toDcNode, String type, Runnable deliver,
      IntFunction<Runnable> elsewhere) {
    SimConfig.Replay r = faults.replay();
    long late = r.minDelayMicros()
        + random.nextLong(r.maxDelayMicros() - r.minDelayMicros() + 1);
    int n = oneWay.length;
    int at = n > 1 && random.nextBoolean() ? (to + 1 + random.nextInt(n - 1)) % n : to;
    boolean moved = at != to;
    long sentAt = events.now();
    replayed++;
    redirected += moved ? 1 : 0;
    Runnable copy = !moved ? deliver : elsewhere == null ? this::matchedNothing
        : elsewhere.apply(at);
    events.after(late, () -> {
      if (trace != null) {
        trace.accept(String.format("%10.3fms %s -> %s: replayed %s, first sent %.3f s ago%s",
            events.now() / 1000.0, names.get(from), names.get(at), type,
            (events.now() - sentAt) / 1e6, moved ? " to " + names.get(to) : ""));
      }
      if (connected(from, at) && !((toDcNode || moved) && down[at])) {
        schedule(from, at, toDcNode || moved, false, copy);
      }
    });
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
