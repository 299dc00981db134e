package org.paxoscp.client;

import java.util.EnumSet;
import java.util.Objects;
import java.util.Set;
import org.paxoscp.paxos.ProposerFactory;

/**
 * Where the simulator and the tests change the client's safety-critical decisions, to plant a
 * bug and show that the serializability checker catches it ({@link TxnClient.Builder#hooks}).
 * Applications never set one: {@link #SHIPPED} is the client as released. Immutable.
 */
public final class ClientHooks {
  /** A bug the client can be made to have. */
  public enum Plant {
    /** Reads and commits ignore the cross-group lock table at their read position. */
    IGNORE_LOCKS,
    /**
     * A cross-group commit proposes DECIDE(COMMIT) even when a PREPARE failed; in one round,
     * it reports COMMITTED (and decides COMMIT) with a PREPARE failed or still unchosen.
     */
    DECIDE_WITHOUT_EVERY_PREPARE,
    /**
     * A one-round PREPARE does not read its close key, so it can be placed in a group after a
     * settler closed the group for its transaction.
     */
    PREPARE_IGNORES_CLOSE,
    /** A DECIDE does not read the decision key, so a second DECIDE can enter the log. */
    DECIDE_BLIND,
    /** A read-only transaction over several groups commits without validating its reads. */
    READ_ONLY_UNVALIDATED,
    /**
     * A begin in a group whose session entry was dropped from the client's cache skips the
     * majority floor query and reads from position 0 up (losing read-your-writes).
     */
    SKIP_FLOOR_QUERY,
    /**
     * {@link TxnClient#settle} does not settle an unknown outcome: it fails over, sending the
     * same entry again through the next DC, while the first try may still be chosen where it was
     * (a second copy, or an outcome reported that the log contradicts).
     */
    RETRY_UNKNOWN_ELSEWHERE,
    /**
     * A read in a group whose begin listed only the oldest cross-group locks (the table was cut)
     * is checked against the locks listed only, instead of refused.
     */
    CUT_TABLE_READS_UNCHECKED,
    /** A commit's entry leaves out the ranges its scans read. */
    DROP_SCANNED_RANGES,
    /** A commit's entry leaves out the keys read that the transaction also updated. */
    UPDATED_READ_LEFT_OUT,
    /**
     * An unknown outcome names only the first position its entry was sent for, not every
     * position where it can still be chosen.
     */
    UNKNOWN_RANGE_FIRST_ONLY,
    /**
     * A commit stopped at its deadline reports ABORTED even when its entry went out in an
     * ACCEPT at the position it reached (where someone finishing the instance may choose it).
     */
    DEADLINE_ABORTS_SENT,
    /**
     * An outcome handle taken before committing names only the first position the commit is
     * sent for, and its promotions are not capped: settled with it, a transaction promoted to a
     * later position is reported ABORTED.
     */
    HANDLE_RANGE_FIRST_ONLY,
  }

  /** The client as released. */
  public static final ClientHooks SHIPPED = new ClientHooks(ProposerFactory.STANDARD,
      EnumSet.noneOf(Plant.class), Integer.MAX_VALUE, true);

  private final ProposerFactory proposers;
  private final Set<Plant> plants;
  private final int scanPageLimit;
  private final boolean dcHealth;

  private ClientHooks(ProposerFactory proposers, Set<Plant> plants, int scanPageLimit,
      boolean dcHealth) {
    this.dcHealth = dcHealth;
    this.proposers = proposers;
    this.plants = plants;
    this.scanPageLimit = scanPageLimit;
  }

  /** The released client with {@code plants} planted. */
  public static ClientHooks planting(Plant... plants) {
    EnumSet<Plant> set = EnumSet.noneOf(Plant.class);
    set.addAll(java.util.List.of(plants));
    return new ClientHooks(ProposerFactory.STANDARD, set, Integer.MAX_VALUE, true);
  }

  /** These hooks with commits' proposers made by {@code factory} (a planted proposer bug). */
  public ClientHooks withProposers(ProposerFactory factory) {
    return new ClientHooks(Objects.requireNonNull(factory), plants, scanPageLimit, dcHealth);
  }

  /**
   * These hooks with every scan page asking at most {@code entries} entries (not a bug: the
   * simulator's small data then still takes several pages, as a large range does in a
   * datagram).
   */
  public ClientHooks withScanPageLimit(int entries) {
    if (entries < 1) {
      throw new IllegalArgumentException("a page holds at least one entry, was " + entries);
    }
    return new ClientHooks(proposers, plants, entries, dcHealth);
  }

  /**
   * These hooks with a fail-over that remembers no DC: every begin and read asks the DCs in the
   * cluster's order, a silent home DC costing each its timeout (not a bug: the client before it
   * tracked DC health, the "before" row of {@code paxoscp bench-client}).
   */
  public ClientHooks withoutDcHealth() {
    return new ClientHooks(proposers, plants, scanPageLimit, false);
  }

  boolean dcHealth() {
    return dcHealth;
  }

  int scanPageLimit() {
    return scanPageLimit;
  }

  /** Whether {@code plant} is planted. */
  public boolean has(Plant plant) {
    return plants.contains(plant);
  }

  ProposerFactory proposers() {
    return proposers;
  }

  boolean skipFloorQuery() {
    return has(Plant.SKIP_FLOOR_QUERY);
  }

  @Override
  public String toString() {
    String knob = (scanPageLimit == Integer.MAX_VALUE ? "" : " (scan pages of " + scanPageLimit
        + ")") + (dcHealth ? "" : " (no DC health)");
    return (plants.isEmpty() && proposers == ProposerFactory.STANDARD ? "shipped"
        : "PLANTED BUGS " + plants + (proposers == ProposerFactory.STANDARD ? ""
            : " + a planted proposer")) + knob;
  }
}
