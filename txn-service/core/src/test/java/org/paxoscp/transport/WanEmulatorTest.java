package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.paxoscp.transport.Latency;

class WanEmulatorTest {
  private static final Latency LATENCY = Latency.paperRegions().withPair("V1", "O1", 40_000);

  private static ClusterConfig.Wan wan(double jitter, double loss, double dup, Set<String> cut) {
    return new ClusterConfig.Wan(true, LATENCY, 2_000, jitter, loss, dup, cut);
  }

  @Test
  void offSendsAtOnceAndIgnoresTheConfiguredPartition() {
    ClusterConfig.Wan off = new ClusterConfig.Wan(false, LATENCY, 0, 0.1, 1.0, 1.0, Set.of("O1"));
    WanEmulator e = new WanEmulator(off, "V1");
    assertArrayEquals(new long[] {0}, e.delaysMicros("O1", new SplittableRandom(1)));
  }

  @Test
  void delayIsTheOneWayTimeWithinTheJitter() {
    WanEmulator e = new WanEmulator(wan(0.1, 0, 0, Set.of()), "V1");
    SplittableRandom rnd = new SplittableRandom(7);
    for (int i = 0; i < 1_000; i++) {
      long[] d = e.delaysMicros("O1", rnd);
      assertEquals(1, d.length);
      assertTrue(d[0] >= 18_000 && d[0] <= 22_000, "delay " + d[0]);
    }
    long[] local = new WanEmulator(wan(0, 0, 0, Set.of()), "V1").delaysMicros("V1", rnd);
    assertArrayEquals(new long[] {1_000}, local, "half the local RTT within a DC");
  }

  @Test
  void lossAndDuplicationFollowTheirProbabilities() {
    SplittableRandom rnd = new SplittableRandom(11);
    WanEmulator lossy = new WanEmulator(wan(0, 0.3, 0, Set.of()), "V1");
    WanEmulator dup = new WanEmulator(wan(0, 0, 0.3, Set.of()), "V1");
    int lost = 0;
    int twice = 0;
    int n = 20_000;
    for (int i = 0; i < n; i++) {
      lost += lossy.delaysMicros("O1", rnd).length == 0 ? 1 : 0;
      twice += dup.delaysMicros("O1", rnd).length == 2 ? 1 : 0;
    }
    assertTrue(Math.abs(lost / (double) n - 0.3) < 0.02, "lost " + lost);
    assertTrue(Math.abs(twice / (double) n - 0.3) < 0.02, "duplicated " + twice);
    assertEquals(0, new WanEmulator(wan(0, 1.0, 0, Set.of()), "V1").delaysMicros("V1", rnd).length);
  }

  @Test
  void partitionCutsOnlyBetweenDifferentDcs() {
    SplittableRandom rnd = new SplittableRandom(3);
    WanEmulator e = new WanEmulator(wan(0, 0, 0, Set.of("O1")), "V1");
    assertEquals(0, e.delaysMicros("O1", rnd).length);
    assertEquals(1, e.delaysMicros("V1", rnd).length);
    WanEmulator inside = new WanEmulator(wan(0, 0, 0, Set.of("O1")), "O1");
    assertEquals(0, inside.delaysMicros("V1", rnd).length);
    assertEquals(1, inside.delaysMicros("O1", rnd).length);
    e.setPartitioned(Set.of());
    assertEquals(1, e.delaysMicros("O1", rnd).length);
  }
}
