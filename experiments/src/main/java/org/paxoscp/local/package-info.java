/**
 * {@link org.paxoscp.local.LocalCluster}: a whole multi-DC cluster in one process (embedded
 * ZooKeeper and HBase, one Transaction Service per DC on UDP with WAN emulation) for the demo,
 * the benchmarks and the integration tests.
 */
package org.paxoscp.local;
