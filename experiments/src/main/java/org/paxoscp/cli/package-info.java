/**
 * The {@code paxoscp} command line (picocli): demo, cluster, shell, service, hbase, simulate,
 * benchmarks, ycsb, check. Each command is a thin layer over the modules below it.
 */
package org.paxoscp.cli;
