package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.cli.Main;
import picocli.CommandLine;

/**
 * A short seeded nemesis run on real processes (HBase server, four service processes, UDP
 * through the fault proxies): it must inject faults of several kinds, commit transactions, and
 * find no violation; the exported run must pass {@code paxoscp check} too.
 */
class NemesisIT {

  @Test
  @Timeout(value = 6, unit = TimeUnit.MINUTES) // processes start slowly on a loaded machine
  void quickSeededRunInjectsFaultsCommitsAndFindsNoViolation(@TempDir Path dir) throws Exception {
    StringWriter log = new StringWriter();
    PrintWriter out = new PrintWriter(log, true);
    Path export = dir.resolve("export");
    NemesisRun.Options o = new NemesisRun.Options(List.of("V1", "V2", "O"),
        Duration.ofSeconds(45), 20261123L, dir.resolve("work"), export, Duration.ofMillis(1000),
        EnumSet.copyOf(java.util.Arrays.stream(Fault.values()).filter(f -> !f.engine()).toList()),
        2, 2, false, false, 1);
    NemesisRun.Report r;
    try (NemesisRun run = new NemesisRun(o, out)) {
      r = run.run();
    } finally {
      System.out.println(log);
    }
    // Every kind has its turn however slow the machine; a client crash is counted only when a
    // commit was in flight as the client closed (three tries), so it alone may be missing.
    for (Fault f : Fault.values()) {
      if (f != Fault.CLIENT_CRASH && !f.engine()) {
        assertTrue(r.faults().get(f) > 0, "a fault of kind " + f + ": " + r.faults());
      }
    }
    assertTrue(r.outcomes().get(NemesisWorkload.Outcome.COMMITTED) > 50,
        "transactions committed: " + r.outcomes());
    assertTrue(r.positions() > 50, "log positions checked: " + r.positions());
    assertTrue(r.byShape().getOrDefault("xg-transfer COMMITTED", 0L) > 0,
        "transfers across groups committed: " + r.byShape());
    // Audits across groups conflict with the transfers beside them and often abort (4 of 32
    // committed in one run); the run's final audit across the groups, which must commit and see
    // the initial sum, is one of the checks behind the empty violation list below.
    assertTrue(r.byShape().entrySet().stream()
        .anyMatch(e -> e.getKey().startsWith("xg-audit ") && e.getValue() > 0),
        "audits across groups ran: " + r.byShape());
    assertEquals(List.of(), r.violations());

    StringWriter checkOut = new StringWriter();
    CommandLine cl = new CommandLine(new Main());
    cl.setOut(new PrintWriter(checkOut, true));
    cl.setErr(new PrintWriter(checkOut, true));
    assertEquals(0, cl.execute("check", export.toString()), checkOut.toString());
    assertTrue(checkOut.toString().contains("one-copy serializable"), checkOut.toString());
  }
}
