package org.paxoscp.ycsb;

import java.util.random.RandomGenerator;

/**
 * The choices of one closed-economy transfer (YCSB+T): two distinct accounts of one entity group,
 * and an amount never larger than the source holds, so that no balance goes below zero and the
 * group's total never changes.
 */
public final class Transfer {
  private Transfer() {}

  /** Two distinct accounts of {@code accounts}, uniformly: {from, to}. */
  public static int[] accounts(int accounts, RandomGenerator random) {
    if (accounts < 2) {
      throw new IllegalArgumentException(ClosedEconomyWorkload.ACCOUNTS + " must be >= 2");
    }
    int from = random.nextInt(accounts);
    int to = random.nextInt(accounts - 1);
    return new int[] {from, to >= from ? to + 1 : to};
  }

  /**
   * The amount to move out of an account holding {@code fromBalance}: uniform in
   * {@code [1, min(maxAmount, fromBalance)]}, or 0 when the account is empty (or overdrawn, which
   * a correct system never shows).
   */
  public static long amount(long fromBalance, long maxAmount, RandomGenerator random) {
    if (maxAmount < 1) {
      throw new IllegalArgumentException(ClosedEconomyWorkload.MAX_TRANSFER + " must be >= 1");
    }
    long cap = Math.min(maxAmount, fromBalance);
    return cap <= 0 ? 0 : 1 + random.nextLong(cap);
  }
}
