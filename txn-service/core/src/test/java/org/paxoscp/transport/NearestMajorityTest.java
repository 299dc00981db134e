package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class NearestMajorityTest {
  private final Latency paper = Latency.paperRegions();

  @Test
  void majorities() {
    assertEquals(1, NearestMajority.majority(1));
    assertEquals(2, NearestMajority.majority(2));
    assertEquals(2, NearestMajority.majority(3));
    assertEquals(3, NearestMajority.majority(4));
    assertEquals(3, NearestMajority.majority(5));
  }

  @Test
  void paperTopologyVoc() {
    List<String> voc = List.of("V", "O", "C");
    assertEquals(90_000, NearestMajority.rttMicros(paper, voc, "V"));
    assertEquals(20_000, NearestMajority.rttMicros(paper, voc, "O"));
    assertEquals(20_000, NearestMajority.rttMicros(paper, voc, "C"));
  }

  @Test
  void overriddenPairChangesTheNearestMajority() {
    List<String> voc = List.of("V", "O", "C");
    Latency l = paper.withPair("O", "C", 40_000);
    assertEquals(40_000, NearestMajority.rttMicros(l, voc, "O"));
    assertEquals(90_000, NearestMajority.rttMicros(l, voc, "V"));
    // Closer than the other region: V now reaches O first.
    assertEquals(30_000, NearestMajority.rttMicros(l.withPair("V", "O", 30_000), voc, "V"));
  }

  @Test
  void fiveDcsNeedTheSecondClosest() {
    List<String> dcs = List.of("V1", "V2", "O", "C", "V3");
    // From O: C 20, then V1/V2/V3 at 90: the 2nd closest other DC is 90 ms away.
    assertEquals(90_000, NearestMajority.rttMicros(paper, dcs, "O"));
    // From V1: V2 and V3 at 1.5 ms.
    assertEquals(1_500, NearestMajority.rttMicros(paper, dcs, "V1"));
  }

  @Test
  void singleDcAndUnknownHome() {
    assertEquals(0, NearestMajority.rttMicros(paper, List.of("V"), "V"));
    assertThrows(IllegalArgumentException.class,
        () -> NearestMajority.rttMicros(paper, List.of("V", "O"), "C"));
  }
}
