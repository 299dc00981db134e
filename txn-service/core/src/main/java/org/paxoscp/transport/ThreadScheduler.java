package org.paxoscp.transport;

import com.google.common.util.concurrent.ThreadFactoryBuilder;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link Scheduler} on threads it owns: one timer thread and a fixed pool of workers for store
 * work. The production scheduler of a Transaction Service; the simulator uses virtual time.
 */
public final class ThreadScheduler implements Scheduler, AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ThreadScheduler.class);
  private final String name;
  private final ScheduledExecutorService timers;
  private final ExecutorService workers;
  private final Scheduler delegate;

  /** Starts the threads, named {@code name-timer-N} and {@code name-N}. */
  public ThreadScheduler(String name, int workerThreads) {
    if (workerThreads < 1) {
      throw new IllegalArgumentException("workerThreads must be >= 1, got " + workerThreads);
    }
    this.name = name;
    this.timers = Executors.newSingleThreadScheduledExecutor(
        new ThreadFactoryBuilder().setNameFormat(name + "-timer-%d").setDaemon(true).build());
    this.workers = Executors.newFixedThreadPool(workerThreads,
        new ThreadFactoryBuilder().setNameFormat(name + "-%d").setDaemon(true).build());
    this.delegate = Scheduler.of(timers, workers);
  }

  @Override
  public long nowMicros() {
    return delegate.nowMicros();
  }

  @Override
  public Cancellable schedule(long delayMicros, Runnable task) {
    return delegate.schedule(delayMicros, task);
  }

  @Override
  public java.util.random.RandomGenerator random() {
    return delegate.random();
  }

  @Override
  public void execute(Runnable task) {
    delegate.execute(task);
  }

  /** Stops the threads; waits at most 5 s for running tasks. Pending tasks are dropped. */
  @Override
  public void close() {
    timers.shutdownNow();
    workers.shutdownNow();
    try {
      if (!workers.awaitTermination(5, TimeUnit.SECONDS)
          || !timers.awaitTermination(5, TimeUnit.SECONDS)) {
        LOG.warn("threads of {} did not stop within 5 s", name);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
