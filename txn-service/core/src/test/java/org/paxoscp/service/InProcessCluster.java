package org.paxoscp.service;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogValue;

/**
 * The test kit's cluster: DCs A, B, C in process, each the real {@link TransactionService} with
 * its {@link CatchUp} over an {@link InMemoryKvStore}, observed by an {@link ObservedService}
 * (request counts, a switch to fall silent), on an {@link InProcessTransport} network that can
 * take a DC down.
 */
public final class InProcessCluster implements AutoCloseable {
  public static final List<String> DCS = List.of("A", "B", "C");

  public final ClusterConfig config;
  public final InProcessTransport.Network network = new InProcessTransport.Network();
  public final Map<String, InMemoryKvStore> stores = new LinkedHashMap<>();
  public final Map<String, ObservedService> services = new LinkedHashMap<>();
  private final ScheduledExecutorService timers = Executors.newScheduledThreadPool(2, r -> {
    Thread t = new Thread(r, "in-process-cluster");
    t.setDaemon(true);
    return t;
  });
  private final List<CatchUp> catchUps = new ArrayList<>();

  /**
   * @param requestTimeout the cluster's request and proposer phase timeout; a service waits up
   *     to 20 times as long for catch-up
   */
  public InProcessCluster(Duration requestTimeout, int maxDatagramBytes) {
    List<ClusterConfig.Dc> dcs = new ArrayList<>();
    int port = 7000;
    for (String dc : DCS) {
      dcs.add(new ClusterConfig.Dc(dc, List.of(InetSocketAddress.createUnresolved("localhost",
          port++)), Map.of()));
    }
    config = new ClusterConfig(dcs, new byte[16], Optional.empty(), "/paxoscp", maxDatagramBytes,
        requestTimeout, ClusterConfig.Wan.off());
    Scheduler scheduler = Scheduler.of(timers);
    for (String dc : DCS) {
      InMemoryKvStore store = new InMemoryKvStore();
      stores.put(dc, store);
      CatchUp catchUp = new CatchUp(dc, DCS, store, network.transport(dc),
          CatchUp.Settings.defaults(requestTimeout), scheduler);
      catchUps.add(catchUp);
      ObservedService s = new ObservedService(new TransactionService(dc, DCS, store, catchUp,
          new TransactionService.Limits(1024, maxDatagramBytes, requestTimeout.multipliedBy(20)),
          scheduler));
      services.put(dc, s);
      network.register(dc, s);
    }
  }

  public void setDown(String dc, boolean down) {
    network.setDown(dc, down);
  }

  /** The chosen values DC {@code dc} knows for {@code group}, positions 1..{@code upTo}. */
  public SortedMap<Long, LogValue> log(String dc, String group, long upTo) {
    Acceptor a = new Acceptor(stores.get(dc));
    SortedMap<Long, LogValue> log = new TreeMap<>();
    for (long p = 1; p <= upTo; p++) {
      long pos = p;
      a.chosen(group, p).ifPresent(v -> log.put(pos, v));
    }
    return log;
  }

  /** Every DC's log of {@code group}, up to {@code upTo} (scan limit). */
  public Map<String, SortedMap<Long, LogValue>> logs(String group, long upTo) {
    Map<String, SortedMap<Long, LogValue>> out = new LinkedHashMap<>();
    for (String dc : DCS) {
      out.put(dc, log(dc, group, upTo));
    }
    return out;
  }

  @Override
  public void close() throws InterruptedException {
    catchUps.forEach(CatchUp::close);
    network.close();
    timers.shutdownNow();
    timers.awaitTermination(5, TimeUnit.SECONDS);
  }
}
