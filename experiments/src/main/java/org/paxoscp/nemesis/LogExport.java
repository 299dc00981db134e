package org.paxoscp.nemesis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.LogCatchUp;
import org.paxoscp.transport.UdpTransport;

/**
 * After a nemesis run is healed: brings every DC's log of every group up to the highest position
 * proved to exist (chosen at some DC, or told to a client, as read from the exported histories),
 * then appends every DC's log to the export ({@code wal/<dc>.jsonl}).
 */
final class LogExport {
  /** How long one DC may take to catch up on one group. */
  private static final Duration CATCH_UP_WITHIN = Duration.ofSeconds(90);

  private LogExport() {}

  /**
   * Catches up and exports {@code groups}.
   *
   * @return the log positions exported, summed over the groups
   * @throws IllegalStateException if a DC does not catch up in time
   */
  static long export(NemesisCluster cluster, Collection<String> groups, Path export,
      Duration requestTimeout) {
    HistoryFiles.Run history = HistoryFiles.read(export);
    long positions = 0;
    try (UdpTransport t = UdpTransport.builder(cluster.config(), cluster.dcs().get(0)).build()) {
      for (String group : groups) {
        List<TxnRecord> recs = history.recordsByGroup().getOrDefault(group, List.of());
        long proven = Math.max(LogCatchUp.provenPosition(recs),
            history.crossGroupPositions().getOrDefault(group, 0L));
        long upTo = LogCatchUp.highestProved(group, cluster.stores().values(), proven);
        if (upTo > 0) {
          for (String dc : cluster.dcs()) {
            LogCatchUp.bringUp(t, dc, group, upTo, requestTimeout.multipliedBy(4),
                CATCH_UP_WITHIN);
          }
        }
        positions += upTo;
        for (String dc : cluster.dcs()) {
          HistoryFiles.appendWal(export, dc, group,
              LogCatchUp.chosenLog(cluster.stores().get(dc), group, 1, upTo));
        }
      }
    }
    return positions;
  }
}
