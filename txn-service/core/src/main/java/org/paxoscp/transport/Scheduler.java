package org.paxoscp.transport;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.random.RandomGenerator;

/**
 * The clock, timers and deferred work of the protocol path. The Transaction Service, its
 * catch-up and the {@link ProposerDriver} take one instead of owning threads or waiting, so the
 * same code runs on real threads ({@link #of}) and in the simulator's virtual time.
 *
 * <p>Every callback runs on the scheduler's terms: {@link #execute} for work that may block on
 * a store, {@link #schedule} for timers. Code on the protocol path never blocks waiting for
 * another callback; it chains futures instead.
 */
public interface Scheduler {

  /** Monotonic time in microseconds (the clock proposers and deadlines use). */
  long nowMicros();

  /**
   * Wall-clock time in milliseconds: the clock of deadlines that other processes read (a
   * cross-group PREPARE's), and of recorded histories. Virtual time in the simulator.
   */
  default long wallMillis() {
    return System.currentTimeMillis();
  }

  /** Runs {@code task} once, {@code delayMicros} from now. */
  Cancellable schedule(long delayMicros, Runnable task);

  /** Runs {@code task} soon, off the caller's stack; the task may block on a store. */
  void execute(Runnable task);

  /**
   * Where proposer ids and learner seeds come from: a {@link SecureRandom} on real threads
   * (ids must be unique, see {@code ProposerId}), a seeded generator in the simulator so that a
   * run replays. Thread-safe as returned by {@link #of}.
   */
  RandomGenerator random();

  /** A scheduled task that has not run yet can be cancelled; cancelling later does nothing. */
  @FunctionalInterface
  interface Cancellable {
    void cancel();
  }

  /**
   * A future that completes as {@code f} does, or fails with {@code onTimeout}'s exception if
   * {@code f} has not completed within {@code timeout}. {@code f} itself is left alone.
   */
  default <T> CompletableFuture<T> within(CompletableFuture<T> f, Duration timeout,
      Supplier<? extends RuntimeException> onTimeout) {
    CompletableFuture<T> out = new CompletableFuture<>();
    Cancellable timer = schedule(Math.max(1, timeout.toNanos() / 1000),
        () -> out.completeExceptionally(onTimeout.get()));
    f.whenComplete((v, t) -> {
      timer.cancel();
      if (t != null) {
        out.completeExceptionally(t);
      } else {
        out.complete(v);
      }
    });
    return out;
  }

  /** An executor view: {@link #execute}. */
  default Executor executor() {
    return this::execute;
  }

  /**
   * Real time on real threads: timers on {@code timers}, work on {@code workers}; both are owned
   * by the caller. A task refused because an executor shut down is dropped, as at shutdown any
   * pending work is.
   */
  static Scheduler of(ScheduledExecutorService timers, Executor workers) {
    Objects.requireNonNull(timers);
    Objects.requireNonNull(workers);
    SecureRandom random = new SecureRandom();
    return new Scheduler() {
      @Override
      public RandomGenerator random() {
        return random;
      }

      @Override
      public long nowMicros() {
        return System.nanoTime() / 1000;
      }

      @Override
      public Cancellable schedule(long delayMicros, Runnable task) {
        try {
          Future<?> f = timers.schedule(task, delayMicros, TimeUnit.MICROSECONDS);
          return () -> f.cancel(false);
        } catch (java.util.concurrent.RejectedExecutionException e) {
          return () -> { };
        }
      }

      @Override
      public void execute(Runnable task) {
        try {
          workers.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
          // Shutting down: dropped like every other pending task.
        }
      }
    };
  }

  /** Real time with work run on the timer thread itself: for callers whose work never blocks. */
  static Scheduler of(ScheduledExecutorService timers) {
    return of(timers, timers);
  }
}
