package org.paxoscp.sim;

/**
 * Log and version garbage collection in a simulated run (docs/architecture.md section 7), in
 * every group at every DC. Each time a DC has applied {@code everyPositions} more positions of a
 * group, its service's shipped {@code GroupCollector} asks every other DC for its applied
 * position and, once all answered (it waits for a silent DC for ever: the checker judges every
 * DC's log), raises the group's GC watermark to {@code min(applied at every DC) - retention} and
 * collects below it. Reads at positions the watermark has passed meanwhile are refused with
 * TOO_OLD (a retryable abort). What the collectors remove is archived for the checker
 * ({@code ArchivingStore}).
 *
 * @param retention positions kept below the lowest applied position; at least 1
 * @param everyPositions applied positions between a group's collection rounds at a DC
 * @param plantedReadBelowWatermark a planted bug for the checker's test: reads ignore the
 *     watermark and are served from collected versions; never set outside that test
 */
public record SimGc(long retention, int everyPositions, boolean plantedReadBelowWatermark) {
  public SimGc {
    if (retention < 1 || everyPositions < 1) {
      throw new IllegalArgumentException("retention and everyPositions must be >= 1");
    }
  }
}
