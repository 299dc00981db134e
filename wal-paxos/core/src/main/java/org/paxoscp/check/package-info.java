/**
 * The one-copy-serializability checker (docs/architecture.md section 8): judges every DC's log and
 * every client's history (reads, outcomes, commit positions) and reports each
 * {@link org.paxoscp.check.Violation} it finds. Used by the simulator, the integration tests, the
 * demo and {@code paxoscp check}.
 */
package org.paxoscp.check;
