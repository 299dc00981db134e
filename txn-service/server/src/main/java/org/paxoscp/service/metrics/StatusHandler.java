package org.paxoscp.service.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.distribution.ValueAtPercentile;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.paxoscp.service.ClusterVersions;
import org.paxoscp.service.TransactionService;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;

/**
 * Answers {@link Message.StatusRequest}s (for {@code paxoscp status}) and the cluster version
 * requests ({@link ClusterVersions}), and passes every other request on. The reply names the instance, its uptime, and, when metrics are collected, its
 * request, error and recorded-entry counts and its begin latency; with a group, that group's
 * applied position, GC watermark and fast-path leader at this DC (read from the store: a store
 * that does not answer gives {@code group.error}).
 */
public final class StatusHandler implements RequestHandler {
  /** Results that are the service's failure, not the requester's. */
  private static final Set<String> ERRORS = Set.of("store_unavailable", "catch_up_failed",
      "too_large", "overloaded", "leader_unreachable", "error");

  private final RequestHandler inner;
  private final TransactionService service;
  private final ClusterVersions versions;
  private final Supplier<InetSocketAddress> address;
  private final MeterRegistry registry;
  private final long startNanos = System.nanoTime();

  /**
   * @param inner every other request goes here
   * @param address the instance's address, as its reply names it
   * @param registry where {@link MeteredHandler} keeps its meters; null when metrics are off
   */
  public StatusHandler(RequestHandler inner, TransactionService service,
      ClusterVersions versions, Supplier<InetSocketAddress> address, MeterRegistry registry) {
    this.inner = inner;
    this.service = service;
    this.versions = versions;
    this.address = address;
    this.registry = registry;
  }

  @Override
  public CompletableFuture<Message> handle(String fromDc, Message request) {
    if (request instanceof Message.StatusRequest s) {
      return CompletableFuture.completedFuture(status(s.group()));
    }
    if (request instanceof Message.VersionRequest || request instanceof Message.VersionChange) {
      return CompletableFuture.completedFuture(versions.handle(request));
    }
    return inner.handle(fromDc, request);
  }

  private Message status(String group) {
    Map<String, String> f = new TreeMap<>();
    f.put("dc", service.dc());
    InetSocketAddress a = address.get();
    f.put("instance", a == null ? "?" : a.getHostString() + ":" + a.getPort());
    f.put("uptime_s", Long.toString((System.nanoTime() - startNanos) / 1_000_000_000L));
    f.put("metrics", registry == null ? "off" : "on");
    f.put("cluster_version", versions.active() == 0 ? "?" : Integer.toString(versions.active()));
    f.put("version_range", versions.range().toString());
    String rtts = service.combiner().describeRoundTrips();
    if (!rtts.isEmpty()) {
      f.put("round_trips_ms", rtts);
    }
    try {
      f.put("store", service.storeState());
    } catch (RuntimeException e) {
      f.put("store", "unavailable");
    }
    f.put("store_changes", Long.toString(service.storeChanges()));
    if (registry != null) {
      long requests = 0;
      long errors = 0;
      long tooOld = 0;
      for (Timer t : registry.find(MeteredHandler.REQUEST).timers()) {
        String result = t.getId().getTag("result");
        requests += t.count();
        if (ERRORS.contains(result)) {
          errors += t.count();
        } else if ("too_old".equals(result)) {
          tooOld += t.count();
        }
      }
      // A one-way message that failed got no reply: the service counts it apart.
      for (var c : registry.find(ServiceMetrics.ONE_WAY_FAILURES).functionCounters()) {
        if ("too_old".equals(c.getId().getTag("result"))) {
          tooOld += (long) c.count();
        } else {
          errors += (long) c.count();
        }
      }
      f.put("requests", Long.toString(requests));
      f.put("errors", Long.toString(errors));
      f.put("too_old", Long.toString(tooOld));
      f.put("recorded_entries", Long.toString(sum(ServiceMetrics.RECORDED_ENTRIES)));
      f.put("recorded_positions", Long.toString(sum(ServiceMetrics.RECORDED_POSITIONS)));
      Timer begin = registry.find(MeteredHandler.REQUEST).tag("type", "begin_request")
          .tag("result", "ok").timer();
      if (begin != null) {
        for (ValueAtPercentile v : begin.takeSnapshot().percentileValues()) {
          f.put(String.format(Locale.ROOT, "begin_p%.0f_ms", v.percentile() * 100),
              String.format(Locale.ROOT, "%.1f", v.value(TimeUnit.MILLISECONDS)));
        }
      }
    }
    if (!group.isEmpty()) {
      try {
        TransactionService.GroupStatus g = service.groupStatus(group);
        f.put("group.applied", Long.toString(g.applied()));
        f.put("group.gc_watermark", Long.toString(g.gcWatermark()));
        f.put("group.leader", g.leader().isEmpty() ? "-" : g.leader());
      } catch (RuntimeException e) {
        String why = String.valueOf(e.getMessage());
        f.put("group.error", why.length() > 200 ? why.substring(0, 200) + "..." : why);
      }
    }
    return new Message.StatusReply(group, f);
  }

  private long sum(String functionCounter) {
    return (long) registry.find(functionCounter).functionCounters().stream()
        .mapToDouble(c -> c.count()).sum();
  }
}
