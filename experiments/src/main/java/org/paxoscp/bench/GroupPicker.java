package org.paxoscp.bench;

import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;
import site.ycsb.generator.ZipfianGenerator;

/**
 * Draws entity groups {@code 0 .. n-1} for {@code paxoscp bench-groups}: uniformly, zipfian
 * with exponent {@value #ZIPF_S} by YCSB's {@link ZipfianGenerator} (the generator {@code paxoscp
 * ycsb} uses; Gray et al.'s method, group 0 the most popular), or each a new one in order. The
 * first two draw from {@link ThreadLocalRandom} (YCSB's generator cannot be seeded), so runs are
 * not repeatable draw for draw, only in distribution.
 *
 * <p>Thread-safe: one picker serves every client thread (as YCSB shares its key chooser).
 */
public final class GroupPicker {
  /** The zipfian exponent (YCSB's default constant). */
  public static final double ZIPF_S = 0.99;

  /** How groups are drawn. */
  public enum Dist {
    UNIFORM, ZIPF,
    /**
     * Each transaction a group never used before: groups 0, 1, 2, ... in order, starting over
     * after the last (a store that only grows, as when every user gets a group of their own).
     */
    NEW;

    /** {@code uniform}, {@code zipf} (also {@code zipfian}) or {@code new}, any case. */
    public static Dist parse(String s) {
      return switch (s.trim().toLowerCase(Locale.ROOT)) {
        case "uniform" -> UNIFORM;
        case "zipf", "zipfian" -> ZIPF;
        case "new" -> NEW;
        default -> throw new IllegalArgumentException("a distribution is uniform, zipf or new, "
            + "was '" + s + "'");
      };
    }

    /** The name used in options and output: {@code uniform} or {@code zipf}. */
    public String label() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final Dist dist;
  private final long groups;
  private final ZipfianGenerator zipf;
  private final java.util.concurrent.atomic.AtomicLong nextNew =
      new java.util.concurrent.atomic.AtomicLong();

  /**
   * A picker over {@code groups} groups. A zipfian one computes the generator's zeta constant
   * here, in time linear in {@code groups} (about 10 ms per million).
   *
   * @throws IllegalArgumentException if {@code groups < 1}
   */
  public GroupPicker(Dist dist, long groups) {
    if (groups < 1) {
      throw new IllegalArgumentException("at least one group, was " + groups);
    }
    this.dist = dist;
    this.groups = groups;
    this.zipf = dist == Dist.ZIPF ? new ZipfianGenerator(0, groups - 1, ZIPF_S) : null;
  }

  /** The next group's index, in {@code [0, groups)}. */
  public long next() {
    if (dist == Dist.NEW) {
      return Math.floorMod(nextNew.getAndIncrement(), groups);
    }
    if (zipf == null) {
      return ThreadLocalRandom.current().nextLong(groups);
    }
    // YCSB's generator can round to one past the end for the last items; clamp.
    return Math.min(groups - 1, Math.max(0, zipf.nextValue()));
  }

  public Dist dist() {
    return dist;
  }

  public long groups() {
    return groups;
  }

  /** The entity group name of index {@code i}: {@code g<i>}. */
  public static String name(long i) {
    return "g" + i;
  }
}
