/**
 * The storage interface the protocol needs from a DC: {@link org.paxoscp.store.KvStore} (cells by
 * table, row, column and timestamp, with check-and-write as the only way to change acceptor
 * state), its in-memory implementation for unit tests and the simulator, and decorators
 * ({@link org.paxoscp.store.ForwardingKvStore}, {@link org.paxoscp.store.CountingKvStore}). The
 * HBase implementation lives in the {@code wal-paxos-hbase} module.
 */
package org.paxoscp.store;
