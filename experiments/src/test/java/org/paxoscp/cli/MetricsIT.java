package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.FreePorts;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.ClusterConfig;

/**
 * Metrics of a running cluster (three DCs, in-memory stores, UDP, each service serving
 * {@code /metrics}): scraped over HTTP while clients commit, the commit counters rise at every
 * DC, and a datagram no service can open is counted as dropped; every metric the Grafana
 * dashboard in docs/grafana queries is exported by the services or the clients, with the labels
 * it selects on; the meters are published over JMX; {@code status} shows every DC, and with one
 * DC's service stopped says which, within the request timeout.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class MetricsIT {
  private static final Duration TIMEOUT = Duration.ofMillis(1000);
  private static final List<String> DCS = List.of("V1", "V2", "O");
  private static final Pattern METRIC = Pattern.compile("\\b((?:paxoscp|jvm)_[a-z0-9_]+)");

  @TempDir
  Path dir;

  private final HttpClient http = HttpClient.newHttpClient();

  @Test
  void scrapedWhileCommittingDashboardCoveredStatusSaysWhichDcIsDown() throws Exception {
    Map<String, Map<String, String>> perDc = new LinkedHashMap<>();
    for (String dc : DCS) {
      perDc.put(dc, Map.of(ServiceConfig.METRICS_PORT.name(), Integer.toString(FreePorts.tcp()),
          ServiceConfig.METRICS_BIND.name(), "127.0.0.1"));
    }
    PrometheusMeterRegistry clientRegistry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    try (LocalCluster cluster = LocalCluster.start(new LocalCluster.Options(DCS,
            LocalCluster.StoreKind.MEMORY, dir.resolve("data"), ClusterConfig.Wan.off(), TIMEOUT,
            8), line -> { }, Map.of(), perDc);
        TxnClient client = TxnClient.builder(cluster.config(), "V1", CommitProtocol.CP)
            .meterRegistry(clientRegistry).build()) {
      Map<String, URI> urls = new LinkedHashMap<>();
      for (String dc : DCS) {
        var a = cluster.service(dc).orElseThrow().metrics().orElseThrow().httpAddress()
            .orElseThrow();
        urls.put(dc, URI.create("http://" + a.getHostString() + ":" + a.getPort() + "/metrics"));
      }
      AtomicBoolean stop = new AtomicBoolean();
      AtomicLong commits = new AtomicLong();
      Thread load = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          int n = i;
          client.runInTransaction("metrics", t -> {
            t.put("k" + (n % 5), Integer.toString(n));
            return null;
          });
          commits.incrementAndGet();
        }
      }, "metrics-load");
      load.start();
      try {
        Poll.until("first commits", Duration.ofSeconds(30), () -> commits.get() >= 5);
        Map<String, Double> before = new LinkedHashMap<>();
        for (String dc : DCS) {
          before.put(dc, sample(scrape(urls.get(dc)), "paxoscp_service_recorded_entries_total"));
        }
        long target = commits.get() + 20;
        Poll.until("20 more commits", Duration.ofSeconds(30), () -> commits.get() >= target);
        for (String dc : DCS) {
          String text = scrape(urls.get(dc));
          double after = sample(text, "paxoscp_service_recorded_entries_total");
          assertTrue(after > before.get(dc), dc + ": recorded entries did not rise: "
              + before.get(dc) + " -> " + after);
          assertTrue(text.contains("dc=\"" + dc + "\""), dc + "'s meters carry its DC");
        }
      } finally {
        stop.set(true);
        load.join(30_000);
      }
      // A datagram no service could open is dropped before any handler, and counted.
      double droppedBefore = sample(scrape(urls.get("V1")), "paxoscp_transport_dropped_total");
      try (java.net.DatagramSocket s = new java.net.DatagramSocket()) {
        byte[] junk = {3, 1, 4, 1, 5};
        var to = cluster.config().dc("V1").endpoints().get(0); // unresolved, as configured
        s.send(new java.net.DatagramPacket(junk, junk.length,
            new java.net.InetSocketAddress(to.getHostString(), to.getPort())));
      }
      Poll.until("V1 to count the dropped datagram", Duration.ofSeconds(10), () -> {
        try {
          return sample(scrape(urls.get("V1")), "paxoscp_transport_dropped_total")
              > droppedBefore;
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      });

      String clientText = clientRegistry.scrape();
      assertTrue(sample(clientText, "paxoscp_client_commit_seconds_count") >= commits.get(),
          clientText);

      // Every metric the dashboard queries is exported by a service or the client.
      Set<String> exported = new TreeSet<>();
      for (String dc : DCS) {
        exported.addAll(names(scrape(urls.get(dc))));
      }
      exported.addAll(names(clientText));
      Set<String> queried = dashboardMetrics();
      assertTrue(queried.size() >= 15, "dashboard queries: " + queried);
      Set<String> missing = new TreeSet<>(queried);
      missing.removeAll(exported);
      assertEquals(Set.of(), missing, "the dashboard queries metrics nobody exports");
      // ... and every label it selects on is one those metrics carry.
      Map<String, Set<String>> labels = new LinkedHashMap<>();
      for (String dc : DCS) {
        labelsOf(scrape(urls.get(dc)), labels);
      }
      labelsOf(clientText, labels);
      dashboardSelectors().forEach((metric, selected) -> {
        Set<String> unknown = new TreeSet<>(selected);
        unknown.removeAll(labels.getOrDefault(metric, Set.of()));
        assertEquals(Set.of(), unknown, "the dashboard selects " + metric + " on labels it does "
            + "not have; it has " + labels.get(metric));
      });

      assertTrue(!ManagementFactory.getPlatformMBeanServer()
          .queryNames(new ObjectName("paxoscp:*"), null).isEmpty(), "no paxoscp MBeans");

      // status: every DC up, then one DC's service stopped.
      Path config = dir.resolve("cluster.properties");
      cluster.writeConfig(config);
      CommandRun.Result up = CommandRun.run(new StatusCommand(), "--config", config.toString(),
          "--group", "metrics");
      assertEquals(0, up.code(), up.out() + up.err());
      assertTrue(up.out().contains("every DC answered"), up.out());
      for (String dc : DCS) {
        assertTrue(up.out().matches("(?s).*\n" + dc + " +127\\.0\\.0\\.1:\\d+ +up .*"), up.out());
      }
      assertTrue(up.out().contains("group metrics:"), up.out());

      cluster.stopService("O");
      long t0 = System.nanoTime();
      CommandRun.Result down = CommandRun.run(new StatusCommand(), "--config",
          config.toString(), "--group", "metrics");
      long tookMs = (System.nanoTime() - t0) / 1_000_000;
      assertEquals(1, down.code(), down.out() + down.err());
      assertTrue(down.out().matches("(?s).*\nO +127\\.0\\.0\\.1:\\d+ +DOWN .*"), down.out());
      assertTrue(down.out().contains("DCs with no instance answering: [O]"), down.out());
      assertTrue(down.out().matches("(?s).*\nV1 +127\\.0\\.0\\.1:\\d+ +up .*"), down.out());
      // One request timeout (plus the tool's start and the 1 s sample interval it overlaps).
      assertTrue(tookMs < TIMEOUT.toMillis() + 2_500, "status took " + tookMs + " ms");
      System.out.println(down.out());
    }
  }

  private String scrape(URI url) throws Exception {
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(url).timeout(Duration.ofSeconds(5))
        .build(), HttpResponse.BodyHandlers.ofString());
    assertEquals(200, r.statusCode(), url + " answered " + r.statusCode());
    assertTrue(r.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));
    return r.body();
  }

  /** The sum of every sample of {@code name} (over all label sets). */
  private static double sample(String text, String name) {
    double sum = 0;
    boolean found = false;
    for (String line : text.split("\n")) {
      if (line.startsWith(name + "{") || line.startsWith(name + " ")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        found = true;
      }
    }
    assertTrue(found, name + " not exported");
    return sum;
  }

  private static Set<String> names(String text) {
    Set<String> names = new TreeSet<>();
    for (String line : text.split("\n")) {
      if (!line.startsWith("#") && !line.isBlank()) {
        int end = line.indexOf('{') >= 0 ? line.indexOf('{') : line.indexOf(' ');
        names.add(line.substring(0, end));
      }
    }
    return names;
  }

  /** Adds each exported metric's label names to {@code labels}. */
  private static void labelsOf(String text, Map<String, Set<String>> labels) {
    Pattern label = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"");
    for (String line : text.split("\n")) {
      int brace = line.indexOf('{');
      if (line.startsWith("#") || brace < 0) {
        continue;
      }
      Set<String> names = labels.computeIfAbsent(line.substring(0, brace), k -> new TreeSet<>());
      Matcher m = label.matcher(line.substring(brace, line.lastIndexOf('}')));
      while (m.find()) {
        names.add(m.group(1));
      }
    }
  }

  /** The label names the dashboard's queries select each metric on ({@code m{k="v"}}). */
  private static Map<String, Set<String>> dashboardSelectors() throws Exception {
    JsonNode d = new ObjectMapper().readTree(Path.of("..", "docs", "grafana",
        "paxoscp-dashboard.json").toFile());
    Pattern selector = Pattern.compile("\\b((?:paxoscp|jvm)_[a-z0-9_]+)\\{([^}]*)\\}");
    Pattern name = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(?:=~|!~|!=|=)");
    Map<String, Set<String>> m = new LinkedHashMap<>();
    for (JsonNode panel : d.path("panels")) {
      for (JsonNode target : panel.path("targets")) {
        Matcher s = selector.matcher(target.path("expr").asText());
        while (s.find()) {
          Matcher n = name.matcher(s.group(2));
          while (n.find()) {
            m.computeIfAbsent(s.group(1), k -> new TreeSet<>()).add(n.group(1));
          }
        }
      }
    }
    return m;
  }

  private static Set<String> dashboardMetrics() throws Exception {
    JsonNode d = new ObjectMapper().readTree(Path.of("..", "docs", "grafana",
        "paxoscp-dashboard.json").toFile());
    Set<String> names = new TreeSet<>();
    for (JsonNode panel : d.path("panels")) {
      for (JsonNode target : panel.path("targets")) {
        Matcher m = METRIC.matcher(target.path("expr").asText());
        while (m.find()) {
          names.add(m.group(1));
        }
      }
    }
    return names;
  }
}
