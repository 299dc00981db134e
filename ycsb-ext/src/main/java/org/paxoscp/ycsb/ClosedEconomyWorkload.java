package org.paxoscp.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.WorkloadException;
import site.ycsb.measurements.Measurements;

/**
 * The closed-economy workload of YCSB+T (Dey et al., ICDE Workshops 2014): {@value #GROUPS}
 * entity groups of {@value #ACCOUNTS} accounts each, every account loaded with
 * {@value #INITIAL}, so each group's total is known. A transaction reads two accounts of one group
 * and moves an amount (at most {@value #MAX_TRANSFER}, never more than the source holds) from one
 * to the other; with probability {@value #AUDIT_PROPORTION} it is instead a read-only audit that
 * lists the group's accounts with one range read (the binding's {@code scan} from the group's
 * first key: it names no account) and records a list whose length or total differs
 * ({@code [AUDIT-ANOMALY]}): a lost or extra account shows as well as a lost update. Audits need
 * cluster version 4 ({@code range-reads}); below it they are abandoned.
 *
 * <p><b>Credit</b> ({@value #CREDIT}): {@code rmw} (the default) reads both balances and puts
 * both new ones; {@code add} reads only the source's balance (checking that it holds the amount)
 * and credits the destination with a commutative add ({@link PaxosCpDB#add}), which does not read
 * it: two transfers into one account then do not conflict over it, while a debit still conflicts
 * with any transfer that changed its account. Needs cluster version 5
 * ({@code commutative-updates}). In a transfer across groups the add is turned into a read and a
 * put at commit ({@link org.paxoscp.client.MultiTransaction#add}).
 *
 * <p><b>Across groups</b> ({@value #XG_PROPORTION} &gt; 0): that fraction of the transfers moves
 * money between accounts of two different groups, in one transaction across both; each group's
 * total then changes, and only the sum over every group is invariant. Audits then sum every group
 * in one read-only transaction across all of them (so {@value #GROUPS} must not exceed the
 * client's {@code paxoscp.client.xg.max.groups}), each group listed by its own range read, and
 * the validation checks that sum.
 *
 * <p><b>Validation.</b> At the end of a run phase ({@code -t}) every group's total is read from
 * every DC of the cluster and compared with the loaded total; the run reports, in YCSB's output
 * format, each DC's counted total, the anomaly score |initial total − counted total| / operations
 * (the largest over the DCs), and {@code [VALIDATION], Result, OK} or {@code FAILED} with a message
 * naming the group, the DC and the totals; a committed audit that listed a wrong number of
 * accounts or a wrong total (it read one snapshot) fails it too. Across groups, each DC's reads
 * are one transaction over every group (validated, so that a DC behind in one group cannot pair
 * an old total there with a new one elsewhere), retried while it meets a transfer not yet
 * resolved. YCSB's
 * {@code Client} exits 0 whatever a workload finds, so the result is also written to
 * {@value #VALIDATION_FILE} when set;
 * {@code ./paxoscp ycsb run} sets it and exits 1 on a failed validation.
 */
public class ClosedEconomyWorkload extends TxnWorkload {
  public static final String GROUPS = "ce.groups";
  public static final String GROUP_PREFIX = "ce.groupprefix";
  public static final String ACCOUNTS = "ce.accounts";
  public static final String INITIAL = "ce.initial";
  public static final String MAX_TRANSFER = "ce.maxtransfer";
  public static final String AUDIT_PROPORTION = "ce.auditproportion";
  public static final String THINK_MS = "ce.thinktime.ms";
  public static final String VALIDATION_FILE = "ce.validation.file";
  public static final String XG_PROPORTION = "ce.xg.proportion";
  /** How a transfer credits its destination: {@code rmw} (read, then put) or {@code add}. */
  public static final String CREDIT = "ce.credit";

  /** The values of {@value #CREDIT}. */
  enum Credit {
    /** Read the destination's balance and put the new one. */
    RMW,
    /** Add the amount to the destination's balance without reading it. */
    ADD
  }

  private Properties props;
  private int groups;
  private String prefix;
  private int accounts;
  private long initial;
  private long maxTransfer;
  private double auditProportion;
  private long thinkMs;
  private double xgProportion;
  private Credit credit;
  private final AtomicLong operations = new AtomicLong();
  /** Audits that committed and were checked; for tests and the summary. */
  final AtomicLong audits = new AtomicLong();
  /** Committed audits whose list of accounts or total was wrong. */
  final AtomicLong auditAnomalies = new AtomicLong();
  /** The first of them, described. */
  private final java.util.concurrent.atomic.AtomicReference<String> firstAuditAnomaly =
      new java.util.concurrent.atomic.AtomicReference<>();

