/**
 * The {@link org.paxoscp.store.KvStore} on HBase, over HBase's client API only (module
 * {@code wal-paxos-hbase}): {@link org.paxoscp.store.hbase.HBaseKvStore} maps check-and-write to
 * HBase's CheckAndMutate, {@link org.paxoscp.store.hbase.HBaseSchema} creates and verifies a DC's
 * tables, {@link org.paxoscp.store.hbase.HBaseStoreConfig} holds its settings. HBase and Hadoop
 * types stay inside this package. The embedded and standalone HBase servers of the same package
 * live in the {@code wal-paxos-hbase-server} module, which only the local cluster, the
 * {@code paxoscp hbase} command and the integration tests need.
 */
package org.paxoscp.store.hbase;
