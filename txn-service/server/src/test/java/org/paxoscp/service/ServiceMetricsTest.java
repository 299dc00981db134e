package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.LogCollector;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.service.metrics.MeteredKvStore;
import org.paxoscp.store.ForwardingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.testing.Poll;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

/**
 * The service's meters move for each outcome, on three real services over an in-process
 * network: commits (votes, recorded entries), begins, bad requests, TOO_OLD answers; the status
 * reply reports them with the group's positions; with metrics off there are none; and the
 * metered store counts a store that does not answer.
 */
@Timeout(60)
class ServiceMetricsTest {
  private static final List<String> DCS = List.of("V", "O", "C");
  private final Map<String, InMemoryKvStore> stores = new LinkedHashMap<>();
  private final List<ServiceRunner> runners = new ArrayList<>();
  private InProcessTransport.Network net;
  private ScheduledExecutorService timers;

  @BeforeEach
  void start() {
    net = new InProcessTransport.Network();
    timers = Executors.newSingleThreadScheduledExecutor();
  }

  @AfterEach
  void stop() {
    runners.forEach(ServiceRunner::close);
    net.close();
    timers.shutdownNow();
  }

  private void startServices(Map<String, String> extra) {
    for (String dc : DCS) {
      Map<String, String> p = ServiceRunnerTest.props(dc);
      p.put(ServiceConfig.METRICS_JMX.name(), "false");
      p.putAll(extra);
      InMemoryKvStore store = new InMemoryKvStore();
      stores.put(dc, store);
      runners.add(ServiceRunner.start(ServiceConfig.fromProperties(p),
          ServiceRunnerTest.inProcess(net), store));
    }
  }

  private void commit(int n, long readPosition) throws Exception {
    ProposerDriver driver = new ProposerDriver(net.transport("O"), DCS, Scheduler.of(timers),
        Duration.ofMillis(300));
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("k", Mutation.put(("v" + n).getBytes(StandardCharsets.UTF_8)));
    Proposer p = new Proposer(ProposerConfig.defaults(Protocol.CP, DCS)
        .withPhaseTimeoutMicros(300_000), "g", ProposerId.of(100 + n),
        new LogEntry("t" + n, "O", readPosition, new TreeSet<>(), w), readPosition + 1,
        OptionalInt.empty(), new SplittableRandom(n));
    assertEquals(Outcome.Status.COMMITTED, driver.run(p).get(20, TimeUnit.SECONDS).status());
  }

  private Message ask(String dc, Message request) throws Exception {
    return net.transport("client").request(dc, request, Duration.ofSeconds(10))
        .get(20, TimeUnit.SECONDS);
  }

  private String statusField(String dc, String group, String field) {
    try {
      return ((Message.StatusReply) ask(dc, new Message.StatusRequest(group))).fields()
          .get(field);
    } catch (Exception e) {
      throw new IllegalStateException(e);
    }
  }

  private static long count(MeterRegistry r, String type, String result) {
    return r.find("paxoscp.service.request").tag("type", type).tag("result", result).timers()
        .stream().mapToLong(Timer::count).sum();
  }

  private MeterRegistry registry(String dc) {
    return runners.get(DCS.indexOf(dc)).metrics().orElseThrow().registry();
  }

