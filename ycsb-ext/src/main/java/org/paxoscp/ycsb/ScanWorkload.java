package org.paxoscp.ycsb;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListSet;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.client.ScanResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.KeyRange;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;
import site.ycsb.Utils;
import site.ycsb.WorkloadException;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.measurements.Measurements;

/**
 * YCSB's workload E (short ranges) inside entity groups, with validation: {@value #GROUPS} groups
 * hold the records; record number {@code n} is in group {@code n mod groups}, under the key
 * {@code "user" + hash(n)} (YCSB's hashed insert order; {@code insertorder=ordered} uses the
 * zero-padded number), with {@code fieldcount} fields whose values are a function of the key and
 * the field (so a value names its record). The load phase inserts {@code recordcount} records, one
 * transaction each (re-run until it commits: a record's insert is idempotent). A run-phase
 * transaction is, with YCSB's {@code scanproportion} and {@code insertproportion}, either a
 * read-only scan of a group from the key of a record (uniformly chosen among the loaded and the
 * inserted ones, or with {@code requestdistribution=zipfian} among the loaded ones, scrambled) of
 * {@code minscanlength..maxscanlength} records (uniform), or the insert of a new record.
 *
 * <p><b>Checks.</b> Every committed scan is checked at once: its records come in key order from
 * the start key, at most as many as asked, each whole and with its own values; none is a record
 * that was never inserted or whose insert aborted; no loaded record between the start key and the
 * last record returned is missing (nor past it, when the scan returned fewer than asked, having
 * reached the group's end), nor is a record the scanning client itself inserted before (its
 * session reads its own writes). A failure counts as {@code [SCAN-ANOMALY]}.
 *
 * <p><b>Validation.</b> At the end of the run phase every group is listed by range reads at every
 * DC (at or past the last position an insert committed at; a DC behind is given time to catch
 * up) and must hold exactly the loaded records and the committed inserts, plus perhaps inserts
 * whose outcome stayed unknown, each whole. The run reports {@code [VALIDATION]} lines as the
 * closed economy does, and writes {@code OK} or {@code FAILED} with the violations to the file
 * {@value ClosedEconomyWorkload#VALIDATION_FILE} names (so {@code ./paxoscp ycsb run} exits 1 on a
 * failure). The validation assumes the groups held nothing else: load a fresh cluster, or another
 * {@value #GROUP_PREFIX}, for each run.
 */
public class ScanWorkload extends TxnWorkload {
  public static final String GROUPS = "scan.groups";
  public static final String GROUP_PREFIX = "scan.groupprefix";

  /** Violations listed one by one; the rest are only counted. */
  private static final int MAX_LISTED = 20;
  /** How long the validation waits for a DC to reach the last insert's position. */
  private static final long CATCH_UP_MS = 20_000;

  private Properties props;
  private int groups;
  private String prefix;
  private long recordCount;
  private int fieldCount;
  private int fieldLength;
  private String fieldPrefix;
  private boolean ordered;
  private double scanShare;
  private int minScan;
  private int maxScan;
  private ScrambledZipfianGenerator zipfian;
  /** Each group's loaded records, in key order. */
  private final Map<String, NavigableSet<String>> loaded = new HashMap<>();
  /** The next run-phase insert's record number, past the loaded ones. */
  private final AtomicLong nextRunInsert = new AtomicLong();
  /** Every run-phase insert attempted: record key to group. */
  private final Map<String, String> attempted = new ConcurrentHashMap<>();
  private final Set<String> committedInserts = ConcurrentHashMap.newKeySet();
  private final Set<String> abortedInserts = ConcurrentHashMap.newKeySet();
  private final Set<String> unknownInserts = ConcurrentHashMap.newKeySet();
  /** The highest position an insert committed at, per group. */
  private final Map<String, Long> lastInsertPosition = new ConcurrentHashMap<>();
  private final AtomicLong operations = new AtomicLong();
  final AtomicLong scansChecked = new AtomicLong();
  final AtomicLong scanAnomalies = new AtomicLong();
  private final List<String> anomalies = new ArrayList<>();

  /** One client thread's state: the shared one, and the records its own client inserted. */
  record ScanThread(State base, Map<String, NavigableSet<String>> ownInserts) {}

