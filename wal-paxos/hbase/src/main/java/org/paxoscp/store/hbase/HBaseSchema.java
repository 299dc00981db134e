package org.paxoscp.store.hbase;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.NamespaceExistException;
import org.apache.hadoop.hbase.NamespaceNotFoundException;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.AsyncAdmin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreUnavailableException;

/**
 * The HBase schema of one DC (docs/architecture.md section 3): namespace {@code paxoscp_<dc>} with
 * tables {@code wal}, {@code data} and {@code meta}, one column family {@code f} each. The data
 * family keeps every version (one per log position that wrote the item; our own GC trims them), the
 * WAL and meta families keep one. No family has a TTL: HBase must never drop an acceptor's promise
 * or vote on its own, or Paxos loses safety.
 *
 * <p>Every table carries the attribute {@value #VERSION_ATTRIBUTE} = {@link #SCHEMA_VERSION}, so a
 * later version can tell its tables from older ones and refuse to run on what it does not know.
 *
 * <p>{@link #ensure} is idempotent and safe to run concurrently from several processes (a lost
 * creation race is not an error); {@link #verify} changes nothing. Both block for at most the
 * configured admin deadline per HBase call.
 */
public final class HBaseSchema {

  /**
   * Bumped whenever the layout of the tables changes incompatibly. Version 2: ballots in the
   * acceptor cells carry 128-bit proposer ids. Version 3: row keys start with the group's
   * 2-byte hash bucket ({@code WalLayout.bucket}), and new tables are pre-split by it.
   */
  public static final int SCHEMA_VERSION = 3;

  /** Table attribute holding the schema version. */
  public static final String VERSION_ATTRIBUTE = "paxoscp.schema.version";

  static final byte[] FAMILY = "f".getBytes(StandardCharsets.UTF_8);

  private static final Duration POLL_INTERVAL = Duration.ofMillis(50);

  private HBaseSchema() {}

  /** The namespace holding DC {@code dc}'s tables. */
  public static String namespace(String dc) {
    return "paxoscp_" + HBaseStoreConfig.validateDc(dc);
  }

  static TableName tableName(String dc, Table table) {
    return TableName.valueOf(namespace(dc), table.name().toLowerCase(Locale.ROOT));
  }

  /** Versions each table's family keeps. */
  static int maxVersions(Table table) {
    return table == Table.DATA ? Integer.MAX_VALUE : 1;
  }

  static TableDescriptor descriptor(String dc, Table table) {
    ColumnFamilyDescriptor family = ColumnFamilyDescriptorBuilder.newBuilder(FAMILY)
        .setMaxVersions(maxVersions(table))
        .setMinVersions(0)
        .setTimeToLive(HConstants.FOREVER)
        .build();
    return TableDescriptorBuilder.newBuilder(tableName(dc, table))
        .setValue(VERSION_ATTRIBUTE, Integer.toString(SCHEMA_VERSION))
        .setColumnFamily(family)
        .build();
  }

  /**
   * Creates DC {@code config.dc()}'s namespace and tables where missing, then verifies them;
   * a store created now gets its marker as {@link HBaseKvStore#open} gives it.
   *
   * @throws IncompatibleSchemaException if existing tables do not match this version
   * @throws StoreUnavailableException if HBase cannot be reached within the deadlines
   */
  public static void ensure(HBaseStoreConfig config) {
    HBaseKvStore.open(config.toBuilder().createSchema(true).build()).close();
  }

  /**
   * Checks that DC {@code config.dc()}'s namespace and tables exist and match this version.
   *
   * @throws IncompatibleSchemaException listing every mismatch found
   * @throws StoreUnavailableException if HBase cannot be reached within the deadlines
   */
  public static void verify(HBaseStoreConfig config) {
    try (AdminSession s = AdminSession.open(config)) {
      verify(s.admin(), config.dc(), config.adminDeadline());
    }
  }

  /**
   * Creates what is missing of the DC's namespace and tables, then verifies them.
   *
   * @return whether the meta table was created now (the store is new: its marker is written then,
   *     see {@link org.paxoscp.store.StoreMarker})
   */
  static boolean ensure(AsyncAdmin admin, String dc, Duration deadline, int regions) {
    String ns = namespace(dc);
    TableName meta = tableName(dc, Table.META);
    boolean metaExisted = Await.get(admin.tableExists(meta), deadline,
        () -> "look up table " + meta);
    // Refuse before creating anything if what already exists is not ours.
    List<String> problems = new ArrayList<>();
    for (Table t : Table.values()) {
      TableName name = tableName(dc, t);
      if (Await.get(admin.tableExists(name), deadline, () -> "look up table " + name)) {
        problems.addAll(problems(Await.get(admin.getDescriptor(name), deadline,
            () -> "describe table " + name), t));
      }
    }
    if (!problems.isEmpty()) {
      throw new IncompatibleSchemaException(dc, problems);
    }
    Await.get(ignoring(admin.createNamespace(NamespaceDescriptor.create(ns).build()),
        NamespaceExistException.class), deadline, () -> "create namespace " + ns);
    // The three tables are created concurrently (table creation is ~0.7 s each on one machine).
    List<CompletableFuture<Void>> creations = new ArrayList<>();
    for (Table t : Table.values()) {
      TableName name = tableName(dc, t);
      creations.add(admin.tableExists(name).thenCompose(exists -> exists
          ? CompletableFuture.completedFuture(null)
          : ignoring(regions == 1 ? admin.createTable(descriptor(dc, t))
              : admin.createTable(descriptor(dc, t), WalLayout.splitKeys(regions)),
              TableExistsException.class)));
    }
    Await.get(CompletableFuture.allOf(creations.toArray(CompletableFuture[]::new)), deadline,
        () -> "create tables of DC " + dc);
    // A concurrent creator may still be assigning its table's region: wait for it.
    for (Table t : Table.values()) {
      TableName name = tableName(dc, t);
      long end = System.nanoTime() + deadline.toNanos();
      while (!Await.get(admin.isTableAvailable(name), deadline, () -> "check table " + name)) {
        if (System.nanoTime() > end) {
          throw new StoreUnavailableException("table " + name + " not available within "
              + deadline.toMillis() + " ms");
        }
        LockSupport.parkNanos(POLL_INTERVAL.toNanos());
      }
    }
    verify(admin, dc, deadline);
    return !metaExisted;
  }

