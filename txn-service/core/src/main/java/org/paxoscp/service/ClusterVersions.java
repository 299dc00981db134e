package org.paxoscp.service;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.VersionProbe;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.version.ClusterVersionRow;
import org.paxoscp.version.UnsupportedClusterVersionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A service's view of the cluster version (docs/upgrading.md): read from its DC's store before
 * it serves anything, re-read every poll interval, and applied to its transport (the wire
 * version it sends, whether it opens version 3). Answers {@link Message.VersionRequest}s and the
 * operator's {@link Message.VersionChange}s, which write the DC's {@link ClusterVersionRow}.
 *
 * <p>Where the version comes from when the DC's row is missing: the highest version its peers
 * run at; when none answers, the newest this process speaks for a new, empty store, or what the
 * wire of peers of a build from before cluster versions says for a store that holds groups
 * ({@link #fromPeersOrStore}). Nothing is written from a guess, and the row only while the
 * store's marker is serving. Every poll also asks the peers: a DC that a raise did not reach (it
 * was unreachable then), or whose store was restored from an older copy, takes the higher
 * version a peer runs at.
 *
 * <p>A service refuses to start when its DC's version, or the fence an operator set while
 * raising it, is outside the versions it speaks ({@link UnsupportedClusterVersionException}).
 * Once running, a raise it cannot follow is logged (finalization checks every process first, so
 * it happens only to a process that did not answer then) and the process goes on as it was.
 */
public final class ClusterVersions implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ClusterVersions.class);

  private final String dc;
  private final List<String> peers;
  private final KvStore store;
  private final Transport transport;
  private final ClusterVersion.Range range;
  private final Duration requestTimeout;
  private final Supplier<Optional<Map.Entry<Long, String>>> lastWire3;
  private final ScheduledExecutorService poller;
  /** How long a new store's peers are asked: in a new cluster they start at the same time. */
  private static final Duration NEW_CLUSTER_ASK = Duration.ofMillis(500);
  private volatile int active;
  private volatile int fence;
  private volatile int attempt;
  private volatile boolean warnedAbove;

  /**
   * @param peers the other DCs
   * @param lastWire3 when the transport last opened a request of wire version 3 ({@link
   *     System#nanoTime}) and from where; empty if never (or if it has no wire versions)
   */
  public ClusterVersions(String dc, List<String> peers, KvStore store, Transport transport,
      ClusterVersion.Range range, Duration requestTimeout,
      Supplier<Optional<Map.Entry<Long, String>>> lastWire3) {
    this.dc = dc;
    this.peers = List.copyOf(peers);
    this.store = store;
    this.transport = transport;
    this.range = range;
    this.requestTimeout = requestTimeout;
    this.lastWire3 = lastWire3;
    this.poller = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "cluster-version-" + dc);
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Learns the version before the service serves anything and applies it to the transport, then
   * re-reads it every {@code poll}.
   *
   * @throws UnsupportedClusterVersionException when the DC's version or fence is outside the
   *     versions this process speaks
   */
  public void start(Duration poll) {
    Optional<ClusterVersionRow.State> row = readRow();
    if (row.isPresent()) {
      ClusterVersionRow.State s = row.get();
      if (s.fence() > range.max()) {
        throw new UnsupportedClusterVersionException(range, s.fence(), "DC " + dc + " (being "
            + "raised by paxoscp cluster-version finalize)");
      }
      range.require(s.active(), "DC " + dc);
      fence = s.fence();
      attempt = s.attempt();
      apply(s.active());
    } else {
      int learned = fromPeersOrStore();
      if (learned > 0) {
        range.require(learned, "DC " + dc + " (as its peers report)");
        apply(learned);
        writeIfServing(learned);
      }
    }
    LOG.info("DC {}: cluster version {}{}; this process speaks {}", dc,
        active == 0 ? "not known yet (no peer answered, or its store has no marker; asked "
            + "again every poll)" : ClusterVersion.describe(active),
        fence > 0 ? ", being raised to " + fence : "", range);
    poller.scheduleWithFixedDelay(this::poll, poll.toMillis(), poll.toMillis(),
        TimeUnit.MILLISECONDS);
  }

  /**
   * Refuses to go on when an operator fenced this DC above the versions this process speaks
   * since it read the row: called once the process is visible to the operator's survey (after it
   * registered with discovery), so that a raise cannot pass a process that started meanwhile.
   *
   * @throws UnsupportedClusterVersionException if it was fenced above this process
   */
  public void checkFence() {
    Optional<ClusterVersionRow.State> row = readRow();
    if (row.isPresent() && row.get().fence() > range.max()) {
      throw new UnsupportedClusterVersionException(range, row.get().fence(), "DC " + dc
          + " (being raised by paxoscp cluster-version finalize)");
    }
  }

  /** The version this service runs at; 0 while it does not know one. */
  public int active() {
    return active;
  }

  public ClusterVersion.Range range() {
    return range;
  }

  /** Answers a {@link Message.VersionRequest} or performs a {@link Message.VersionChange}. */
  public Message handle(Message request) {
    if (request instanceof Message.VersionChange c) {
      return change(c);
    }
    return reply("");
  }

  private Message.VersionReply reply(String detail) {
    Optional<Map.Entry<Long, String>> w3 = lastWire3.get();
    long ago = w3.map(e -> Math.max(0, (System.nanoTime() - e.getKey()) / 1_000_000))
        .orElse(-1L);
    return new Message.VersionReply(active, fence, attempt, range.min(), range.max(), ago,
        w3.map(Map.Entry::getValue).orElse(""), detail);
  }

  private synchronized Message.VersionReply change(Message.VersionChange c) {
    boolean removal = c.fence() && c.to() == 0;
    if (!removal && c.to() > range.max()) {
      return reply("refused: this process speaks cluster versions " + range);
    }
    Optional<StoreMarker> m = StoreMarker.read(store);
    if (m.isEmpty() || m.get().state() != StoreMarker.State.SERVING) {
      return reply("refused: DC " + dc + "'s store is not serving (lost or being rebuilt)");
    }
    Optional<ClusterVersionRow.State> row = ClusterVersionRow.read(store);
    if (row.isEmpty() && active > 0) {
      // A DC that knows its version from its peers and has not written it yet.
      ClusterVersionRow.create(store, active);
      row = ClusterVersionRow.read(store);
    }
    if (row.isPresent()) {
      if (removal) {
        ClusterVersionRow.unfence(store, c.from());
      } else if (c.fence()) {
        ClusterVersionRow.fence(store, c.from(), c.to());
      } else {
        ClusterVersionRow.raise(store, c.from(), c.to());
      }
    }
    Optional<ClusterVersionRow.State> now = ClusterVersionRow.read(store);
    now.ifPresent(this::adopt);
    // Done when the row holds what the change asks for, whoever wrote it: the same change
    // through another service of the DC, after its reply was lost, is answered as done.
    boolean done = now.map(s -> removal ? s.attempt() == c.from() && s.fence() == 0
        : c.fence() ? s.attempt() == c.from() + 1 && s.fence() == c.to()
        : s.active() >= c.to()).orElse(false);
    if (!done) {
      return reply("refused: DC " + dc + "'s row holds " + now.map(s -> "version " + s.active()
          + ", fence " + s.fence() + " (attempt " + s.attempt() + ")").orElse("nothing")
          + ", not what the change expected (" + (c.fence() ? "attempt " : "version ")
          + c.from() + ")");
    }
    LOG.info("DC {}: {} by an operator", dc, removal ? "fence attempt " + c.from() + " removed"
        : c.fence() ? "fenced at cluster version " + ClusterVersion.describe(c.to())
        : "raised to cluster version " + ClusterVersion.describe(c.to()));
    return reply("");
  }

  private void poll() {
    try {
      Optional<ClusterVersionRow.State> row = readRow();
      if (row.isPresent()) {
        adopt(row.get());
        catchUpWithPeers(row.get().active());
      } else if (active == 0 && StoreMarker.read(store).filter(
          m -> m.state() == StoreMarker.State.SERVING).isEmpty()) {
        // A store being rebuilt: speak the peers' version meanwhile, writing nothing.
        int peersAt = VersionProbe.highestActive(VersionProbe.ask(transport, peers,
            requestTimeout));
        if (peersAt > 0 && range.contains(peersAt)) {
          apply(peersAt);
        }
      } else if (StoreMarker.read(store).filter(m -> m.state() == StoreMarker.State.SERVING)
          .isPresent()) {
        // A store rebuilt after a loss: the version this process ran at (it only grows), or
        // what a process that never knew one learns now (nothing is written from a guess).
        int learned = active > 0 ? active : fromPeersOrStore();
        if (learned > 0 && range.contains(learned)) {
          apply(learned);
          writeIfServing(learned);
        }
      }
    } catch (RuntimeException e) {
      LOG.debug("DC {}: cluster version poll failed: {}", dc, e.toString());
    }
  }

  /**
   * Raises this DC's row to a peer's higher version: a raise that reached some DCs and not this
   * one (it was unreachable then), or a store restored from an older copy. A peer runs at a
   * version only after finalization checked every instance of every DC, this DC's included.
   */
  private void catchUpWithPeers(int own) {
    for (String p : peers) {
      transport.askVersions(p, requestTimeout).thenAccept(r -> {
        if (r.active() > own && range.contains(r.active())) {
          synchronized (this) {
            if (StoreMarker.read(store).filter(m -> m.state() == StoreMarker.State.SERVING)
                .isPresent() && ClusterVersionRow.raise(store, own, r.active())) {
              LOG.info("DC {}: raised to cluster version {} as DC {} runs at it", dc,
                  ClusterVersion.describe(r.active()), p);
              ClusterVersionRow.read(store).ifPresent(this::adopt);
            }
          }
        }
      }).exceptionally(e -> null);
    }
  }

  private void adopt(ClusterVersionRow.State s) {
    fence = s.fence();
    attempt = s.attempt();
    if (s.active() == active) {
      return;
    }
    if (!range.contains(s.active())) {
      if (!warnedAbove) {
        warnedAbove = true;
        LOG.error("DC {}: the cluster runs at version {} and this process speaks {}: it goes "
            + "on at version {}; replace it with a build that speaks the cluster's version "
            + "(docs/upgrading.md)", dc, ClusterVersion.describe(s.active()), range, active);
      }
      return;
    }
    if (s.active() < active) {
      // Versions only grow; a lower row is an old copy of the store (restored from a backup):
      // put back what this process ran at.
      LOG.warn("DC {}: its store holds cluster version {} below the version {} this process "
          + "ran at; raising it back", dc, s.active(), active);
      ClusterVersionRow.raise(store, s.active(), active);
      return;
    }
    apply(s.active());
  }

  private void apply(int version) {
    if (version != active) {
      LOG.info("DC {}: now at cluster version {}", dc, ClusterVersion.describe(version));
    }
    active = version;
    transport.clusterVersion(version);
  }

  private Optional<ClusterVersionRow.State> readRow() {
    try {
      return ClusterVersionRow.read(store);
    } catch (RuntimeException e) {
      LOG.warn("DC {}: could not read the cluster version from the store: {}", dc,
          e.toString());
      return Optional.empty();
    }
  }

  /**
   * For a DC without a row: the highest version its peers run at (a peer runs at a version only
   * after {@code paxoscp cluster-version finalize} found every process able to speak it, or as a
   * new cluster); when none answers, for a serving store that holds no group, the newest version
   * this process speaks (a new cluster starts at the newest formats; its peers are asked only
   * briefly, as they start too), and for one that holds groups, what the wire of peers of a build
   * from before cluster versions says ({@link #fromPeersWire}); 0: not known (no peer answered,
   * or the store has no marker and its rebuild is ahead), asked again at the next poll.
   */
  private int fromPeersOrStore() {
    Optional<StoreMarker> m = StoreMarker.read(store);
    boolean serving = m.isPresent() && m.get().state() == StoreMarker.State.SERVING;
    boolean empty = serving && !holdsGroups();
    Duration ask = empty ? NEW_CLUSTER_ASK.compareTo(requestTimeout) < 0 ? NEW_CLUSTER_ASK
        : requestTimeout : requestTimeout;
    int peersAt = VersionProbe.highestActive(VersionProbe.ask(transport, peers, ask));
    if (peersAt > 0 || !serving) {
      return peersAt;
    }
    return empty ? range.max() : fromPeersWire();
  }

  /**
   * The version that peers of a build from before cluster versions speak, from the wire
   * versions they answer a round-trip probe in: version 3 only, cluster version 1 (builds before
   * wire version 4); version 4 (with 3 or not), 2: this process sends version 4 and opens both,
   * and raising to 3 is left to the operator's finalization, which drains version 3 first. The
   * lowest over the peers that answered, so every one of them can talk with this process; 0 when
   * none answered.
   */
  private int fromPeersWire() {
    int lowest = 0;
    List<java.util.concurrent.CompletableFuture<java.util.Set<Integer>>> asked = peers.stream()
        .map(p -> transport.wireVersionsOf(p, requestTimeout)).toList();
    for (var f : asked) {
      java.util.Set<Integer> v;
      try {
        v = f.get(requestTimeout.toMillis() + 500, TimeUnit.MILLISECONDS);
      } catch (Exception e) {
        continue;
      }
      int at = v.contains(4) ? ClusterVersion.WIRE_4 : v.contains(3) ? ClusterVersion.WIRE_3
          : 0;
      if (at > 0) {
        lowest = lowest == 0 ? at : Math.min(lowest, at);
      }
    }
    if (lowest > 0) {
      LOG.info("DC {}: its store has no cluster version and its peers run a build from before "
          + "cluster versions; their wire says cluster version {}", dc,
          ClusterVersion.describe(lowest));
    }
    return lowest;
  }

  private boolean holdsGroups() {
    List<KvStore.ScannedRow> rows = store.scan(KvStore.Table.META, new byte[0], null,
        KvStore.LATEST, 4, false);
    return rows.stream().anyMatch(r -> WalLayout.groupOf(r.row()).isPresent())
        || !store.scan(KvStore.Table.WAL, new byte[0], null, KvStore.LATEST, 1, false).isEmpty();
  }

  private void writeIfServing(int version) {
    try {
      if (StoreMarker.read(store).filter(m -> m.state() == StoreMarker.State.SERVING)
          .isPresent()) {
        ClusterVersionRow.create(store, version);
      }
    } catch (RuntimeException e) {
      LOG.warn("DC {}: could not write cluster version {} to the store: {}", dc, version,
          e.toString());
    }
  }

  @Override
  public void close() {
    poller.shutdownNow();
  }
}