  @Override
  public void init(Properties p) throws WorkloadException {
    props = p;
    groups = TxnWorkloads.intProp(p, GROUPS, 1, 1);
    prefix = p.getProperty(GROUP_PREFIX, "range");
    recordCount = TxnWorkloads.longProp(p, site.ycsb.Client.RECORD_COUNT_PROPERTY, 100, 1);
    fieldCount = TxnWorkloads.intProp(p, "fieldcount", 10, 1);
    fieldLength = TxnWorkloads.intProp(p, "fieldlength", 100, 1);
    fieldPrefix = p.getProperty("fieldnameprefix", "field");
    String order = p.getProperty("insertorder", "hashed");
    if (!order.equals("hashed") && !order.equals("ordered")) {
      throw new WorkloadException("insertorder must be hashed or ordered, not '" + order + "'");
    }
    ordered = order.equals("ordered");
    double scans = TxnWorkloads.fraction(p, "scanproportion", 0.95);
    double inserts = TxnWorkloads.fraction(p, "insertproportion", 0.05);
    if (scans + inserts <= 0) {
      throw new WorkloadException("scanproportion + insertproportion must be above 0");
    }
    scanShare = scans / (scans + inserts);
    minScan = TxnWorkloads.intProp(p, "minscanlength", 1, 1);
    maxScan = TxnWorkloads.intProp(p, "maxscanlength", 10, minScan);
    String dist = p.getProperty("requestdistribution", "uniform");
    if (dist.equals("zipfian")) {
      zipfian = new ScrambledZipfianGenerator(0, recordCount - 1);
    } else if (!dist.equals("uniform")) {
      throw new WorkloadException("requestdistribution must be uniform or zipfian, not '" + dist
          + "'");
    }
    for (long n = 0; n < recordCount; n++) {
      loaded.computeIfAbsent(groupOf(n), g -> new TreeSet<>(KeyRange.ORDER)).add(key(n));
    }
    nextRunInsert.set(recordCount);
    initInserts(p);
  }

  @Override
  public Object initThread(Properties p, int threadId, int threadCount)
      throws WorkloadException {
    return new ScanThread((State) super.initThread(p, threadId, threadCount),
        new HashMap<>());
  }

  String group(long g) {
    return prefix + "-" + g;
  }

  String groupOf(long record) {
    return group(record % groups);
  }

  /** Record {@code n}'s key. */
  String key(long n) {
    return ordered ? String.format(java.util.Locale.ROOT, "user%019d", n)
        : "user" + Utils.hash(n);
  }

  String field(int f) {
    return fieldPrefix + f;
  }

  /** The value of {@code field} of record {@code key}: the key, the field, then filler. */
  String value(String key, String field) {
    String head = key + "|" + field + "|";
    StringBuilder b = new StringBuilder(head);
    SplittableRandom r = new SplittableRandom(head.hashCode());
    while (b.length() < fieldLength) {
      b.append((char) ('a' + r.nextInt(26)));
    }
    return b.toString();
  }

  private Map<String, ByteIterator> values(String key) {
    Map<String, ByteIterator> m = new HashMap<>();
    for (int f = 0; f < fieldCount; f++) {
      m.put(field(f), new StringByteIterator(value(key, field(f))));
    }
    return m;
  }

  // ---- load ----------------------------------------------------------------------------------

  @Override
  public boolean doInsert(DB db, Object threadState) {
    ScanThread s = (ScanThread) threadState;
    long n = nextInsert();
    String group = groupOf(n);
    String key = key(n);
    // The same record again is the same write: re-run until one attempt commits.
    for (int attempt = 0; attempt < 10; attempt++) {
      if (!s.base().binding().begin(group)) {
        continue;
      }
      if (!db.insert(group, key, values(key)).isOk()) {
        s.base().binding().abort();
        continue;
      }
      if (s.base().binding().commit().outcome() == PaxosCpDB.Outcome.COMMITTED) {
        return true;
      }
    }
    return false;
  }

  // ---- run -----------------------------------------------------------------------------------

  @Override
  public boolean doTransaction(DB db, Object threadState) {
    ScanThread s = (ScanThread) threadState;
    operations.incrementAndGet();
    if (s.base().random().nextDouble() < scanShare) {
      scan(db, s);
    } else {
      insert(db, s);
    }
    return true;
  }

  private void insert(DB db, ScanThread s) {
    long n = nextRunInsert.getAndIncrement();
    String group = groupOf(n);
    String key = key(n);
    attempted.put(key, group);
    if (!s.base().binding().begin(group)) {
      abortedInserts.add(key);
      return;
    }
    if (!db.insert(group, key, values(key)).isOk()) {
      s.base().binding().abort();
      abortedInserts.add(key);
      return;
    }
    PaxosCpDB.CommitInfo info = s.base().binding().commit();
    switch (info.outcome()) {
      case COMMITTED -> {
        committedInserts.add(key);
        s.ownInserts().computeIfAbsent(group, g -> new TreeSet<>(KeyRange.ORDER)).add(key);
        lastInsertPosition.merge(group, info.position(), Math::max);
      }
      case ABORTED, UNAVAILABLE -> abortedInserts.add(key);
      case UNKNOWN -> unknownInserts.add(key);
      default -> throw new AssertionError(info.outcome());
    }
  }

