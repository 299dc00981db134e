package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.paxoscp.transport.Message.RttRow;

class RoundTripsTest {
  private static final List<String> DCS = List.of("V", "O", "C");

  /** {@code n} samples of {@code rtt} µs from {@code at} to {@code peer}. */
  private static void samples(RoundTrips at, String peer, long rtt, int n) {
    for (int i = 0; i < n; i++) {
      at.sample(peer, rtt);
    }
  }

  private static Map<String, Long> row(RoundTrips t, String dc) {
    return t.rows().stream().filter(r -> r.dc().equals(dc)).findFirst().orElseThrow()
        .rttMicros();
  }

  /** Three DCs that measured each other (V-O, V-C 90 ms, O-C 20 ms) and exchanged rows. */
  private static RoundTrips[] measured() {
    RoundTrips v = new RoundTrips("V", DCS);
    RoundTrips o = new RoundTrips("O", DCS);
    RoundTrips c = new RoundTrips("C", DCS);
    samples(v, "O", 90_000, 3);
    samples(v, "C", 91_000, 3);
    samples(o, "V", 92_000, 3);
    samples(o, "C", 20_000, 3);
    samples(c, "V", 90_000, 3);
    samples(c, "O", 20_400, 3);
    for (RoundTrips a : List.of(v, o, c)) {
      for (RoundTrips b : List.of(v, o, c)) {
        a.merge(b.rows());
      }
    }
    return new RoundTrips[] {v, o, c};
  }

  @Test
  void theEstimateIsTheMedianOfRecentSamplesAndIsPublishedAfterAFew() {
    RoundTrips v = new RoundTrips("V", DCS);
    v.sample("O", 300_000);
    v.sample("O", 91_040);
    assertTrue(v.rows().isEmpty(), "not published before " + RoundTrips.MIN_SAMPLES);
    v.sample("O", 89_000);
    assertEquals(Map.of("O", 91_000L), row(v, "V"), "the median, rounded to 0.1 ms");
    // One slow answer does not move it; a window of larger samples does (more than 5%).
    v.sample("O", 400_000);
    assertEquals(Map.of("O", 91_000L), row(v, "V"));
    samples(v, "O", 97_500, RoundTrips.WINDOW);
    assertEquals(Map.of("O", 97_500L), row(v, "V"));
    assertEquals(2, v.published());
  }

  @Test
  void smallChangesAreNotPublished() {
    RoundTrips o = new RoundTrips("O", DCS);
    samples(o, "C", 20_000, 3);
    samples(o, "C", 20_900, RoundTrips.WINDOW);
    assertEquals(Map.of("C", 20_000L), row(o, "O"), "0.9 ms is 4.5% of 20 ms: not published again");
    assertEquals(1, o.published());
  }

  @Test
  void dcsThatHoldTheSameRowsAgreeOnOneTable() {
    RoundTrips[] t = measured();
    for (RoundTrips a : t) {
      LeaderCosts c = a.costs();
      assertTrue(c.known());
      assertEquals(t[0].costs().lead(), c.lead());
      for (String x : DCS) {
        for (String y : DCS) {
          assertEquals(t[0].costs().rtts().rttMicros(x, y), c.rtts().rttMicros(x, y));
        }
      }
      // The mean of what the two ends published: V-O (90 + 92) / 2.
      assertEquals(91_000, c.rtts().rttMicros("V", "O"));
      assertEquals(90_500, c.rtts().rttMicros("C", "V"));
      assertEquals(20_200, c.rtts().rttMicros("O", "C"));
      assertEquals(Map.of("V", 90_500L, "O", 20_200L, "C", 20_200L), c.lead());
    }
  }

  @Test
  void noCostsUntilEveryPairIsKnown() {
    RoundTrips v = new RoundTrips("V", DCS);
    samples(v, "O", 90_000, 3);
    assertFalse(v.costs().known());
    samples(v, "C", 90_000, 3);
    assertFalse(v.costs().known(), "O-C is not known yet");
    v.merge(List.of(new RttRow("C", 1, Map.of("O", 20_000L))));
    assertTrue(v.costs().known());
  }

  @Test
  void theNewestRowOfADcWinsAndEqualVersionsTieTheSameWayEverywhere() {
    RttRow a = new RttRow("O", 4, Map.of("V", 90_000L, "C", 20_000L));
    RttRow b = new RttRow("O", 4, Map.of("V", 88_000L, "C", 20_000L));
    RttRow older = new RttRow("O", 3, Map.of("V", 10_000L, "C", 10_000L));
    RoundTrips x = new RoundTrips("V", DCS);
    RoundTrips y = new RoundTrips("C", DCS);
    x.merge(List.of(a));
    x.merge(List.of(b, older));
    y.merge(List.of(older, b));
    y.merge(List.of(a));
    assertEquals(row(x, "O"), row(y, "O"));
    // A row from a DC not in the cluster is ignored.
    x.merge(List.of(new RttRow("Z", 9, Map.of("V", 1L))));
    assertTrue(x.rows().stream().noneMatch(r -> r.dc().equals("Z")));
  }

  @Test
  void aClusterTooLargeForOneProbeIsNotMeasured() {
    List<String> many = java.util.stream.IntStream.range(0, RttRow.MAX_DCS + 1)
        .mapToObj(i -> "D" + i).toList();
    assertFalse(new RoundTrips("D0", many).measurable());
    assertTrue(new RoundTrips("V", DCS).measurable());
  }

  @Test
  void twoInstancesOfOneDcSettleOnOneRow() {
    RoundTrips first = new RoundTrips("O", DCS);
    RoundTrips second = new RoundTrips("O", DCS);
    samples(first, "V", 90_000, 3);
    second.merge(first.rows());
    // The second instance measures about the same: it publishes nothing of its own.
    samples(second, "V", 91_000, 3);
    assertEquals(0, second.published());
    assertEquals(first.rows(), second.rows());
    // It measures something new (C): its row is the first's plus C, one version up.
    samples(second, "C", 20_000, 3);
    RttRow mine = second.rows().get(0);
    assertEquals(2, mine.version());
    assertEquals(Map.of("V", 90_000L, "C", 20_000L), mine.rttMicros());
  }
}
