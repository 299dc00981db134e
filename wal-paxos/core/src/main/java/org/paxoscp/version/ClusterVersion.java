package org.paxoscp.version;

import java.util.List;

/**
 * The cluster versions this build knows, oldest first: each names the formats it switches on.
 * A cluster runs at one version (its {@link ClusterVersionRow}); a process speaks a {@link Range}
 * of them. Raising the version by one is an operator's step ({@code paxoscp cluster-version
 * finalize}), taken only when every process speaks the next one; until then a process of a newer
 * build writes what the cluster's version allows and reads everything its range covers, so an
 * older build can take its place again (docs/upgrading.md).
 *
 * <p>Numbers are never reused or renumbered. A developer who adds a format adds a version here
 * and tests both sides of its gate (docs/upgrading.md, "Rules for developers").
 */
public final class ClusterVersion {
  /**
   * One cluster version: its number, a short name, what it switches on, and whether it stops
   * reading an older wire format ({@code closesWire3}): a raise to it first waits until no
   * process has received that format for a while, so that no process still sending it is cut
   * off.
   */
  public record Version(int number, String name, String switchesOn, boolean closesWire3) { }

  /**
   * The formats of builds before cluster versions existed: datagrams of wire version 3 (no time,
   * destination or role; sealed under the cluster key). A store without a version row that holds
   * groups was written at this version.
   */
  public static final int WIRE_3 = 1;
  /** Processes send wire version 4 (fresh, addressed, per-role keys) and still open version 3. */
  public static final int WIRE_4 = 2;
  /**
   * Wire version 3 is no longer opened: a copy of a datagram is refused as stale, repeated or
   * misdirected everywhere (docs/wire.md).
   */
  public static final int WIRE_3_CLOSED = 3;
  /**
   * Range reads: clients scan key ranges (the SCAN_REQUEST and SCAN_REPLY messages) and log
   * entries may carry the ranges they read (log value format 3, docs/client.md "Range reads").
   */
  public static final int RANGE_READS = 4;
  /**
   * Commutative updates: log entries may carry counter adds and counting-set updates (log value
   * format 4), and clients ask whether they applied (the UPDATES_REQUEST and UPDATES_REPLY
   * messages; docs/client.md "Counters and counting sets").
   */
  public static final int COMMUTATIVE_UPDATES = 5;
  /**
   * Transactions across groups commit in one round: a PREPARE in every group, the coordinator's
   * too, committed once all are chosen; settlers close the groups they cannot see prepared
   * (CLOSE steps) before they may decide ABORT (docs/cross-group.md).
   */
  public static final int XG_ONE_ROUND = 6;
  /**
   * Snapshot pages stay within one datagram whatever the group's lock table holds: a rebuild
   * asks for the lock table in pages of its own, sliced by size, values included, each page
   * naming a digest of the whole table (the SNAPSHOT_REQUEST and SNAPSHOT_REPLY fields of
   * docs/wire.md; docs/rebuilding.md).
   */
  public static final int SNAPSHOT_LOCK_PAGES = 7;
  /**
   * Overloaded services refuse begin, read, scan and other client requests with OVERLOADED (the
   * clients of this build back off and retry) where below it they drop them (older clients time
   * out and try the next DC); Paxos requests and submits are refused at any version
   * (docs/operating.md, "Overload").
   */
  public static final int OVERLOADED_REFUSALS = 8;

  /** Every version, oldest first; {@code ALL.get(n - 1).number() == n}. */
  public static final List<Version> ALL = List.of(
      new Version(WIRE_3, "wire-3", "the formats of builds before cluster versions: datagrams of "
          + "wire version 3", false),
      new Version(WIRE_4, "wire-4", "datagrams of wire version 4 (time, destination, role keys) "
          + "are sent; version 3 is still opened", false),
      new Version(WIRE_3_CLOSED, "wire-3-closed", "datagrams of wire version 3 are refused: "
          + "copies of datagrams are refused everywhere", true),
      new Version(RANGE_READS, "range-reads", "clients scan key ranges; log entries carry the "
          + "ranges they read (log value format 3)", false),
      new Version(COMMUTATIVE_UPDATES, "commutative-updates", "log entries carry counter adds "
          + "and counting-set updates (log value format 4)", false),
      new Version(XG_ONE_ROUND, "xg-one-round", "transactions across groups commit in one "
          + "round: a PREPARE in every group, the coordinator's too, and CLOSE steps "
          + "(docs/cross-group.md)", false),
      new Version(SNAPSHOT_LOCK_PAGES, "snapshot-lock-pages", "a rebuild copies a group's lock "
          + "table in pages of one datagram each (docs/rebuilding.md)", false),
      new Version(OVERLOADED_REFUSALS, "overloaded-refusals", "an overloaded service refuses "
          + "client requests (begin, read, scan) with OVERLOADED instead of dropping them",
          false));

  /** The oldest version this build speaks. */
  public static final int OLDEST = WIRE_3;
  /** The newest version this build speaks; a new cluster starts at it. */
  public static final int LATEST = ALL.get(ALL.size() - 1).number();

  private ClusterVersion() {}

  /** Version {@code number} of this build. */
  public static Version of(int number) {
    if (number < OLDEST || number > LATEST) {
      throw new IllegalArgumentException("cluster version " + number + " is not one of "
          + OLDEST + "-" + LATEST + " this build knows");
    }
    return ALL.get(number - 1);
  }

  /** {@code 2 (wire-4)}; an unknown number as itself. */
  public static String describe(int version) {
    return version >= OLDEST && version <= LATEST
        ? version + " (" + ALL.get(version - 1).name() + ")" : Integer.toString(version);
  }

  /**
   * The versions a process speaks: it writes the formats of any version in it and reads all of
   * them. A process refuses to run in a cluster whose version is outside its range.
   */
  public record Range(int min, int max) {
    public Range {
      if (min < 1 || min > max) {
        throw new IllegalArgumentException("cluster version range " + min + "-" + max
            + " is empty");
      }
    }

    /**
     * The range of a process of this build that speaks no version above {@code max} (the
     * operator's {@code paxoscp.cluster.version.max}) and none below {@code min} (a process
     * holding one role's key cannot seal wire version 3).
     */
    public static Range ofThisBuild(int min, int max) {
      if (min < OLDEST || max > LATEST || min > max) {
        throw new IllegalArgumentException("cluster versions " + min + "-" + max
            + " are not within " + OLDEST + "-" + LATEST + ", the versions this build speaks");
      }
      return new Range(min, max);
    }

    public boolean contains(int version) {
      return version >= min && version <= max;
    }

    /** {@code 1-3}. */
    @Override
    public String toString() {
      return min + "-" + max;
    }

    /** Parses {@link #toString}'s form; empty for anything else. */
    public static java.util.Optional<Range> parse(String text) {
      java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d{1,4})-(\\d{1,4})")
          .matcher(text == null ? "" : text);
      if (!m.matches()) {
        return java.util.Optional.empty();
      }
      int lo = Integer.parseInt(m.group(1));
      int hi = Integer.parseInt(m.group(2));
      return lo >= 1 && lo <= hi ? java.util.Optional.of(new Range(lo, hi))
          : java.util.Optional.empty();
    }

    /**
     * Refuses a cluster at {@code version}.
     *
     * @throws UnsupportedClusterVersionException naming both, when the range does not hold it
     */
    public void require(int version, String where) {
      if (!contains(version)) {
        throw new UnsupportedClusterVersionException(this, version, where);
      }
    }
  }
}
