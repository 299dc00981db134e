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
 * hit saw: outcomes, the p99 of read-write transactions in the window against the run's, the
 * services' store errors, and how long until those DCs' clients committed at their rate again.
 */
final class EngineFaults {
  /** How long after a fault healed its window still runs (late errors, queued transactions). */
  private static final Duration AFTER = Duration.ofSeconds(2);
  /** The rate a DC's commits are measured at before a fault, and over which they recover. */
  private static final Duration BASELINE = Duration.ofSeconds(10);
  private static final Duration RATE_WINDOW = Duration.ofSeconds(2);
  private static final Duration REASSIGN_WITHIN = Duration.ofSeconds(180);

  /** One engine fault: what it hit and when. */
  record Window(Fault kind, String what, List<String> dcs, long startNanos, long healedNanos,
      long storeErrors, double engineSeconds, boolean servicesAlive) {}

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
    long errors0 = storeErrors();
    long t0 = clock.nanoTime();
    control.move(r, to);
    double took = (clock.nanoTime() - t0) / 1e9;
    String what = String.format("DC %s %s region %s moved from %s to %s in %.2f s", dc,
        name(table), r.name(), r.server(), to, took);
    clock.sleep(holdMs);
    windows.add(new Window(Fault.REGION_MOVE, what, List.of(dc), t0, clock.nanoTime(),
        storeErrors() - errors0, took, servicesAlive()));
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
    long errors0 = storeErrors();
    long t0 = clock.nanoTime();
    control.split(r, at);
    double took = (clock.nanoTime() - t0) / 1e9;
    clock.sleep(holdMs);
    String what = String.format("DC %s %s region %s on %s split at bucket %d in %.2f s "
        + "(%d regions before, %d after)", dc, name(table), r.name(), r.server(), b, took,
        before, control.regions(dc, table).size());
    windows.add(new Window(Fault.REGION_SPLIT, what, List.of(dc), t0, clock.nanoTime(),
        storeErrors() - errors0, took, servicesAlive()));
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
    long errors0 = storeErrors();
    long t0 = clock.nanoTime();
    cluster.killRegionServer(dc, victim.index());
    log.log("HBase %s: region server %d (pid %d, %s, %d regions of DCs %s) killed with kill -9",
        cluster.hbaseName(dc), victim.index(), victim.pid().getAsLong(), victim.address(), held,
        hit);
    double reassigned = awaitReassigned(control, hit, victim.address(), t0);
    long left = holdMs - (clock.nanoTime() - t0) / 1_000_000;
    if (left > 0) {
      clock.sleep(left);
    }
    cluster.startRegionServer(dc, victim.index());
    long deadline = clock.nanoTime() + Duration.ofSeconds(120).toNanos();
    while (control.liveServers().size() < cluster.regionServers(dc).size()
        && clock.nanoTime() < deadline) {
      clock.sleep(200);
    }
    String what = String.format("HBase %s region server %d (%s, %d regions of DCs %s) killed; "
        + "%s; started again and live after %.1f s", cluster.hbaseName(dc), victim.index(),
        victim.address(), held, hit, reassigned < 0 ? "its regions NOT reassigned within "
            + REASSIGN_WITHIN.toSeconds() + " s"
            : String.format("its regions served elsewhere %.1f s after the kill", reassigned),
        (clock.nanoTime() - t0) / 1e9);
    windows.add(new Window(Fault.RS_CRASH, what, hit, t0, clock.nanoTime(),
        storeErrors() - errors0, reassigned, servicesAlive()));
    return what;
  }

  /** HBase's balancer runs once on a random DC's HBase. */
  String balancer(long holdMs, SplittableRandom random) {
    String dc = pick(cluster.dcs(), random);
    List<String> hit = cluster.dcsSharingHBaseOf(dc);
    RegionControl control = cluster.regionControl(dc);
    Map<String, String> before = placement(control, hit);
    long errors0 = storeErrors();
    long t0 = clock.nanoTime();
    boolean ran = control.balance();
    double took = (clock.nanoTime() - t0) / 1e9;
    clock.sleep(holdMs);
    Map<String, String> after = placement(control, hit);
    long moved = after.entrySet().stream()
        .filter(e -> before.containsKey(e.getKey()) && !before.get(e.getKey()).equals(e.getValue()))
        .count();
    String what = String.format("HBase %s balancer %s in %.2f s; %d of %d regions of DCs %s "
        + "moved", cluster.hbaseName(dc), ran ? "ran" : "declined to run", took, moved,
        after.size(), hit);
    windows.add(new Window(Fault.BALANCER, what, hit, t0, clock.nanoTime(),
        storeErrors() - errors0, took, servicesAlive()));
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

  private long storeErrors() {
    return cluster.storeErrors();
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
   * The per-fault report, one block per kind: for each window, the affected DCs' transactions
   * ended in it by outcome, the p99 of their read-write transactions against the run's p99, the
   * store errors the services counted, and the time until those DCs' clients committed at half
   * their rate before the fault or better (measured over {@value #RATE_WINDOW_SECONDS} s).
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
          + "errors %d; back to rate %s; services %s", "", outcomes, p99,
          runP99 == 0 ? 0 : p99 / runP99, w.storeErrors(), backToRate(w, events),
          w.servicesAlive() ? "all running" : "NOT all running"));
    }
    return lines;
  }

  private static final long RATE_WINDOW_SECONDS = 2;

  /**
   * When the affected DCs' clients committed at half their rate before the fault again:
   * {@code "after 3.4 s"}, {@code "no commits before the fault"} or {@code "not within the
   * run"}.
   */
  static String backToRate(Window w, List<Event> events) {
    long before = 0;
    for (Event e : events) {
      if (committedIn(e, w, w.startNanos() - BASELINE.toNanos(), w.startNanos())) {
        before++;
      }
    }
    if (before == 0) {
      return "no commits before the fault";
    }
    double need = 0.5 * before * RATE_WINDOW.toNanos() / (double) BASELINE.toNanos();
    long last = events.stream().mapToLong(Event::endNanos).max().orElse(w.startNanos());
    for (long t = w.startNanos(); t + RATE_WINDOW.toNanos() <= last; t += 100_000_000L) {
      long n = 0;
      for (Event e : events) {
        if (committedIn(e, w, t, t + RATE_WINDOW.toNanos())) {
          n++;
        }
      }
      if (n >= need) {
        return String.format("after %.1f s", (t - w.startNanos()) / 1e9);
      }
    }
    return "not within the run";
  }

  private static boolean committedIn(Event e, Window w, long from, long to) {
    return e.readWrite() && e.outcome() == Outcome.COMMITTED && w.dcs().contains(e.dc())
        && e.endNanos() >= from && e.endNanos() < to;
  }
}
