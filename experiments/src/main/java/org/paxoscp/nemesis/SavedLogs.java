package org.paxoscp.nemesis;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.wal.LogValue;

/**
 * The logs a nemesis run saved before its store losses ({@code saved-logs/} of its export),
 * merged into an exported run as the nemesis' verdict merges them
 * ({@link NemesisVerdict#mergeSaved}), for {@code paxoscp check}.
 */
public final class SavedLogs {
  private SavedLogs() {}

  /**
   * @param run the export with the positions no DC held any more judged from the saved logs
   * @param fromSaved how many positions were
   * @param conflicts saved copies that disagree with a final log or with each other (broken
   *     agreement)
   */
  public record Merged(HistoryFiles.Run run, int fromSaved, List<String> conflicts) {}

  /**
   * Merges {@code export}'s saved logs into {@code run}.
   *
   * @throws IllegalArgumentException naming the file and line of anything malformed
   */
  public static Merged merge(Path export, HistoryFiles.Run run) {
    Map<String, Map<String, SortedMap<Long, LogValue>>> saved = LogExport.readSaved(export);
    Map<String, Map<String, SortedMap<Long, LogValue>>> logs = new TreeMap<>(run.logsByGroup());
    int fromSaved = 0;
    List<String> conflicts = new java.util.ArrayList<>();
    for (String group : new TreeSet<>(saved.keySet())) {
      NemesisVerdict.Merged m = NemesisVerdict.mergeSaved(group,
          run.logsByGroup().getOrDefault(group, Map.of()), saved.get(group));
      logs.put(group, m.logs());
      fromSaved += m.fromSaved();
      conflicts.addAll(m.conflicts());
    }
    return new Merged(new HistoryFiles.Run(logs, run.recordsByGroup(), run.crossGroup(),
        run.crossGroupPositions()), fromSaved, conflicts);
  }
}