  private long startRecord(ScanThread s) {
    if (zipfian != null) {
      return zipfian.nextValue();
    }
    long known = nextRunInsert.get();
    return (long) (s.base().random().nextDouble() * known);
  }

  private void scan(DB db, ScanThread s) {
    long n = startRecord(s);
    String group = groupOf(n);
    String start = key(n);
    int length = minScan + s.base().random().nextInt(maxScan - minScan + 1);
    if (!s.base().binding().begin(group)) {
      return;
    }
    Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
    Status st = db.scan(group, start, length, null, rows);
    if (!st.isOk()) {
      s.base().binding().abort();
      return;
    }
    PaxosCpDB.CommitInfo info = s.base().binding().commit();
    if (info.outcome() != PaxosCpDB.Outcome.COMMITTED) {
      return;
    }
    scansChecked.incrementAndGet();
    String problem = checkScan(group, start, length, rows,
        s.ownInserts().getOrDefault(group, new TreeSet<>(KeyRange.ORDER)));
    if (problem != null) {
      anomaly("scan of " + group + " from " + start + " for " + length + " records at DC "
          + s.base().binding().homeDc() + ": " + problem);
    }
  }

  private void anomaly(String what) {
    scanAnomalies.incrementAndGet();
    synchronized (anomalies) {
      if (anomalies.size() < MAX_LISTED) {
        anomalies.add(what);
      }
    }
    Measurements.getMeasurements().measure("SCAN-ANOMALY", 0);
    System.err.println(what);
  }

  /**
   * What is wrong with a committed scan's result, or null: see the class comment's checks.
   *
   * @param own the records the scanning client inserted in the group before the scan
   */
  String checkScan(String group, String start, int length, List<HashMap<String, ByteIterator>> rows,
      NavigableSet<String> own) {
    if (rows.size() > length) {
      return rows.size() + " records, more than asked";
    }
    List<String> keys = new ArrayList<>();
    for (HashMap<String, ByteIterator> row : rows) {
      Map<String, String> fields = new TreeMap<>();
      row.forEach((f, v) -> fields.put(f, v.toString()));
      String key = recordOf(fields);
      if (key == null) {
        return "a record that is not whole or not its own: " + fields.keySet();
      }
      if (!keys.isEmpty() && KeyRange.compare(keys.get(keys.size() - 1), key) >= 0) {
        return "record " + key + " after " + keys.get(keys.size() - 1) + ", out of key order";
      }
      if (KeyRange.compare(key, start) < 0) {
        return "record " + key + " below the start key";
      }
      boolean known = loaded.getOrDefault(group, new TreeSet<>()).contains(key)
          || group.equals(attempted.get(key));
      if (!known) {
        return "record " + key + " was never inserted in this group";
      }
      if (abortedInserts.contains(key)) {
        return "record " + key + " is an insert that aborted";
      }
      keys.add(key);
    }
    Set<String> got = new TreeSet<>(keys);
    boolean toEnd = rows.size() < length;
    for (NavigableSet<String> must : List.of(loaded.getOrDefault(group, new TreeSet<>()), own)) {
      NavigableSet<String> window = keys.isEmpty() || toEnd ? must.tailSet(start, true)
          : must.subSet(start, true, keys.get(keys.size() - 1), true);
      for (String k : window) {
        if (!got.contains(k)) {
          return "record " + k + " is missing" + (must == own ? " (this client inserted it)"
              : " (loaded)") + "; got " + keys;
        }
      }
    }
    return null;
  }

  /**
   * The key of the record whose fields these are, when every field is there with its own value;
   * else null.
   */
  private String recordOf(Map<String, String> fields) {
    if (fields.size() != fieldCount) {
      return null;
    }
    String v0 = fields.get(field(0));
    if (v0 == null || v0.indexOf('|') <= 0) {
      return null;
    }
    String key = v0.substring(0, v0.indexOf('|'));
    for (int f = 0; f < fieldCount; f++) {
      if (!value(key, field(f)).equals(fields.get(field(f)))) {
        return null;
      }
    }
    return key;
  }

  // ---- validation ----------------------------------------------------------------------------

