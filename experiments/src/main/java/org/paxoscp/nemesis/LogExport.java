package org.paxoscp.nemesis;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.local.LogCatchUp;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;

/**
 * After a nemesis run is healed: brings every DC's log of every group up to the highest position
 * proved to exist (chosen at some DC, now or in a log saved before a store loss, or told to a
 * client, as read from the exported histories), then appends every DC's log to the export
 * ({@code wal/<dc>.jsonl}).
 *
 * <p>During the run, before the {@code store_loss} fault empties a DC's store, saves the log the
 * DC holds ({@link #saveBeforeLoss}) as {@code saved-logs/wal/<dc>-<n>.jsonl} in the export, in
 * the same format: a rebuilt DC holds the log above the position it was copied at, not below it,
 * so after a few losses no DC may hold a group's first positions at the end, and the verdict
 * judges those from the saved copies ({@link NemesisVerdict#mergeSaved}).
 */
final class LogExport {
  /** How long one DC may take to catch up on one group. */
  private static final Duration CATCH_UP_WITHIN = Duration.ofSeconds(90);
  /**
   * The export's directory of logs saved before store losses: read by {@link HistoryFiles#read}
   * as a run of logs only, each copy ({@code <dc>-<n>}) in place of a DC.
   */
  static final String SAVED_DIR = "saved-logs";
  /** WAL rows read per request when saving a log. */
  private static final int SAVE_PAGE_ROWS = 500;

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
    Map<String, Map<String, SortedMap<Long, LogValue>>> saved = readSaved(export);
    long positions = 0;
    try (UdpTransport t = UdpTransport.builder(cluster.config(), cluster.dcs().get(0)).build()) {
      for (String group : groups) {
        List<TxnRecord> recs = history.recordsByGroup().getOrDefault(group, List.of());
        long proven = Math.max(LogCatchUp.provenPosition(recs),
            history.crossGroupPositions().getOrDefault(group, 0L));
        for (SortedMap<Long, LogValue> copy : saved.getOrDefault(group, Map.of()).values()) {
          if (!copy.isEmpty()) {
            proven = Math.max(proven, copy.lastKey()); // chosen at a DC before its store loss
          }
        }
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

  /** Where {@link #saveBeforeLoss} writes copy {@code copy}. */
  static Path savedFile(Path export, String copy) {
    return export.resolve(SAVED_DIR).resolve("wal").resolve(copy + ".jsonl");
  }

  /**
   * Saves the chosen values {@code store} holds of each of {@code groups}, every position its WAL
   * holds one at, to {@link #savedFile}. Every group is read before anything is written, so a
   * read that fails leaves no file. Chosen values never change: a copy read while the DC's
   * services run is as good as one read after they stop.
   *
   * @return the positions saved, per group
   */
  static SortedMap<String, Integer> saveBeforeLoss(KvStore store, Collection<String> groups,
      Path export, String copy) {
    Map<String, SortedMap<Long, LogValue>> logs = new TreeMap<>();
    for (String group : groups) {
      logs.put(group, chosenHeld(store, group, SAVE_PAGE_ROWS));
    }
    SortedMap<String, Integer> saved = new TreeMap<>();
    logs.forEach((group, log) -> {
      HistoryFiles.appendWal(export.resolve(SAVED_DIR), copy, group, log);
      saved.put(group, log.size());
    });
    return saved;
  }

  /**
   * Every chosen value {@code store}'s WAL holds of {@code group}, by position, scanned in pages
   * of {@code pageRows} rows: one request per page, where reading position by position ({@link
   * LogCatchUp#chosenLog}) costs one or two per position and took seconds per hundred positions
   * on a loaded machine, with the DC's services running and its loss waiting.
   */
  static SortedMap<Long, LogValue> chosenHeld(KvStore store, String group, int pageRows) {
    SortedMap<Long, LogValue> log = new TreeMap<>();
    byte[] from = WalLayout.groupRowsStart(group);
    byte[] end = WalLayout.groupRowsEnd(group);
    while (true) {
      List<KvStore.ScannedRow> rows = store.scan(KvStore.Table.WAL, from, end, KvStore.LATEST,
          pageRows, false);
      long last = 0;
      for (KvStore.ScannedRow r : rows) {
        last = WalLayout.positionOf(group, r.row());
        KvStore.Cell chosen = r.cells().get(WalLayout.CHOSEN);
        if (chosen != null) { // a row with votes only holds no chosen value
          log.put(last, LogCodec.decode(chosen.value()));
        }
      }
      if (rows.size() < pageRows) {
        return log;
      }
      from = WalLayout.walRow(group, last + 1);
    }
  }

  /**
   * The logs saved before store losses in {@code export}: per group, per copy ({@code <dc>-<n>}),
   * the chosen values by position; empty when no store was lost.
   *
   * @throws IllegalArgumentException naming the file and line of anything malformed
   */
  static Map<String, Map<String, SortedMap<Long, LogValue>>> readSaved(Path export) {
    return HistoryFiles.read(export.resolve(SAVED_DIR)).logsByGroup();
  }
}
