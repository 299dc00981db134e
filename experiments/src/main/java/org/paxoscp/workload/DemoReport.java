package org.paxoscp.workload;

import java.awt.Color;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/**
 * Renders workload runs side by side: a text table, a CSV file and a PNG chart of commits by
 * promotion round and aborts per protocol (the shape of the paper's Figure 4).
 */
public final class DemoReport {
  /** Promotion rounds shown as their own column; higher rounds are summed into the last one. */
  static final int ROUNDS = 3;

  private DemoReport() {}

  /** The side-by-side table. */
  public static void printTable(List<RunSummary> runs, PrintStream out) {
    out.printf(Locale.ROOT, "%-9s %9s %6s %6s %6s %6s %6s %8s %8s %8s %9s %9s %9s  %s%n",
        "protocol", "committed", "r0", "r1", "r2", "r3+", "ro", "aborted", "unknown", "unavail",
        "combined", "p50(ms)", "p99(ms)", "checker");
    for (RunSummary r : runs) {
      out.printf(Locale.ROOT, "%-9s %9d %6d %6d %6d %6d %6d %8d %8d %8d %9d %9.1f %9.1f  %s%n",
          r.label(), r.committedWrites() + r.readOnly(), round(r, 0), round(r, 1), round(r, 2),
          r.committedAtLeast(ROUNDS), r.readOnly(), r.aborted(), r.unknown(), r.unavailable(),
          r.combined(), r.p50Millis(), r.p99Millis(), r.checker());
    }
  }

  /** Writes the table as CSV (one row per run, a header line first). */
  public static void writeCsv(List<RunSummary> runs, Path file) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add("protocol,committed,r0,r1,r2,r3_or_more,read_only,aborted,unknown,unavailable,"
        + "combined,p50_ms,p99_ms,seconds,checker_ok");
    for (RunSummary r : runs) {
      lines.add(String.format(Locale.ROOT, "%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.2f,%.2f,%.1f,%s",
          r.label(), r.committedWrites() + r.readOnly(), round(r, 0), round(r, 1), round(r, 2),
          r.committedAtLeast(ROUNDS), r.readOnly(), r.aborted(), r.unknown(), r.unavailable(),
          r.combined(), r.p50Millis(), r.p99Millis(), r.seconds(), r.safe()));
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }

  /** Writes a stacked bar chart: per protocol, commits by promotion round, then aborts. */
  public static void writeChart(List<RunSummary> runs, Path file, String title)
      throws IOException {
    System.setProperty("java.awt.headless", "true");
    CategoryChart chart = new CategoryChartBuilder().width(800).height(500).title(title)
        .xAxisTitle("protocol").yAxisTitle("transactions").build();
    chart.getStyler().setStacked(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    // Commits in shades of blue and green (darker = first try), then read-only, aborted, unknown.
    chart.getStyler().setSeriesColors(new Color[] {new Color(0x1f4e99), new Color(0x3f7fd6),
        new Color(0x7fb2ee), new Color(0x2e9e6a), new Color(0x9bd39b), new Color(0xd64541),
        new Color(0x9e9e9e)});
    List<String> labels = runs.stream().map(RunSummary::label).toList();
    for (int round = 0; round <= ROUNDS; round++) {
      final int k = round;
      List<Integer> ys = runs.stream()
          .map(r -> k < ROUNDS ? round(r, k) : r.committedAtLeast(ROUNDS)).toList();
      String name = k == 0 ? "committed, first try"
          : "committed after " + k + (k < ROUNDS ? "" : "+") + " promotion" + (k == 1 ? "" : "s");
      chart.addSeries(name, labels, ys);
    }
    chart.addSeries("read-only", labels, runs.stream().map(RunSummary::readOnly).toList());
    chart.addSeries("aborted", labels, runs.stream().map(RunSummary::aborted).toList());
    chart.addSeries("unknown", labels, runs.stream().map(RunSummary::unknown).toList());
    String name = file.getFileName().toString();
    Path base = file.resolveSibling(name.endsWith(".png") ? name.substring(0, name.length() - 4)
        : name);
    BitmapEncoder.saveBitmap(chart, base.toString(), BitmapEncoder.BitmapFormat.PNG);
  }

  private static int round(RunSummary r, int k) {
    return r.commitsByRound().getOrDefault(k, 0);
  }
}
