package org.paxoscp.nemesis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.HdrHistogram.Histogram;
import org.paxoscp.local.ServiceProcess;
import org.paxoscp.nemesis.NemesisWorkload.Event;
import org.paxoscp.nemesis.NemesisWorkload.Outcome;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.store.hbase.RegionControl;
import org.paxoscp.store.hbase.RegionControl.Region;
import org.paxoscp.store.hbase.StandaloneHBase;

/**
 * The faults of the HBase engine itself ({@link Fault#engine()}), on an HBase of several region
 * servers: a region moved, a region split, a region server killed, the balancer run. Each is
 * carried out through the master ({@link RegionControl}) or as a kill -9, and remembered as a
 * window; at the end of the run {@link #report} says, per fault, what the DCs whose tables it
 * hit saw: outcomes, the p99 of read-write transactions in the window against the run's, their
 * services' store errors, and how long until those DCs' clients committed at half their
 * fault-free rate again.
 */
final class EngineFaults {
  /** How long after a fault healed its window still runs (late errors, queued transactions). */
  private static final Duration AFTER = Duration.ofSeconds(2);
  /** The sliding window over which a DC's commit rate after a fault is measured. */
  private static final Duration RATE_WINDOW = Duration.ofSeconds(2);
  private static final Duration REASSIGN_WITHIN = Duration.ofSeconds(180);

  /** One engine fault: what it hit and when. */
  record Window(Fault kind, String what, List<String> dcs, long startNanos, long healedNanos,
      long storeErrors, boolean servicesAlive) {}

  private final NemesisCluster cluster;
  private final RunLog log;
  private final FaultSchedule.Clock clock;
  private final List<Window> windows = new ArrayList<>();

  EngineFaults(NemesisCluster cluster, RunLog log, FaultSchedule.Clock clock) {
    this.cluster = cluster;
    this.log = log;
    this.clock = clock;
  }

  /** A region of a random DC's WAL or data table moves to another live region server. */
  String regionMove(long holdMs, SplittableRandom random) {
    String dc = pick(cluster.dcs(), random);
    Table table = random.nextBoolean() ? Table.WAL : Table.DATA;
    RegionControl control = cluster.regionControl(dc);
    List<Region> regions = control.regions(dc, table);
    Region r = pick(regions, random);
    List<String> others = new ArrayList<>(control.liveServers());
    others.remove(r.server());
    if (others.isEmpty()) {
      return null;
    }
    String to = pick(others, random);
    long errors0 = storeErrors(List.of(dc));
    long t0 = clock.nanoTime();
    control.move(r, to);
    double took = (clock.nanoTime() - t0) / 1e9;
    String what = String.format("DC %s %s region %s moved from %s to %s in %.2f s", dc,
        name(table), r.name(), r.server(), to, took);
    clock.sleep(holdMs);
    windows.add(new Window(Fault.REGION_MOVE, what, List.of(dc), t0, clock.nanoTime(),
        storeErrors(List.of(dc)) - errors0, servicesAlive()));
    return what;
  }

  /** A region of a random DC's WAL or data table splits at a random bucket inside it. */
  String regionSplit(long holdMs, SplittableRandom random) {
    String dc = pick(cluster.dcs(), random);
    Table table = random.nextBoolean() ? Table.WAL : Table.DATA;
    RegionControl control = cluster.regionControl(dc);
    List<Region> splittable = control.regions(dc, table).stream()
        .filter(r -> bucket(r.endKey(), 1 << 16) - bucket(r.startKey(), 0) >= 2).toList();
    if (splittable.isEmpty()) {
      return null;
    }
    Region r = pick(splittable, random);
    int lo = bucket(r.startKey(), 0) + 1;
    int b = lo + random.nextInt(bucket(r.endKey(), 1 << 16) - lo);
    byte[] at = {(byte) (b >>> 8), (byte) b};
    int before = control.regions(dc, table).size();
    long errors0 = storeErrors(List.of(dc));
    long t0 = clock.nanoTime();
    control.split(r, at);
    double took = (clock.nanoTime() - t0) / 1e9;
    clock.sleep(holdMs);
    String after;
    try {
      after = Integer.toString(control.regions(dc, table).size());
    } catch (RuntimeException e) {
      after = "? (" + e.getMessage() + ")";
    }
    String what = String.format("DC %s %s region %s on %s split at bucket %d in %.2f s "
        + "(%d regions before, %s after)", dc, name(table), r.name(), r.server(), b, took,
        before, after);
    windows.add(new Window(Fault.REGION_SPLIT, what, List.of(dc), t0, clock.nanoTime(),
        storeErrors(List.of(dc)) - errors0, servicesAlive()));
    return what;
  }

