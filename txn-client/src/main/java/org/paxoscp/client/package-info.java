/**
 * The application API: {@link org.paxoscp.client.TxnClient} (one per home DC and commit
 * protocol), {@link org.paxoscp.client.Transaction} (begin, read, write, commit on one entity
 * group), the typed outcomes ({@link org.paxoscp.client.CommitResult},
 * {@link org.paxoscp.client.TransactionAbortedException},
 * {@link org.paxoscp.client.OutcomeUnknownException}, ...) and history recording. Depends on no
 * HBase: the optional direct home-DC store path takes a {@link org.paxoscp.store.KvStore} the
 * application opens (for HBase, with the {@code wal-paxos-hbase} module).
 */
package org.paxoscp.client;
