package org.paxoscp.experiment;

import java.util.List;

/**
 * One data point of a figure: a cluster (its DCs), where the clients live, and the workload.
 *
 * @param label the point's name on the figure's x axis (e.g. {@code 20} attributes, {@code OV})
 * @param dcs the cluster's DCs, in order (names starting with V, O or C take the paper's RTTs)
 * @param homeDcs the clients' home DCs, assigned round-robin
 * @param clients concurrent clients (the paper's YCSB threads)
 * @param attributes keys in the entity group
 * @param ratePerClient target transactions per second per client (Poisson arrivals)
 * @param txnsPerClient transactions each client runs, per commit mode
 */
public record Point(String label, List<String> dcs, List<String> homeDcs, int clients,
    int attributes, double ratePerClient, int txnsPerClient) {

  public Point {
    dcs = List.copyOf(dcs);
    homeDcs = List.copyOf(homeDcs);
  }

  /** Transactions per commit mode at this point. */
  public int totalTxns() {
    return clients * txnsPerClient;
  }
}
