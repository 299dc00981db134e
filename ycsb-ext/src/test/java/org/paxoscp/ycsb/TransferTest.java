package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
class TransferTest {

  @Test
  void accountsAreDistinctInRangeAndCoverEveryPair() {
    SplittableRandom r = new SplittableRandom(5);
    boolean[][] seen = new boolean[5][5];
    for (int i = 0; i < 10_000; i++) {
      int[] p = Transfer.accounts(5, r);
      assertNotEquals(p[0], p[1]);
      assertTrue(p[0] >= 0 && p[0] < 5 && p[1] >= 0 && p[1] < 5);
      seen[p[0]][p[1]] = true;
    }
    for (int a = 0; a < 5; a++) {
      for (int b = 0; b < 5; b++) {
        assertEquals(a != b, seen[a][b], "pair " + a + "->" + b);
      }
    }
  }

  @Test
  void amountsNeverTakeAnAccountBelowZeroNorExceedTheMaximum() {
    SplittableRandom r = new SplittableRandom(9);
    for (long balance : new long[] {0, 1, 2, 50, 99, 100, 101, 10_000}) {
      for (int i = 0; i < 2000; i++) {
        long amount = Transfer.amount(balance, 100, r);
        assertTrue(amount >= 0 && amount <= balance && amount <= 100,
            "amount " + amount + " from " + balance);
        assertEquals(balance == 0, amount == 0);
      }
    }
    assertEquals(0, Transfer.amount(-5, 100, r), "an overdrawn account gives nothing");
  }

  @Test
  void randomTransfersKeepTheTotalAndEveryBalanceNonNegative() {
    SplittableRandom r = new SplittableRandom(11);
    long[] balances = new long[10];
    java.util.Arrays.fill(balances, 100);
    for (int i = 0; i < 100_000; i++) {
      int[] p = Transfer.accounts(balances.length, r);
      long amount = Transfer.amount(balances[p[0]], 250, r);
      balances[p[0]] -= amount;
      balances[p[1]] += amount;
    }
    assertEquals(1000, java.util.Arrays.stream(balances).sum());
    assertTrue(java.util.Arrays.stream(balances).allMatch(b -> b >= 0));
  }

  @Test
  void badSettingsNameTheirProperty() {
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> Transfer.accounts(1, new SplittableRandom(1))).getMessage()
        .contains(ClosedEconomyWorkload.ACCOUNTS));
    assertTrue(assertThrows(IllegalArgumentException.class,
        () -> Transfer.amount(10, 0, new SplittableRandom(1))).getMessage()
        .contains(ClosedEconomyWorkload.MAX_TRANSFER));
  }
}
