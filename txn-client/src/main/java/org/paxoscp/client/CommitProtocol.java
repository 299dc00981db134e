package org.paxoscp.client;

/** The commit protocol a {@link TxnClient} runs for its transactions (ARCHITECTURE section 5). */
public enum CommitProtocol {
  /** Basic Paxos, the Megastore baseline: one transaction wins a log position, the others abort. */
  BASIC,
  /**
   * Paxos-CP: non-conflicting transactions competing for a position are combined into it, and a
   * loser whose reads were not overwritten is promoted to the next position instead of aborting.
   */
  CP
}
