package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.InProcessTransport;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.ProposerDriver;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

/** Service processes started from configuration, wired over an in-process network. */
@Timeout(60)
class ServiceRunnerTest {
  private static final List<String> DCS = List.of("V", "O", "C");

  static Map<String, String> props(String dc) {
    Map<String, String> p = new HashMap<>();
    p.put("paxoscp.dcs", String.join(",", DCS));
    p.put("paxoscp.key", "00112233445566778899aabbccddeeff");
    for (int i = 0; i < DCS.size(); i++) {
      p.put("paxoscp.dc." + DCS.get(i) + ".endpoints", "127.0.0.1:" + (17001 + i));
    }
    p.put("paxoscp.request.timeout.ms", "300");
    p.put(ServiceConfig.DC.name(), dc);
    p.put(ServiceConfig.STORE.name(), "memory");
    p.put(ServiceConfig.MEMORY_NEW.name(), "true");
    return p;
  }

  static ServiceTransportFactory inProcess(InProcessTransport.Network net) {
    return (cluster, dc, bind, endpoints, handler, threads) -> {
      net.register(dc, handler);
      return new ServiceTransportFactory.Bound(net.transport(dc), bind);
    };
  }

  /** Commits k = v at position 1 of group g from DC O, as a proposer of id {@code proposer}. */
  private static void commitFirst(InProcessTransport.Network net,
      ScheduledExecutorService timers, long proposer) throws Exception {
    ProposerDriver client = new ProposerDriver(net.transport("O"), DCS, Scheduler.of(timers),
        Duration.ofMillis(300));
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("k", Mutation.put("v".getBytes(StandardCharsets.UTF_8)));
    Proposer p = new Proposer(ProposerConfig.defaults(Protocol.CP, DCS)
        .withPhaseTimeoutMicros(300_000), "g", ProposerId.of(proposer), new LogEntry("t1", "O", 0,
        new TreeSet<>(), w), 1, OptionalInt.empty(), new SplittableRandom(1));
    assertEquals(Outcome.Status.COMMITTED, client.run(p).get(20, TimeUnit.SECONDS).status());
  }

  @Test
  void threeConfiguredServicesCommitAndServeBegin() throws Exception {
    List<ServiceRunner> runners = new ArrayList<>();
    ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
    try (InProcessTransport.Network net = new InProcessTransport.Network()) {
      for (String dc : DCS) {
        runners.add(ServiceRunner.start(ServiceConfig.fromProperties(props(dc)), inProcess(net)));
      }
      assertEquals(17002, runners.get(1).boundAddress().getPort());
      commitFirst(net, timers, 77);

      // C may not have the APPLY yet; the client's commit position makes it catch up.
      Message m = net.transport("client").request("C", new Message.BeginRequest("g", 1),
          Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertEquals(new Message.BeginReply("g", 1, "O"), m);
      for (ServiceRunner r : runners) {
        assertEquals(0, r.service().conflicts());
      }
    } finally {
      runners.forEach(ServiceRunner::close);
      runners.forEach(ServiceRunner::close);
      timers.shutdownNow();
    }
  }

  @Test
  void aRestartedMemoryStoreServiceRefusesUntilRebuiltFromItsPeers() throws Exception {
    List<ServiceRunner> runners = new ArrayList<>();
    ScheduledExecutorService timers = Executors.newSingleThreadScheduledExecutor();
    try (InProcessTransport.Network net = new InProcessTransport.Network()) {
      for (String dc : DCS) {
        runners.add(ServiceRunner.start(ServiceConfig.fromProperties(props(dc)), inProcess(net)));
      }
      commitFirst(net, timers, 78);

      // C's process restarts as a supervisor would restart it: same file, memory.new unset.
      runners.remove(2).close();
      Map<String, String> again = props("C");
      again.remove(ServiceConfig.MEMORY_NEW.name());
      ServiceRunner c = ServiceRunner.start(ServiceConfig.fromProperties(again), inProcess(net));
      runners.add(c);
      assertEquals("lost", c.service().storeState());
      var transport = net.transport("client");
      Message refused = transport.request("C", new Message.BeginRequest("g", 0),
          Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertEquals(Message.ErrorCode.REBUILDING, ((Message.ErrorReply) refused).code(),
          refused.toString());

      // paxoscp dc rebuild's three steps: begin, each group, complete.
      var begun = (Message.RebuildReply) transport.request("C",
          new Message.RebuildRequest("", "", "C", "", false), Duration.ofSeconds(10))
          .get(20, TimeUnit.SECONDS);
      Message group = transport.request("C", new Message.RebuildRequest("g", "", "C",
          begun.rebuildId(), false), Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertEquals("REBUILT", ((Message.RebuildReply) group).outcome(), group.toString());
      transport.request("C", new Message.RebuildRequest("", "", "C", begun.rebuildId(), true),
          Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertEquals("serving", c.service().storeState());
      Message served = transport.request("C", new Message.BeginRequest("g", 1),
          Duration.ofSeconds(10)).get(20, TimeUnit.SECONDS);
      assertEquals(1, ((Message.BeginReply) served).position(), served.toString());
    } finally {
      runners.forEach(ServiceRunner::close);
      timers.shutdownNow();
    }
  }

  @Test
  void aTransportThatCannotOpenLeavesNothingRunning() {
    ServiceConfig c = ServiceConfig.fromProperties(props("V"));
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> ServiceRunner.start(c, (cluster, dc, bind, eps, h, n) -> {
          throw new IllegalStateException("port in use");
        }));
    assertEquals("port in use", e.getMessage());
  }
}
