package org.paxoscp.experiment;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The figures of the paper's section 6 and their data points. Every point runs 10 operations
 * per transaction, 50% reads; the paper runs 500 transactions per experiment (per YCSB instance
 * in Figure 8).
 */
public enum Figure {
  /** Figure 4: 2, 3, 4 and 5 replicas, 100 attributes, one client site, 4 threads at 1/s. */
  REPLICAS("replicas", "Figure 4", "replicas"),
  /** Figure 5: DC combinations, 100 attributes, one client site (V1), 4 threads at 1/s. */
  CLUSTERS("clusters", "Figure 5", "cluster"),
  /** Figure 6: three V DCs, 4 threads at 1/s each, 20 to 500 attributes. */
  CONTENTION("contention", "Figure 6", "attributes"),
  /** Figure 7: VVV, 100 attributes, 4 threads, target throughput 2 to 16 transactions/s. */
  CONCURRENCY("concurrency", "Figure 7", "target txn/s"),
  /** Figure 8: V, O and C each with its own client at 1/s, 100 attributes. */
  PER_DC_CLIENTS("per-dc-clients", "Figure 8", "client DC");

  /** Transactions per mode per point in the paper (per DC client in Figure 8). */
  public static final int PAPER_TXNS = 500;
  /** Transactions per mode per point with {@code --quick} (per DC client in Figure 8). */
  public static final int QUICK_TXNS = 40;
  /** Per DC client with {@code --quick} in Figure 8. */
  public static final int QUICK_TXNS_PER_DC = 15;

  private final String cliName;
  private final String paperName;
  private final String xAxis;

  Figure(String cliName, String paperName, String xAxis) {
    this.cliName = cliName;
    this.paperName = paperName;
    this.xAxis = xAxis;
  }

  public String cliName() {
    return cliName;
  }

  public String paperName() {
    return paperName;
  }

  public String xAxis() {
    return xAxis;
  }

  /** Whether the figure breaks each run down by the clients' home DC (Figure 8). */
  public boolean perDc() {
    return this == PER_DC_CLIENTS;
  }

  /** The figure named {@code name} on the command line. */
  public static Figure parse(String name) {
    for (Figure f : values()) {
      if (f.cliName.equals(name)) {
        return f;
      }
    }
    throw new IllegalArgumentException("unknown experiment " + name);
  }

  /**
   * The points, with {@code txns} transactions per mode per point (Figure 8: per DC client).
   */
  public List<Point> points(int txns) {
    List<String> v3 = List.of("V1", "V2", "V3");
    List<Point> ps = new ArrayList<>();
    int per4 = Math.max(1, txns / 4);
    switch (this) {
      case REPLICAS -> {
        List<String> all = List.of("V1", "V2", "V3", "O", "C");
        for (int n = 2; n <= 5; n++) {
          ps.add(new Point(Integer.toString(n), all.subList(0, n), List.of("V1"), 4, 100, 1.0,
              per4));
        }
      }
      case CLUSTERS -> {
        String[][] sets = {{"V1", "V2"}, {"O", "V1"}, {"V1", "V2", "V3"}, {"O", "C", "V1"},
            {"V1", "V2", "V3", "O", "C"}};
        for (String[] set : sets) {
          StringBuilder label = new StringBuilder();
          for (String dc : set) {
            label.append(dc.charAt(0));
          }
          ps.add(new Point(label.toString(), List.of(set), List.of("V1"), 4, 100, 1.0, per4));
        }
      }
      case CONTENTION -> {
        for (int attrs : new int[] {20, 50, 100, 200, 500}) {
          ps.add(new Point(Integer.toString(attrs), v3, List.of("V1"), 4, attrs, 1.0, per4));
        }
      }
      case CONCURRENCY -> {
        for (double total : new double[] {2, 4, 8, 16}) {
          ps.add(new Point(String.format(Locale.ROOT, "%.0f", total), v3, List.of("V1"), 4, 100,
              total / 4, per4));
        }
      }
      case PER_DC_CLIENTS -> {
        List<String> voc = List.of("V1", "O", "C");
        ps.add(new Point("VOC", voc, voc, 3, 100, 1.0, Math.max(1, txns)));
      }
      default -> throw new IllegalStateException();
    }
    return ps;
  }

  /** Transactions per mode per point by default: the paper's, or the quick ones. */
  public int defaultTxns(boolean quick) {
    if (!quick) {
      return PAPER_TXNS;
    }
    return this == PER_DC_CLIENTS ? QUICK_TXNS_PER_DC : QUICK_TXNS;
  }
}