  static void verify(AsyncAdmin admin, String dc, Duration deadline) {
    String ns = namespace(dc);
    List<String> problems = new ArrayList<>();
    NamespaceDescriptor found = Await.get(
        ignoring(admin.getNamespaceDescriptor(ns), NamespaceNotFoundException.class), deadline,
        () -> "look up namespace " + ns);
    if (found == null) {
      throw new IncompatibleSchemaException(dc, List.of("namespace " + ns + " does not exist"));
    }
    for (Table t : Table.values()) {
      TableName name = tableName(dc, t);
      if (!Await.get(admin.tableExists(name), deadline, () -> "look up table " + name)) {
        problems.add("table " + name + " does not exist");
        continue;
      }
      TableDescriptor d = Await.get(admin.getDescriptor(name), deadline,
          () -> "describe table " + name);
      problems.addAll(problems(d, t));
      if (!Await.get(admin.isTableEnabled(name), deadline, () -> "check table " + name)) {
        problems.add("table " + name + " is disabled");
      }
    }
    if (!problems.isEmpty()) {
      throw new IncompatibleSchemaException(dc, problems);
    }
  }

  /** What is wrong with an existing table's descriptor, if anything. */
  static List<String> problems(TableDescriptor d, Table t) {
    List<String> out = new ArrayList<>();
    String name = d.getTableName().getNameAsString();
    String version = d.getValue(VERSION_ATTRIBUTE);
    if (version == null) {
      out.add("table " + name + " has no " + VERSION_ATTRIBUTE + " (not created by paxoscp)");
    } else if (!version.equals(Integer.toString(SCHEMA_VERSION))) {
      out.add("table " + name + " has schema version " + version + ", this build expects "
          + SCHEMA_VERSION);
    }
    ColumnFamilyDescriptor[] families = d.getColumnFamilies();
    if (families.length != 1 || !Arrays.equals(families[0].getName(), FAMILY)) {
      List<String> names = new ArrayList<>();
      for (ColumnFamilyDescriptor f : families) {
        names.add(f.getNameAsString());
      }
      out.add("table " + name + " has column families " + names + ", expected [f]");
      return out;
    }
    ColumnFamilyDescriptor f = families[0];
    if (f.getMaxVersions() != maxVersions(t)) {
      out.add("table " + name + " keeps " + f.getMaxVersions() + " versions, expected "
          + maxVersions(t));
    }
    if (f.getTimeToLive() != HConstants.FOREVER) {
      out.add("table " + name + " has a TTL of " + f.getTimeToLive() + " s, expected none");
    }
    if (f.getMinVersions() != 0) {
      out.add("table " + name + " has MIN_VERSIONS " + f.getMinVersions() + ", expected 0");
    }
    return out;
  }

  /**
   * Empties every table of the DC, keeping the tables and their splits: what a DC that lost its
   * store comes back to (for the nemesis' {@code store_loss} and tests; docs/architecture.md
   * section 12). The meta table goes first, with the store marker, so that a service still running
   * finds no meta row and no marker before it finds an empty WAL row. Stop the DC's services first
   * anyway: what they cached describes the store that was lost.
   */
  public static void truncate(HBaseStoreConfig config) {
    try (AdminSession s = AdminSession.open(config)) {
      for (Table t : List.of(Table.META, Table.WAL, Table.DATA)) {
        TableName name = tableName(config.dc(), t);
        Await.get(s.admin().disableTable(name), config.adminDeadline(),
            () -> "disable table " + name);
        Await.get(s.admin().truncateTable(name, true), config.adminDeadline(),
            () -> "truncate table " + name);
      }
    }
  }

  /** {@code f}, with failures of type {@code ignored} turned into a null result. */
  private static <T> CompletableFuture<T> ignoring(CompletableFuture<T> f,
      Class<? extends Throwable> ignored) {
    return f.handle((v, e) -> {
      if (e == null) {
        return v;
      }
      Throwable c = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
      if (ignored.isInstance(c)) {
        return null;
      }
      throw e instanceof CompletionException ce ? ce : new CompletionException(e);
    });
  }

  /** A short-lived connection for schema work. */
  private record AdminSession(AsyncConnection connection, AsyncAdmin admin)
      implements AutoCloseable {

    static AdminSession open(HBaseStoreConfig config) {
      AsyncConnection c = HBaseKvStore.connect(config);
      AsyncAdmin admin = c.getAdminBuilder()
          .setOperationTimeout(config.adminDeadline().toMillis(), TimeUnit.MILLISECONDS)
          .build();
      return new AdminSession(c, admin);
    }

    @Override
    public void close() {
      HBaseKvStore.closeQuietly(connection, "schema connection");
    }
  }
}
