/**
 * Deterministic simulation (docs/architecture.md section 8): several DCs, each served by the
 * shipped {@link org.paxoscp.service.TransactionService} over an in-memory store, clients running
 * the paper's workload through the shipped proposer driver, and a faulty WAN (loss, duplication,
 * reordering, partitions, DC outages, client crashes, service restarts, two instances of one
 * DC), all in virtual time from one seed, judged by the serializability checker.
 */
package org.paxoscp.sim;
