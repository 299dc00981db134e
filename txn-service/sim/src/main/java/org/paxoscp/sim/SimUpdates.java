package org.paxoscp.sim;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.Updates;

/**
 * The counters and counting sets of the simulated workload ({@link SimConfig#updateShare};
 * docs/simulator.md, "Counters and counting sets in the simulated workload"): which keys they
 * are and how an operation on them is drawn; the client library buffers, commits and asks
 * whether they applied.
 *
 * <p>The keys are few ({@link #COUNTERS} counters, {@link #SETS} counting sets, beside the
 * attribute keys and named apart from them), so that updates of one key meet in one position
 * and transactions that read a counter conflict with those that add to it. Most operations are
 * small adds and set adds or removes; some put or delete the keys (a reset, so that a put and an
 * add of one key meet in a position); a few adds carry a delta near the 64-bit range's end and
 * some resets start a counter near {@link Long#MAX_VALUE}, and a few resets put text where a
 * counter was, so that adds are refused now and then ({@link Updates.Refusal}) and the
 * refusal path runs.
 */
final class SimUpdates {
  /** Counter keys: {@code ctr0 .. ctr(COUNTERS-1)}. */
  static final int COUNTERS = 3;
  /** Counting-set keys: {@code set0 .. set(SETS-1)}. */
  static final int SETS = 2;
  /** The elements a counting set's updates choose from. */
  private static final List<String> ELEMENTS = List.of("a", "b", "c", "d");

  private SimUpdates() {}

  /** One drawn operation on a counter or counting-set key. */
  record Op(String key, Mutation mutation) {}

  static String counterKey(int i) {
    return "ctr" + i;
  }

  static String setKey(int i) {
    return "set" + i;
  }

  /** Whether {@code key} is one of the workload's counter or counting-set keys. */
  static boolean isUpdateKey(String key) {
    return key.startsWith("ctr") || key.startsWith("set");
  }

  /**
   * A write operation on the counters and sets: nine in twenty adds to a counter (one in eight
   * of them with a delta within 1,000 of {@link Long#MAX_VALUE} or {@link Long#MIN_VALUE}, the
   * rest -3..5), five in twenty a set add or remove of one element, three in twenty a put of a
   * counter value (0..9, or within 8 of {@link Long#MAX_VALUE}), two in twenty a delete of a
   * counter or a set, one in twenty a put of text at a counter key. Half of the operations on
   * counters are on the first one ({@link #counter}).
   */
  static Op draw(SplittableRandom rng, String txnId) {
    int r = rng.nextInt(20);
    if (r < 9) {
      return new Op(counter(rng), Mutation.add(delta(rng)));
    }
    if (r < 14) {
      String element = ELEMENTS.get(rng.nextInt(ELEMENTS.size()));
      long d = rng.nextInt(3) == 0 ? -1 : 1;
      return new Op(setKey(rng.nextInt(SETS)), Mutation.setUpdate(Map.of(element, d)));
    }
    if (r < 17) {
      long v = rng.nextBoolean() ? rng.nextInt(10) : Long.MAX_VALUE - rng.nextInt(8);
      return new Op(counter(rng), Mutation.put(Updates.encodeCounter(v)));
    }
    if (r < 19) {
      return new Op(rng.nextBoolean() ? counter(rng) : setKey(rng.nextInt(SETS)),
          Mutation.delete());
    }
    String key = counter(rng);
    return new Op(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
  }

  /**
   * A counter key: the first one half of the time, so that puts and adds of one counter meet
   * in a combined position now and then.
   */
  private static String counter(SplittableRandom rng) {
    return counterKey(rng.nextBoolean() ? 0 : rng.nextInt(COUNTERS));
  }

  private static long delta(SplittableRandom rng) {
    if (rng.nextInt(8) == 0) {
      long off = rng.nextInt(1000);
      return rng.nextBoolean() ? Long.MAX_VALUE - off : Long.MIN_VALUE + off;
    }
    return rng.nextInt(9) - 3;
  }

  /**
   * The key a read of a counter or set reads ({@code getCounter}, {@code getSet}): half of the
   * time, when the transaction has updated some, one of those (an add, then a read of the sum),
   * else any of them.
   */
  static String drawRead(SplittableRandom rng, Map<String, Mutation> writes) {
    List<String> updated = new ArrayList<>();
    writes.forEach((k, m) -> {
      if (m.isUpdate()) {
        updated.add(k);
      }
    });
    if (!updated.isEmpty() && rng.nextBoolean()) {
      return updated.get(rng.nextInt(updated.size()));
    }
    return rng.nextInt(COUNTERS + SETS) < COUNTERS ? counter(rng) : setKey(rng.nextInt(SETS));
  }
}