  @Test
  void requestsAreCountedByTypeAndResultAndStatusReportsThem() throws Exception {
    startServices(Map.of());
    for (int i = 0; i < 3; i++) {
      commit(i, i);
    }
    // Every DC voted; a majority accepted each position and every DC is sent the APPLYs.
    long accepted = 0;
    for (String dc : DCS) {
      accepted += count(registry(dc), "accept", "accepted");
    }
    assertTrue(accepted >= 6, "ACCEPTs accepted at a majority of 3 positions: " + accepted);
    assertEquals(3, ask("V", new Message.BeginRequest("g", 3)) instanceof Message.BeginReply b
        ? b.position() : -1);
    assertEquals(1, count(registry("V"), "begin_request", "ok"));
    assertEquals(3.0, registry("V").find("paxoscp.service.recorded.positions").functionCounter()
        .count(), "three positions recorded at V");
    assertEquals(3.0, registry("V").find("paxoscp.service.recorded.entries").functionCounter()
        .count(), "one entry each");
    // Every DC recorded each position once, however many APPLYs of it arrived.
    for (String dc : DCS) {
      Poll.until(dc + " recorded 3", Duration.ofSeconds(5), () -> registry(dc)
          .find("paxoscp.service.recorded.positions").functionCounter().count() == 3.0);
    }

    Message bad = ask("V", new Message.ReadRequest("g", 3, List.of("bad\0key")));
    assertTrue(bad instanceof Message.ErrorReply e && e.code() == Message.ErrorCode.BAD_REQUEST,
        bad.toString());
    assertEquals(1, count(registry("V"), "read_request", "bad_request"));

    // Positions 1 and 2 collected at V: requests for them are answered TOO_OLD and counted.
    assertEquals(2, new LogCollector(stores.get("V")).advance("g", 2));
    Message old = ask("V", new Message.ReadRequest("g", 1, List.of("k")));
    assertTrue(old instanceof Message.ErrorReply e && e.code() == Message.ErrorCode.TOO_OLD,
        old.toString());
    ask("V", new Message.ReadRequest("g", 2, List.of("k")));
    assertEquals(2, count(registry("V"), "read_request", "too_old"));

    Message status = ask("V", new Message.StatusRequest("g"));
    Map<String, String> f = ((Message.StatusReply) status).fields();
    assertEquals("V", f.get("dc"));
    assertEquals("on", f.get("metrics"));
    assertEquals("3", f.get("group.applied"));
    assertEquals("2", f.get("group.gc_watermark"));
    assertEquals("O", f.get("group.leader"), "O committed last: it leads the next position");
    assertEquals("3", f.get("recorded_entries"));
    assertEquals("2", f.get("too_old"));
    assertEquals("0", f.get("errors"));
    assertTrue(Long.parseLong(f.get("requests")) >= 6, f.toString());
    assertTrue(f.containsKey("begin_p99_ms"), f.toString());

    String text = runners.get(0).metrics().orElseThrow().scrape();
    assertTrue(text.contains("paxoscp_service_request_seconds_count{dc=\"V\",result=\"too_old\","
        + "type=\"read_request\"} 2"), text);
    assertTrue(text.contains("paxoscp_store_request_seconds_count{dc=\"V\",op=\"check_and_write\""),
        "store requests are timed");
  }

  @Test
  void withMetricsOffThereAreNoneAndStatusSaysSo() throws Exception {
    startServices(Map.of(ServiceConfig.METRICS.name(), "false"));
    commit(0, 0);
    assertEquals(Optional.empty(), runners.get(0).metrics());
    Map<String, String> f = ((Message.StatusReply) ask("V", new Message.StatusRequest("g")))
        .fields();
    assertEquals("off", f.get("metrics"));
    assertTrue(!f.containsKey("requests") && !f.containsKey("errors"), f.toString());
    // A group's positions need no metrics (V applies position 1 when its APPLY arrives).
    Poll.until("V reports position 1 applied", Duration.ofSeconds(5),
        () -> "1".equals(statusField("V", "g", "group.applied")));
  }

  @Test
  void theMeteredStoreCountsAStoreThatDoesNotAnswer() {
    SimpleMeterRegistry r = new SimpleMeterRegistry();
    KvStore down = new ForwardingKvStore(new InMemoryKvStore()) {
      @Override
      public Optional<Cell> read(Table table, byte[] row, String column, long maxTimestamp) {
        throw new StoreUnavailableException("store of V: no answer in time");
      }
    };
    KvStore metered = new MeteredKvStore(down, r);
    assertThrows(StoreUnavailableException.class,
        () -> metered.read(KvStore.Table.META, new byte[] {1}, "c", KvStore.LATEST));
    metered.write(KvStore.Table.META, new byte[] {1}, 1, Map.of("c", new byte[] {2}));
    assertEquals(1.0, r.find("paxoscp.store.errors").tag("op", "read")
        .tag("error", "unavailable").counter().count());
    assertEquals(1, r.find("paxoscp.store.request").tag("op", "write").timer().count());
    assertEquals(0.0, r.find("paxoscp.store.errors").tag("op", "write")
        .tag("error", "unavailable").counter().count());
  }
}
