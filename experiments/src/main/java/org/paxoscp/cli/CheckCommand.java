package org.paxoscp.cli;

import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.Callable;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.history.HistoryFiles;
import org.paxoscp.wal.LogValue;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp check DIR}: judges an exported run ({@code DIR/history/*.jsonl} and
 * {@code DIR/wal/<dc>.jsonl}, see {@link HistoryFiles}) with the serializability checker, group
 * by group, and, when the logs hold steps of transactions across groups, with the cross-group
 * checker over all of them. A nemesis export with {@code DIR/saved-logs/} (logs saved before
 * store losses) has the positions no DC holds any more judged from those, as the nemesis does.
 *
 * <p>Exit codes: 0 every group is one-copy serializable; 1 a violation (printed); 2 the
 * directory is missing or malformed (the message names the file and line).
 */
@Command(name = "check", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/guarantees.md.",
    description = "Check an exported run (history/*.jsonl and wal/<dc>.jsonl) for one-copy "
        + "serializability, group by group.")
public final class CheckCommand implements Callable<Integer> {

  @Spec
  CommandSpec spec;

  @Parameters(index = "0", paramLabel = "DIR", description = "The export directory.")
  Path dir;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!Files.isDirectory(dir.resolve("wal")) || !Files.isDirectory(dir.resolve("history"))) {
      err.println("check: " + dir + " holds no wal/ and history/ directories");
      return 2;
    }
    HistoryFiles.Run run;
    try {
      run = HistoryFiles.read(dir);
    } catch (IllegalArgumentException | UncheckedIOException e) {
      err.println("check: " + ClusterCommand.oneLine(e));
      return 2;
    }
    boolean ok = true;
    if (Files.isDirectory(dir.resolve("saved-logs"))) {
      // A nemesis run with store losses: positions no DC holds any more are judged from the
      // logs it saved before each loss (docs/guarantees.md).
      org.paxoscp.nemesis.SavedLogs.Merged m;
      try {
        m = org.paxoscp.nemesis.SavedLogs.merge(dir, run);
      } catch (IllegalArgumentException | UncheckedIOException e) {
        err.println("check: saved-logs: " + ClusterCommand.oneLine(e));
        return 2;
      }
      m.conflicts().forEach(out::println);
      ok = m.conflicts().isEmpty();
      out.printf("positions judged from logs saved before store loss: %d%n", m.fromSaved());
      run = m.run();
    }
    for (String group : run.recordsByGroup().keySet()) {
      Map<String, SortedMap<Long, LogValue>> logs =
          run.logsByGroup().getOrDefault(group, Map.of());
      List<TxnRecord> records = run.recordsByGroup().get(group);
      CheckResult r = SerializabilityChecker.check(logs, records);
      long positions = logs.values().stream().mapToLong(SortedMap::size).max().orElse(0);
      out.printf("group %s: %d transactions, %d DCs, %d positions: %s%n", group, records.size(),
          logs.size(), positions, r.ok() ? "one-copy serializable" : "VIOLATION");
      if (!r.ok()) {
        out.println(r);
        ok = false;
      }
    }
    if (run.hasCrossGroup()) {
      // One conflict graph over every group, for transactions across groups.
      CrossGroupChecker.Result x = CrossGroupChecker.check(run.logsByGroup(),
          run.recordsByGroup(), run.crossGroup());
      out.printf("across %d groups: %d cross-group transactions committed, %d aborted, %d "
          + "undecided: %s%n", run.logsByGroup().size(), x.committed(), x.aborted(),
          x.undecided(), x.ok() ? "one-copy serializable" : "VIOLATION");
      // Groups with records were judged above; print only what that did not cover.
      if (!x.crossGroup().ok()) {
        out.println(x.crossGroup().summary());
        ok = false;
      }
      for (var g : x.perGroup().entrySet()) {
        if (!g.getValue().ok() && !run.recordsByGroup().containsKey(g.getKey())) {
          out.println("group " + g.getKey() + ": " + g.getValue().summary());
          ok = false;
        }
      }
    }
    out.flush();
    return ok ? 0 : 1;
  }
}
