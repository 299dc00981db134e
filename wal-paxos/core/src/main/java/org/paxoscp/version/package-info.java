/**
 * Cluster versions (docs/upgrading.md): the numbered format sets a cluster may write, the version
 * the cluster has agreed on (a row of each DC's meta table) and the range each process speaks.
 * Every format added to the log, the wire or the store is written only once the cluster's
 * version allows it; below that a process writes the older format and reads both.
 */
package org.paxoscp.version;
