package org.paxoscp.service.metrics;

import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.jmx.JmxConfig;
import io.micrometer.jmx.JmxMeterRegistry;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Executors;
import org.paxoscp.service.CatchUp;
import org.paxoscp.service.GroupCollector;
import org.paxoscp.service.TransactionService;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.MalformedDatagramException;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.WanTransport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The meters of one Transaction Service process (docs/operating.md, "Metrics"), in a Micrometer
 * registry tagged with the process's DC: requests by type and result, store requests by
 * operation, leader rounds, catch-up, GC, dropped datagrams, cached groups and the JVM's own.
 * The registry publishes to Prometheus ({@link #serve} serves {@code /metrics} over HTTP in its
 * text format) and, if asked, to JMX (MBeans under the domain {@code paxoscp}).
 *
 * <p>Micrometer rather than the Prometheus client directly: one instrumentation API that the
 * client library shares (an application binds its own registry, Prometheus or not) and that
 * publishes to Prometheus and JMX from one registry.
 */
public final class ServiceMetrics implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ServiceMetrics.class);
  static final String RECORDED_POSITIONS = "paxoscp.service.recorded.positions";
  static final String RECORDED_ENTRIES = "paxoscp.service.recorded.entries";
  static final String ONE_WAY_FAILURES = "paxoscp.service.oneway.failures";

  private final CompositeMeterRegistry registry = new CompositeMeterRegistry();
  private final PrometheusMeterRegistry prometheus =
      new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
  private final JmxMeterRegistry jmx;
  private final JvmGcMetrics gc = new JvmGcMetrics();
  private HttpServer http;
  private java.util.concurrent.ExecutorService httpExecutor;

  /**
   * A registry whose every meter carries {@code dc=<dc>}, with the JVM's meters bound.
   *
   * @param jmx whether to publish the meters over JMX too
   */
  public ServiceMetrics(String dc, boolean jmx) {
    registry.add(prometheus);
    if (jmx) {
      this.jmx = new JmxMeterRegistry(new JmxConfig() {
        @Override
        public String get(String key) {
          return null;
        }

        @Override
        public String domain() {
          return "paxoscp";
        }
      }, io.micrometer.core.instrument.Clock.SYSTEM);
      registry.add(this.jmx);
    } else {
      this.jmx = null;
    }
    registry.config().commonTags(Tags.of("dc", dc));
    new JvmMemoryMetrics().bindTo(registry);
    gc.bindTo(registry);
    new JvmThreadMetrics().bindTo(registry);
    new ClassLoaderMetrics().bindTo(registry);
    new ProcessorMetrics().bindTo(registry);
    new UptimeMetrics().bindTo(registry);
  }

  public MeterRegistry registry() {
    return registry;
  }

  /** The store, its requests timed and counted. */
  public KvStore meter(KvStore store) {
    return new MeteredKvStore(store, registry);
  }

  /** The handler, its requests timed by type and result. */
  public RequestHandler meter(RequestHandler handler) {
    return new MeteredHandler(handler, registry);
  }

  /**
   * Binds the counters the service's parts keep: leader rounds and entries, catch-up, GC (when
   * {@code collector} is not null), the transport's dropped datagrams, cached groups.
   */
  public void bind(TransactionService service, CatchUp catchUp, GroupCollector collector,
      Transport transport) {
    var combiner = service.combiner();
    counter("paxoscp.service.leader.rounds", "leader-combination rounds decided here",
        combiner, c -> c.rounds());
    counter("paxoscp.service.leader.entries", "entries committed by leader rounds here",
        combiner, c -> c.entriesCommitted());
    counter("paxoscp.service.leader.forwarded", "submits passed on to another DC's batcher",
        combiner, c -> c.forwarded());
    counter("paxoscp.service.leader.holds", "leader rounds that waited for this DC's clients",
        combiner, c -> c.holds());
    counter("paxoscp.service.leader.batcher.moves", "times this DC moved the batcher to another "
        + "DC by where committed entries come from", combiner, c -> c.batcherMoves());
    Gauge.builder("paxoscp.service.leader.rounds.in.flight", combiner, c -> c.roundsInFlight())
        .description("leader rounds running now").register(registry);
    counter(RECORDED_POSITIONS, "positions whose chosen value this instance recorded first "
        + "(from an APPLY or by catch-up)", catchUp, c -> c.recordedPositions());
    counter(RECORDED_ENTRIES, "entries (committed transactions) of the positions recorded",
        catchUp, c -> c.recordedEntries());
    for (var code : java.util.List.of(org.paxoscp.transport.Message.ErrorCode.TOO_OLD,
        org.paxoscp.transport.Message.ErrorCode.STORE_UNAVAILABLE,
        org.paxoscp.transport.Message.ErrorCode.REBUILDING)) {
      counter(ONE_WAY_FAILURES, "one-way messages (APPLY, pushed learn replies) that failed, "
          + "by the result a reply would have carried", service, s -> s.oneWayFailures(code),
          "result", code.name().toLowerCase(Locale.ROOT));
    }
    counter("paxoscp.service.catchup.learned", "positions learned by catch-up, by how",
        catchUp, c -> c.learnedFromPeers(), "from", "peers");
    counter("paxoscp.service.catchup.learned", "positions learned by catch-up, by how",
        catchUp, c -> c.learnedByInstance(), "from", "learner");
    counter("paxoscp.service.store.changes", "times this instance saw its DC's store marker "
        + "change while it ran (its store lost, being rebuilt, rebuilt; each dropped every "
        + "per-group cache and refused what it served under the marker before)", service,
        s -> s.storeChanges());
    counter("paxoscp.service.conflicts", "APPLYs or learned values that met another value "
        + "chosen at the same position: broken agreement, must stay 0", catchUp,
        c -> c.conflicts());
    Gauge.builder("paxoscp.service.catchup.runs.active", catchUp, c -> c.activeRuns())
        .description("catch-up runs going on now").register(registry);
    for (String cache : service.cachedGroups().keySet()) {
      Gauge.builder("paxoscp.service.cached.groups", service,
              s -> s.cachedGroups().getOrDefault(cache, 0L))
          .description("groups whose state a per-group cache holds now, by cache")
          .tag("cache", cache).register(registry);
    }
    for (String cache : service.cacheEvictions().keySet()) {
      counter("paxoscp.service.cache.evictions", "groups a per-group cache dropped to stay "
          + "within paxoscp.service.cache.groups (rebuilt from the store on next use), by cache",
          service, s -> s.cacheEvictions().getOrDefault(cache, 0L), "cache", cache);
    }
    if (collector != null) {
      counter("paxoscp.service.gc.rounds", "GC rounds finished", collector, c -> c.rounds());
      counter("paxoscp.service.gc.rounds.waiting", "GC rounds that waited for a silent DC",
          collector, c -> c.roundsWaiting());
      counter("paxoscp.service.gc.collected.positions", "log positions collected", collector,
          c -> c.collectedPositions());
      Gauge.builder("paxoscp.service.gc.lag.positions", collector, c -> c.lastLagPositions())
          .description("this DC's applied position minus its GC watermark after the last GC "
              + "round: about the retention, more while GC waits for a DC")
          .register(registry);
    }
    Transport t = transport instanceof WanTransport wan ? wan.inner() : transport;
    if (t instanceof UdpTransport udp) {
      for (MalformedDatagramException.Reason r : MalformedDatagramException.Reason.values()) {
        counter("paxoscp.transport.dropped", "datagrams dropped before any handler, by reason",
            udp, u -> u.droppedCount(r), "reason", r.name().toLowerCase(Locale.ROOT));
      }
      counter("paxoscp.transport.send.failures", "datagrams the socket refused to send", udp,
          u -> u.sendFailureCount());
      counter("paxoscp.transport.rejected", "one-way messages (APPLY, pushed learn replies) "
          + "dropped because the service was overloaded", udp, u -> u.rejectedRequestCount());
      for (String kind : org.paxoscp.transport.Admission.KINDS) {
        counter("paxoscp.service.overloaded", "requests refused OVERLOADED before any handler "
            + "saw them (admission control: too many waiting, or waited too long), by kind",
            udp, u -> u.overloadedCount(kind), "kind", kind);
      }
      Gauge.builder("paxoscp.service.queued.requests", udp, u -> u.queuedRequests())
          .description("requests waiting for a worker now").register(registry);
    }
  }

  private <T> void counter(String name, String description, T obj,
      java.util.function.ToDoubleFunction<T> f, String... tags) {
    FunctionCounter.builder(name, obj, f).description(description).tags(tags)
        .register(registry);
  }

  /**
   * Serves {@code GET /metrics} (Prometheus text format) on {@code address}.
   *
   * @return the address it listens on (the port chosen when {@code address}'s was 0)
   * @throws UncheckedIOException naming the address if it cannot listen there
   */
  public InetSocketAddress serve(InetSocketAddress address) {
    try {
      http = HttpServer.create(address, 16);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot serve metrics on " + address + ": " + e, e);
    }
    http.createContext("/metrics", exchange -> {
      try (exchange) {
        String method = exchange.getRequestMethod();
        if (!method.equals("GET") && !method.equals("HEAD")) {
          exchange.sendResponseHeaders(405, -1);
          return;
        }
        exchange.getResponseHeaders().set("Content-Type",
            "text/plain; version=0.0.4; charset=utf-8");
        if (method.equals("HEAD")) {
          exchange.sendResponseHeaders(200, -1);
          return;
        }
        byte[] body = prometheus.scrape().getBytes(StandardCharsets.UTF_8);
        exchange.sendResponseHeaders(200, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
          out.write(body);
        }
      }
    });
    httpExecutor = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "metrics-http");
      t.setDaemon(true);
      return t;
    });
    http.setExecutor(httpExecutor);
    http.start();
    InetSocketAddress bound = http.getAddress();
    LOG.info("metrics at http://{}:{}/metrics", bound.getHostString(), bound.getPort());
    return bound;
  }

  /** The address {@code /metrics} is served on, if it is. */
  public Optional<InetSocketAddress> httpAddress() {
    return Optional.ofNullable(http).map(HttpServer::getAddress);
  }

  /** The registry in Prometheus' text format, as {@code /metrics} serves it. */
  public String scrape() {
    return prometheus.scrape();
  }

  /** Stops the HTTP server and the JMX export, and closes the registry. Idempotent. */
  @Override
  public synchronized void close() {
    if (http != null) {
      http.stop(0);
      http = null;
      httpExecutor.shutdownNow(); // HttpServer.stop leaves the executor it was given running
    }
    gc.close();
    registry.close();
    prometheus.close();
    if (jmx != null) {
      jmx.close();
    }
  }
}
