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
