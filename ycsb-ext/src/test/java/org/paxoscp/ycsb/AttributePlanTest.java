package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class AttributePlanTest {

  @Test
  void transactionsHaveKOperationsOnAttributesInRange() {
    AttributePlan plan = new AttributePlan(20, 10, 0.5, "uniform");
    SplittableRandom r = new SplittableRandom(1);
    for (int t = 0; t < 1000; t++) {
      List<AttributePlan.Op> ops = plan.next(r);
      assertEquals(10, ops.size());
      for (AttributePlan.Op op : ops) {
        assertTrue(op.attribute() >= 0 && op.attribute() < 20, "attribute " + op.attribute());
      }
    }
  }

  @Test
  void readWriteMixFollowsTheReadProportion() {
    for (double fraction : new double[] {0.0, 0.2, 0.5, 1.0}) {
      AttributePlan plan = new AttributePlan(100, 10, fraction, "uniform");
      SplittableRandom r = new SplittableRandom(7);
      int reads = 0;
      int n = 0;
      for (int t = 0; t < 2000; t++) {
        for (AttributePlan.Op op : plan.next(r)) {
          reads += op.read() ? 1 : 0;
          n++;
        }
      }
      assertEquals(fraction, (double) reads / n, 0.02, "read share for " + fraction);
    }
  }

  @Test
  void uniformCoversEveryAttributeEvenlyAndZipfianSkews() {
    int attributes = 50;
    int[] uniform = histogram(new AttributePlan(attributes, 1, 0.5, "uniform"), attributes);
    int[] zipf = histogram(new AttributePlan(attributes, 1, 0.5, "zipfian"), attributes);
    int draws = 50_000;
    for (int a = 0; a < attributes; a++) {
      assertTrue(uniform[a] > 0.7 * draws / attributes && uniform[a] < 1.3 * draws / attributes,
          "uniform count of attribute " + a + ": " + uniform[a]);
    }
    // Zipfian: the most popular attribute is drawn far more often than under uniform.
    assertTrue(zipf[0] > 5 * draws / attributes, "zipfian head " + zipf[0]);
    assertTrue(zipf[0] > zipf[attributes - 1] * 5, "zipfian head against tail");
  }

  private static int[] histogram(AttributePlan plan, int attributes) {
    int[] h = new int[attributes];
    SplittableRandom r = new SplittableRandom(3);
    for (int i = 0; i < 50_000; i++) {
      h[plan.next(r).get(0).attribute()]++;
    }
    return h;
  }

  @Test
  void badSettingsNameTheirProperty() {
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> new AttributePlan(0, 10, 0.5, "uniform")).getMessage()
        .contains(AttributeWorkload.ATTRIBUTES));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> new AttributePlan(10, 10, 1.5, "uniform")).getMessage()
        .contains(AttributeWorkload.READ_PROPORTION));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> new AttributePlan(10, 10, 0.5, "gaussian")).getMessage()
        .contains(AttributeWorkload.DISTRIBUTION));
  }
}
