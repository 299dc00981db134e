package org.paxoscp.transport;

import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.slf4j.Logger;

/**
 * Counts rejected datagrams per {@link Reason} and logs them rate-limited: at most one WARN per
 * reason per interval, carrying how many were dropped since the previous WARN, so that a flood of
 * forged datagrams can't flood the log too. Thread-safe, lock-free.
 */
final class DropLog {
  private final Logger log;
  private final String owner;
  private final long intervalNanos;
  private final Map<Reason, Counter> counters = new EnumMap<>(Reason.class);

  private static final class Counter {
    final AtomicLong total = new AtomicLong();
    final AtomicLong sinceLog = new AtomicLong();
    final AtomicLong lastLogNanos;

    Counter(long lastLogNanos) {
      this.lastLogNanos = new AtomicLong(lastLogNanos);
    }
  }

  DropLog(Logger log, String owner, long interval, TimeUnit unit) {
    this.log = log;
    this.owner = owner;
    this.intervalNanos = unit.toNanos(interval);
    long now = System.nanoTime();
    for (Reason r : Reason.values()) {
      // Backdated so that the first drop of each reason is logged at once.
      counters.put(r, new Counter(now - intervalNanos));
    }
  }

  /** Counts one dropped datagram from {@code sender}; logs if this reason's interval is over. */
  void record(MalformedDatagramException e, Object sender) {
    Counter c = counters.get(e.reason());
    c.total.incrementAndGet();
    c.sinceLog.incrementAndGet();
    long now = System.nanoTime();
    long last = c.lastLogNanos.get();
    if (now - last >= intervalNanos && c.lastLogNanos.compareAndSet(last, now)) {
      long n = c.sinceLog.getAndSet(0);
      log.warn("{}: dropped {} datagram(s) for {} since the last report; latest from {}: {}",
          owner, n, e.reason(), sender, e.getMessage());
    }
  }

  long count(Reason reason) {
    return counters.get(reason).total.get();
  }

  Map<Reason, Long> snapshot() {
    Map<Reason, Long> m = new EnumMap<>(Reason.class);
    for (var e : counters.entrySet()) {
      m.put(e.getKey(), e.getValue().total.get());
    }
    return m;
  }
}
