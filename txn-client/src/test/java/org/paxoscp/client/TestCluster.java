package org.paxoscp.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import org.paxoscp.service.InProcessCluster;
import org.paxoscp.service.ObservedService;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.wal.LogValue;

/** The test kit's {@link InProcessCluster} of three real services, with clients of it. */
final class TestCluster implements AutoCloseable {
  static final List<String> DCS = InProcessCluster.DCS;

  private final InProcessCluster cluster;
  final ClusterConfig config;
  final InProcessTransport.Network network;
  final Map<String, InMemoryKvStore> stores;
  final Map<String, ObservedService> services;
  private final List<AutoCloseable> closeables = new ArrayList<>();

  TestCluster(Duration requestTimeout) {
    this(requestTimeout, 60_000);
  }

  TestCluster(Duration requestTimeout, int maxDatagramBytes) {
    this.cluster = new InProcessCluster(requestTimeout, maxDatagramBytes);
    this.config = cluster.config;
    this.network = cluster.network;
    this.stores = cluster.stores;
    this.services = cluster.services;
  }

  /** A client builder over the in-process transport of {@code home}. */
  TxnClient.Builder client(String home, CommitProtocol protocol) {
    return TxnClient.builder(config, home, protocol).transport(network.transport(home));
  }

  /** Registers something to close with the cluster (clients first, in reverse order). */
  <T extends AutoCloseable> T closeLater(T c) {
    closeables.add(c);
    return c;
  }

  void setDown(String dc, boolean down) {
    cluster.setDown(dc, down);
  }

  SortedMap<Long, LogValue> log(String dc, String group, long upTo) {
    return cluster.log(dc, group, upTo);
  }

  Map<String, SortedMap<Long, LogValue>> logs(String group, long upTo) {
    return cluster.logs(group, upTo);
  }

  /**
   * Every DC's log of each of {@code groups} once the DCs hold the same positions, without a gap
   * (APPLYs and the clients' background steps have arrived), waiting at most 10 s; then as
   * they are.
   */
  static Map<String, Map<String, SortedMap<Long, LogValue>>> quiescentLogs(TestCluster cluster,
      List<String> groups) {
    return quiescentLogs(cluster, groups, Map.of());
  }

  /**
   * As above, and each group of {@code atLeast} must also reach that position (a value a client
   * was told is chosen may not be recorded at any DC yet; until it is, the DCs agree without it).
   */
  static Map<String, Map<String, SortedMap<Long, LogValue>>> quiescentLogs(TestCluster cluster,
      List<String> groups, Map<String, Long> atLeast) {
    Map<String, Map<String, SortedMap<Long, LogValue>>> out = new java.util.TreeMap<>();
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    while (true) {
      out.clear();
      boolean same = true;
      for (String g : groups) {
        Map<String, SortedMap<Long, LogValue>> byDc = new java.util.LinkedHashMap<>();
        for (String dc : DCS) {
          byDc.put(dc, scan(cluster.stores.get(dc), g));
        }
        long min = atLeast.getOrDefault(g, 0L);
        same &= byDc.values().stream().distinct().count() <= 1
            && byDc.values().stream().allMatch(l -> l.isEmpty() || l.lastKey() == l.size())
            && byDc.values().stream().allMatch(l -> min == 0 || (!l.isEmpty()
                && l.lastKey() >= min));
        out.put(g, byDc);
      }
      if (same || System.nanoTime() > deadline) {
        return out;
      }
      try {
        Thread.sleep(20);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return out;
      }
    }
  }

  /**
   * Reads {@code key} of {@code group} at a read position at least {@code position}, again until
   * no cross-group lock refuses the read (a reader that meets a lock helps settle it, past its
   * deadline settles it, and aborts retryably); bounded. Returns the value, or "none".
   */
  static String readPastLocks(TxnClient reader, String group, long position, String key) {
    String[] seen = {null};
    Poll.until("a read of " + key + " in " + group + " past its locks", Duration.ofSeconds(30),
        () -> {
          Transaction x = beginAtLeast(reader, group, position);
          try {
            seen[0] = x.getString(key).orElse("none");
            x.commit();
            return true;
          } catch (TransactionAbortedException e) {
            return false;
          }
        });
    return seen[0];
  }

  /** Begins in {@code group} at a read position at least {@code position} (DCs apply lazily). */
  static Transaction beginAtLeast(TxnClient c, String group, long position) {
    for (int i = 0; i < 200; i++) {
      Transaction t = c.begin(group);
      if (t.readPosition() >= position) {
        return t;
      }
      t.abort();
      try {
        Thread.sleep(5);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    throw new AssertionError("no DC applied position " + position + " of " + group);
  }

  /** A DC's log of {@code group}: positions from 1 until 64 in a row are missing. */
  private static SortedMap<Long, LogValue> scan(InMemoryKvStore store, String group) {
    org.paxoscp.paxos.Acceptor a = new org.paxoscp.paxos.Acceptor(store);
    SortedMap<Long, LogValue> log = new java.util.TreeMap<>();
    for (long p = 1, misses = 0; misses < 64; p++) {
      java.util.Optional<LogValue> v = a.chosen(group, p);
      if (v.isPresent()) {
        log.put(p, v.get());
        misses = 0;
      } else {
        misses++;
      }
    }
    return log;
  }

  @Override
  public void close() throws Exception {
    for (int i = closeables.size() - 1; i >= 0; i--) {
      closeables.get(i).close();
    }
    cluster.close();
  }
}
