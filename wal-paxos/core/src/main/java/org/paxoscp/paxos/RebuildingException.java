package org.paxoscp.paxos;

/**
 * This DC does not serve a request of a group because it lost its store and has not rebuilt the
 * group yet, or does not vote at a position because the position is at or below the group's
 * rebuild fence here (docs/architecture.md section 12, {@link RebuildGuard}). Nothing was changed
 * (a row the request may have written is removed again).
 *
 * <p>Not a failure of the requester: another DC serves it. The Transaction Service answers with
 * the wire error code {@code REBUILDING}, on which clients fail over and proposers count no vote.
 */
public final class RebuildingException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String group;

  public RebuildingException(String group, String why) {
    super("group " + group + ": " + why, null, false, false);
    this.group = group;
  }

  public String group() {
    return group;
  }
}
