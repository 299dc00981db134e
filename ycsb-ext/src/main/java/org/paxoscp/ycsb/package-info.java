/**
 * YCSB integration: the {@link org.paxoscp.ycsb.PaxosCpDB} binding (YCSB operations as
 * entity-group transactions) and the transactional workloads (the paper's attribute workload,
 * a closed economy with validation).
 */
package org.paxoscp.ycsb;