  @Override
  public void cleanup() throws WorkloadException {
    super.cleanup();
    if (!Boolean.parseBoolean(props.getProperty("dotransactions", "true"))) {
      return;
    }
    ClusterConfig cluster = clusterConfig(props);
    List<String> problems = new ArrayList<>();
    long expected = recordCount + committedInserts.size();
    for (String dc : cluster.dcNames()) {
      long counted = 0;
      try (TxnClient c = validationClient(cluster, dc)) {
        for (int g = 0; g < groups; g++) {
          counted += validateGroup(c, dc, group(g), problems);
        }
      }
      System.out.println("[VALIDATION], DC " + dc + " records, " + counted);
    }
    if (scanAnomalies.get() > 0) {
      problems.add(scanAnomalies.get() + " committed scan(s) failed their checks; the first: "
          + anomalies.get(0));
    }
    System.out.println("[VALIDATION], Expected records, " + expected
        + (unknownInserts.isEmpty() ? "" : " (+ up to " + unknownInserts.size()
            + " inserts whose outcome is unknown)"));
    System.out.println("[VALIDATION], Operations, " + operations.get());
    System.out.println("[VALIDATION], Scans checked, " + scansChecked.get());
    System.out.println("[VALIDATION], Scan anomalies, " + scanAnomalies.get());
    System.out.println("[VALIDATION], Inserts committed, " + committedInserts.size());
    System.out.println("[VALIDATION], Inserts aborted, " + abortedInserts.size());
    TxnWorkloads.reportValidation(props, "scan workload", problems, List.of());
  }

  /**
   * Lists {@code group} at {@code c}'s DC in one read-only transaction of range reads, at or past
   * the last position an insert committed at there, and adds what is wrong to {@code problems}.
   *
   * @return the records found
   */
  private long validateGroup(TxnClient c, String dc, String group, List<String> problems) {
    long need = lastInsertPosition.getOrDefault(group, 0L);
    long deadline = System.nanoTime() + CATCH_UP_MS * 1_000_000;
    Map<String, Map<String, String>> records = new TreeMap<>(KeyRange.ORDER);
    List<String> strays = new ArrayList<>();
    try {
      while (true) {
        Transaction t = c.begin(group);
        if (t.readPosition() < need) {
          t.abort();
          if (System.nanoTime() > deadline) {
            problems.add("DC " + dc + " stayed behind position " + need + " of " + group
                + " (the last insert committed there)");
            return 0;
          }
          TxnWorkloads.think(50);
          continue;
        }
        KeyRange range = KeyRange.ALL;
        while (true) {
          ScanResult page = t.scan(range, 1000, false);
          for (ScanResult.Entry e : page.entries()) {
            int dot = e.key().lastIndexOf('.');
            if (dot <= 0) {
              strays.add(e.key());
              continue;
            }
            records.computeIfAbsent(e.key().substring(0, dot), k -> new TreeMap<>())
                .put(e.key().substring(dot + 1), e.valueString());
          }
          if (!page.hasMore()) {
            break;
          }
          range = page.rest().orElseThrow();
        }
        t.commit();
        break;
      }
    } catch (TransactionException | IllegalArgumentException | IllegalStateException e) {
      problems.add("group " + group + " could not be listed at DC " + dc + ": " + e.getMessage());
      return 0;
    }
    List<String> wrong = new ArrayList<>();
    if (!strays.isEmpty()) {
      wrong.add("items that are no record's: " + head(strays));
    }
    List<String> missing = new ArrayList<>();
    NavigableSet<String> must = new TreeSet<>(KeyRange.ORDER);
    must.addAll(loaded.getOrDefault(group, new TreeSet<>()));
    attempted.forEach((k, g) -> {
      if (g.equals(group) && committedInserts.contains(k)) {
        must.add(k);
      }
    });
    for (String k : must) {
      if (!records.containsKey(k)) {
        missing.add(k);
      }
    }
    if (!missing.isEmpty()) {
      wrong.add(missing.size() + " record(s) missing: " + head(missing));
    }
    List<String> extra = new ArrayList<>();
    List<String> broken = new ArrayList<>();
    records.forEach((k, fields) -> {
      if (!must.contains(k) && !(group.equals(attempted.get(k)) && unknownInserts.contains(k))) {
        extra.add(k + (abortedInserts.contains(k) ? " (its insert aborted)" : ""));
      }
      if (!k.equals(recordOf(fields))) {
        broken.add(k);
      }
    });
    if (!extra.isEmpty()) {
      wrong.add(extra.size() + " record(s) never committed: " + head(extra));
    }
    if (!broken.isEmpty()) {
      wrong.add(broken.size() + " record(s) not whole or not their own values: " + head(broken));
    }
    if (!wrong.isEmpty()) {
      problems.add("group " + group + " at DC " + dc + ": " + String.join("; ", wrong));
    }
    return records.size();
  }

  private static String head(List<String> keys) {
    return keys.size() <= 5 ? keys.toString()
        : keys.subList(0, 5) + " and " + (keys.size() - 5) + " more";
  }
}
