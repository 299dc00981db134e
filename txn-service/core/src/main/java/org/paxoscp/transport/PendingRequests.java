package org.paxoscp.transport;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Request correlation of a {@link UdpTransport}: gives each request an id, holds its future until
 * the matching reply arrives (from the DC that was asked) or its deadline passes, and fails every
 * pending request when the transport closes. A late, duplicate or misdirected reply matches
 * nothing and is ignored.
 */
final class PendingRequests {
  private record Pending(String dc, CompletableFuture<Message> future) {}

  private final Map<Long, Pending> pending = new ConcurrentHashMap<>();
  private final AtomicLong nextId = new AtomicLong(ThreadLocalRandom.current().nextLong());
  private final ScheduledExecutorService timers;

  /** @param timers fires the deadlines (the transport's I/O thread) */
  PendingRequests(ScheduledExecutorService timers) {
    this.timers = timers;
  }

  /** A fresh request id; never 0, which marks one-way messages. */
  long newId() {
    long id;
    do {
      id = nextId.getAndIncrement();
    } while (id == 0);
    return id;
  }

  /**
   * Registers request {@code id} to DC {@code dc}; the future fails with {@code onTimeout}'s
   * exception after {@code timeout}, with {@code onClosed}'s if the timers are gone.
   */
  CompletableFuture<Message> register(long id, String dc, Duration timeout,
      Supplier<TransportTimeoutException> onTimeout, Supplier<RuntimeException> onClosed) {
    CompletableFuture<Message> f = new CompletableFuture<>();
    Pending p = new Pending(dc, f);
    pending.put(id, p);
    ScheduledFuture<?> timer;
    try {
      timer = timers.schedule(() -> f.completeExceptionally(onTimeout.get()),
          timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      pending.remove(id, p);
      f.completeExceptionally(onClosed.get());
      return f;
    }
    f.whenComplete((r, t) -> {
      pending.remove(id, p);
      timer.cancel(false);
    });
    return f;
  }

  /** Completes the request a reply answers; false when it matches none. */
  boolean complete(long id, String fromDc, Message reply) {
    Pending p = pending.get(id);
    if (p == null || !p.dc().equals(fromDc) || !pending.remove(id, p)) {
      return false;
    }
    p.future().complete(reply);
    return true;
  }

  /** Fails every pending request. */
  void failAll(Supplier<RuntimeException> failure) {
    for (Long id : pending.keySet()) {
      Pending p = pending.remove(id);
      if (p != null) {
        p.future().completeExceptionally(failure.get());
      }
    }
  }
}