  @Override
  public void init(Properties p) throws WorkloadException {
    props = p;
    groups = TxnWorkloads.intProp(p, GROUPS, 4, 1);
    prefix = p.getProperty(GROUP_PREFIX, "bank");
    accounts = TxnWorkloads.intProp(p, ACCOUNTS, 10, 2);
    initial = TxnWorkloads.longProp(p, INITIAL, 1000, 0);
    maxTransfer = TxnWorkloads.longProp(p, MAX_TRANSFER, 100, 1);
    auditProportion = TxnWorkloads.fraction(p, AUDIT_PROPORTION, 0.1);
    thinkMs = TxnWorkloads.longProp(p, THINK_MS, 0, 0);
    xgProportion = TxnWorkloads.fraction(p, XG_PROPORTION, 0);
    credit = parseCredit(p.getProperty(CREDIT, "rmw"));
    if (xgProportion > 0) {
      if (groups < 2) {
        throw new WorkloadException(XG_PROPORTION + " > 0 needs " + GROUPS + " >= 2, not "
            + groups);
      }
      int max = clusterConfig(p).crossGroup().maxGroups();
      if (groups > max) {
        throw new WorkloadException(XG_PROPORTION + " > 0: an audit reads all " + groups
            + " groups in one transaction, and the client allows at most " + max
            + " (paxoscp.client.xg.max.groups)");
      }
    }
    initInserts(p);
  }

  static Credit parseCredit(String name) throws WorkloadException {
    for (Credit c : Credit.values()) {
      if (c.name().equalsIgnoreCase(name.trim())) {
        return c;
      }
    }
    throw new WorkloadException(CREDIT + " must be rmw or add, not '" + name + "'");
  }

  /** Whether transfers may cross groups (only the sum over every group is then invariant). */
  boolean acrossGroups() {
    return xgProportion > 0;
  }

  String group(long g) {
    return prefix + "-" + g;
  }

  static String account(int a) {
    return "acct" + a;
  }

  /** The total every group holds. */
  long groupTotal() {
    return initial * accounts;
  }

  @Override
  public boolean doInsert(DB db, Object threadState) {
    State s = (State) threadState;
    String group = group(nextInsert() % groups);
    if (!s.binding().begin(group)) {
      return false;
    }
    for (int a = 0; a < accounts; a++) {
      db.insert(group, account(a), value(initial));
    }
    return s.binding().commit().outcome() == PaxosCpDB.Outcome.COMMITTED;
  }

  @Override
  public boolean doTransaction(DB db, Object threadState) {
    State s = (State) threadState;
    operations.incrementAndGet();
    int g = s.random().nextInt(groups);
    String group = group(g);
    if (s.random().nextDouble() < auditProportion) {
      if (acrossGroups()) {
        auditAll(db, s);
      } else {
        audit(db, s, group);
      }
    } else if (acrossGroups() && s.random().nextDouble() < xgProportion) {
      int other = s.random().nextInt(groups - 1);
      transferAcross(db, s, group, group(other >= g ? other + 1 : other));
    } else {
      transfer(db, s, group);
    }
    return true;
  }

  /** A transfer from an account of {@code fromGroup} to one of {@code toGroup}. */
  private void transferAcross(DB db, State s, String fromGroup, String toGroup) {
    int fromAccount = s.random().nextInt(accounts);
    int toAccount = s.random().nextInt(accounts);
    s.binding().beginMulti();
    move(db, s, fromGroup, fromAccount, toGroup, toAccount);
  }

  /**
   * The body of a transfer in the open transaction: reads the source's balance (and, crediting
   * by read-modify-write, the destination's), moves a random amount and commits, or abandons the
   * transaction when a read failed or there is nothing to move.
   */
  private void move(DB db, State s, String fromGroup, int fromAccount, String toGroup,
      int toAccount) {
    Optional<Long> from = balance(db, fromGroup, fromAccount);
    TxnWorkloads.think(thinkMs);
    Optional<Long> to = Optional.empty();
    if (credit == Credit.RMW && from.isPresent()) {
      to = balance(db, toGroup, toAccount);
      TxnWorkloads.think(thinkMs);
    }
    if (from.isEmpty() || (credit == Credit.RMW && to.isEmpty())) {
      // A failed read (the transaction aborted) or an account that was never loaded.
      s.binding().abort();
      return;
    }
    long amount = Transfer.amount(from.get(), maxTransfer, s.random());
    if (amount == 0) {
      s.binding().abort();
      return;
    }
    if (!db.update(fromGroup, account(fromAccount), value(from.get() - amount)).isOk()
        || !credit(db, s, toGroup, toAccount, to, amount).isOk()) {
      s.binding().abort();
      return;
    }
    s.binding().commit();
  }

