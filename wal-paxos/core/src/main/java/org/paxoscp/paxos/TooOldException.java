package org.paxoscp.paxos;

/**
 * A request named a log position at or below its group's GC watermark at this DC
 * (docs/architecture.md section 7): the position's WAL row and superseded data versions may be
 * gone, so it is answered with this refusal instead of with a fresh Paxos instance or a read of
 * collected versions. Nothing was changed (a row the request may have recreated is removed again).
 *
 * <p>Not a failure of the store: the requester is behind and should start again at a newer read
 * position; the Transaction Service answers it with the wire error code {@code TOO_OLD}, which the
 * client surfaces as a retryable abort.
 */
public final class TooOldException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String group;
  private final long position;
  private final long gcWatermark;

  public TooOldException(String group, long position, long gcWatermark) {
    super("position " + position + " of group " + group + " is at or below its GC watermark "
        + gcWatermark, null, false, false);
    this.group = group;
    this.position = position;
    this.gcWatermark = gcWatermark;
  }

  public String group() {
    return group;
  }

  public long position() {
    return position;
  }

  public long gcWatermark() {
    return gcWatermark;
  }
}
