package org.paxoscp.experiment;

import java.awt.Color;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;
import org.paxoscp.workload.WorkloadRunner.Sample;

/**
 * A figure's outputs: the text table, a CSV of every data point, a CSV of every transaction, and
 * the paper's two charts (commits stacked by promotion round; mean commit latency by round).
 */
public final class FigureReport {
  /** The columns of the data-point CSV. */
  public static final String POINTS_HEADER = "figure,point,dcs,mode,home_dc,clients,attributes,"
      + "rate_per_client,txns,committed,r0,r1,r2,r3_or_more,max_round,read_only,aborted,unknown,"
      + "unavailable,combined,committed_per_500,mean_commit_ms,mean_commit_ms_r0,"
      + "mean_commit_ms_r1,mean_commit_ms_r2,mean_commit_ms_r3_or_more,p50_commit_ms,"
      + "p99_commit_ms,mean_txn_ms,seconds,log_length,checker_ok";

  private FigureReport() {}

  /** The rows a chart or table shows: per DC for Figure 8, the whole run otherwise. */
  static List<Row> shown(List<Row> rows) {
    return rows.stream().filter(r -> r.figure().perDc() != r.homeDc().equals("all")).toList();
  }

  private static String x(Row r) {
    return r.figure().perDc() ? r.homeDc() : r.point().label();
  }

  public static void printTable(List<Row> rows, PrintStream out) {
    out.printf(Locale.ROOT, "%-14s %-6s %-6s %5s %5s %5s %5s %5s %5s %5s %5s %5s %5s %7s %8s %8s "
        + "%8s %8s  %s%n", "figure", "point", "mode", "txns", "commit", "r0", "r1", "r2", "r3+",
        "abort", "unkn", "unav", "comb", "per500", "lat(ms)", "lat_r0", "p99", "txn(ms)",
        "checker");
    for (Row r : shown(rows)) {
      out.printf(Locale.ROOT, "%-14s %-6s %-6s %5d %5d %5d %5d %5d %5d %5d %5d %5d %5d %7.0f %8.1f "
          + "%8.1f %8.1f %8.1f  %s%n", r.figure().cliName(), x(r), r.mode(), r.txns(),
          r.committed(), r.round(0), r.round(1), r.round(2), r.round(3), r.aborted(), r.unknown(),
          r.unavailable(), r.combined(), r.per500(), r.meanCommitMs(), r.meanCommitMs(0),
          r.commitPercentileMs(99), r.meanTxnMs(), r.checkerOk() ? "ok" : r.checker());
    }
  }

  /** Every data point: one line per point, mode and (Figure 8) home DC. */
  public static void writePointsCsv(List<Row> rows, Path file) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add(POINTS_HEADER);
    for (Row r : rows) {
      Point p = r.point();
      lines.add(String.format(Locale.ROOT, "%s,%s,%s,%s,%s,%d,%d,%.3f,%d,%d,%d,%d,%d,%d,%d,%d,%d,"
          + "%d,%d,%d,%.1f,%s,%s,%s,%s,%s,%s,%s,%s,%.1f,%d,%s", r.figure().cliName(), p.label(),
          String.join(" ", p.dcs()), r.mode(), r.homeDc(), p.clients(), p.attributes(),
          p.ratePerClient(), r.txns(), r.committed(), r.round(0), r.round(1), r.round(2),
          r.round(3), r.maxRound(), r.readOnly(), r.aborted(), r.unknown(), r.unavailable(),
          r.combined(), r.per500(), ms(r.meanCommitMs()), ms(r.meanCommitMs(0)),
          ms(r.meanCommitMs(1)), ms(r.meanCommitMs(2)), ms(r.meanCommitMs(3)),
          ms(r.commitPercentileMs(50)), ms(r.commitPercentileMs(99)), ms(r.meanTxnMs()),
          r.seconds(), r.logLength(), r.checkerOk()));
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }

  /** Every transaction of every run. */
  public static void writeTxnsCsv(List<Row> rows, Path file) throws IOException {
    List<String> lines = new ArrayList<>();
    lines.add("figure,point,mode,client,home_dc,outcome,promotions,combined,commit_ms,txn_ms,"
        + "abort_reason");
    for (Row r : rows) {
      if (!r.homeDc().equals("all")) {
        continue;
      }
      for (Sample s : r.samples()) {
        lines.add(String.format(Locale.ROOT, "%s,%s,%s,%d,%s,%s,%d,%s,%.3f,%.3f,%s",
            r.figure().cliName(), r.point().label(), r.mode(), s.client(), s.homeDc(),
            s.outcome(), s.promotions(), s.combined(), s.commitMicros() / 1000.0,
            s.txnMicros() / 1000.0, s.abortReason()));
      }
    }
    Files.write(file, lines, StandardCharsets.UTF_8);
  }

  private static String ms(double v) {
    return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.2f", v);
  }

  /**
   * What a chart shows of one run: its x label (the point, or the client DC in Figure 8), its
   * mode, commits by promotion round (columns 0 .. {@link Row#ROUNDS}), read-only commits and the
   * mean commit latency by round (NaN where none). Built from a {@link Row}, or read back from
   * the points CSV so that charts can be drawn again without running again.
   */
  record Bar(String x, String mode, int[] rounds, int readOnly, double[] meanMs, int maxRound) {
    static Bar of(Row r) {
      int[] rounds = new int[Row.ROUNDS + 1];
      double[] means = new double[Row.ROUNDS + 1];
      for (int k = 0; k <= Row.ROUNDS; k++) {
        rounds[k] = r.round(k);
        means[k] = r.meanCommitMs(k);
      }
      return new Bar(FigureReport.x(r), r.mode(), rounds, r.readOnly(), means, r.maxRound());
    }
  }

