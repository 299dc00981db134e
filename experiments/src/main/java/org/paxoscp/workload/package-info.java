/**
 * The paper's contention workload (clients at a fixed rate, N operations over M attributes of
 * one entity group) and the summaries, tables and charts of its runs.
 */
package org.paxoscp.workload;
