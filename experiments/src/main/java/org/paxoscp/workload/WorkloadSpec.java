package org.paxoscp.workload;

import java.time.Duration;
import java.util.List;

/**
 * The shape of a transactional workload (the paper's section 6): clients spread over home DCs,
 * each running one transaction at a time with Poisson arrivals; every transaction does
 * {@code ops} reads or writes of attributes chosen uniformly from {@code attributes} in one
 * entity group, spending {@code opTime} per operation.
 *
 * @param group the entity group every transaction uses
 * @param homeDcs the clients' home DCs, assigned round-robin
 * @param clients concurrent clients
 * @param attributes number of distinct keys
 * @param ops operations per transaction
 * @param readFraction probability an operation is a read
 * @param txnsPerClient transactions each client runs
 * @param ratePerClient Poisson arrival rate of transactions per client, per second
 * @param opTime application time spent per operation (sets the read-to-commit window)
 * @param seed seeds the key and arrival choices (outcomes still depend on timing)
 */
public record WorkloadSpec(String group, List<String> homeDcs, int clients, int attributes,
    int ops, double readFraction, int txnsPerClient, double ratePerClient, Duration opTime,
    long seed) {

  public WorkloadSpec {
    homeDcs = List.copyOf(homeDcs);
    if (homeDcs.isEmpty() || clients < 1 || attributes < 1 || ops < 1 || txnsPerClient < 1) {
      throw new IllegalArgumentException("home DCs, clients, attributes, ops and transactions "
          + "must be positive");
    }
    if (readFraction < 0 || readFraction > 1 || ratePerClient <= 0 || opTime.isNegative()) {
      throw new IllegalArgumentException("read fraction in [0, 1], positive rate, op time >= 0");
    }
  }

  public int totalTxns() {
    return clients * txnsPerClient;
  }
}
