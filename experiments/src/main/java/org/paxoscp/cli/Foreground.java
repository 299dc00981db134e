package org.paxoscp.cli;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Keeps a command in the foreground until it is told to stop: by Ctrl-C or SIGTERM (a JVM shutdown
 * hook), or by {@link #stop()} from another thread (tests). Either way the stop action runs exactly
 * once, and {@link #await()} returns after it finished.
 *
 * <p>Thread-safe.
 */
final class Foreground {
  private final Runnable stopAction;
  private final Thread hook;
  private final AtomicBoolean stopping = new AtomicBoolean();
  private final CountDownLatch stopped = new CountDownLatch(1);

  /** Registers the shutdown hook; {@code stopAction} must not throw and should be bounded. */
  Foreground(String name, Runnable stopAction) {
    this.stopAction = stopAction;
    this.hook = new Thread(this::runStop, name + "-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** Blocks until the stop action has run; if interrupted, runs it now. */
  void await() {
    try {
      stopped.await();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      stop();
    }
  }

  /** Runs the stop action (once) without waiting for the JVM to shut down. */
  void stop() {
    try {
      Runtime.getRuntime().removeShutdownHook(hook);
    } catch (IllegalStateException e) {
      // The JVM is already shutting down: the hook runs (or ran) the stop action itself.
    }
    runStop();
  }

  private void runStop() {
    if (stopping.compareAndSet(false, true)) {
      try {
        stopAction.run();
      } finally {
        stopped.countDown();
      }
    } else {
      try {
        stopped.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