  /** Credits {@code amount} to an account: a put of the new balance, or an add. */
  private Status credit(DB db, State s, String group, int account, Optional<Long> balance,
      long amount) {
    if (credit == Credit.ADD) {
      return s.binding().add(group, account(account), PaxosCpDB.VALUE_FIELD, amount);
    }
    return db.update(group, account(account), value(balance.orElseThrow() + amount));
  }

  /** A read-only audit of every group in one transaction across all of them. */
  private void auditAll(DB db, State s) {
    s.binding().beginMulti();
    long sum = 0;
    int listed = 0;
    for (int g = 0; g < groups; g++) {
      Optional<Listing> l = list(db, group(g));
      if (l.isEmpty()) {
        s.binding().abort();
        return;
      }
      sum += l.get().sum();
      listed += l.get().accounts();
    }
    PaxosCpDB.CommitInfo info = s.binding().commit();
    if (info.outcome() == PaxosCpDB.Outcome.COMMITTED) {
      audits.incrementAndGet();
      if (sum != groupTotal() * groups || listed != accounts * groups) {
        anomaly("audit of every group at DC " + s.binding().homeDc() + " listed " + listed
            + " accounts holding " + sum + ", expected " + accounts * groups + " holding "
            + groupTotal() * groups);
      }
    }
  }

  private void transfer(DB db, State s, String group) {
    int[] pair = Transfer.accounts(accounts, s.random());
    if (s.binding().begin(group)) {
      move(db, s, group, pair[0], group, pair[1]);
    }
  }

  private void audit(DB db, State s, String group) {
    if (!s.binding().begin(group)) {
      return;
    }
    Optional<Listing> l = list(db, group);
    if (l.isEmpty()) {
      s.binding().abort();
      return;
    }
    PaxosCpDB.CommitInfo info = s.binding().commit();
    if (info.outcome() == PaxosCpDB.Outcome.COMMITTED) {
      audits.incrementAndGet();
      if (l.get().sum() != groupTotal() || l.get().accounts() != accounts) {
        anomaly("audit of group " + group + " at DC " + s.binding().homeDc() + " listed "
            + l.get().accounts() + " accounts holding " + l.get().sum() + ", expected "
            + accounts + " holding " + groupTotal());
      }
    }
  }

  private void anomaly(String what) {
    auditAnomalies.incrementAndGet();
    firstAuditAnomaly.compareAndSet(null, what);
    Measurements.getMeasurements().measure("AUDIT-ANOMALY", 0);
    System.err.println(what);
  }

  /**
   * What an audit's listing of one group found: the accounts listed and their total; an account
   * without a balance (or an unreadable one) counts as listed and marks the listing malformed,
   * which the caller reports as a wrong number of accounts.
   */
  record Listing(int accounts, long sum) {}

  /**
   * The accounts of {@code group} in the open transaction, listed by one range read from the
   * group's first key, one record past the accounts expected so that an extra one shows; empty
   * when the scan failed (the transaction aborted, no DC answered, the cluster is below version
   * 4).
   */
  private Optional<Listing> list(DB db, String group) {
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    Status st = db.scan(group, "", accounts + 1, Set.of(PaxosCpDB.VALUE_FIELD), rows);
    if (!st.isOk()) {
      return Optional.empty();
    }
    long sum = 0;
    int listed = 0;
    for (HashMap<String, ByteIterator> row : rows) {
      ByteIterator v = row.get(PaxosCpDB.VALUE_FIELD);
      long b;
      try {
        b = v == null ? Long.MIN_VALUE : AttributeWorkload.parse(v);
      } catch (NumberFormatException e) {
        b = Long.MIN_VALUE;
      }
      if (b == Long.MIN_VALUE) {
        // Not an account: counted so that the listing's length is wrong.
        listed += accounts + 1;
        continue;
      }
      listed++;
      sum += b;
    }
    return Optional.of(new Listing(listed, sum));
  }

  private static Optional<Long> balance(DB db, String group, int account) {
    Map<String, ByteIterator> out = new HashMap<>();
    Status st = db.read(group, account(account), Set.of(PaxosCpDB.VALUE_FIELD), out);
    if (!st.isOk() || !out.containsKey(PaxosCpDB.VALUE_FIELD)) {
      return Optional.empty();
    }
    return Optional.of(AttributeWorkload.parse(out.get(PaxosCpDB.VALUE_FIELD)));
  }

  private static Map<String, ByteIterator> value(long v) {
    return value(Long.toString(v));
  }

  // ---- validation ---------------------------------------------------------------------------

  /** One DC's view of the economy. */
  record DcTotals(String dc, long counted, List<String> problems) {}

