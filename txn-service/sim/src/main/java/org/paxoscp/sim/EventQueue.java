package org.paxoscp.sim;

import java.util.PriorityQueue;

/**
 * Virtual time for the simulator: events run one at a time in (time, insertion) order, on the
 * caller's thread. Nothing here reads a clock, so a seeded run replays exactly.
 */
final class EventQueue {
  private record Event(long time, long seq, Runnable action) {}

  private final PriorityQueue<Event> queue = new PriorityQueue<>((a, b) -> a.time != b.time
      ? Long.compare(a.time, b.time) : Long.compare(a.seq, b.seq));
  private long now;
  private long seq;
  private long executed;

  long now() {
    return now;
  }

  long executed() {
    return executed;
  }

  void at(long time, Runnable action) {
    queue.add(new Event(Math.max(time, now), seq++, action));
  }

  void after(long delay, Runnable action) {
    at(now + Math.max(0, delay), action);
  }

  /** Runs events until none are left or a limit is hit; returns false if a limit was hit. */
  boolean run(long maxTime, long maxEvents) {
    while (!queue.isEmpty()) {
      Event e = queue.poll();
      if (e.time > maxTime || executed >= maxEvents) {
        return false;
      }
      now = e.time;
      executed++;
      e.action.run();
    }
    return true;
  }
}
