package org.paxoscp.store.hbase;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.paxoscp.store.StoreUnavailableException;

/**
 * Waits for an HBase future for at most a deadline and maps its failure to our exceptions: I/O
 * failures, timeouts and interrupts become {@link StoreUnavailableException} (with the context of
 * the call), invalid arguments stay {@link IllegalArgumentException}.
 */
final class Await {
  private Await() {}

  static <T> T get(CompletableFuture<T> future, Duration deadline, Supplier<String> context) {
    return get(future, deadline, context, StallDetector.PROCESS::stalledNanos);
  }

  /**
   * As {@link #get(CompletableFuture, Duration, Supplier)}; time during which this process did
   * not run (as {@code stalledNanos} tells, see {@link StallDetector}) does not count against the
   * deadline: the wait is extended by it.
   */
  static <T> T get(CompletableFuture<T> future, Duration deadline, Supplier<String> context,
      LongSupplier stalledNanos) {
    long stalledBefore = stalledNanos.getAsLong();
    long wait = deadline.toNanos();
    try {
      while (true) {
        try {
          return future.get(wait, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
          long stalledNow = stalledNanos.getAsLong();
          if (stalledNow <= stalledBefore) {
            throw new StoreUnavailableException(
                context.get() + ": no answer within " + deadline.toMillis() + " ms", e);
          }
          // The process stood still while waiting: give back the time it did not run.
          wait = stalledNow - stalledBefore;
          stalledBefore = stalledNow;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException(context.get() + ": interrupted", e);
    } catch (ExecutionException e) {
      throw translate(e.getCause(), context);
    }
  }

  static RuntimeException translate(Throwable cause, Supplier<String> context) {
    while ((cause instanceof CompletionException || cause instanceof ExecutionException)
        && cause.getCause() != null) {
      cause = cause.getCause();
    }
    if (cause instanceof Error err) {
      throw err;
    }
    if (cause instanceof IllegalArgumentException iae) {
      return new IllegalArgumentException(context.get() + ": " + iae.getMessage(), iae);
    }
    if (cause instanceof IOException || cause instanceof UncheckedIOException) {
      return new StoreUnavailableException(context.get() + ": " + describe(cause), cause);
    }
    // Any other failure inside the HBase client (closed connection, rejected task, a bug in a
    // retry path) leaves the caller in the same position as an I/O error: outcome unknown.
    return new StoreUnavailableException(context.get() + ": " + describe(cause), cause);
  }

  private static String describe(Throwable t) {
    String m = t.getMessage();
    if (m != null && m.length() > 300) {
      m = m.substring(0, 300) + "...";
    }
    return t.getClass().getSimpleName() + (m == null ? "" : " (" + m.replace('\n', ' ') + ")");
  }
}
