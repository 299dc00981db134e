package org.paxoscp.bench;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * One row of {@code groups.csv}: one number of entity groups and one distribution, measured by
 * {@link GroupsBench}. Values that could not be measured (a service that died, store counts
 * without the counting service) are written as {@code -1}.
 *
 * @param groups the number of entity groups transactions were drawn from
 * @param dist how they were drawn
 * @param protocol the commit protocol ({@code cp}, {@code basic}, {@code leader})
 * @param store the services' store ({@code hbase} or {@code memory})
 * @param wan whether WAN delays were emulated
 * @param clients closed-loop client threads
 * @param seconds the load's wall-clock duration
 * @param txns transactions attempted (begun or tried to begin)
 * @param commits committed transactions
 * @param aborted aborted ones (a conflict, or a read position no longer served)
 * @param unknown outcome unknown
 * @param unavailable no DC or no majority answered
 * @param errors anything else a transaction threw
 * @param commitP50Ms median latency of {@code commit()} of committed transactions
 * @param commitP99Ms its 99th percentile
 * @param txnP50Ms median latency of a whole committed transaction (begin, read, write, commit)
 * @param txnP99Ms its 99th percentile
 * @param touched distinct groups a transaction was begun on
 * @param committedGroups distinct groups with at least one commit
 * @param heapIdleMb per DC: the service's heap used after a full GC, before the load
 * @param heapMb per DC: the same after the load
 * @param serviceCpuMs CPU time of every service process during the load, summed
 * @param clientCpuMs CPU time of the benchmark's own process (the clients) during the load
 * @param storeRequests store requests of every service during the load, summed; -1 if not
 *     counted
 * @param servicesAlive services still running when the load ended
 */
public record GroupsRow(long groups, GroupPicker.Dist dist, String protocol, String store,
    boolean wan, int clients, double seconds, long txns, long commits, long aborted,
    long unknown, long unavailable, long errors, double commitP50Ms, double commitP99Ms,
    double txnP50Ms, double txnP99Ms, long touched, long committedGroups,
    Map<String, Double> heapIdleMb, Map<String, Double> heapMb, double serviceCpuMs,
    double clientCpuMs, long storeRequests, int servicesAlive) {

  public GroupsRow {
    heapIdleMb = new LinkedHashMap<>(heapIdleMb);
    heapMb = new LinkedHashMap<>(heapMb);
  }

  public double commitsPerSecond() {
    return seconds <= 0 ? 0 : commits / seconds;
  }

  /**
   * Transactions that failed: no definite outcome (unknown), no DC or majority reachable
   * (unavailable), or an error. An abort is not a failure: it is optimistic concurrency's answer
   * to a conflict, the transaction is certainly not in the log, and a retry would run it again
   * ({@code runInTransaction} does; this load does not retry, so aborts are counted apart).
   */
  public long failed() {
    return unknown + unavailable + errors;
  }

  /** The largest after-load heap of the services, -1 if none was measured. */
  public double heapMaxMb() {
    return max(heapMb);
  }

  public double heapIdleMaxMb() {
    return max(heapIdleMb);
  }

  /**
   * The largest growth of one service's heap over the load, per group with a commit, in bytes;
   * -1 if not measurable.
   */
  public double heapGrowthBytesPerGroup() {
    double most = -1;
    for (var e : heapMb.entrySet()) {
      Double idle = heapIdleMb.get(e.getKey());
      if (e.getValue() < 0 || idle == null || idle < 0 || committedGroups == 0) {
        continue;
      }
      most = Math.max(most, (e.getValue() - idle) * 1024 * 1024 / committedGroups);
    }
    return most;
  }

  public double cpuMsPerCommit() {
    return commits == 0 || serviceCpuMs < 0 ? -1 : serviceCpuMs / commits;
  }

  public double clientCpuMsPerCommit() {
    return commits == 0 || clientCpuMs < 0 ? -1 : clientCpuMs / commits;
  }

  public double storeRequestsPerCommit() {
    return commits == 0 || storeRequests < 0 ? -1 : (double) storeRequests / commits;
  }

  /** The CSV header for rows whose services are in {@code dcs}. */
  public static String csvHeader(List<String> dcs) {
    List<String> cols = new ArrayList<>(List.of("groups", "dist", "protocol", "store", "wan",
        "clients", "txns", "seconds", "commits", "commits_per_s", "aborted", "unknown",
        "unavailable", "errors", "failed", "commit_p50_ms", "commit_p99_ms", "txn_p50_ms",
        "txn_p99_ms", "distinct_groups_touched", "distinct_groups_committed",
        "service_heap_mb_idle_max", "service_heap_mb_max", "heap_growth_bytes_per_group",
        "service_cpu_ms", "cpu_ms_per_commit", "client_cpu_ms_per_commit",
        "store_requests_per_commit", "services_alive"));
    for (String dc : dcs) {
      cols.add("heap_mb_" + dc);
    }
    for (String dc : dcs) {
      cols.add("heap_idle_mb_" + dc);
    }
    return String.join(",", cols);
  }

  /** This row as CSV, columns as {@link #csvHeader} names them for {@code dcs}. */
  public String csvLine(List<String> dcs) {
    StringBuilder b = new StringBuilder();
    b.append(groups).append(',').append(dist.label()).append(',').append(protocol).append(',')
        .append(store).append(',').append(wan ? "on" : "off").append(',').append(clients)
        .append(',').append(txns).append(',').append(f(seconds, 1)).append(',').append(commits)
        .append(',').append(f(commitsPerSecond(), 2)).append(',').append(aborted).append(',')
        .append(unknown).append(',').append(unavailable).append(',').append(errors).append(',')
        .append(failed()).append(',').append(f(commitP50Ms, 3)).append(',')
        .append(f(commitP99Ms, 3)).append(',').append(f(txnP50Ms, 3)).append(',')
        .append(f(txnP99Ms, 3)).append(',').append(touched).append(',')
        .append(committedGroups).append(',').append(f(heapIdleMaxMb(), 2)).append(',')
        .append(f(heapMaxMb(), 2)).append(',').append(f(heapGrowthBytesPerGroup(), 1))
        .append(',').append(f(serviceCpuMs, 0)).append(',').append(f(cpuMsPerCommit(), 3))
        .append(',').append(f(clientCpuMsPerCommit(), 3)).append(',')
        .append(f(storeRequestsPerCommit(), 2)).append(',').append(servicesAlive);
    for (String dc : dcs) {
      b.append(',').append(f(heapMb.getOrDefault(dc, -1.0), 2));
    }
    for (String dc : dcs) {
      b.append(',').append(f(heapIdleMb.getOrDefault(dc, -1.0), 2));
    }
    return b.toString();
  }

  /** {@code v} with {@code digits} decimals; -1 for negative or NaN (not measured). */
  static String f(double v, int digits) {
    if (Double.isNaN(v) || v < 0) {
      return "-1";
    }
    return String.format(Locale.ROOT, "%." + digits + "f", v);
  }

  private static double max(Map<String, Double> m) {
    double most = -1;
    for (double v : m.values()) {
      most = Math.max(most, v);
    }
    return most;
  }
}
