/**
 * Benchmarks: closed-loop throughput, fast-path latency against the nearest majority, the HBase
 * store's operation latency. Measurements reported side by side from one run, never timed tests.
 */
package org.paxoscp.bench;
