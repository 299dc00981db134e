/**
 * The protocol core, free of I/O: the {@link org.paxoscp.paxos.Proposer} state machine (basic
 * Paxos and Paxos-CP with combination and promotion, docs/architecture.md sections 5.1-5.3), the
 * {@link org.paxoscp.paxos.Acceptor} whose state lives in a {@link org.paxoscp.store.KvStore} row
 * per log position, the {@link org.paxoscp.paxos.LogApplier} that applies chosen values to the
 * data table and reads at a position, and the {@link org.paxoscp.paxos.LogCollector} (section 7).
 * Owns the WAL and data-table layout ({@link org.paxoscp.paxos.WalLayout}) and the protocol
 * messages ({@link org.paxoscp.paxos.PaxosMessage}). Knows nothing of threads, sockets or HBase.
 */
package org.paxoscp.paxos;
