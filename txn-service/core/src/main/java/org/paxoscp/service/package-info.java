/**
 * One DC's Transaction Service logic (docs/architecture.md sections 4-5, 7): the
 * {@link org.paxoscp.service.TransactionService} request handler (acceptor requests, APPLY,
 * begin, reads at a read position), {@link org.paxoscp.service.CatchUp} (learning missing
 * positions from peers or by learner instances), {@link org.paxoscp.service.LeaderCombiner}
 * (leader combination: a group's submitted entries proposed as one list per position),
 * {@link org.paxoscp.service.GroupCollector}
 * (log GC), discovery through ZooKeeper, and {@link org.paxoscp.service.InProcessDcs} for
 * in-process runs. Non-blocking: everything waits on futures and runs on an injected
 * {@link org.paxoscp.transport.Scheduler}, so the simulator runs this very code in virtual time.
 * The process around it ({@code ServiceRunner}, {@code ServiceConfig}) is in the
 * {@code txn-service} module of the same package.
 */
package org.paxoscp.service;
