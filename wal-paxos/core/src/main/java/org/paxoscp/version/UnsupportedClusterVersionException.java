package org.paxoscp.version;

/**
 * A process was asked to run in a cluster whose version it does not speak: a build too old for
 * a cluster raised past it, or one too new for a cluster below its oldest version. Nothing was
 * written. The message names both and what to do.
 */
public final class UnsupportedClusterVersionException extends RuntimeException {
  private final ClusterVersion.Range range;
  private final int clusterVersion;

  public UnsupportedClusterVersionException(ClusterVersion.Range range, int clusterVersion,
      String where) {
    super(where + " runs at cluster version " + ClusterVersion.describe(clusterVersion)
        + "; this process speaks cluster versions " + range + (clusterVersion > range.max()
        ? ": run a build that speaks it (docs/upgrading.md)"
        : ": run it with a key and settings that speak it (docs/upgrading.md)"));
    this.range = range;
    this.clusterVersion = clusterVersion;
  }

  public ClusterVersion.Range range() {
    return range;
  }

  public int clusterVersion() {
    return clusterVersion;
  }
}
