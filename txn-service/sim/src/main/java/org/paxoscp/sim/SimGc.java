package org.paxoscp.sim;

/**
 * Log and version garbage collection in a simulated run (docs/architecture.md section 7). Every
 * {@code intervalMicros} of virtual time, each DC that is up and reaches every other DC that is up
 * — and only when every DC is up, since the watermark waits for all of them — proposes the GC
 * watermark {@code min(applied at every DC) - retention} and collects below it, exactly as a
 * Transaction Service does. Clients then read at commit time rather than at begin, so that
 * reads at positions the watermark has passed meanwhile really happen (and are refused with
 * TOO_OLD, a retryable abort).
 *
 * @param retention positions kept below the lowest applied position; at least 1
 * @param intervalMicros virtual time between collection rounds
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
