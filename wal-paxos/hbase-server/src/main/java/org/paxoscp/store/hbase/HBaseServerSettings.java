package org.paxoscp.store.hbase;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Settings of a one-machine HBase (master, region server and ZooKeeper in one JVM) on the local
 * filesystem, shared by {@link EmbeddedHBase} and {@link StandaloneHBase}. Everything listens on
 * loopback only, the web UIs are off, and the master starts as soon as its one region server
 * reports (about 5 s instead of 12 s; see HBASE-NOTES).
 */
final class HBaseServerSettings {

  static final String LOOPBACK = "127.0.0.1";

  /**
   * JVM flags for a process that runs HBase on JDK 17: they let HBase's relocated Netty use its
   * fast paths and silence illegal-access warnings. Kept equal to {@code hbase.jvm.flags} in the
   * root pom.
   */
  static final List<String> JVM_FLAGS = List.of(
      "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
      "--add-opens", "java.base/java.nio=ALL-UNNAMED",
      "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
      "--add-opens", "java.base/java.lang=ALL-UNNAMED",
      "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
      "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
      "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
      "--add-exports", "java.base/sun.net.dns=ALL-UNNAMED",
      "--add-exports", "java.base/sun.net.util=ALL-UNNAMED");

  private HBaseServerSettings() {}

  /**
   * @param dir          data directory (HBase root, ZooKeeper data, temp files live below it)
   * @param zkPort       ZooKeeper client port
   * @param masterPort   master RPC port, 0 for a random one
   * @param regionServerPort region server RPC port, 0 for a random one
   */
  static Map<String, String> settings(Path dir, int zkPort, int masterPort, int regionServerPort) {
    Path abs = dir.toAbsolutePath().normalize();
    Map<String, String> s = new LinkedHashMap<>();
    s.put("hbase.cluster.distributed", "false");
    s.put("hbase.rootdir", abs.resolve("hbase").toUri().toString());
    s.put("hbase.tmp.dir", abs.resolve("tmp").toString());
    s.put("hbase.zookeeper.property.dataDir", abs.resolve("zookeeper").toString());
    // The local filesystem has no hflush/hsync capability; HBase refuses to start without this.
    s.put("hbase.unsafe.stream.capability.enforce", "false");
    // Loopback only: ZooKeeper, master and region server bind and advertise 127.0.0.1.
    s.put("hbase.zookeeper.quorum", LOOPBACK);
    s.put("hbase.zookeeper.property.clientPort", Integer.toString(zkPort));
    s.put("hbase.zookeeper.property.clientPortAddress", LOOPBACK);
    s.put("hbase.master.hostname", LOOPBACK);
    s.put("hbase.unsafe.regionserver.hostname", LOOPBACK);
    s.put("hbase.master.ipc.address", LOOPBACK);
    s.put("hbase.regionserver.ipc.address", LOOPBACK);
    s.put("hbase.master.port", Integer.toString(masterPort));
    s.put("hbase.regionserver.port", Integer.toString(regionServerPort));
    s.put("hbase.localcluster.assign.random.ports", "false");
    s.put("hbase.master.info.port", "-1");
    s.put("hbase.regionserver.info.port", "-1");
    // Fast start-up: don't wait for more region servers than the one we have.
    s.put("hbase.master.wait.on.regionservers.mintostart", "1");
    s.put("hbase.master.wait.on.regionservers.maxtostart", "1");
    s.put("hbase.regionserver.msginterval", "200");
    s.putAll(manyGroups());
    return s;
  }

  /**
   * The region server's heap as the store of many groups needs it (docs/operating.md, "HBase
   * settings for many groups"). HBase gives 40% of the heap to memstores and 40% to the block
   * cache by default; both fill as groups are written (every group's rows are written at every
   * DC, and every flush adds files whose blocks reads bring into the cache): at 145,000 new
   * groups the heap live after a young collection was 76% of the 768 MB the server had. The
   * region server's heap is now {@link #REGION_SERVER_HEAP} and the block cache a quarter of it:
   * the groups' rows are written far more than read again.
   */
  static Map<String, String> manyGroups() {
    Map<String, String> s = new LinkedHashMap<>();
    s.put("hfile.block.cache.size", "0.25");
    return s;
  }

  /** The heap of a process that runs a region server (alone, or beside the master). */
  static final String REGION_SERVER_HEAP = "2g";

  /** The heap of the master's process when its region servers run in processes of their own. */
  static final String MASTER_HEAP = "512m";

  /**
   * Settings of a region server in its own process, beside a master started with {@link
   * #settings} and no region server of its own: distributed mode (a region server refuses to
   * start otherwise), its own port, and a ZooKeeper session short enough that the master notices
   * a killed region server within seconds.
   */
  static Map<String, String> regionServer(Path dir, int zkPort, int masterPort, int port) {
    Map<String, String> s = settings(dir, zkPort, masterPort, port);
    s.put("hbase.cluster.distributed", "true");
    s.put("hbase.regionserver.port", Integer.toString(port));
    s.put("zookeeper.session.timeout", Integer.toString(REGION_SERVER_SESSION_MS));
    return s;
  }

  /**
   * A region server's ZooKeeper session timeout: how long a killed region server keeps its
   * regions before the master starts recovering them.
   */
  static final int REGION_SERVER_SESSION_MS = 6_000;
}
