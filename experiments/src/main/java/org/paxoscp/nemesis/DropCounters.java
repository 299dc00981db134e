package org.paxoscp.nemesis;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The datagrams the nemesis' service processes dropped before any handler, by reason (the
 * metric {@code paxoscp_transport_dropped_total{reason=...}}: stale, replay, misdirected,
 * bad_mac, ...), read over HTTP from each process's {@code /metrics}. A process counts from
 * zero each time it starts, so a process's counts are read just before it is killed
 * ({@link #beforeKill}) and kept; the total adds what the live processes count at the end.
 * What a process dropped between its last reading and a death the nemesis did not cause is
 * not seen, so the totals are a lower bound.
 *
 * <p>Used from the nemesis' one driving thread.
 */
final class DropCounters {
  static final String METRIC = "paxoscp_transport_dropped_total";
  private static final Duration TIMEOUT = Duration.ofSeconds(2);

  private final HttpClient http = HttpClient.newBuilder().connectTimeout(TIMEOUT).build();
  private final Map<String, URI> endpoints = new LinkedHashMap<>();
  /** What processes counted before they were killed, summed. */
  private final SortedMap<String, Long> before = new TreeMap<>();
  /** Processes whose counts could not be read, and why. */
  private final List<String> unread = new ArrayList<>();

  /**
   * The totals at the end of a run.
   *
   * @param byReason datagrams dropped, by reason, summed over every process and lifetime read
   * @param unread processes (at a kill or at the end) whose counters could not be read, and why
   */
  record Totals(SortedMap<String, Long> byReason, List<String> unread) {}

  /** Process {@code name} serves its metrics at {@code metrics} ({@code http://host:port/metrics}). */
  void register(String name, URI metrics) {
    endpoints.put(name, metrics);
  }

  /** Reads and keeps process {@code name}'s counts: it is about to be killed. */
  void beforeKill(String name) {
    read(name).forEach((reason, n) -> before.merge(reason, n, Long::sum));
  }

  /** What every process dropped: the counts kept at kills plus the live processes' counts now. */
  Totals total() {
    SortedMap<String, Long> sum = new TreeMap<>(before);
    for (String name : endpoints.keySet()) {
      read(name).forEach((reason, n) -> sum.merge(reason, n, Long::sum));
    }
    return new Totals(sum, List.copyOf(unread));
  }

  /**
   * The store requests that failed, summed over the live processes whose names pass {@code
   * processes} ({@code paxoscp_store_errors_total}, every operation and kind); a process that
   * cannot be read counts nothing.
   */
  long storeErrors(java.util.function.Predicate<String> processes) {
    long n = 0;
    for (String name : endpoints.keySet()) {
      if (!processes.test(name)) {
        continue;
      }
      String text = fetch(name, false);
      for (String line : text.split("\n")) {
        if (line.startsWith(STORE_ERRORS + "{")) {
          String[] rest = line.substring(line.lastIndexOf('}') + 1).trim().split("\\s+");
          try {
            n += (long) Double.parseDouble(rest[0]);
          } catch (NumberFormatException e) {
            // not a sample
          }
        }
      }
    }
    return n;
  }

  static final String STORE_ERRORS = "paxoscp_store_errors_total";

  private Map<String, Long> read(String name) {
    String text = fetch(name, true);
    return text.isEmpty() ? Map.of() : parse(text);
  }

  /** Process {@code name}'s metrics text; empty if unreadable (noted when {@code note}). */
  private String fetch(String name, boolean note) {
    URI uri = endpoints.get(name);
    if (uri == null) {
      return "";
    }
    try {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(TIMEOUT).GET()
          .build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        if (note) {
          unread.add(name + ": HTTP " + r.statusCode());
        }
        return "";
      }
      return r.body();
    } catch (IOException e) {
      if (note) {
        unread.add(name + ": " + e);
      }
      return "";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      if (note) {
        unread.add(name + ": interrupted");
      }
      return "";
    }
  }

  /**
   * The dropped datagrams by reason in a Prometheus text exposition: the samples of
   * {@value #METRIC} summed by their {@code reason} label.
   */
  static SortedMap<String, Long> parse(String text) {
    SortedMap<String, Long> m = new TreeMap<>();
    for (String line : text.split("\n")) {
      if (!line.startsWith(METRIC + "{")) {
        continue;
      }
      int at = line.indexOf("{reason=\"");
      if (at < 0) {
        at = line.indexOf(",reason=\"");
      }
      at = at < 0 ? -1 : at + 1;
      int end = at < 0 ? -1 : line.indexOf('"', at + 8);
      int labelsEnd = line.lastIndexOf('}');
      if (end < 0 || labelsEnd < end) {
        continue;
      }
      String reason = line.substring(at + 8, end);
      // name{labels} value [timestamp]
      String[] rest = line.substring(labelsEnd + 1).trim().split("\\s+");
      double n;
      try {
        n = Double.parseDouble(rest[0]);
      } catch (NumberFormatException e) {
        continue;
      }
      m.merge(reason, (long) n, Long::sum);
    }
    return m;
  }
}
