package org.paxoscp.store.hbase;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.store.hbase.RegionControl.Region;
import org.paxoscp.testing.Poll;

/**
 * HBase with three region servers, each a process of its own: a region moves and a region splits
 * through the master and both serve writes afterwards; a region server killed with kill -9 right
 * after it acknowledged check-and-writes loses none of them (an acceptor's vote must outlive its
 * region server), its regions come back on the other two, and it rejoins when started again.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class RegionServerCrashIT {
  private static final String DC = "crash";

  @TempDir
  Path dir;

  @AfterEach
  void stopServer() {
    StandaloneHBase.stop(dir);
  }

  private static boolean inside(Region r, byte[] row) {
    return Bytes.compareTo(row, r.startKey()) >= 0
        && (r.endKey().length == 0 || Bytes.compareTo(row, r.endKey()) < 0);
  }

  /** A row key inside {@code r}: its start key (or a low one for the first region) and a tail. */
  private static byte[] rowIn(Region r, SplittableRandom random) {
    byte[] start = r.startKey().length == 0 ? new byte[] {0, 0} : r.startKey();
    byte[] row = Bytes.add(start, Bytes.toBytes(random.nextLong()));
    assertTrue(inside(r, row));
    return row;
  }

  @Test
  void acknowledgedVotesSurviveMovesSplitsAndKillOfTheirRegionServer() throws IOException {
    int zk = StandaloneHBaseIT.freePort();
    StandaloneHBase.Status s = StandaloneHBase.start(dir, zk, Duration.ofSeconds(240), 3);
    System.out.println("start: " + s.detail());
    assertEquals(3, StandaloneHBase.regionServers(dir).size());

    HBaseStoreConfig config = HBaseStoreConfig.builder(DC).zkPort(zk).build();
    SplittableRandom random = new SplittableRandom(46);
    try (HBaseKvStore store = HBaseKvStore.open(config);
        RegionControl control = RegionControl.connect(zk, Duration.ofSeconds(30))) {
      assertEquals(3, control.liveServers().size());
      List<Region> regions = control.regions(DC, Table.WAL);
      assertEquals(8, regions.size());
      long servers = regions.stream().map(Region::server).distinct().count();
      assertTrue(servers >= 2, "new tables' regions are spread: " + regions);

      // A region moved and a region split (the times are printed, not asserted: they depend on
      // the machine), each written to afterwards; those votes must survive the kill too.
      List<byte[]> acked = new ArrayList<>();
      Region moving = regions.get(1);
      String to = control.liveServers().stream().filter(a -> !a.equals(moving.server()))
          .findFirst().orElseThrow();
      long m0 = System.nanoTime();
      control.move(moving, to);
      System.out.printf("region %s moved from %s to %s in %.2f s%n", moving.name(),
          moving.server(), to, (System.nanoTime() - m0) / 1e9);
      Region splitting = regions.get(2);
      int lo = ((splitting.startKey()[0] & 0xff) << 8) | (splitting.startKey()[1] & 0xff);
      int hi = ((splitting.endKey()[0] & 0xff) << 8) | (splitting.endKey()[1] & 0xff);
      byte[] at = {(byte) ((lo + hi) / 2 >>> 8), (byte) ((lo + hi) / 2)};
      long s0 = System.nanoTime();
      control.split(splitting, at);
      System.out.printf("region %s split in %.2f s%n", splitting.name(),
          (System.nanoTime() - s0) / 1e9);
      for (Region r : List.of(moving, splitting)) {
        byte[] row = rowIn(r, random);
        assertTrue(store.checkAndWrite(Table.WAL, row, "n", null, KvStore.UNVERSIONED,
            Map.of("n", ("vote-" + acked.size()).getBytes(UTF_8))));
        acked.add(row);
      }
      regions = control.regions(DC, Table.WAL);
      assertEquals(9, regions.size(), "the split made two regions of one: " + regions);

      String victim = regions.get(0).server();
      List<Region> victimRegions = regions.stream().filter(r -> r.server().equals(victim))
          .toList();
      // Votes in every region, then a run of them in the victim's regions, the last
      // acknowledged just before the kill.
      for (int i = 0; i < 80; i++) {
        Region r = i < 40 ? regions.get(i % regions.size())
            : victimRegions.get(i % victimRegions.size());
        byte[] row = rowIn(r, random);
        assertTrue(store.checkAndWrite(Table.WAL, row, "n", null, KvStore.UNVERSIONED,
            Map.of("n", ("vote-" + acked.size()).getBytes(UTF_8))));
        acked.add(row);
      }
      int index = StandaloneHBase.regionServers(dir).stream()
          .filter(rs -> rs.address().equals(victim)).findFirst().orElseThrow().index();
      long killedAt = System.nanoTime();
      assertTrue(StandaloneHBase.killRegionServer(dir, index));

      // Every acknowledged vote reads back, once every region serves again elsewhere.
      Poll.until("the killed server's regions served elsewhere", Duration.ofSeconds(180), () -> {
        try {
          return control.regions(DC, Table.WAL).stream()
              .noneMatch(r -> r.server().equals(victim) || r.server().isEmpty());
        } catch (StoreUnavailableException e) {
          return false; // hbase:meta may have been on the killed server too
        }
      });
      System.out.printf("regions of the killed region server serve again %.1f s after the "
          + "kill%n", (System.nanoTime() - killedAt) / 1e9);
      for (int i = 0; i < acked.size(); i++) {
        assertEquals(Optional.of("vote-" + i), store.read(Table.WAL, acked.get(i), "n",
            KvStore.LATEST).map(c -> new String(c.value(), UTF_8)), "vote " + i);
        assertFalse(store.checkAndWrite(Table.WAL, acked.get(i), "n", null,
            KvStore.UNVERSIONED, Map.of("n", "other".getBytes(UTF_8))), "vote " + i);
      }

      StandaloneHBase.startRegionServer(dir, index);
      Poll.until("the restarted region server live again", Duration.ofSeconds(120),
          () -> control.liveServers().size() == 3);
    }
  }
}
