package org.paxoscp.version;

/**
 * An operation needs a format that the cluster's version does not switch on yet: the cluster
 * still runs at a version an older build speaks, so nothing of the new format may be written.
 * Nothing was sent. Raising the version ({@code paxoscp cluster-version finalize}, once every
 * process runs a build that speaks it) makes the operation available (docs/upgrading.md).
 */
public final class VersionNotActiveException extends RuntimeException {
  private final int needed;
  private final int active;

  public VersionNotActiveException(String what, int needed, int active) {
    super(what + " needs cluster version " + ClusterVersion.describe(needed)
        + "; the cluster runs at " + ClusterVersion.describe(active)
        + ": finish the upgrade with paxoscp cluster-version finalize (docs/upgrading.md)");
    this.needed = needed;
    this.active = active;
  }

  public int needed() {
    return needed;
  }

  public int active() {
    return active;
  }
}
