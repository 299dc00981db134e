package org.paxoscp.sim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.service.LeaderCombiner;
import org.paxoscp.transport.Latency;

/**
 * Leader combination placing batchers by round trips the services measure themselves (no RTT
 * table given, as on a real WAN): every service ends with the latency model's round trips and
 * leading costs, all agree on one batcher, and the batcher follows where the clients are.
 */
class MeasuredPlacementSimulationTest {
  /** The paper's O, C and V regions: V-O and V-C 90 ms, O-C 20 ms. */
  private static final List<String> DCS = List.of("O", "C", "V1");

  private static SimConfig cluster(long seed) {
    return SimConfig.paperDefaults(Protocol.LEADER, DCS, seed).withWorkload(3, 200, 4, 360)
        .withTiming(1.0, 5_000);
  }

  @Test
  void withClientsOnlyAtAFarDcEveryServiceMeasuresTheModelAndBatchesThere() {
    Simulator sim = new Simulator(cluster(1)).withMeasuredRtts().withClientHomes(List.of("V1"));
    SimResult r = sim.run();
    assertTrue(r.safe() && r.finished(), r.check() + " " + r.oracleViolations());
    for (LeaderCombiner c : combiners(sim)) {
      Latency rtts = c.roundTrips().orElseThrow();
      assertNear(90_000, rtts.rttMicros("O", "V1"));
      assertNear(90_000, rtts.rttMicros("C", "V1"));
      assertNear(20_000, rtts.rttMicros("O", "C"));
      Map<String, Long> lead = c.leaderCosts();
      assertNear(20_000, lead.get("O"));
      assertNear(90_000, lead.get("V1"));
      assertEquals(Optional.of("V1"), c.batcher(), "clients only at V1: V1 batches");
    }
    assertEquals(1, batchers(sim).size(), "one batcher: " + batchers(sim));

    // The same run without probes: nothing known, no batcher by costs.
    Simulator blind = new Simulator(cluster(1)).withoutLeaderCosts()
        .withClientHomes(List.of("V1"));
    assertTrue(blind.run().safe());
    for (LeaderCombiner c : combiners(blind)) {
      assertTrue(c.leaderCosts().isEmpty() && c.batcher().isEmpty());
    }
  }

  @Test
  void withClientsSpreadEveryServiceSettlesOnOneNearBatcherWithoutBouncing() {
    Simulator sim = new Simulator(cluster(2)).withMeasuredRtts();
    SimResult r = sim.run();
    assertTrue(r.safe() && r.finished(), r.check() + " " + r.oracleViolations());
    Map<String, Long> batchers = batchers(sim);
    assertEquals(1, batchers.size(), "the DCs agree on the batcher: " + batchers);
    String b = batchers.keySet().iterator().next();
    // A client in each DC: O or C (57 ms a commit on average) beats V1 (150 ms).
    assertFalse(b.equals("V1"), "batcher " + b);
    for (LeaderCombiner c : combiners(sim)) {
      assertTrue(c.batcherMoves() <= 1, "moves " + c.batcherMoves());
    }
  }

  /**
   * Within 15% of the model's RTT: the simulator delays each message by its one-way time plus
   * 0-20% jitter, so the median round trip is about 10% above the model's.
   */
  private static void assertNear(long expected, long actual) {
    assertTrue(Math.abs(actual - expected) <= expected * 15 / 100,
        "expected about " + expected + " µs, measured " + actual);
  }

  private static List<LeaderCombiner> combiners(Simulator sim) {
    List<LeaderCombiner> out = sim.cluster.dcs().stream()
        .flatMap(d -> d.live.stream()).map(i -> i.service.combiner()).toList();
    assertEquals(DCS.size(), out.size());
    return out;
  }

  /** Each DC's batcher now, counted. */
  private static Map<String, Long> batchers(Simulator sim) {
    Map<String, Long> out = new TreeMap<>();
    for (LeaderCombiner c : combiners(sim)) {
      out.merge(c.batcher().orElse("(no costs)"), 1L, Long::sum);
    }
    return out;
  }
}
