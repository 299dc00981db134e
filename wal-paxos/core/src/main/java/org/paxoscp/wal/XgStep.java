package org.paxoscp.wal;

import java.util.List;
import java.util.Objects;
import java.util.TreeSet;

/**
 * Marks a log entry as one step of a cross-group transaction (docs/architecture.md section 10,
 * docs/cross-group.md). The entry itself stays an ordinary entry of its group's log, decided by
 * the ordinary per-position Paxos; the step says what applying it means.
 *
 * <ul>
 *   <li>{@link Kind#PREPARE} in a participant group g other than the coordinator: the entry
 *       carries the transaction's reads at its read position in g and its writes to g. Applying
 *       it writes nothing; it takes the transaction's <em>locks</em> in g (its read and write
 *       keys) until a RESOLVE follows.
 *   <li>{@link Kind#DECIDE} in the coordinator group: an ordinary entry (its writes are applied
 *       at once) that reads and writes the transaction's {@link #decisionKey decision key}, so the
 *       placement rule lets at most one DECIDE for a transaction into the log. {@code commit} is
 *       the outcome it records. The client's DECIDE(COMMIT) carries the coordinator group's reads
 *       and writes; a resolver's DECIDE(ABORT) carries only the decision key.
 *   <li>{@link Kind#RESOLVE} in a participant group: reads nothing; a RESOLVE(COMMIT) carries a
 *       copy of the prepared writes (so the placement rule sees what it makes visible), a
 *       RESOLVE(ABORT) nothing. Applying the first RESOLVE for a transaction that holds locks in
 *       the group releases them and, for COMMIT, writes the prepared writes (the PREPARE's, which
 *       the copy equals) at the RESOLVE's position. A later one, or one without a lock, is void.
 *   <li>{@link Kind#CLOSE} in a group g (one-round commits, cluster version 6): reads nothing,
 *       writes the transaction's {@link #closeKey close key} in g, which every one-round PREPARE
 *       of the transaction reads; so once a CLOSE is chosen in g, no PREPARE of the transaction
 *       can be placed there (the placement rule), and the lock rule keeps the CLOSE out while the
 *       transaction's PREPARE holds its locks in g. A settler closes the groups where it cannot
 *       see the transaction's PREPARE before it may decide ABORT (docs/cross-group.md).
 *   <li>{@link Kind#VALIDATE} in every group a read-only transaction over several groups read:
 *       its reads at its read position there, no writes. Applying it does nothing; placing it
 *       under the placement and lock rules proves the reads still current at its position,
 *       a moment after every read of the transaction returned.
 * </ul>
 *
 * @param kind the step
 * @param txn the cross-group transaction's id (the entry's own id differs for RESOLVEs and a
 *     resolver's DECIDE, which several processes may propose)
 * @param groups every group of the transaction, sorted and distinct, at least two; the first is
 *     the coordinator
 * @param deadlineMillis PREPARE: wall-clock time (ms since the epoch) after which a process that
 *     meets the lock may decide ABORT; 0 for the other steps
 * @param commit DECIDE and RESOLVE: the outcome; false for PREPARE
 */
public record XgStep(Kind kind, String txn, List<String> groups, long deadlineMillis,
    boolean commit) {

  /** Which step of the protocol an entry is. */
  public enum Kind { PREPARE, DECIDE, RESOLVE, VALIDATE, CLOSE }

  /** Prefix of decision keys; application keys may not contain NUL, so none can collide. */
  public static final String DECISION_PREFIX = "\u0000xg\u0000";
  /** Prefix of close keys ({@link #closeKey}); NUL keeps them apart from application keys. */
  public static final String CLOSE_PREFIX = "\u0000xc\u0000";

  public XgStep {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(txn, "txn");
    if (txn.isEmpty()) {
      throw new IllegalArgumentException("xg txn id must not be empty");
    }
    groups = List.copyOf(groups);
    if (groups.size() < 2 || !List.copyOf(new TreeSet<>(groups)).equals(groups)) {
      throw new IllegalArgumentException("xg groups must be at least two, sorted and distinct: "
          + groups);
    }
    if (deadlineMillis < 0 || (kind != Kind.PREPARE && deadlineMillis != 0)) {
      throw new IllegalArgumentException("only a PREPARE has a deadline, >= 0");
    }
    if ((kind == Kind.PREPARE || kind == Kind.VALIDATE || kind == Kind.CLOSE) && commit) {
      throw new IllegalArgumentException("a " + kind + " has no outcome");
    }
  }

  public static XgStep prepare(String txn, List<String> groups, long deadlineMillis) {
    return new XgStep(Kind.PREPARE, txn, groups, deadlineMillis, false);
  }

  public static XgStep decide(String txn, List<String> groups, boolean commit) {
    return new XgStep(Kind.DECIDE, txn, groups, 0, commit);
  }

  public static XgStep resolve(String txn, List<String> groups, boolean commit) {
    return new XgStep(Kind.RESOLVE, txn, groups, 0, commit);
  }

  public static XgStep validate(String txn, List<String> groups) {
    return new XgStep(Kind.VALIDATE, txn, groups, 0, false);
  }

  public static XgStep close(String txn, List<String> groups) {
    return new XgStep(Kind.CLOSE, txn, groups, 0, false);
  }

  /** The coordinator group: the first of the transaction's groups. */
  public String coordinator() {
    return groups.get(0);
  }

  /**
   * The key of the coordinator group that a DECIDE for {@code txn} reads and writes: its value
   * is the outcome ({@link #COMMIT_VALUE} or {@link #ABORT_VALUE}); absent means undecided.
   */
  public static String decisionKey(String txn) {
    return DECISION_PREFIX + txn;
  }

  /**
   * The key of every group of {@code txn} that its one-round PREPAREs read (absent at their read
   * position) and a CLOSE writes: once a CLOSE is chosen in a group, the placement rule keeps
   * every later PREPARE of the transaction out of it.
   */
  public static String closeKey(String txn) {
    return CLOSE_PREFIX + txn;
  }

  /** Is {@code key} one of the protocol's own keys (a decision or close key), not the application's? */
  public static boolean isStepKey(String key) {
    return key.startsWith(DECISION_PREFIX) || key.startsWith(CLOSE_PREFIX);
  }

  /** The value a CLOSE writes to the close key. */
  public static final byte[] CLOSED_VALUE = {'X'};

  /** The value a DECIDE(COMMIT) writes to the decision key. */
  public static final byte[] COMMIT_VALUE = {'C'};
  /** The value a DECIDE(ABORT) writes to the decision key. */
  public static final byte[] ABORT_VALUE = {'A'};

  @Override
  public String toString() {
    return kind + (kind == Kind.PREPARE || kind == Kind.VALIDATE || kind == Kind.CLOSE ? "" : commit ? "(COMMIT)"
        : "(ABORT)") + "[" + txn
        + " groups=" + groups + "]";
  }
}
