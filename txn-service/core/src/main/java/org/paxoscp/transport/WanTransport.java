package org.paxoscp.transport;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * WAN emulation as a decorator over any {@link Transport} (docs/architecture.md section 6). The
 * sending side emulates both directions of an exchange: a request to DC {@code d} is delayed by the
 * pair's one-way time with jitter, lost with probability {@code loss}, sent twice with
 * probability {@code duplicate}; its reply is held back by the one-way time again (and may be
 * lost); one-way messages are delayed, lost or duplicated the same way. Messages between two
 * different DCs are dropped while either is partitioned ({@link #setPartitioned}, which works
 * whether or not delays are emulated). A lost request or reply is a timeout, as on a real
 * network. With emulation off and no partition, calls go straight through.
 *
 * <p>Every process of an emulated cluster wraps its own transport, so each exchange pays one
 * round trip. A one-way message that fails only after its delay (a DC unknown to the transport)
 * is dropped and logged at debug level, as a lost datagram would be.
 *
 * <p>Thread-safe. Closing it lets messages it still holds back go out (at most 5 s) and then
 * closes the wrapped transport.
 */
public final class WanTransport implements Transport {
  private static final Logger LOG = LoggerFactory.getLogger(WanTransport.class);
  private static final long CLOSE_WAIT_SECONDS = 5;

  private final Transport inner;
  private final WanEmulator emulator;
  private final Set<String> dcNames;
  private final ScheduledThreadPoolExecutor timers;
  private final Set<CompletableFuture<Message>> outstanding = ConcurrentHashMap.newKeySet();
  private final AtomicBoolean closed = new AtomicBoolean();
  /** Said after a timeout when emulated delays or partitions may have caused it. */
  private final String timeoutNote;

  /** Wraps {@code inner}, which speaks for a DC of {@code cluster}, with its WAN settings. */
  public WanTransport(Transport inner, ClusterConfig cluster) {
    this.inner = Objects.requireNonNull(inner);
    this.emulator = new WanEmulator(cluster.wan(), inner.localDc());
    this.dcNames = Set.copyOf(cluster.dcNames());
    this.timeoutNote = cluster.wan().enabled() || !cluster.wan().partitioned().isEmpty()
        ? " (WAN emulation)" : "";
    this.timers = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "wan-" + inner.localDc());
      t.setDaemon(true);
      return t;
    });
    // Every request has a deadline timer, cancelled when its reply comes: drop those at once.
    timers.setRemoveOnCancelPolicy(true);
  }

  @Override
  public void clusterVersion(int version) {
    inner.clusterVersion(version);
  }

  /** Asked of the wrapped transport directly: a control request, not emulated traffic. */
  @Override
  public CompletableFuture<Message.VersionReply> askVersions(String dc, Duration timeout) {
    return inner.askVersions(dc, timeout);
  }

  @Override
  public CompletableFuture<Message.VersionReply> askVersionsFirst(String dc, Duration timeout) {
    return inner.askVersionsFirst(dc, timeout);
  }

  @Override
  public CompletableFuture<java.util.Set<Integer>> wireVersionsOf(String dc, Duration timeout) {
    return inner.wireVersionsOf(dc, timeout);
  }

  /** The wrapped transport. */
  public Transport inner() {
    return inner;
  }

  @Override
  public String localDc() {
    return inner.localDc();
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    CompletableFuture<Message> out = new CompletableFuture<>();
    if (closed.get()) {
      out.completeExceptionally(new TransportClosedException("transport of " + localDc()
          + " is closed"));
      return out;
    }
    ScheduledFuture<?> timer;
    try {
      timer = timers.schedule(() -> out.completeExceptionally(new TransportTimeoutException(
          "no reply from DC " + dc + " within " + timeout.toMillis() + " ms" + timeoutNote)),
          timeout.toNanos(), TimeUnit.NANOSECONDS);
    } catch (RejectedExecutionException e) {
      out.completeExceptionally(new TransportClosedException("transport closed"));
      return out;
    }
    outstanding.add(out);
    out.whenComplete((r, t) -> {
      timer.cancel(false);
      outstanding.remove(out);
    });
    for (long delay : emulator.delaysMicros(dc, ThreadLocalRandom.current())) {
      later(delay, () -> inner.request(dc, request, timeout).whenComplete((reply, failure) -> {
        if (failure != null) {
          if (!(failure instanceof TransportTimeoutException)) {
            out.completeExceptionally(failure);
          }
          return;
        }
        long[] back = emulator.delaysMicros(dc, ThreadLocalRandom.current());
        if (back.length > 0) {
          later(back[0], () -> out.complete(reply));
        }
      }));
    }
    return out;
  }

  @Override
  public void send(String dc, Message message) {
    if (closed.get()) {
      return;
    }
    if (!dcNames.contains(dc)) {
      throw new UnknownDcException("DC " + dc + " is not in the cluster " + dcNames);
    }
    for (long delay : emulator.delaysMicros(dc, ThreadLocalRandom.current())) {
      if (delay == 0) {
        inner.send(dc, message);
      } else {
        later(delay, () -> {
          try {
            inner.send(dc, message);
          } catch (TransportException e) {
            LOG.debug("delayed one-way message to {} dropped: {}", dc, e.toString());
          }
        });
      }
    }
  }

  /**
   * Replaces the set of partitioned DCs at run time (test and experiment control).
   *
   * @throws IllegalArgumentException for a DC the cluster does not have
   */
  public void setPartitioned(Set<String> dcs) {
    for (String d : dcs) {
      if (!dcNames.contains(d)) {
        throw new IllegalArgumentException("unknown DC " + d + "; the cluster has " + dcNames);
      }
    }
    emulator.setPartitioned(dcs);
  }

  /**
   * Idempotent. Fails pending requests with {@link TransportClosedException}, lets the messages
   * it holds back go out (at most 5 s; they were sent before close), then closes the wrapped
   * transport.
   */
  @Override
  public void close() {
    if (!closed.compareAndSet(false, true)) {
      return;
    }
    for (CompletableFuture<Message> f : outstanding) {
      f.completeExceptionally(new TransportClosedException("transport of " + localDc()
          + " is closed"));
    }
    // Delayed tasks still run after shutdown(): the held-back messages go out.
    timers.shutdown();
    try {
      if (!timers.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
        LOG.warn("transport of {}: messages held back by the WAN emulation still unsent after "
            + "{} s, dropping them", localDc(), CLOSE_WAIT_SECONDS);
        timers.shutdownNow();
      }
    } catch (InterruptedException e) {
      timers.shutdownNow();
      Thread.currentThread().interrupt();
    }
    inner.close();
  }

  @Override
  public String toString() {
    return "WAN emulation " + emulator + " over " + inner;
  }

  private void later(long delayMicros, Runnable task) {
    if (delayMicros == 0) {
      task.run();
      return;
    }
    try {
      timers.schedule(task, delayMicros, TimeUnit.MICROSECONDS);
    } catch (RejectedExecutionException e) {
      // Closed meanwhile: as if lost.
    }
  }
}
