package org.paxoscp.paxos;

/** The commit protocol a client runs. */
public enum Protocol {
  /** Megastore's baseline: one winner per position, every other contender aborts (section 4.1). */
  BASIC,
  /** Paxos-CP: combination and promotion (section 5), with the stricter promotion rule of 5.2. */
  CP,
  /**
   * Leader combination (docs/architecture.md section 5.5): a client submits its entry to the
   * position's leader DC, whose service proposes one combined list of every waiting entry. The
   * client runs no proposer for its entry; the leader's proposer for a list follows basic Paxos's
   * rules.
   */
  LEADER
}
