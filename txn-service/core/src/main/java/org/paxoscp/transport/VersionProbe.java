package org.paxoscp.transport;

import java.time.Duration;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.paxoscp.version.ClusterVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a process without a store (a client, the shell, an operator's tool) learns the cluster's
 * version (docs/upgrading.md): it asks one service of every DC, speaks the version of the first
 * answer, and follows any higher version a later answer reports. A service of a build from
 * before cluster versions does not answer; when no service answers, the process speaks version
 * 2 (sends wire version 4, opens both) and learns again at its next poll.
 */
public final class VersionProbe {
  private static final Logger LOG = LoggerFactory.getLogger(VersionProbe.class);

  private VersionProbe() {}

  /**
   * One service of each DC of {@code dcs} asked at once, by a process that does not know the
   * cluster's version yet; the answers within {@code timeout}.
   */
  public static Map<String, Message.VersionReply> ask(Transport transport,
      Collection<String> dcs, Duration timeout) {
    Map<String, CompletableFuture<Message.VersionReply>> asked = new LinkedHashMap<>();
    for (String dc : dcs) {
      asked.put(dc, transport.askVersionsFirst(dc, timeout));
    }
    Map<String, Message.VersionReply> out = new LinkedHashMap<>();
    long deadline = System.nanoTime() + timeout.toNanos() + 50_000_000L;
    for (var e : asked.entrySet()) {
      try {
        out.put(e.getKey(), e.getValue().get(Math.max(1, deadline - System.nanoTime()),
            TimeUnit.NANOSECONDS));
      } catch (ExecutionException | TimeoutException ex) {
        // No answer: the DC is down, or runs a build from before cluster versions.
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return out;
  }

  /** The highest version any answer runs at; 0 when none knows one. */
  public static int highestActive(Map<String, Message.VersionReply> answers) {
    return answers.values().stream().mapToInt(Message.VersionReply::active).max().orElse(0);
  }

  /**
   * Learns the cluster's version from {@code dcs} and makes {@code transport} speak it: the first
   * answer that knows one (a DC that is down costs nothing when another answers; a {@link
   * Follower} takes a higher version a later answer reports). With no answer at all (every DC
   * down, or of a build from before cluster versions, which answers no version request), it
   * speaks version 2 (sends wire version 4, opens both), what the build before cluster versions
   * speaks, and a later answer corrects it.
   *
   * @return the version it speaks now
   * @throws org.paxoscp.version.UnsupportedClusterVersionException when the cluster runs at a
   *     version outside {@code range}, or its DC is fenced above it by a raise under way
   *     (nothing was sent beyond the questions)
   */
  public static int follow(Transport transport, ClusterVersion.Range range,
      Collection<String> dcs, Duration timeout) {
    Message.VersionReply r = firstAnswer(transport, dcs, timeout);
    int active = r == null ? fallback(range, dcs, timeout) : r.active();
    range.require(active, "the cluster");
    if (r != null && r.fence() > range.max()) {
      throw new org.paxoscp.version.UnsupportedClusterVersionException(range, r.fence(),
          "the cluster (being raised by paxoscp cluster-version finalize)");
    }
    transport.clusterVersion(active);
    return active;
  }

  /**
   * As {@link #follow}, for an operator's tool: it only asks and reads, so it speaks the version
   * of its range nearest the cluster's instead of refusing (an operator's key speaks versions
   * from 2, and must still reach a cluster at 1, whose services of this build open version 4).
   */
  public static int followAsTool(Transport transport, ClusterVersion.Range range,
      Collection<String> dcs, Duration timeout) {
    Message.VersionReply r = firstAnswer(transport, dcs, timeout);
    int active = r == null ? fallback(range, dcs, timeout) : r.active();
    int speak = Math.max(range.min(), Math.min(range.max(), active));
    transport.clusterVersion(speak);
    return speak;
  }

  private static int fallback(ClusterVersion.Range range, Collection<String> dcs,
      Duration timeout) {
    int v = Math.max(range.min(), Math.min(range.max(), ClusterVersion.WIRE_4));
    LOG.info("no service of {} told its cluster version within {} ms: speaking cluster "
        + "version {} (what builds from before cluster versions read) until one does", dcs,
        timeout.toMillis(), ClusterVersion.describe(v));
    return v;
  }

  /** The first answer that knows a version; null when none came within {@code timeout}. */
  private static Message.VersionReply firstAnswer(Transport transport, Collection<String> dcs,
      Duration timeout) {
    CompletableFuture<Message.VersionReply> first = new CompletableFuture<>();
    AtomicInteger left = new AtomicInteger(dcs.size());
    for (String dc : dcs) {
      transport.askVersionsFirst(dc, timeout).whenComplete((r, e) -> {
        if (e == null && r.active() > 0) {
          first.complete(r);
        } else if (left.decrementAndGet() == 0) {
          first.complete(null);
        }
      });
    }
    try {
      return first.get(timeout.toMillis() + 100, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  /**
   * Keeps a process without a store at the cluster's version: {@link #refresh} asks every DC
   * without blocking and raises the version the transport speaks to the highest one reported
   * (versions only grow). A version outside the process's range is logged once and not taken.
   */
  public static final class Follower {
    private final Transport transport;
    private final ClusterVersion.Range range;
    private final List<String> dcs;
    private final Duration timeout;
    private final AtomicInteger active;
    private final AtomicBoolean warned = new AtomicBoolean();

    /** Following from {@code start}, the version {@link #follow} returned. */
    public Follower(Transport transport, ClusterVersion.Range range, List<String> dcs,
        Duration timeout, int start) {
      this.transport = transport;
      this.range = range;
      this.dcs = List.copyOf(dcs);
      this.timeout = timeout;
      this.active = new AtomicInteger(start);
    }

    /** The version the transport speaks now. */
    public int active() {
      return active.get();
    }

    /** Asks every DC once; returns at once. */
    public void refresh() {
      for (String dc : dcs) {
        transport.askVersions(dc, timeout).thenAccept(this::learned);
      }
    }

    private void learned(Message.VersionReply r) {
      int v = r.active();
      if (v == 0) {
        return;
      }
      if (!range.contains(v)) {
        if (v > range.max() && warned.compareAndSet(false, true)) {
          LOG.error("the cluster was raised to version {}; this process speaks {} and goes on at "
              + "{}: replace it with a build that speaks the cluster's version "
              + "(docs/upgrading.md)", ClusterVersion.describe(v), range, active.get());
        }
        return;
      }
      int before = active.getAndAccumulate(v, Math::max);
      if (v > before) {
        transport.clusterVersion(v);
        LOG.info("now at cluster version {}", ClusterVersion.describe(v));
      }
    }
  }
}
