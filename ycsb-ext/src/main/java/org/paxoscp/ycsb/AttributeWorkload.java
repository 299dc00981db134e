package org.paxoscp.ycsb;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Properties;
import java.util.Set;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.WorkloadException;

/**
 * The paper's attribute workload (section 6) as a YCSB workload: each entity group holds
 * {@value #ATTRIBUTES} attributes; a transaction picks a group, runs {@value #OPS} operations,
 * each a read (probability {@value #READ_PROPORTION}) or a write of an attribute drawn uniformly
 * or zipfian ({@value #DISTRIBUTION}), waits {@value #THINK_MS} ms of application time after
 * each, and commits. The commit mode and the home DC are the binding's ({@link PaxosCpDB}).
 *
 * <p>The load phase ({@code -load}, one insert per group, {@code recordcount} = groups) sets every
 * attribute to "0"; it is optional, an attribute never written reads as absent.
 *
 * <p>Reads and writes go through YCSB's measuring wrapper ({@code [READ]}, {@code [UPDATE]}
 * lines); commits, aborts, unknown outcomes and commits by promotion round are measured by the
 * binding ({@code [COMMIT]}, {@code [COMMIT-R0]}, {@code [COMMIT-R1]}, {@code [ABORT]}, ...).
 */
public class AttributeWorkload extends TxnWorkload {
  public static final String GROUPS = "attr.groups";
  public static final String GROUP_PREFIX = "attr.groupprefix";
  public static final String ATTRIBUTES = "attr.attributes";
  public static final String OPS = "attr.ops";
  public static final String READ_PROPORTION = "attr.readproportion";
  public static final String DISTRIBUTION = "attr.distribution";
  public static final String THINK_MS = "attr.thinktime.ms";

  private static final Set<String> FIELDS = Set.of(PaxosCpDB.VALUE_FIELD);

  private int groups;
  private String prefix;
  private int attributes;
  private long thinkMs;
  private AttributePlan plan;

  @Override
  public void init(Properties p) throws WorkloadException {
    groups = TxnWorkloads.intProp(p, GROUPS, 1, 1);
    prefix = p.getProperty(GROUP_PREFIX, "attr");
    attributes = TxnWorkloads.intProp(p, ATTRIBUTES, 100, 1);
    int ops = TxnWorkloads.intProp(p, OPS, 10, 1);
    double reads = TxnWorkloads.fraction(p, READ_PROPORTION, 0.5);
    thinkMs = TxnWorkloads.longProp(p, THINK_MS, 0, 0);
    try {
      plan = new AttributePlan(attributes, ops, reads, p.getProperty(DISTRIBUTION, "uniform"));
    } catch (IllegalArgumentException e) {
      throw new WorkloadException(e.getMessage());
    }
    initInserts(p);
  }

  /** The name of group {@code g}. */
  String group(long g) {
    return prefix + "-" + g;
  }

  @Override
  public boolean doInsert(DB db, Object threadState) {
    State s = (State) threadState;
    String group = group(nextInsert() % groups);
    if (!s.binding().begin(group)) {
      return false;
    }
    for (int a = 0; a < attributes; a++) {
      db.insert(group, AttributePlan.key(a), value("0"));
    }
    return s.binding().commit().outcome() == PaxosCpDB.Outcome.COMMITTED;
  }

  @Override
  public boolean doTransaction(DB db, Object threadState) {
    State s = (State) threadState;
    String group = group(s.random().nextInt(groups));
    if (!s.binding().begin(group)) {
      return true;
    }
    for (AttributePlan.Op op : plan.next(s.random())) {
      String key = AttributePlan.key(op.attribute());
      if (op.read()) {
        db.read(group, key, FIELDS, new HashMap<>());
      } else {
        db.update(group, key, value(Long.toString(s.random().nextLong(1_000_000))));
      }
      TxnWorkloads.think(thinkMs);
    }
    s.binding().commit();
    // A failed commit is an outcome to count, not a reason to stop the client thread.
    return true;
  }

  static long parse(ByteIterator it) {
    return Long.parseLong(new String(it.toArray(), StandardCharsets.UTF_8));
  }
}
