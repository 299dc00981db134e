package org.paxoscp.paxos;

/** The commit protocol a client runs. */
public enum Protocol {
  /** Megastore's baseline: one winner per position, every other contender aborts (section 4.1). */
  BASIC,
  /** Paxos-CP: combination and promotion (section 5), with the stricter promotion rule of 5.2. */
  CP
}