  /**
   * A random running region server of a random DC's HBase is killed with kill -9; once the
   * master has reassigned its regions (and {@code holdMs} passed) it is started again.
   */
  String regionServerCrash(long holdMs, SplittableRandom random) {
    String dc = pick(cluster.dcs(), random);
    List<StandaloneHBase.RegionServer> running = cluster.regionServers(dc).stream()
        .filter(rs -> rs.pid().isPresent()).toList();
    if (running.size() < 2) {
      return null;
    }
    StandaloneHBase.RegionServer victim = pick(running, random);
    List<String> hit = cluster.dcsSharingHBaseOf(dc);
    RegionControl control = cluster.regionControl(dc);
    int held = 0;
    for (String d : hit) {
      for (Table t : Table.values()) {
        held += (int) control.regions(d, t).stream()
            .filter(r -> r.server().equals(victim.address())).count();
      }
    }
    long errors0 = storeErrors(hit);
    long t0 = clock.nanoTime();
    cluster.killRegionServer(dc, victim.index());
    log.log("HBase %s: region server %d (pid %d, %s, %d regions of DCs %s) killed with kill -9",
        cluster.hbaseName(dc), victim.index(), victim.pid().getAsLong(), victim.address(), held,
        hit);
    // From here on the fault happened: whatever fails below is logged, and the window kept.
    double reassigned = -1;
    String rejoined;
    try {
      reassigned = awaitReassigned(control, hit, victim.address(), t0);
      long left = holdMs - (clock.nanoTime() - t0) / 1_000_000;
      if (left > 0) {
        clock.sleep(left);
      }
    } finally {
      rejoined = restart(dc, victim.index(), control, t0);
    }
    String what = String.format("HBase %s region server %d (%s, %d regions of DCs %s) killed; "
        + "%s; %s", cluster.hbaseName(dc), victim.index(),
        victim.address(), held, hit, reassigned < 0 ? "its regions NOT all reassigned within "
            + REASSIGN_WITHIN.toSeconds() + " s"
            : String.format("its regions served elsewhere %.1f s after the kill", reassigned),
        rejoined);
    windows.add(new Window(Fault.RS_CRASH, what, hit, t0, clock.nanoTime(),
        storeErrors(hit) - errors0, servicesAlive()));
    return what;
  }

  /** Starts a killed region server again and waits until the master counts it live. */
  private String restart(String dc, int index, RegionControl control, long t0) {
    try {
      cluster.startRegionServer(dc, index);
      long deadline = clock.nanoTime() + Duration.ofSeconds(120).toNanos();
      while (control.liveServers().size() < cluster.regionServers(dc).size()) {
        if (clock.nanoTime() > deadline) {
          return "started again, NOT live within 120 s";
        }
        clock.sleep(200);
      }
      return String.format("started again and live %.1f s after the kill",
          (clock.nanoTime() - t0) / 1e9);
    } catch (RuntimeException e) {
      log.log("region server %d could not be started again (%s); the final heal will", index,
          e.getMessage());
      return "NOT started again: " + e.getMessage();
    }
  }

  /** HBase's balancer runs once on a random DC's HBase. */
  String balancer(long holdMs, SplittableRandom random) {
    String dc = pick(cluster.dcs(), random);
    List<String> hit = cluster.dcsSharingHBaseOf(dc);
    RegionControl control = cluster.regionControl(dc);
    Map<String, String> before = placement(control, hit);
    long errors0 = storeErrors(hit);
    long t0 = clock.nanoTime();
    boolean ran = control.balance(Duration.ofMinutes(5));
    double took = (clock.nanoTime() - t0) / 1e9;
    clock.sleep(holdMs);
    Map<String, String> after;
    try {
      after = placement(control, hit);
    } catch (RuntimeException e) {
      after = Map.of();
    }
    long moved = after.entrySet().stream()
        .filter(e -> before.containsKey(e.getKey()) && !before.get(e.getKey()).equals(e.getValue()))
        .count();
    String what = String.format("HBase %s balancer %s; it and the moves it started took %.2f s; "
        + "%d of %d regions of DCs %s moved", cluster.hbaseName(dc),
        ran ? "ran" : "declined to run", took, moved, after.size(), hit);
    windows.add(new Window(Fault.BALANCER, what, hit, t0, clock.nanoTime(),
        storeErrors(hit) - errors0, servicesAlive()));
    return what;
  }

  /** Region name to server, over every table of the DCs given. */
  private static Map<String, String> placement(RegionControl control, List<String> dcs) {
    Map<String, String> m = new java.util.HashMap<>();
    for (String d : dcs) {
      for (Table t : Table.values()) {
        control.regions(d, t).forEach(r -> m.put(r.name(), r.server()));
      }
    }
    return m;
  }

  /**
   * Seconds from {@code t0} until no region of the DCs' tables is on {@code dead} any more, or
   * -1 if that took longer than {@link #REASSIGN_WITHIN}. Meta may be on the dead server too, so
   * locating regions fails for a while.
   */
  private double awaitReassigned(RegionControl control, List<String> dcs, String dead, long t0) {
    while (clock.nanoTime() - t0 < REASSIGN_WITHIN.toNanos()) {
      try {
        Set<String> servers = new HashSet<>(placement(control, dcs).values());
        if (!servers.contains(dead) && !servers.contains("")) {
          return (clock.nanoTime() - t0) / 1e9;
        }
      } catch (StoreUnavailableException e) {
        // meta not reachable yet
      }
      clock.sleep(200);
    }
    return -1;
  }

