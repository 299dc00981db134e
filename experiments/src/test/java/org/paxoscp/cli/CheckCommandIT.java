package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * History export and check: a demo run exported with {@code --export} passes {@code check}; the
 * same export with another value at one position of one DC's log, or with one read value
 * changed, fails it; a malformed file is a usage error naming the file and line.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class CheckCommandIT {
  @TempDir
  static Path tmp;
  private static Path export;

  @BeforeAll
  static void exportADemoRun() {
    export = tmp.resolve("export");
    CommandRun.Result demo = CommandRun.run(new DemoCommand(), "--store", "memory", "--txns",
        "5", "--clients", "3", "--no-wan", "--op-ms", "5", "--export", export.toString(),
        "--out", tmp.resolve("demo").toString());
    assertEquals(0, demo.code(), demo.err());
  }

  private static Path copy(String name) throws IOException {
    Path to = tmp.resolve(name);
    for (String sub : List.of("history", "wal")) {
      Files.createDirectories(to.resolve(sub));
      try (var files = Files.list(export.resolve(sub))) {
        for (Path f : files.toList()) {
          Files.copy(f, to.resolve(sub).resolve(f.getFileName()));
        }
      }
    }
    return to;
  }

  @Test
  void theExportedRunIsOneCopySerializable() throws IOException {
    assertTrue(Files.readAllLines(export.resolve("wal/V1.jsonl")).size() > 0);
    assertEquals(3, Files.list(export.resolve("history")).count(),
        "one file per commit mode's run (basic, cp, leader)");
    CommandRun.Result r = CommandRun.run(new CheckCommand(), export.toString());
    assertEquals(0, r.code(), r.out() + r.err());
    assertTrue(r.out().contains("group demo-cp:"), r.out());
    assertTrue(r.out().contains("group demo-leader:"), r.out());
    assertTrue(r.out().contains("one-copy serializable"), r.out());
  }

  @Test
  void twoDcsHoldingDifferentValuesAtOnePositionAreCaught() throws IOException {
    Path dir = copy("disagree");
    Path wal = dir.resolve("wal/V2.jsonl");
    List<String> lines = new ArrayList<>(Files.readAllLines(wal, StandardCharsets.UTF_8));
    String first = lines.get(0);
    assertTrue(first.contains("\"pos\":1"), first);
    lines.set(0, first.replaceFirst("\"txn\":\"[^\"]+\"", "\"txn\":\"forged\""));
    Files.write(wal, lines, StandardCharsets.UTF_8);
    CommandRun.Result r = CommandRun.run(new CheckCommand(), dir.toString());
    assertEquals(1, r.code(), r.out());
    assertTrue(r.out().contains("AGREEMENT"), r.out());
  }

  @Test
  void aLaggingDcIsNoViolation() throws IOException {
    // A DC that has not learned a position yet disagrees with nobody.
    Path dir = copy("lagging");
    Path wal = dir.resolve("wal/V2.jsonl");
    List<String> lines = new ArrayList<>(Files.readAllLines(wal, StandardCharsets.UTF_8));
    lines.remove(lines.size() - 1);
    Files.write(wal, lines, StandardCharsets.UTF_8);
    assertEquals(0, CommandRun.run(new CheckCommand(), dir.toString()).code());
  }

  @Test
  void aReadOfAValueNobodyWroteIsCaught() throws IOException {
    Path dir = copy("misread");
    Path history = dir.resolve("history/cp.jsonl");
    List<String> lines = new ArrayList<>(Files.readAllLines(history, StandardCharsets.UTF_8));
    String forged = "\"value\":\"" + Base64.getEncoder().encodeToString(
        "never-written".getBytes(StandardCharsets.UTF_8)) + "\"";
    boolean changed = false;
    for (int i = 0; i < lines.size() && !changed; i++) {
      String l = lines.get(i);
      int reads = l.indexOf("\"reads\":[{");
      if (reads >= 0 && l.contains("\"outcome\":\"COMMITTED\"")) {
        int v = l.indexOf("\"value\":", reads);
        int end = l.indexOf(",\"version\"", v);
        lines.set(i, l.substring(0, v) + forged + l.substring(end));
        changed = true;
      }
    }
    assertTrue(changed, "a committed transaction with a read");
    Files.write(history, lines, StandardCharsets.UTF_8);
    CommandRun.Result r = CommandRun.run(new CheckCommand(), dir.toString());
    assertEquals(1, r.code(), r.out());
    assertTrue(r.out().contains("VIOLATION"), r.out());
  }

  @Test
  void aMalformedLineIsAUsageErrorNamingFileAndLine() throws IOException {
    Path dir = copy("malformed");
    Files.writeString(dir.resolve("wal/V1.jsonl"), "{\"group\":\"g\",\"pos\":1,\"entries\":[{}]}\n",
        StandardCharsets.UTF_8);
    CommandRun.Result r = CommandRun.run(new CheckCommand(), dir.toString());
    assertEquals(2, r.code(), r.err());
    assertTrue(r.err().contains("V1.jsonl:1"), r.err());
    r = CommandRun.run(new CheckCommand(), tmp.resolve("nothing-here").toString());
    assertEquals(2, r.code());
  }
}
