package org.paxoscp.client;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;

/**
 * The seam between the client's asynchronous core and its blocking API: the blocking methods
 * wait for the core's future and throw what it failed with, unwrapped, so that they keep their
 * typed exceptions.
 */
final class Futures {
  private Futures() {
  }

  /** What {@code t} stands for: the cause of a {@link CompletionException} or an execution's. */
  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException)
        && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /**
   * Waits for {@code f} (not interruptibly: the core's steps are each bounded by the cluster's
   * timeouts; the commits, which stop on an interrupt, wait their own way) and returns its
   * value, or throws the exception it failed with.
   */
  static <T> T join(CompletableFuture<T> f) {
    try {
      return f.join();
    } catch (CompletionException | java.util.concurrent.CancellationException e) {
      throw rethrow(e);
    }
  }

  /**
   * Waits for {@code f}, a begin or read, and returns its value or throws what it failed with.
   * On an interrupt the call is abandoned (its future may still complete; nothing of it was
   * sent for commit): runs {@code onInterrupt} (may be null), keeps the flag set and throws
   * {@link TransactionInterruptedException}.
   */
  static <T> T joinInterruptibly(CompletableFuture<T> f, String group, Runnable onInterrupt) {
    try {
      return f.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      if (onInterrupt != null) {
        onInterrupt.run();
      }
      throw new TransactionInterruptedException(
          "interrupted while waiting; the call was abandoned and nothing was committed", group, e);
    } catch (java.util.concurrent.ExecutionException | CompletionException
        | java.util.concurrent.CancellationException e) {
      throw rethrow(e);
    }
  }

  /** {@code t} unwrapped, as an unchecked exception to throw (an Error is thrown as is). */
  static RuntimeException rethrow(Throwable t) {
    Throwable c = unwrap(t);
    if (c instanceof RuntimeException r) {
      return r;
    }
    if (c instanceof Error err) {
      throw err;
    }
    return new CompletionException(c);
  }

  /** A future failed with {@code t}. */
  static <T> CompletableFuture<T> failed(Throwable t) {
    return CompletableFuture.failedFuture(t);
  }

  /**
   * Runs {@code step} and returns its future; an exception it throws before returning one
   * (a validation, a closed client) fails the future instead.
   */
  static <T> CompletableFuture<T> guard(java.util.function.Supplier<CompletableFuture<T>> step) {
    try {
      return step.get();
    } catch (RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  /**
   * A future completed as {@code f} is, on {@code executor}: what the public asynchronous
   * methods return, so that an application's continuations never run on the transport's
   * threads.
   */
  static <T> CompletableFuture<T> handOff(CompletableFuture<T> f, Executor executor) {
    CompletableFuture<T> out = new CompletableFuture<>();
    f.whenComplete((v, t) -> {
      Runnable done = () -> {
        if (t != null) {
          out.completeExceptionally(unwrap(t));
        } else {
          out.complete(v);
        }
      };
      try {
        executor.execute(done);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        done.run(); // The client is closing: complete here rather than never.
      }
    });
    return out;
  }
}