  private boolean servicesAlive() {
    return cluster.services().stream().allMatch(ServiceProcess::alive);
  }

  private long storeErrors(List<String> dcs) {
    return cluster.storeErrors(dcs);
  }

  private static int bucket(byte[] key, int ifEmpty) {
    if (key.length == 0) {
      return ifEmpty;
    }
    return ((key[0] & 0xff) << 8) | (key.length > 1 ? key[1] & 0xff : 0);
  }

  private static String name(Table t) {
    return t.name().toLowerCase(Locale.ROOT);
  }

  private static <T> T pick(List<T> list, SplittableRandom random) {
    return list.get(random.nextInt(list.size()));
  }

  /**
   * The per-fault report: for each window, the affected DCs' transactions ended in it by outcome,
   * the p99 of their read-write transactions against the run's p99, the store errors their
   * services counted, and how soon those DCs' clients committed at half their fault-free rate
   * or better again ({@link #backToRate}).
   */
  List<String> report(List<Event> events) {
    List<String> lines = new ArrayList<>();
    if (windows.isEmpty()) {
      return lines;
    }
    Histogram all = new Histogram(3);
    for (Event e : events) {
      if (e.readWrite()) {
        all.recordValue(Math.max(1, e.micros()));
      }
    }
    double runP99 = all.getTotalCount() == 0 ? 0 : all.getValueAtPercentile(99) / 1000.0;
    lines.add(String.format("engine faults: run p99 of read-write transactions %.0f ms over %d",
        runP99, all.getTotalCount()));
    for (Window w : windows) {
      long end = w.healedNanos() + AFTER.toNanos();
      Map<Outcome, Long> outcomes = new EnumMap<>(Outcome.class);
      Histogram in = new Histogram(3);
      for (Event e : events) {
        if (w.dcs().contains(e.dc()) && e.endNanos() >= w.startNanos() && e.endNanos() <= end) {
          outcomes.merge(e.outcome(), 1L, Long::sum);
          if (e.readWrite()) {
            in.recordValue(Math.max(1, e.micros()));
          }
        }
      }
      double p99 = in.getTotalCount() == 0 ? 0 : in.getValueAtPercentile(99) / 1000.0;
      lines.add(String.format("  %-12s %s", w.kind().cliName(), w.what()));
      lines.add(String.format("  %-12s outcomes %s; p99 %.0f ms (%.2fx the run's); store "
          + "errors %d; %s; services %s", "", outcomes, p99,
          runP99 == 0 ? 0 : p99 / runP99, w.storeErrors(), backToRate(w, windows, events),
          w.servicesAlive() ? "all running" : "NOT all running"));
    }
    return lines;
  }

  /**
   * How soon after {@code w} began its DCs' clients committed read-write transactions at half
   * their fault-free rate or better, over a sliding {@link #RATE_WINDOW} (so with that
   * resolution): {@code "at half rate again within 2.0 s"}. The fault-free rate is their commits
   * outside every window (each extended by {@link #AFTER}) over the time outside them.
   */
  static String backToRate(Window w, List<Window> windows, List<Event> events) {
    if (events.isEmpty()) {
      return "no transactions";
    }
    long first = events.stream().mapToLong(Event::endNanos).min().getAsLong();
    long last = events.stream().mapToLong(Event::endNanos).max().getAsLong();
    long faultFree = last - first;
    for (Window x : windows) {
      faultFree -= Math.max(0, Math.min(last, x.healedNanos() + AFTER.toNanos())
          - Math.max(first, x.startNanos()));
    }
    List<Long> commits = new ArrayList<>();
    long outside = 0;
    for (Event e : events) {
      if (!e.readWrite() || e.outcome() != Outcome.COMMITTED || !w.dcs().contains(e.dc())) {
        continue;
      }
      commits.add(e.endNanos());
      boolean inAny = false;
      for (Window x : windows) {
        inAny |= e.endNanos() >= x.startNanos() && e.endNanos() <= x.healedNanos()
            + AFTER.toNanos();
      }
      if (!inAny) {
        outside++;
      }
    }
    if (outside == 0 || faultFree <= 0) {
      return "no fault-free commits to compare with";
    }
    double need = Math.max(1, 0.5 * outside * RATE_WINDOW.toNanos() / (double) faultFree);
    commits.sort(null);
    long step = 100_000_000L;
    int lo = 0;
    int hi = 0;
    for (long t = w.startNanos(); t + RATE_WINDOW.toNanos() <= last; t += step) {
      while (lo < commits.size() && commits.get(lo) < t) {
        lo++;
      }
      hi = Math.max(hi, lo);
      while (hi < commits.size() && commits.get(hi) < t + RATE_WINDOW.toNanos()) {
        hi++;
      }
      if (hi - lo >= need) {
        return String.format("at half rate again within %.1f s",
            (t + RATE_WINDOW.toNanos() - w.startNanos()) / 1e9);
      }
    }
    return "NOT at half rate again within the run";
  }
}
