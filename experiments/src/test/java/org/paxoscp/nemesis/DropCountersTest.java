package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The services' drop counters are read by reason, and kept across a process's kill. */
class DropCountersTest {

  private static final String TEXT = """
      # HELP paxoscp_transport_dropped_total datagrams dropped before any handler, by reason
      # TYPE paxoscp_transport_dropped_total counter
      paxoscp_transport_dropped_total{dc="V1",reason="stale",} 12.0
      paxoscp_transport_dropped_total{reason="replay",dc="V1"} 3.0
      paxoscp_transport_dropped_total{dc="V1",reason="misdirected"} 5.0 1700000000000
      paxoscp_transport_dropped_total{dc="V1",other_reason="x",reason="stale"} 1.0
      paxoscp_transport_dropped_total{dc="V1",reason="bad_mac"} 0.0
      paxoscp_transport_send_failures_total{dc="V1"} 4.0
      """;

  @Test
  void sumsTheDroppedSamplesByReason() {
    assertEquals(Map.of("stale", 13L, "replay", 3L, "misdirected", 5L, "bad_mac", 0L),
        DropCounters.parse(TEXT));
    assertEquals(Map.of(), DropCounters.parse("paxoscp_transport_dropped_total 3.0\n"));
  }

  @Test
  void keepsWhatAProcessCountedBeforeItWasKilled() throws Exception {
    AtomicReference<String> served = new AtomicReference<>(TEXT);
    HttpServer http = HttpServer.create(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4);
    http.createContext("/metrics", exchange -> {
      byte[] body = served.get().getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    http.start();
    try {
      DropCounters drops = new DropCounters();
      drops.register("V1-a", URI.create("http://127.0.0.1:" + http.getAddress().getPort()
          + "/metrics"));
      drops.register("V2-a", URI.create("http://127.0.0.1:1/metrics"));
      drops.beforeKill("V1-a");
      // The restarted process counts from zero.
      served.set("paxoscp_transport_dropped_total{reason=\"stale\"} 2.0\n");
      DropCounters.Totals t = drops.total();
      assertEquals(Map.of("stale", 15L, "replay", 3L, "misdirected", 5L, "bad_mac", 0L),
          t.byReason());
      assertEquals(1, t.unread().size(), t.unread().toString());
      assertTrue(t.unread().get(0).startsWith("V2-a: "), t.unread().toString());

      // Store errors: every sample of the metric, only of the processes asked for.
      served.set("""
          paxoscp_store_errors_total{error="unavailable",op="read"} 4.0
          paxoscp_store_errors_total{error="other",op="write"} 2.0
          paxoscp_store_errors_total_created{op="read"} 1.7E9
          """);
      assertEquals(6, drops.storeErrors(name -> name.startsWith("V1")));
      assertEquals(0, drops.storeErrors(name -> name.startsWith("V2")));
    } finally {
      http.stop(0);
    }
  }
}
