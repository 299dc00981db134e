package org.paxoscp.ycsb;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.random.RandomGenerator;
import site.ycsb.generator.NumberGenerator;
import site.ycsb.generator.UniformLongGenerator;
import site.ycsb.generator.ZipfianGenerator;

/**
 * The shape of one transaction of the paper's attribute workload (section 6): {@code ops}
 * operations, each a read (with probability {@code readFraction}) or a write of an attribute
 * {@code 0 .. attributes-1} drawn from YCSB's uniform or zipfian generator.
 *
 * <p>Thread-safe when the generators are (YCSB's are).
 */
public final class AttributePlan {

  /** One operation of a transaction. */
  public record Op(boolean read, int attribute) {}

  private final int ops;
  private final double readFraction;
  private final NumberGenerator attributes;
  private final int attributeCount;

  /**
   * @param distribution {@code uniform} or {@code zipfian}
   * @throws IllegalArgumentException for a value out of range, naming the property
   */
  public AttributePlan(int attributeCount, int ops, double readFraction, String distribution) {
    if (attributeCount < 1) {
      throw new IllegalArgumentException(AttributeWorkload.ATTRIBUTES + " must be >= 1");
    }
    if (ops < 1) {
      throw new IllegalArgumentException(AttributeWorkload.OPS + " must be >= 1");
    }
    if (!(readFraction >= 0 && readFraction <= 1)) {
      throw new IllegalArgumentException(AttributeWorkload.READ_PROPORTION
          + " must be in [0, 1]");
    }
    this.attributeCount = attributeCount;
    this.ops = ops;
    this.readFraction = readFraction;
    this.attributes = switch (distribution.toLowerCase(Locale.ROOT)) {
      case "uniform" -> new UniformLongGenerator(0, attributeCount - 1);
      case "zipfian" -> new ZipfianGenerator(0, attributeCount - 1);
      default -> throw new IllegalArgumentException(AttributeWorkload.DISTRIBUTION
          + " must be uniform or zipfian, not " + distribution);
    };
  }

  /** The operations of the next transaction; {@code random} decides reads against writes. */
  public List<Op> next(RandomGenerator random) {
    List<Op> out = new ArrayList<>(ops);
    for (int i = 0; i < ops; i++) {
      int a = (int) Math.min(attributeCount - 1, Math.max(0, attributes.nextValue().longValue()));
      out.add(new Op(random.nextDouble() < readFraction, a));
    }
    return out;
  }

  /** The item key of attribute {@code a}. */
  public static String key(int a) {
    return "a" + a;
  }
}