  /**
   * The bars of a points CSV written by {@link #writePointsCsv} (a file this class wrote: no
   * quoting, so a split on commas reads it), as the charts show them.
   */
  static List<Bar> readBars(Path csv, Figure figure) throws IOException {
    List<String> lines = Files.readAllLines(csv, StandardCharsets.UTF_8);
    if (lines.isEmpty() || !lines.get(0).equals(POINTS_HEADER)) {
      throw new IOException(csv + " is not a points CSV of this version (header differs)");
    }
    List<String> cols = List.of(POINTS_HEADER.split(","));
    List<Bar> bars = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      String[] v = line.split(",", -1);
      if (v.length != cols.size()) {
        throw new IOException(csv + ": a line has " + v.length + " columns, not " + cols.size());
      }
      String home = v[cols.indexOf("home_dc")];
      if (figure.perDc() == home.equals("all")) {
        continue;
      }
      String[] roundCols = {"r0", "r1", "r2", "r3_or_more"};
      int[] rounds = new int[Row.ROUNDS + 1];
      double[] means = new double[Row.ROUNDS + 1];
      for (int k = 0; k <= Row.ROUNDS; k++) {
        rounds[k] = Integer.parseInt(v[cols.indexOf(roundCols[k])]);
        String m = v[cols.indexOf(k == Row.ROUNDS ? "mean_commit_ms_r3_or_more"
            : "mean_commit_ms_r" + k)];
        means[k] = m.isEmpty() ? Double.NaN : Double.parseDouble(m);
      }
      bars.add(new Bar(figure.perDc() ? home : v[cols.indexOf("point")],
          v[cols.indexOf("mode")], rounds, Integer.parseInt(v[cols.indexOf("read_only")]),
          means, Integer.parseInt(v[cols.indexOf("max_round")])));
    }
    return bars;
  }

  /** Stacked bars: per point and mode, commits by promotion round (the paper's (a) panels). */
  public static void writeCommitsChart(List<Row> rows, Path file, String title)
      throws IOException {
    writeCommitsChart(shown(rows).stream().map(Bar::of).toList(), xAxis(rows), file, title);
  }

  static void writeCommitsChart(List<Bar> shown, String xAxis, Path file, String title)
      throws IOException {
    System.setProperty("java.awt.headless", "true");
    CategoryChart chart = new CategoryChartBuilder().width(1000).height(560).title(title)
        .xAxisTitle(xAxis + " / mode").yAxisTitle("committed transactions").build();
    chart.getStyler().setStacked(true);
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    // One bar per point and mode: slanted labels stay readable with 15 bars.
    chart.getStyler().setXAxisLabelRotation(45);
    chart.getStyler().setSeriesColors(new Color[] {new Color(0x1f4e99), new Color(0x3f7fd6),
        new Color(0x7fb2ee), new Color(0x2e9e6a), new Color(0x9e9e9e)});
    List<String> labels = shown.stream().map(b -> b.x() + " " + b.mode()).toList();
    for (int k = 0; k <= Row.ROUNDS; k++) {
      final int col = k;
      String name = k == 0 ? "first try" : k + (k < Row.ROUNDS ? "" : "+") + " promotion"
          + (k == 1 ? "" : "s");
      chart.addSeries(name, labels, shown.stream().map(b -> b.rounds()[col]).toList());
    }
    chart.addSeries("read-only", labels, shown.stream().map(Bar::readOnly).toList());
    save(chart, file);
  }

  /**
   * Grouped bars: per point, the mean commit latency of each mode's commits by promotion round
   * (the paper's (b) panels); 0 where a round had no commits.
   */
  public static void writeLatencyChart(List<Row> rows, Path file, String title)
      throws IOException {
    writeLatencyChart(shown(rows).stream().map(Bar::of).toList(), xAxis(rows), file, title);
  }

  static void writeLatencyChart(List<Bar> shown, String xAxis, Path file, String title)
      throws IOException {
    System.setProperty("java.awt.headless", "true");
    CategoryChart chart = new CategoryChartBuilder().width(1000).height(560).title(title)
        .xAxisTitle(xAxis).yAxisTitle("mean commit latency (ms)").build();
    chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);
    Set<String> xs = new LinkedHashSet<>();
    Set<String> modes = new LinkedHashSet<>();
    for (Bar b : shown) {
      xs.add(b.x());
      modes.add(b.mode());
    }
    List<String> labels = List.copyOf(xs);
    for (String mode : modes) {
      List<Bar> of = shown.stream().filter(b -> b.mode().equals(mode)).toList();
      int maxCol = Math.min(Row.ROUNDS, of.stream().mapToInt(Bar::maxRound).max().orElse(0));
      for (int k = 0; k <= maxCol; k++) {
        final int col = k;
        List<Double> ys = new ArrayList<>();
        for (String xl : labels) {
          double v = of.stream().filter(b -> b.x().equals(xl)).findFirst()
              .map(b -> b.meanMs()[col]).orElse(Double.NaN);
          ys.add(Double.isNaN(v) ? 0.0 : v);
        }
        chart.addSeries(mode + " r" + k + (k == Row.ROUNDS ? "+" : ""), labels, ys);
      }
    }
    save(chart, file);
  }

  private static String xAxis(List<Row> rows) {
    return rows.isEmpty() ? "" : rows.get(0).figure().xAxis();
  }

  private static void save(CategoryChart chart, Path file) throws IOException {
    String name = file.getFileName().toString();
    Path base = file.resolveSibling(name.endsWith(".png") ? name.substring(0, name.length() - 4)
        : name);
    BitmapEncoder.saveBitmap(chart, base.toString(), BitmapEncoder.BitmapFormat.PNG);
  }
}
