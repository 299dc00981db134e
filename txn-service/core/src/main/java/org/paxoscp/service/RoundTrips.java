package org.paxoscp.service;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;
import org.paxoscp.transport.Latency;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.RttProbe;
import org.paxoscp.transport.Message.RttReply;
import org.paxoscp.transport.Message.RttRow;
import org.paxoscp.transport.MessageTooLargeException;
import org.paxoscp.transport.NearestMajority;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Round trips between DCs as the services measure them, for leader combination's placement when
 * no RTTs are configured (docs/leader-combination.md "Round trips measured").
 *
 * <p><b>Measuring.</b> Every probe interval a service sends an {@link RttProbe} to one service of
 * each other DC, which answers at once without touching its store; the time to the answer is a
 * sample. Its estimate of a peer is the median of its last {@value #WINDOW} samples (what a
 * commit's round trip typically costs; one slow answer, a pause or a lost probe moves it little),
 * first published once it has {@value #MIN_SAMPLES}.
 *
 * <p><b>Agreeing.</b> The weighted rule of {@link BatcherPlacement} works without messages only
 * if every DC computes it from the same numbers. So a DC's measurements are used only as it
 * <em>publishes</em> them: its row, rounded to {@value #ROUND_MICROS} µs, replaced only when an
 * estimate moved by more than {@value #CHANGE_MICROS} µs and {@value #CHANGE_PERCENT}% from the
 * published value, with a version one above the row it replaces. Probes and their answers carry
 * every row the sender knows; a receiver keeps, per DC, the row of the highest version (ties by
 * content, so that two instances of one DC that publish at once end with the same row). The RTT
 * of a pair is the mean of what its two DCs published (or the one value published). Services
 * that hold the same rows hold the same table; rows spread with every probe, so they converge
 * within a probe interval or two of a change. Until it agrees, two DCs may choose different
 * batchers for a while: that costs contention, never safety (placement only decides who
 * proposes).
 *
 * <p>Logged at info when first complete and when a pair moved by more than 1 ms and 10% since
 * the table last logged so (smaller changes at debug). The table is in use once every pair of
 * DCs has a value; until then (a DC no service has
 * reached since it started) the placement has no costs. Rows never expire: a DC that stops
 * answering keeps its last round trips, and the placement's down marks route around it.
 *
 * <p>Thread-safe. Memory: one row per DC, a window per peer.
 */
final class RoundTrips {
  private static final Logger LOG = LoggerFactory.getLogger(RoundTrips.class);
  /** Samples per peer the estimate is the median of. */
  static final int WINDOW = 16;
  /** Samples of a peer taken before its round trip is first published. */
  static final int MIN_SAMPLES = 3;
  /** Published round trips are rounded to this (µs). */
  static final long ROUND_MICROS = 100;
  /** A published round trip is replaced only when the estimate moved by more than this (µs) ... */
  static final long CHANGE_MICROS = 500;
  /** ... and more than this share of it (%). */
  static final int CHANGE_PERCENT = 5;

  private final String dc;
  private final List<String> dcs;
  /** Per peer, its last samples (µs; 0 = none yet) and where the next goes. */
  private final Map<String, long[]> samples = new HashMap<>();
  private final Map<String, Integer> next = new HashMap<>();
  /** Per DC, the newest row known (this DC's included, whichever instance published it). */
  private final Map<String, RttRow> rows = new HashMap<>();
  private volatile LeaderCosts costs = LeaderCosts.NONE;
  /** The pairs the costs were computed from ("A-B" -> µs). */
  private Map<String, Long> agreed = Map.of();
  /** The pairs last logged at info (the first table, then tables that moved a pair by 10%). */
  private Map<String, Long> logged = Map.of();
  private long published;
  /** Set when a probe did not fit in a datagram: probing stops. */
  private volatile boolean tooLarge;

  RoundTrips(String dc, List<String> dcs) {
    this.dc = Objects.requireNonNull(dc);
    this.dcs = List.copyOf(dcs);
    if (!this.dcs.contains(dc)) {
      throw new IllegalArgumentException("DC " + dc + " is not in " + dcs);
    }
  }

  /** Whether this cluster's round trips can be measured: at most {@link RttRow#MAX_DCS} DCs. */
  boolean measurable() {
    return dcs.size() <= RttRow.MAX_DCS;
  }

  /** The agreed table's costs, or {@link LeaderCosts#NONE} while some pair has no value. */
  LeaderCosts costs() {
    return costs;
  }

  /** Rows this service published (its own measurements changed enough). */
  synchronized long published() {
    return published;
  }

  /**
   * Probes every other DC now and every {@code interval} after, until {@code stopped} holds;
   * each probe waits at most one interval for its answer (a later answer is no sample).
   */
  void start(Transport transport, Scheduler scheduler, Duration interval,
      BooleanSupplier stopped) {
    long micros = Math.max(1, interval.toNanos() / 1000);
    Runnable[] tick = new Runnable[1];
    tick[0] = () -> {
      if (stopped.getAsBoolean()) {
        return;
      }
      for (String peer : dcs) {
        if (!peer.equals(dc) && !tooLarge) {
          probe(transport, scheduler, peer, interval);
        }
      }
      if (!tooLarge) {
        scheduler.schedule(micros, tick[0]);
      }
    };
    scheduler.execute(tick[0]);
  }

  private void probe(Transport transport, Scheduler scheduler, String peer, Duration timeout) {
    long sent = scheduler.nowMicros();
    try {
      transport.request(peer, new RttProbe(rows()), timeout).whenComplete((m, t) -> {
        if (m instanceof RttReply r) {
          sample(peer, scheduler.nowMicros() - sent);
          merge(r.rows());
        } else if (t instanceof MessageTooLargeException
            || t != null && t.getCause() instanceof MessageTooLargeException) {
          tooLarge(t);
        }
      });
    } catch (MessageTooLargeException e) {
      tooLarge(e);
    } catch (TransportException e) {
      // Not sent (the transport is closing): no sample.
    }
  }

  /**
   * Every row of every DC does not fit in one datagram (many DCs, long names, a small
   * {@code paxoscp.max.datagram.bytes}): probing stops, said once.
   */
  private void tooLarge(Throwable t) {
    if (!tooLarge) {
      tooLarge = true;
      LOG.warn("DC {}: round-trip probes do not fit in a datagram ({}); round trips are not "
          + "measured, leader combination places batchers without them", dc, t.getMessage());
    }
  }

  /** The answer to a peer's probe: its rows merged here, and every row known here. */
  Message answer(RttProbe probe) {
    merge(probe.rows());
    return new RttReply(rows());
  }

  /** Every row known here. */
  synchronized List<RttRow> rows() {
    return List.copyOf(rows.values());
  }

  /**
   * A round trip to {@code peer} measured here; publishes this DC's row again when the estimate
   * moved enough from what the row says.
   */
  synchronized void sample(String peer, long rttMicros) {
    if (peer.equals(dc) || !dcs.contains(peer) || rttMicros < 0) {
      return;
    }
    long[] window = samples.computeIfAbsent(peer, p -> new long[WINDOW]);
    int i = next.merge(peer, 1, Integer::sum) - 1;
    window[i % WINDOW] = Math.max(1, rttMicros);
    if (i + 1 < MIN_SAMPLES) {
      return;
    }
    RttRow mine = rows.get(dc);
    Long shown = mine == null ? null : mine.rttMicros().get(peer);
    long estimate = estimate(peer);
    if (shown != null && Math.abs(estimate - shown) <= CHANGE_MICROS
        || shown != null && Math.abs(estimate - shown) * 100 <= (long) CHANGE_PERCENT * shown) {
      return;
    }
    Map<String, Long> row = new TreeMap<>(mine == null ? Map.of() : mine.rttMicros());
    for (String p : samples.keySet()) {
      if (next.get(p) < MIN_SAMPLES) {
        continue;
      }
      Long s = row.get(p);
      long e = estimate(p);
      if (s == null || p.equals(peer) || Math.abs(e - s) > CHANGE_MICROS
          && Math.abs(e - s) * 100 > (long) CHANGE_PERCENT * s) {
        row.put(p, e);
      }
    }
    rows.put(dc, new RttRow(dc, mine == null ? 1 : mine.version() + 1, row));
    published++;
    agree();
  }

  /** The median (the lower of the two middle ones) of {@code peer}'s window, rounded. */
  private long estimate(String peer) {
    long[] taken = java.util.Arrays.stream(samples.get(peer)).filter(s -> s > 0).sorted()
        .toArray();
    long median = taken[(taken.length - 1) / 2];
    long rounded = Math.round((double) median / ROUND_MICROS) * ROUND_MICROS;
    return Math.min(RttRow.MAX_RTT_MICROS, rounded);
  }

  /** Keeps, per DC of this cluster, the newer of the row known here and the one received. */
  synchronized void merge(List<RttRow> received) {
    boolean changed = false;
    for (RttRow r : received) {
      if (!dcs.contains(r.dc())) {
        continue;
      }
      RttRow known = rows.get(r.dc());
      if (known == null || newer(r, known)) {
        rows.put(r.dc(), r);
        changed = true;
      }
    }
    if (changed) {
      agree();
    }
  }

  /** The higher version; of equal versions, the one whose content sorts later. */
  private static boolean newer(RttRow a, RttRow b) {
    if (a.version() != b.version()) {
      return a.version() > b.version();
    }
    return a.rttMicros().toString().compareTo(b.rttMicros().toString()) > 0;
  }

  /** Recomputes the table from the rows; logs it when it changed. */
  private void agree() {
    Map<String, Long> pairs = new LinkedHashMap<>();
    for (int i = 0; i < dcs.size(); i++) {
      for (int j = i + 1; j < dcs.size(); j++) {
        String a = dcs.get(i);
        String b = dcs.get(j);
        Long ab = published(a, b);
        Long ba = published(b, a);
        if (ab == null && ba == null) {
          return;
        }
        long rtt = ab == null ? ba : ba == null ? ab : (ab + ba) / 2;
        pairs.put(a + "-" + b, Math.round((double) rtt / ROUND_MICROS) * ROUND_MICROS);
      }
    }
    if (pairs.equals(agreed)) {
      return;
    }
    Latency latency = Latency.pairsOnly(0);
    for (int i = 0; i < dcs.size(); i++) {
      for (int j = i + 1; j < dcs.size(); j++) {
        latency = latency.withPair(dcs.get(i), dcs.get(j),
            pairs.get(dcs.get(i) + "-" + dcs.get(j)));
      }
    }
    Map<String, Long> lead = new LinkedHashMap<>();
    for (String d : dcs) {
      lead.put(d, NearestMajority.rttMicros(latency, dcs, d));
    }
    if (movedMuch(logged, pairs)) {
      LOG.info("DC {}: round trips between DCs {} (ms): {}; leading costs {}", dc,
          logged.isEmpty() ? "measured" : "changed", describe(pairs), describe(lead));
      logged = pairs;
    } else {
      LOG.debug("DC {}: round trips between DCs now (ms): {}", dc, describe(pairs));
    }
    agreed = pairs;
    costs = new LeaderCosts(lead, latency);
  }

  /** Whether some pair is new or moved by more than 1 ms and 10% from {@code before}. */
  private static boolean movedMuch(Map<String, Long> before, Map<String, Long> now) {
    for (Map.Entry<String, Long> e : now.entrySet()) {
      Long b = before.get(e.getKey());
      long d = b == null ? Long.MAX_VALUE : Math.abs(e.getValue() - b);
      if (b == null || d > 1_000 && d * 10 > b) {
        return true;
      }
    }
    return false;
  }

  private Long published(String from, String to) {
    RttRow r = rows.get(from);
    return r == null ? null : r.rttMicros().get(to);
  }

  private static String describe(Map<String, Long> micros) {
    List<String> parts = new ArrayList<>();
    micros.forEach((k, v) -> parts.add(k + " " + String.format(Locale.ROOT, "%.1f", v / 1000.0)));
    return String.join(", ", parts);
  }
}
