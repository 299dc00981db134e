package org.paxoscp.bench;

import java.awt.Color;
import java.awt.Graphics2D;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import javax.imageio.ImageIO;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * {@code groups.png} of {@code paxoscp bench-groups}: two panels against the number of groups
 * (log x when more than one number was run), one line per distribution: the largest service heap
 * after a full GC (and, dashed, before the load), and commits per second. Drawn with XChart, as
 * the project's other charts.
 */
public final class GroupsChart {
  private static final int WIDTH = 900;
  private static final int HEIGHT = 420;

  private GroupsChart() {}

  /** Draws {@code rows} into {@code file} (a PNG). */
  public static void write(List<GroupsRow> rows, String subtitle, Path file) throws IOException {
    boolean log = rows.stream().mapToLong(GroupsRow::groups).distinct().count() > 1;
    XYChart heap = chart("Service heap after full GC (max over DCs) - " + subtitle,
        "heap used (MB)", log);
    XYChart tput = chart("Throughput - " + subtitle, "commits/s", log);
    for (var e : byDist(rows).entrySet()) {
      String d = e.getKey();
      addSeries(heap, d + " after load", e.getValue(), GroupsRow::heapMaxMb, false);
      addSeries(heap, d + " idle", e.getValue(), GroupsRow::heapIdleMaxMb, true);
      addSeries(tput, d, e.getValue(), GroupsRow::commitsPerSecond, false);
    }
    BufferedImage top = BitmapEncoder.getBufferedImage(heap);
    BufferedImage bottom = BitmapEncoder.getBufferedImage(tput);
    BufferedImage all = new BufferedImage(Math.max(top.getWidth(), bottom.getWidth()),
        top.getHeight() + bottom.getHeight(), BufferedImage.TYPE_INT_RGB);
    Graphics2D g = all.createGraphics();
    try {
      g.setColor(Color.WHITE);
      g.fillRect(0, 0, all.getWidth(), all.getHeight());
      g.drawImage(top, 0, 0, null);
      g.drawImage(bottom, 0, top.getHeight(), null);
    } finally {
      g.dispose();
    }
    if (!ImageIO.write(all, "png", file.toFile())) {
      throw new IOException("no PNG writer for " + file);
    }
  }

  private static XYChart chart(String title, String yTitle, boolean log) {
    XYChart c = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title)
        .xAxisTitle("entity groups" + (log ? " (log scale)" : "")).yAxisTitle(yTitle).build();
    c.getStyler().setXAxisLogarithmic(log);
    c.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
    c.getStyler().setYAxisMin(0.0);
    c.getStyler().setXAxisDecimalPattern("#,###");
    return c;
  }

  private static void addSeries(XYChart c, String name, List<GroupsRow> rows,
      ToDoubleFunction<GroupsRow> y, boolean dashed) {
    List<Double> xs = new ArrayList<>();
    List<Double> ys = new ArrayList<>();
    for (GroupsRow r : rows) {
      double v = y.applyAsDouble(r);
      if (v >= 0) {
        xs.add((double) r.groups());
        ys.add(v);
      }
    }
    if (xs.isEmpty()) {
      return;
    }
    XYSeries s = c.addSeries(name, xs, ys);
    s.setMarker(SeriesMarkers.CIRCLE);
    if (dashed) {
      s.setLineStyle(new java.awt.BasicStroke(1.5f, java.awt.BasicStroke.CAP_BUTT,
          java.awt.BasicStroke.JOIN_MITER, 10f, new float[] {6f, 4f}, 0f));
    }
  }

  private static Map<String, List<GroupsRow>> byDist(List<GroupsRow> rows) {
    Map<String, List<GroupsRow>> m = new LinkedHashMap<>();
    for (GroupsRow r : rows) {
      String key = r.dist().label() + (r.store().contains("/") ? " " + r.store() : "");
      m.computeIfAbsent(key, k -> new ArrayList<>()).add(r);
    }
    m.values().forEach(l -> l.sort(java.util.Comparator.comparingLong(GroupsRow::groups)));
    return m;
  }
}