  @Override
  public void cleanup() throws WorkloadException {
    super.cleanup();
    if (!Boolean.parseBoolean(props.getProperty("dotransactions", "true"))) {
      return;
    }
    ClusterConfig cluster = clusterConfig(props);
    long expected = groupTotal() * groups;
    long ops = Math.max(1, operations.get());
    List<String> problems = new ArrayList<>();
    double worst = 0;
    for (String dc : cluster.dcNames()) {
      DcTotals t = acrossGroups() ? totalAcrossGroupsAt(cluster, dc) : totalsAt(cluster, dc);
      if (acrossGroups() && t.problems().isEmpty() && t.counted() != expected) {
        problems.add("every group at DC " + dc + " totals " + t.counted() + ", expected "
            + expected);
      }
      problems.addAll(t.problems());
      double score = (double) Math.abs(expected - t.counted()) / ops;
      worst = Math.max(worst, score);
      System.out.println("[VALIDATION], DC " + dc + " counted total, " + t.counted());
    }
    if (auditAnomalies.get() > 0) {
      // A committed audit read one snapshot: a wrong list or total there is a violation too.
      problems.add(auditAnomalies.get() + " committed audit(s) listed wrong accounts or totals; "
          + "the first: " + firstAuditAnomaly.get());
    }
    System.out.println("[VALIDATION], Expected total, " + expected);
    System.out.println("[VALIDATION], Operations, " + operations.get());
    System.out.println("[VALIDATION], Audits, " + audits.get());
    System.out.println("[VALIDATION], Audit anomalies, " + auditAnomalies.get());
    System.out.println("[VALIDATION], AnomalyScore, " + worst);
    TxnWorkloads.reportValidation(props, "closed economy", problems, List.of("anomaly_score=" + worst));
  }

  /**
   * The sum over every group, read from DC {@code dc} in one read-only transaction across all of
   * them, re-run while it aborts (a read that meets a transfer not yet resolved helps resolve it
   * and aborts; so does a validation that finds a group moved on).
   */
  DcTotals totalAcrossGroupsAt(ClusterConfig cluster, String dc) {
    // A client that aborted at the end of the run may leave a PREPARE undecided until its
    // deadline (the lock timeout), after which the audit's reads abort it: retry past that.
    long deadline = System.nanoTime() + cluster.crossGroup().lockTimeout().multipliedBy(2)
        .plusSeconds(10).toNanos();
    try (TxnClient c = validationClient(cluster, dc)) {
      while (true) {
        try {
          return auditAcrossGroups(c, dc);
        } catch (TransactionAbortedException e) {
          if (System.nanoTime() > deadline) {
            throw e;
          }
          TxnWorkloads.think(200);
        }
      }
    } catch (TransactionException e) {
      return new DcTotals(dc, 0, List.of("the groups could not be read together at DC " + dc
          + ": " + e.getMessage()));
    }
  }

  /** One read-only transaction across every group at {@code c}'s DC: their sum. */
  private DcTotals auditAcrossGroups(TxnClient c, String dc) {
    return c.runInMultiTransaction(t -> {
      List<String> problems = new ArrayList<>();
      long sum = 0;
      for (int g = 0; g < groups; g++) {
        for (int a = 0; a < accounts; a++) {
          long b = t.getString(group(g), PaxosCpDB.item(account(a), PaxosCpDB.VALUE_FIELD))
              .map(Long::parseLong).orElse(0L);
          if (b < 0) {
            problems.add("group " + group(g) + " at DC " + dc + ": account " + account(a)
                + " holds " + b + ", below zero");
          }
          sum += b;
        }
      }
      return new DcTotals(dc, sum, problems);
    });
  }

  /** Every group's total, read in one read-only transaction per group from DC {@code dc}. */
  DcTotals totalsAt(ClusterConfig cluster, String dc) {
    List<String> problems = new ArrayList<>();
    long counted = 0;
    try (TxnClient c = validationClient(cluster, dc)) {
      for (int g = 0; g < groups; g++) {
        String group = group(g);
        long sum = 0;
        try {
          Transaction t = c.begin(group);
          for (int a = 0; a < accounts; a++) {
            long b = t.getString(PaxosCpDB.item(account(a), PaxosCpDB.VALUE_FIELD))
                .map(Long::parseLong).orElse(0L);
            if (b < 0) {
              problems.add("group " + group + " at DC " + dc + ": account " + account(a)
                  + " holds " + b + ", below zero");
            }
            sum += b;
          }
          t.commit();
        } catch (TransactionException e) {
          problems.add("group " + group + " could not be read at DC " + dc + ": "
              + e.getMessage());
          continue;
        }
        if (sum != groupTotal()) {
          problems.add("group " + group + " at DC " + dc + " totals " + sum + ", expected "
              + groupTotal());
        }
        counted += sum;
      }
    }
    return new DcTotals(dc, counted, problems);
  }
}
