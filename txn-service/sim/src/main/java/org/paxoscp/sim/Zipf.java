package org.paxoscp.sim;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Zipfian choice over {@code 0..n-1} (item 0 the most popular) by inverse CDF over a precomputed
 * table. Written here rather than taken from a library because it is a dozen lines and must draw
 * from the simulator's own seeded generator.
 */
final class Zipf {
  private final double[] cdf;

  Zipf(int n, double theta) {
    cdf = new double[n];
    double sum = 0;
    for (int i = 0; i < n; i++) {
      sum += 1.0 / Math.pow(i + 1, theta);
      cdf[i] = sum;
    }
    for (int i = 0; i < n; i++) {
      cdf[i] /= sum;
    }
  }

  int next(SplittableRandom random) {
    int i = Arrays.binarySearch(cdf, random.nextDouble());
    return Math.min(cdf.length - 1, i >= 0 ? i : -i - 1);
  }
}
