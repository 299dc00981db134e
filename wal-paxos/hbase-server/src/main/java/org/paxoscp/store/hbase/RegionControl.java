package org.paxoscp.store.hbase;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.hadoop.hbase.ClusterMetrics;
import org.apache.hadoop.hbase.HRegionLocation;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.client.AsyncAdmin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.paxoscp.store.KvStore.Table;

/**
 * The engine's side of an HBase cluster, as an operator or the nemesis drives it: where each
 * region of a DC's tables is, moving and splitting regions, running the balancer, and the region
 * servers' own request counts. One connection to the cluster; every call waits for at most the
 * admin deadline it was opened with. Thread-safe.
 */
public final class RegionControl implements AutoCloseable {

  /**
   * One region of a DC's table.
   *
   * @param name     the region's encoded name
   * @param fullName the region's full name (table, start key, id)
   * @param startKey its first row (empty for the first region)
   * @param endKey   the row after its last (empty for the last region)
   * @param server   {@code host:port} of the region server serving it
   */
  public record Region(Table table, String name, byte[] fullName, byte[] startKey,
      byte[] endKey, String server) {}

  private final AsyncConnection connection;
  private final AsyncAdmin admin;
  private final Duration deadline;

  private RegionControl(AsyncConnection connection, Duration deadline) {
    this.connection = connection;
    this.admin = connection.getAdmin();
    this.deadline = deadline;
  }

  /**
   * Connects to the HBase whose ZooKeeper is at 127.0.0.1:{@code zkPort}.
   *
   * @throws org.paxoscp.store.StoreUnavailableException if it does not answer in time
   */
  public static RegionControl connect(int zkPort, Duration deadline) {
    HBaseStoreConfig c = HBaseStoreConfig.builder("admin").zkQuorum(HBaseServerSettings.LOOPBACK)
        .zkPort(zkPort).deadline(deadline).rpcTimeout(deadline).adminDeadline(deadline).build();
    return new RegionControl(HBaseKvStore.connect(c), deadline);
  }

  /** The live region servers, as {@code host:port}, sorted. */
  public List<String> liveServers() {
    List<String> out = new ArrayList<>();
    for (ServerName s : await(admin.getRegionServers(), "list region servers")) {
      out.add(address(s));
    }
    out.sort(null);
    return out;
  }

  /** Every region of DC {@code dc}'s {@code table}, in key order, with its server. */
  public List<Region> regions(String dc, Table table) {
    List<HRegionLocation> locations = await(connection.getRegionLocator(
        HBaseSchema.tableName(dc, table)).getAllRegionLocations(), "locate regions of " + table);
    List<Region> out = new ArrayList<>();
    for (HRegionLocation l : locations) {
      RegionInfo r = l.getRegion();
      if (r.isOffline() || r.isSplit() || r.getReplicaId() != RegionInfo.DEFAULT_REPLICA_ID) {
        continue;
      }
      out.add(new Region(table, r.getEncodedName(), r.getRegionName(), r.getStartKey(), r.getEndKey(),
          l.getServerName() == null ? "" : address(l.getServerName())));
    }
    return out;
  }

  /** Moves {@code region} to the region server at {@code server} ({@code host:port}). */
  public void move(Region region, String server) {
    ServerName target = null;
    for (ServerName s : await(admin.getRegionServers(), "list region servers")) {
      if (address(s).equals(server)) {
        target = s;
      }
    }
    if (target == null) {
      throw new IllegalArgumentException("no live region server at " + server);
    }
    await(admin.move(region.fullName(), target),
        "move region " + region.name() + " to " + server);
  }

  /** Splits {@code region} at row {@code at}, which must lie strictly inside it. */
  public void split(Region region, byte[] at) {
    await(admin.splitRegion(region.fullName(), at),
        "split region " + region.name());
  }

  /**
   * Runs the balancer once (it may decide that nothing moves), waiting up to {@code within} for
   * it, leaving its periodic runs as they were, and waits until the regions it moved are open
   * again; whether it ran.
   */
  public boolean balance(Duration within) {
    boolean wasOn = await(admin.balancerSwitch(true), "switch the balancer on");
    try {
      // The master moves the regions of its plan before it answers, a few at a time: minutes
      // on a loaded machine, so this call alone waits longer than the connection's deadline.
      AsyncAdmin slow = connection.getAdminBuilder()
          .setOperationTimeout(within.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS)
          .setRpcTimeout(within.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS).build();
      boolean ran = Await.get(slow.balance(true), within, () -> "run the balancer");
      awaitNoRegionsInTransition();
      return ran;
    } finally {
      if (!wasOn) {
        await(admin.balancerSwitch(false), "switch the balancer off again");
      }
    }
  }

  /**
   * Switches the balancer's periodic runs on or off (HBase runs it every 5 minutes by default,
   * moving regions at times of its own choosing); returns whether it was on.
   */
  public boolean periodicBalancer(boolean on) {
    return await(admin.balancerSwitch(on), "switch the balancer " + (on ? "on" : "off"));
  }

  /** Waits, within the deadline, until no region is in transition (moving, opening, closing). */
  public void awaitNoRegionsInTransition() {
    long end = System.nanoTime() + deadline.toNanos();
    while (!await(admin.getClusterMetrics(java.util.EnumSet.of(
        ClusterMetrics.Option.REGIONS_IN_TRANSITION)), "read regions in transition")
        .getRegionStatesInTransition().isEmpty()) {
      if (System.nanoTime() > end) {
        throw new org.paxoscp.store.StoreUnavailableException("regions still in transition "
            + "after " + deadline.toSeconds() + " s");
      }
      java.util.concurrent.locks.LockSupport.parkNanos(100_000_000L);
    }
  }

  /**
   * Read and write requests served so far by each live region server ({@code host:port}), from
   * the servers' own region metrics, only for the regions of the tables of the DCs given (all
   * tables when empty): what a server has done for this store rather than for HBase's own
   * tables. The counts grow from the region's opening; a region that moved counts at its new
   * server from then on.
   */
  public Map<String, Long> requestCounts(List<String> dcs) {
    ClusterMetrics m = await(admin.getClusterMetrics(
        java.util.EnumSet.of(ClusterMetrics.Option.LIVE_SERVERS)), "read cluster metrics");
    List<String> prefixes = new ArrayList<>();
    for (String dc : dcs) {
      prefixes.add(HBaseSchema.namespace(dc) + ":");
    }
    Map<String, Long> out = new TreeMap<>();
    for (Map.Entry<ServerName, ServerMetrics> e : m.getLiveServerMetrics().entrySet()) {
      long n = 0;
      for (RegionMetrics r : e.getValue().getRegionMetrics().values()) {
        String name = r.getNameAsString();
        if (prefixes.isEmpty() || prefixes.stream().anyMatch(name::startsWith)) {
          n += r.getReadRequestCount() + r.getWriteRequestCount();
        }
      }
      out.put(address(e.getKey()), n);
    }
    return out;
  }

  private static String address(ServerName s) {
    return s.getHostname() + ":" + s.getPort();
  }

  private <T> T await(java.util.concurrent.CompletableFuture<T> f, String what) {
    return Await.get(f, deadline, () -> what);
  }

  @Override
  public void close() {
    HBaseKvStore.closeQuietly(connection, "region control connection");
  }
}
