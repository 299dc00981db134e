package org.paxoscp.ycsb;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import site.ycsb.WorkloadException;

/** Property parsing shared by this module's workloads: every bad value names its property. */
final class TxnWorkloads {
  private TxnWorkloads() {}

  /**
   * Ends a workload's validation: prints {@code [VALIDATION], Result, OK} or {@code FAILED} and
   * each violation (also on stderr, as "{@code workload} violated: ..."), and writes the result,
   * {@code fileLines}, then the violations to the file {@link ClosedEconomyWorkload#VALIDATION_FILE}
   * names, if set ({@code paxoscp ycsb} reads it for its exit code).
   */
  static void reportValidation(Properties props, String workload, List<String> problems,
      List<String> fileLines) {
    String result = problems.isEmpty() ? "OK" : "FAILED";
    System.out.println("[VALIDATION], Result, " + result);
    for (String p : problems) {
      System.out.println("[VALIDATION], Violation, " + p);
      System.err.println(workload + " violated: " + p);
    }
    String out = props.getProperty(ClosedEconomyWorkload.VALIDATION_FILE);
    if (out != null) {
      StringBuilder sb = new StringBuilder(result).append('\n');
      fileLines.forEach(l -> sb.append(l).append('\n'));
      problems.forEach(p -> sb.append(p).append('\n'));
      try {
        Files.writeString(Path.of(out), sb.toString(), StandardCharsets.UTF_8);
      } catch (IOException e) {
        throw new UncheckedIOException("cannot write " + out, e);
      }
    }
  }

  /** The binding of the calling client thread. */
  static PaxosCpDB binding() throws WorkloadException {
    return PaxosCpDB.current().orElseThrow(() -> new WorkloadException(
        "this workload needs the paxoscp binding: -db " + PaxosCpDB.class.getName()));
  }

  static int intProp(Properties p, String key, int def, int min) throws WorkloadException {
    String v = p.getProperty(key);
    int n;
    try {
      n = v == null ? def : Integer.parseInt(v.trim());
    } catch (NumberFormatException e) {
      throw new WorkloadException(key + " must be an integer, not '" + v + "'");
    }
    if (n < min) {
      throw new WorkloadException(key + " must be >= " + min + ", not " + n);
    }
    return n;
  }

  static long longProp(Properties p, String key, long def, long min) throws WorkloadException {
    String v = p.getProperty(key);
    long n;
    try {
      n = v == null ? def : Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw new WorkloadException(key + " must be an integer, not '" + v + "'");
    }
    if (n < min) {
      throw new WorkloadException(key + " must be >= " + min + ", not " + n);
    }
    return n;
  }

  static double fraction(Properties p, String key, double def) throws WorkloadException {
    String v = p.getProperty(key);
    double d;
    try {
      d = v == null ? def : Double.parseDouble(v.trim());
    } catch (NumberFormatException e) {
      throw new WorkloadException(key + " must be a number, not '" + v + "'");
    }
    if (!(d >= 0 && d <= 1)) {
      throw new WorkloadException(key + " must be in [0, 1], not " + d);
    }
    return d;
  }

  /** Application time between operations of a transaction (the paper's transaction length). */
  static void think(long millis) {
    if (millis > 0) {
      try {
        Thread.sleep(millis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
