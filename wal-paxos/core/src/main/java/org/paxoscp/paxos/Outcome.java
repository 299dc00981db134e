package org.paxoscp.paxos;

import org.paxoscp.wal.LogValue;

/**
 * How a proposer finished.
 *
 * @param status the result
 * @param position the commit position (COMMITTED), the position learned (LEARNED), for UNKNOWN
 *     the last position the entry can still be chosen at, else the last position the proposer
 *     worked on
 * @param promotions how many times the entry moved to a next position (Paxos-CP)
 * @param chosen the value decided at {@code position}, or null when not known
 * @param reason a human-readable explanation for ABORTED and UNKNOWN
 * @param contended for a proposer that gave up without learning a chosen value: whether some DC
 *     refused its ballots (competing proposers) rather than staying silent (DCs down or cut off)
 * @param chosenEntries how many entries the value decided at {@code position} holds, when known
 *     (also when the value itself is not carried, as in a leader's answer); else 0
 * @param firstPosition for UNKNOWN, the first position the entry can still be chosen at: it is
 *     in the log at most once, at one of {@code firstPosition ... position}, since every earlier
 *     position was decided without it and nothing places it later; else equal to
 *     {@code position}
 * @param overloaded for a proposer that gave up without learning a chosen value: whether DCs
 *     refusing its requests OVERLOADED ended its last ballot (docs/guarantees.md, "Overload"),
 *     rather than its timeout (some DC silent: down, cut off, or its messages lost) or higher
 *     ballots; an ABORTED outcome with it is certain (no ACCEPT carried the entry there) and
 *     says why
 */
public record Outcome(Status status, long position, int promotions, LogValue chosen, String reason,
    boolean contended, int chosenEntries, long firstPosition, boolean overloaded) {

  public Outcome {
    if (firstPosition > position) {
      throw new IllegalArgumentException("first position " + firstPosition + " after position "
          + position);
    }
  }

  /** An outcome without an OVERLOADED refusal. */
  public Outcome(Status status, long position, int promotions, LogValue chosen, String reason,
      boolean contended, int chosenEntries, long firstPosition) {
    this(status, position, promotions, chosen, reason, contended, chosenEntries, firstPosition,
        false);
  }

  /** An outcome whose {@code firstPosition} is {@code position}. */
  public Outcome(Status status, long position, int promotions, LogValue chosen, String reason,
      boolean contended, int chosenEntries) {
    this(status, position, promotions, chosen, reason, contended, chosenEntries, position);
  }

  /** An outcome whose {@code chosenEntries} is the size of {@code chosen} (0 when null). */
  public Outcome(Status status, long position, int promotions, LogValue chosen, String reason,
      boolean contended) {
    this(status, position, promotions, chosen, reason, contended,
        chosen == null ? 0 : chosen.entries().size());
  }

  public enum Status {
    /** The entry is in the chosen value of {@code position}. */
    COMMITTED,
    /** The entry is certainly not in the log and never will be. */
    ABORTED,
    /**
     * The entry may or may not be chosen, at one of {@code firstPosition ... position}; the
     * proposer lost track (e.g. timeouts after ACCEPT).
     */
    UNKNOWN,
    /** A learner (no entry of its own) found out the chosen value of {@code position}. */
    LEARNED
  }

  /** True when the committed value held other transactions besides this one (combination). */
  public boolean combined() {
    return chosenEntries > 1;
  }
}
