package org.paxoscp.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.paxoscp.local.UdpCluster.progress;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.local.UdpCluster.Writer;
import org.paxoscp.service.ClusterVersionFinalizer;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Role;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.VersionProbe;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.version.UnsupportedClusterVersionException;
import org.paxoscp.version.VersionNotActiveException;

/**
 * A rolling upgrade of a running three-DC cluster, one process at a time, with commits going on
 * throughout (docs/upgrading.md). The earlier build is this build held to cluster version 1
 * ({@code paxoscp.cluster.version.max=1}: it sends and opens wire version 3 only, what builds
 * before wire version 4 did). Services are replaced one by one, a client of the new build joins
 * before any service is replaced, finalization is refused while a service of the earlier build
 * runs and again while the earlier build's client still sends wire version 3, and then raises the
 * cluster to the newest version; no commit fails and the counters add up to the commits. Then
 * a process that does not speak the newest version can no longer join.
 */
@Timeout(240)
class RollingUpgradeIT {
  private static final Map<String, String> EARLIER = Map.of("paxoscp.cluster.version.max", "1");
  private static final Map<String, String> THIS_BUILD = Map.of();
  private static final Duration DRAIN = Duration.ofSeconds(2);

  private UdpCluster cluster;
  private final List<AutoCloseable> opened = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : opened) {
      c.close();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  /** An operator's finalizer, as {@code paxoscp cluster-version finalize} makes it. */
  private ClusterVersionFinalizer operator(StringWriter log) {
    ClusterConfig config = ClusterConfig.fromProperties(cluster.settings(THIS_BUILD));
    Endpoints endpoints = Endpoints.fromConfig(config);
    UdpTransport t = UdpTransport.builder(config, "C").endpoints(endpoints).role(Role.OPERATOR)
        .build();
    opened.add(t);
    VersionProbe.followAsTool(t, config.versionRange(), config.dcNames(), config.requestTimeout());
    return new ClusterVersionFinalizer(t, config.dcNames(), endpoints, config.requestTimeout(),
        DRAIN, Duration.ofSeconds(20), new PrintWriter(log, true));
  }

  private long badVersionDrops() {
    return cluster.transports.values().stream()
        .mapToLong(t -> t.droppedCount(Reason.BAD_VERSION)).sum();
  }

  /** Each service instance's answer to "which version", as {@code cluster-version show}. */
  private Map<ClusterVersionFinalizer.Instance, Message.VersionReply> survey() {
    return operator(new StringWriter()).survey();
  }

  @Test
  void aRollingUpgradeUnderLoadFailsNoCommitAndFinalizes() throws Exception {
    cluster = new UdpCluster(Map.of("paxoscp.cluster.version.poll.ms", "300"));
    for (String dc : UdpCluster.DCS) {
      cluster.startService(dc, EARLIER);
    }
    List<Writer> writers = new ArrayList<>();
    Writer earlierClient = new Writer(cluster.client("V", 1, EARLIER), 1).started();
    writers.add(earlierClient);
    survey().values().forEach(r -> assertEquals(1, r.active(), "a new cluster of the earlier "
        + "build starts at the newest version it speaks"));

    // A client of this build before any service: it learns version 1 and sends wire version 3.
    Writer newClient = new Writer(cluster.client("O", 2, THIS_BUILD), 2).started();
    writers.add(newClient);

    StringWriter log = new StringWriter();
    for (String dc : UdpCluster.DCS) {
      progress(writers, "before " + dc + "'s service is replaced");
      cluster.startService(dc, THIS_BUILD);
      progress(writers, "after " + dc + "'s service was replaced");
      if (dc.equals("O")) {
        // One service of the earlier build still runs: finalization names it, writes nothing.
        ClusterVersionFinalizer.Result r = operator(log).finalizeTo(ClusterVersion.LATEST);
        assertFalse(r.complete());
        assertEquals(1, r.to());
        assertTrue(r.laggards().toString().contains("C ") && r.laggards().toString()
            .contains("speaks cluster versions 1-1"), r.laggards().toString());
        survey().values().forEach(x -> assertEquals(0, x.fence(), "no fence left behind"));
      }
    }
    survey().values().forEach(r -> {
      assertEquals(1, r.active());
      assertEquals(new ClusterVersion.Range(1, ClusterVersion.LATEST),
          new ClusterVersion.Range(r.min(), r.max()));
    });

    // Every service runs this build; the earlier build's client still sends wire version 3:
    // version 2 is reached (it only sends version 4, still opening 3), version 3 is refused.
    ClusterVersionFinalizer.Result partial = operator(log).finalizeTo(ClusterVersion.LATEST);
    assertFalse(partial.complete(), log.toString());
    assertEquals(ClusterVersion.WIRE_4, partial.to());
    // The sender named is the earlier build's client (home V), not the operator's tool (C).
    assertTrue(partial.laggards().stream().allMatch(l -> l.contains("received wire version 3 ")
        && l.contains("from V at")), partial.laggards().toString());
    survey().values().forEach(r -> {
      assertEquals(ClusterVersion.WIRE_4, r.active());
      assertEquals(0, r.fence(), "the refused step's fences are removed");
    });
    progress(writers, "at cluster version 2");
    // Below cluster version 4 no range is read: nothing of log value format 3 is written while
    // a process that cannot read it may still run.
    TxnClient belowRanges = cluster.client("O", 50, THIS_BUILD);
    Transaction notYet = belowRanges.begin("g0");
    VersionNotActiveException gate = assertThrows(VersionNotActiveException.class,
        () -> notYet.scanPrefix("", 10));
    assertEquals(ClusterVersion.RANGE_READS, gate.needed());
    // Nor is a counter added to (log value format 4, cluster version 5).
    VersionNotActiveException addGate = assertThrows(VersionNotActiveException.class,
        () -> notYet.add("counted/adds", 1));
    assertEquals(ClusterVersion.COMMUTATIVE_UPDATES, addGate.needed());
    assertTrue(notYet.isActive(), "the refused scan sent nothing and leaves it usable");
    notYet.abort();

    // The earlier build's client is replaced (as an operator restarts clients with services).
    earlierClient.stop();
    earlierClient.client.close();
    Writer replacement = new Writer(cluster.client("V", 3, THIS_BUILD), 3).started();
    writers.add(replacement);
    ClusterVersionFinalizer.Result done = operator(log).finalizeTo(ClusterVersion.LATEST);
    assertTrue(done.complete(), done.laggards() + "\n" + log);
    assertEquals(ClusterVersion.LATEST, done.to());
    survey().values().forEach(r -> assertEquals(ClusterVersion.LATEST, r.active()));
    progress(writers, "at the newest cluster version");
    // At version 4 a scan lists what the writers wrote, and its entry (format 3) is chosen.
    TxnClient atRanges = cluster.client("O", 51, THIS_BUILD);
    atRanges.runInTransaction("g0", t -> {
      t.put("listed/1", "yes");
      return null;
    });
    Transaction listing = atRanges.begin("g0");
    assertEquals(List.of("listed/1"), listing.scanPrefix("listed/", 10).entries().stream()
        .map(e -> e.key()).toList());
    listing.put("listed/2", "yes");
    assertEquals(CommitResult.Status.COMMITTED, listing.commit().status());
    // At version 5 adds commit (format 4), and every DC's applier folds them.
    for (int i = 0; i < 3; i++) {
      atRanges.runInTransaction("g0", t -> {
        t.add("counted/adds", 2);
        return null;
      });
    }
    assertEquals(6L, (long) atRanges.runInTransaction("g0", t -> t.getCounter("counted/adds")));
    // The clients of this build follow: nothing of wire version 3 reaches a service any more.
    Poll.until("no wire version 3 received for " + DRAIN.toMillis() + " ms", Duration.ofSeconds(20),
        () -> survey().values().stream().allMatch(r -> r.wire3AgoMillis() < 0
            || r.wire3AgoMillis() > DRAIN.toMillis()));
    progress(writers, "with wire version 3 closed");

    newClient.stop();
    replacement.stop();
    long commits = 0;
    for (Writer w : writers) {
      assertEquals(List.of(), List.copyOf(w.failures), "failed commits of " + w.thread.getName());
      assertTrue(w.committed.get() > 0, w.thread.getName() + " committed nothing");
      commits += w.committed.get();
    }
    assertEquals(commits, UdpCluster.counted(cluster.client("C", 99, THIS_BUILD), commits),
        "every increment once");

    // A process that does not speak the cluster's version can no longer join. One that hears
    // the answer (it opens wire version 4) refuses to start, naming both; one held to version 1
    // is not answered at all, as a build before cluster versions, and the services count why.
    UnsupportedClusterVersionException client = assertThrows(
        UnsupportedClusterVersionException.class,
        () -> cluster.client("V", 100, Map.of("paxoscp.cluster.version.max", "2")));
    assertEquals(ClusterVersion.LATEST, client.clusterVersion());
    long dropped = badVersionDrops();
    TxnClient earlier = cluster.client("V", 101, EARLIER);
    assertThrows(UnavailableException.class, () -> earlier.begin("g0"));
    assertTrue(badVersionDrops() > dropped, "no BAD_VERSION drop counted");
    UnsupportedClusterVersionException service = assertThrows(
        UnsupportedClusterVersionException.class, () -> cluster.startService("C", EARLIER));
    assertTrue(service.getMessage().contains("DC C runs at cluster version "
        + ClusterVersion.LATEST), 
        service.getMessage());
    System.out.printf("rolling upgrade under load: commits %s (earlier client %d, new clients "
        + "%d and %d), finalization log:%n%s", commits, earlierClient.committed.get(),
        newClient.committed.get(), replacement.committed.get(), log);
  }

  /**
   * The upgrade from the build before cluster versions, which answers no version request and
   * sends and opens wire version 4 only: the first service of this build reads its peers' wire
   * (cluster version 2: it sends version 4 and opens both), the next take that from it, a client
   * of this build that starts before any of them speaks version 2 too, and finalization raises
   * the cluster to 3 once every service runs this build. No commit fails.
   */
  @Test
  void anUpgradeFromTheBuildBeforeClusterVersionsFailsNoCommit() throws Exception {
    cluster = new UdpCluster(Map.of("paxoscp.cluster.version.poll.ms", "300"));
    for (String dc : UdpCluster.DCS) {
      cluster.startServiceBeforeVersions(dc);
    }
    List<Writer> writers = new ArrayList<>();
    writers.add(new Writer(cluster.client("V", 1, THIS_BUILD), 1).started());
    assertTrue(survey().values().stream().allMatch(r -> r == null),
        "a build before cluster versions answers no version request");
    for (String dc : UdpCluster.DCS) {
      progress(writers, "before " + dc + "'s service is replaced");
      cluster.startService(dc, THIS_BUILD);
      progress(writers, "after " + dc + "'s service was replaced");
    }
    survey().values().forEach(r -> assertEquals(ClusterVersion.WIRE_4, r.active()));
    StringWriter log = new StringWriter();
    ClusterVersionFinalizer.Result done = operator(log).finalizeTo(ClusterVersion.LATEST);
    assertTrue(done.complete(), done.laggards() + "\n" + log);
    assertEquals(ClusterVersion.WIRE_4, done.from());
    assertEquals(ClusterVersion.LATEST, done.to());
    writers.add(new Writer(cluster.client("O", 2, THIS_BUILD), 2).started());
    progress(writers, "at the newest cluster version");
    long commits = 0;
    for (Writer w : writers) {
      w.stop();
      assertEquals(List.of(), List.copyOf(w.failures), "failed commits of " + w.thread.getName());
      commits += w.committed.get();
    }
    assertEquals(commits, UdpCluster.counted(cluster.client("C", 99, THIS_BUILD), commits));
    System.out.printf("upgrade from the build before cluster versions: %d commits; "
        + "finalization log:%n%s", commits, log);
  }
}
