package org.paxoscp.transport;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.paxoscp.transport.MalformedDatagramException.Reason;

/**
 * Whether an authentic datagram is fresh (docs/architecture.md section 13), as DTLS, IPsec and
 * WireGuard decide it: sealed for this DC ({@link Reason#MISDIRECTED} otherwise), by a sender whose
 * clock is within the window of this one ({@link Reason#STALE}), and not seen before
 * ({@link Reason#REPLAY}): per sender (key id and sender id), the highest counter seen and a
 * bitmap of the {@link #WINDOW} counters below it. Every field checked is in the authenticated
 * header, so a copy cannot be made to look fresh.
 *
 * <p>Why the window is enough: a copy of a datagram sealed at time {@code t} is stale once this
 * clock passes {@code t + window}; before that, its sender's state is here (it is kept three
 * windows after the sender was last heard), so its counter is. A sender forgotten early, because
 * more than {@link #MAX_SENDERS} of its role were heard within that time (a flood of authentic
 * senders, which needs that role's key), raises its role's floor: an unknown sender's datagram
 * sealed at or before the newest time such a sender was heard at (never later than when it was
 * heard) is refused as a possible copy. A receiver that just started knows no sender: its floors
 * start at its start time, so a copy of a datagram sealed before it started is refused too. Each
 * role has its own table and floor, so a flood under the client key cannot make a service forget
 * its peers or refuse a new service.
 *
 * <p>Version 3 datagrams (a rollout from it) carry no time, destination or role and pass
 * unchecked: that is what finishing the rollout ends. Thread-safe.
 */
final class Freshness {
  /** Counters below a sender's highest that the bitmap remembers. */
  static final int WINDOW = 1024;
  static final int MAX_SENDERS = 100_000;

  private record SenderRef(int keyId, ByteBuffer sender) { }

  /** One sender's counters seen. Guarded by itself. */
  private static final class Seen {
    long highest = -1;
    final long[] bits = new long[WINDOW / 64];
    long newestMillis;

    /** Whether {@code c} is new; marks it seen. */
    synchronized boolean admit(long c, long sentMillis) {
      newestMillis = Math.max(newestMillis, sentMillis);
      if (c > highest) {
        long shift = highest < 0 ? WINDOW : c - highest;
        if (shift >= WINDOW) {
          java.util.Arrays.fill(bits, 0);
        } else {
          for (long i = highest + 1; i <= c; i++) {
            clear(i);
          }
        }
        highest = c;
        set(c);
        return true;
      }
      if (highest - c >= WINDOW || get(c)) {
        return false;
      }
      set(c);
      return true;
    }

    private void set(long c) {
      int i = (int) Math.floorMod(c, (long) WINDOW);
      bits[i >>> 6] |= 1L << (i & 63);
    }

    private void clear(long c) {
      int i = (int) Math.floorMod(c, (long) WINDOW);
      bits[i >>> 6] &= ~(1L << (i & 63));
    }

    private boolean get(long c) {
      int i = (int) Math.floorMod(c, (long) WINDOW);
      return (bits[i >>> 6] & (1L << (i & 63))) != 0;
    }
  }

  /** One role's senders (version 4 datagrams of one role) and their floor. */
  private static final class Table {
    final AtomicLong floorMillis;
    final Cache<SenderRef, Seen> senders;

    Table(long startMillis, Duration window, int maxSenders) {
      this.floorMillis = new AtomicLong(startMillis);
      this.senders = Caffeine.newBuilder()
          .maximumSize(maxSenders)
          .expireAfterAccess(window.multipliedBy(3))
          .executor(Runnable::run)
          .<SenderRef, Seen>removalListener((k, v, cause) -> {
            if (cause == RemovalCause.SIZE && v != null) {
              floorMillis.accumulateAndGet(v.newestMillis, Math::max);
            }
          })
          .build();
    }
  }

  private final String localDc;
  private final long windowMillis;
  private final LongSupplier clock;
  private final java.util.Map<Role, Table> tables = new java.util.EnumMap<>(Role.class);

  /**
   * @param localDc the DC this process belongs to (a datagram for another is misdirected)
   * @param window how far a sender's clock may be from this one
   * @param clock this process's wall clock, in milliseconds
   */
  Freshness(String localDc, Duration window, LongSupplier clock) {
    this(localDc, window, clock, MAX_SENDERS);
  }

  Freshness(String localDc, Duration window, LongSupplier clock, int maxSenders) {
    this.localDc = localDc;
    this.windowMillis = window.toMillis();
    this.clock = clock;
    long start = clock.getAsLong();
    for (Role r : Role.values()) {
      tables.put(r, new Table(start, window, maxSenders));
    }
  }

  /**
   * Checks an opened datagram; marks its counter seen when it is fresh.
   *
   * @throws MalformedDatagramException MISDIRECTED, STALE or REPLAY
   */
  void check(WireCodec.Opened o) {
    if (o.version() == WireCodec.VERSION_3) {
      return;
    }
    if (!o.toDc().equals(localDc)) {
      throw new MalformedDatagramException(Reason.MISDIRECTED, "sealed for DC " + o.toDc()
          + ", received by DC " + localDc);
    }
    long now = clock.getAsLong();
    long skew = o.sentMillis() - now;
    if (skew > windowMillis || skew < -windowMillis) {
      throw new MalformedDatagramException(Reason.STALE, "sealed " + (skew < 0
          ? -skew + " ms ago" : skew + " ms ahead of this clock") + " by DC "
          + o.envelope().fromDc() + "; the window is " + windowMillis + " ms ("
          + ClusterConfig.WIRE_FRESHNESS.name() + "; clocks need NTP)");
    }
    Table table = tables.get(o.role());
    SenderRef ref = new SenderRef(o.keyId(), ByteBuffer.wrap(o.sender()));
    Seen seen = table.senders.getIfPresent(ref);
    if (seen == null) {
      if (o.sentMillis() <= table.floorMillis.get()) {
        throw new MalformedDatagramException(Reason.REPLAY, "from a sender not known here, "
            + "sealed before this process started or before senders of its role were forgotten "
            + "under load");
      }
      seen = table.senders.get(ref, r -> new Seen());
    }
    // The time it is remembered by is never later than now: a sender claiming a future time
    // cannot push the floor ahead of the present.
    if (!seen.admit(o.counter(), Math.min(o.sentMillis(), now))) {
      throw new MalformedDatagramException(Reason.REPLAY, "counter " + o.counter()
          + " of this sender (DC " + o.envelope().fromDc() + ") was seen already or is "
          + WINDOW + " or more below its newest");
    }
  }

  /** How many senders are remembered now (for tests and metrics). */
  long senders() {
    long n = 0;
    for (Table t : tables.values()) {
      t.senders.cleanUp();
      n += t.senders.estimatedSize();
    }
    return n;
  }
}
