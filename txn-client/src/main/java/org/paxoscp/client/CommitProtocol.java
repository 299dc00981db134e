package org.paxoscp.client;

/**
 * The commit protocol a {@link TxnClient} runs for its transactions (docs/architecture.md section
 * 5).
 */
public enum CommitProtocol {
  /** Basic Paxos, the Megastore baseline: one transaction wins a log position, the others abort. */
  BASIC,
  /**
   * Paxos-CP: non-conflicting transactions competing for a position are combined into it, and a
   * loser whose reads were not overwritten is promoted to the next position instead of aborting.
   */
  CP,
  /**
   * Leader combination (docs/architecture.md section 5.5): the transaction is submitted to the
   * service of the
   * position's leader DC, which proposes every waiting non-conflicting transaction as one list
   * and places a transaction whose reads were not overwritten at a later position, up to the
   * client's promotion cap (16 positions when uncapped).
   */
  LEADER
}
