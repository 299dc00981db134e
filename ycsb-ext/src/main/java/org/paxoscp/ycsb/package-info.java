/**
 * YCSB integration: the {@link org.paxoscp.ycsb.PaxosCpDB} binding (YCSB operations as
 * entity-group transactions, and commutative adds to counters) and the transactional workloads
 * (the paper's attribute workload; validated: a closed economy, workload E inside entity groups,
 * hot counters).
 */
package org.paxoscp.ycsb;
