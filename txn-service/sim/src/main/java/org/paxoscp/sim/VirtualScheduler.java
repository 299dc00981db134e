package org.paxoscp.sim;

import java.util.SplittableRandom;
import java.util.random.RandomGenerator;
import org.paxoscp.transport.Scheduler;

/**
 * The {@link Scheduler} of the shipped service and proposer driver in the simulator: virtual
 * time on the {@link EventQueue}, work as events, a seeded generator for proposer ids. Runs
 * everything on the simulator's one thread, so a seed replays exactly.
 */
final class VirtualScheduler implements Scheduler {
  private final EventQueue events;
  private final SplittableRandom random;

  VirtualScheduler(EventQueue events, SplittableRandom random) {
    this.events = events;
    this.random = random;
  }

  @Override
  public long nowMicros() {
    return events.now();
  }

  /** Virtual time, as the simulated clients' PREPARE deadlines read it. */
  @Override
  public long wallMillis() {
    return events.now() / 1000;
  }

  @Override
  public Cancellable schedule(long delayMicros, Runnable task) {
    boolean[] cancelled = {false};
    events.after(delayMicros, () -> {
      if (!cancelled[0]) {
        task.run();
      }
    });
    return () -> cancelled[0] = true;
  }

  @Override
  public void execute(Runnable task) {
    events.after(0, task);
  }

  @Override
  public RandomGenerator random() {
    return random;
  }
}
