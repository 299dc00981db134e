package org.paxoscp.store.hbase;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.NamespaceDescriptor;
import org.apache.hadoop.hbase.RegionMetrics;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.AsyncAdmin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.CompactionState;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.testing.Poll;

/**
 * Schema management on a real HBase: idempotent creation, the start-up check refusing tables of
 * another version or shape (and changing nothing), and version retention through flushes and
 * major compactions — the data table's versions are the store's data, HBase must not trim them.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HBaseSchemaIT {
  private static final Duration D = Duration.ofSeconds(30);
  private static EmbeddedHBase hbase;
  private static AsyncConnection connection;
  private static AsyncAdmin admin;

  @BeforeAll
  static void connect() {
    hbase = SharedHBase.get();
    connection = HBaseKvStore.connect(hbase.storeConfig("admin").build());
    admin = connection.getAdmin();
  }

  @AfterAll
  static void disconnect() {
    if (connection != null) {
      HBaseKvStore.closeQuietly(connection, "test admin connection");
    }
  }

  private static void createTable(TableDescriptor d) {
    String ns = d.getTableName().getNamespaceAsString();
    Await.get(admin.listNamespaces().thenCompose(names -> names.contains(ns)
        ? java.util.concurrent.CompletableFuture.completedFuture(null)
        : admin.createNamespace(NamespaceDescriptor.create(ns).build())), D, () -> "namespace");
    Await.get(admin.createTable(d), D, () -> "create " + d.getTableName());
  }

  @Test
  void ensureIsIdempotentAndVerifyAccepts() {
    HBaseStoreConfig c = hbase.storeConfig("idem").build();
    HBaseSchema.ensure(c);
    HBaseSchema.ensure(c);
    HBaseSchema.verify(c);
    try (HBaseKvStore a = HBaseKvStore.open(c); HBaseKvStore b = HBaseKvStore.open(c)) {
      a.write(Table.META, "g".getBytes(UTF_8), KvStore.UNVERSIONED, Map.of("a", "1".getBytes(UTF_8)));
      assertTrue(b.read(Table.META, "g".getBytes(UTF_8), "a", KvStore.LATEST).isPresent());
    }
    for (Table t : Table.values()) {
      TableDescriptor d = Await.get(admin.getDescriptor(HBaseSchema.tableName("idem", t)), D,
          () -> "describe");
      assertEquals(Integer.toString(HBaseSchema.SCHEMA_VERSION),
          d.getValue(HBaseSchema.VERSION_ATTRIBUTE));
      assertEquals(HBaseSchema.maxVersions(t), d.getColumnFamily(HBaseSchema.FAMILY).getMaxVersions());
      // Pre-split by the rows' hashed group prefix, so that many groups load many regions.
      assertEquals(c.regions(), Await.get(admin.getRegions(HBaseSchema.tableName("idem", t)), D,
          () -> "regions").size(), "regions of " + t);
    }
  }

  /** docs/architecture.md section 12: a new store is marked, a lost one is not, and stays so. */
  @Test
  void aStoreCreatedNowIsMarkedUnlessItReplacesALostOne() {
    try (HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("marked").build())) {
      assertEquals(StoreMarker.State.SERVING, StoreMarker.read(s).orElseThrow().state());
      s.write(Table.META, org.paxoscp.paxos.WalLayout.metaRow("g"), KvStore.UNVERSIONED,
          Map.of("a", "1".getBytes(UTF_8)));
      HBaseSchema.truncate(s.config());
      assertTrue(StoreMarker.read(s).isEmpty(), "emptied: the marker went with the rows");
    }
    try (HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("marked").build())) {
      assertTrue(StoreMarker.read(s).isEmpty(), "reopened after the loss: still unmarked");
      assertThrows(org.paxoscp.paxos.RebuildingException.class, () -> new Acceptor(s)
          .prepare(new PaxosMessage.Prepare("g", 1, Ballot.of(1, 1))));
    }
    try (HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("replacing").newStore(false)
        .build())) {
      assertTrue(StoreMarker.read(s).isEmpty(), "created to replace a lost store: unmarked");
    }
    try (HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("earlier").newStore(false)
        .build())) {
      s.write(Table.META, org.paxoscp.paxos.WalLayout.metaRow("g"), KvStore.UNVERSIONED,
          Map.of("a", "1".getBytes(UTF_8)));
    }
    try (HBaseKvStore s = HBaseKvStore.open(hbase.storeConfig("earlier").build())) {
      assertEquals(StoreMarker.State.SERVING, StoreMarker.read(s).orElseThrow().state(),
          "meta rows and no marker: written by a version without markers");
    }
  }

  @Test
  void manyGroupsSpreadEvenlyOverThePreSplitRegions() {
    int regions = 8;
    byte[][] splits = org.paxoscp.paxos.WalLayout.splitKeys(regions);
    int[] perRegion = new int[regions];
    int groups = 80_000;
    for (int i = 0; i < groups; i++) {
      byte[] row = org.paxoscp.paxos.WalLayout.metaRow("user-" + i);
      int r = 0;
      while (r < splits.length && java.util.Arrays.compareUnsigned(row, splits[r]) >= 0) {
        r++;
      }
      perRegion[r]++;
    }
    for (int n : perRegion) {
      // Within 5% of an even share (10,000 each).
      assertTrue(Math.abs(n - groups / regions) < groups / regions / 20,
          java.util.Arrays.toString(perRegion));
    }
  }

  @Test
  void verifyOnlyRefusesAMissingSchema() {
    HBaseStoreConfig c = hbase.storeConfig("absent").createSchema(false).build();
    IncompatibleSchemaException e = assertThrows(IncompatibleSchemaException.class,
        () -> HBaseKvStore.open(c));
    assertEquals("absent", e.dc());
    assertTrue(e.getMessage().contains("namespace paxoscp_absent does not exist"), e.getMessage());
  }

  @Test
  void refusesForeignTablesAndCreatesNothing() {
    // A "wal" table someone else made: no version marker, three versions, a TTL.
    createTable(TableDescriptorBuilder.newBuilder(HBaseSchema.tableName("foreign", Table.WAL))
        .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(HBaseSchema.FAMILY)
            .setMaxVersions(3).setTimeToLive(3600).build())
        .build());
    IncompatibleSchemaException e = assertThrows(IncompatibleSchemaException.class,
        () -> HBaseKvStore.open(hbase.storeConfig("foreign").build()));
    String m = e.getMessage();
    assertTrue(m.contains("no paxoscp.schema.version"), m);
    assertTrue(m.contains("keeps 3 versions, expected 1"), m);
    assertTrue(m.contains("TTL of 3600"), m);
    assertFalse(Await.get(admin.tableExists(HBaseSchema.tableName("foreign", Table.DATA)), D,
        () -> "exists"), "nothing may be created next to foreign tables");
  }

  @Test
  void refusesAnotherSchemaVersionAndOtherFamilies() {
    createTable(TableDescriptorBuilder.newBuilder(HBaseSchema.descriptor("future", Table.DATA))
        .setValue(HBaseSchema.VERSION_ATTRIBUTE, Integer.toString(HBaseSchema.SCHEMA_VERSION + 1))
        .build());
    createTable(TableDescriptorBuilder.newBuilder(HBaseSchema.tableName("future", Table.META))
        .setValue(HBaseSchema.VERSION_ATTRIBUTE, Integer.toString(HBaseSchema.SCHEMA_VERSION))
        .setColumnFamily(ColumnFamilyDescriptorBuilder.of("x"))
        .build());
    IncompatibleSchemaException e = assertThrows(IncompatibleSchemaException.class,
        () -> HBaseKvStore.open(hbase.storeConfig("future").build()));
    List<String> problems = e.problems();
    assertEquals(2, problems.size(), problems.toString());
    assertTrue(problems.get(0).contains("schema version " + (HBaseSchema.SCHEMA_VERSION + 1)
        + ", this build expects " + HBaseSchema.SCHEMA_VERSION), problems.get(0));
    assertTrue(problems.get(1).contains("column families [x], expected [f]"), problems.get(1));
  }

  @Test
  void versionsSurviveFlushAndMajorCompaction() {
    try (HBaseKvStore store = hbase.openStore("compact")) {
      byte[] row = "item".getBytes(UTF_8);
      for (long ts = 1; ts <= 20; ts++) {
        store.write(Table.DATA, row, ts, Map.of("d", ("v" + ts).getBytes(UTF_8)));
      }
      store.write(Table.WAL, row, KvStore.UNVERSIONED, Map.of("n", "p1".getBytes(UTF_8)));
      flush("compact");
      store.write(Table.DATA, row, 5, Map.of("d", "v5-rewritten".getBytes(UTF_8)));
      store.write(Table.WAL, row, KvStore.UNVERSIONED, Map.of("n", "p2".getBytes(UTF_8)));
      flush("compact");
      majorCompact("compact");

      for (long ts = 1; ts <= 20; ts++) {
        String expected = ts == 5 ? "v5-rewritten" : "v" + ts;
        assertEquals(Optional.of(expected), store.read(Table.DATA, row, "d", ts)
            .map(c -> new String(c.value(), UTF_8)), "version " + ts);
      }
      assertEquals(Optional.of("p2"), store.read(Table.WAL, row, "n", KvStore.LATEST)
          .map(c -> new String(c.value(), UTF_8)));
    }
  }

  private static void flush(String dc) {
    for (Table t : Table.values()) {
      Await.get(admin.flush(HBaseSchema.tableName(dc, t)), D, () -> "flush");
    }
  }

  /** Compacts the DATA and WAL tables, each flushed twice with data, down to one store file. */
  private static void majorCompact(String dc) {
    for (Table t : List.of(Table.DATA, Table.WAL)) {
      TableName name = HBaseSchema.tableName(dc, t);
      // Region metrics reach the master with the region server's reports: wait until they show
      // both flushes, so that "one file" below can only mean a finished compaction.
      Poll.until("two store files in " + name, D, () -> storeFiles(name) == 2);
      Await.get(admin.majorCompact(name), D, () -> "major compact");
      Poll.until("major compaction of " + name, D, () -> storeFiles(name) == 1
          && Await.get(admin.getCompactionState(name), D, () -> "state") == CompactionState.NONE);
    }
  }

  private static int storeFiles(TableName name) {
    int files = 0;
    for (ServerName server : Await.get(admin.getRegionServers(), D, () -> "servers")) {
      for (RegionMetrics m : Await.get(admin.getRegionMetrics(server, name), D, () -> "metrics")) {
        files += m.getStoreFileCount();
      }
    }
    return files;
  }
}
