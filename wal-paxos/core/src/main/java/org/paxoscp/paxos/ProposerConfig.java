package org.paxoscp.paxos;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.paxoscp.config.ConfigKey;
import org.paxoscp.config.ConfigKeys;

/**
 * Settings of a {@link Proposer}. All durations are in microseconds of whatever clock drives the
 * proposer (virtual time in the simulator, wall-clock time in the client).
 *
 * @param protocol BASIC or CP
 * @param dcs the DC names, in the index order used for messages; D = dcs.size()
 * @param phaseTimeoutMicros how long a PREPARE, ACCEPT or grant request waits for a quorum
 *     (the paper used 2 s)
 * @param backoffBaseMicros the first randomized back-off bound before a retry; doubles per retry
 * @param backoffMaxMicros the largest back-off bound
 * @param maxAttemptsPerPosition ballots tried at one position before giving up
 * @param maxPromotions the cap on promotions (Paxos-CP), or -1 for no cap
 * @param graceFraction after a majority of promises, how long to wait for the remaining replies,
 *     as a fraction of the time the majority took (more replies make combination possible)
 * @param exhaustiveCombinationLimit up to this many candidate entries, combination searches every
 *     subset and order; beyond it a greedy pass is used (section 5.2); at most 10
 * @param maxValueBytes the largest encoded log value the transport can carry; combination stops
 *     adding entries before a value outgrows it
 */
public record ProposerConfig(
    Protocol protocol,
    List<String> dcs,
    long phaseTimeoutMicros,
    long backoffBaseMicros,
    long backoffMaxMicros,
    int maxAttemptsPerPosition,
    int maxPromotions,
    double graceFraction,
    int exhaustiveCombinationLimit,
    int maxValueBytes) {

  public ProposerConfig {
    dcs = List.copyOf(dcs);
    if (dcs.isEmpty()) {
      throw new IllegalArgumentException("at least one DC is needed");
    }
    if (dcs.stream().distinct().count() != dcs.size()) {
      throw new IllegalArgumentException("DC names must be distinct: " + dcs);
    }
    if (phaseTimeoutMicros <= 0 || backoffBaseMicros <= 0 || backoffMaxMicros < backoffBaseMicros) {
      throw new IllegalArgumentException("timeouts and back-off must be positive");
    }
    if (maxAttemptsPerPosition < 1) {
      throw new IllegalArgumentException("maxAttemptsPerPosition must be >= 1");
    }
    if (maxPromotions < -1) {
      throw new IllegalArgumentException("maxPromotions must be >= 0, or -1 for no cap");
    }
    if (graceFraction < 0 || graceFraction > 10) {
      throw new IllegalArgumentException("graceFraction must be in [0, 10]");
    }
    if (exhaustiveCombinationLimit < 0 || exhaustiveCombinationLimit > 10) {
      // The search is factorial in this number.
      throw new IllegalArgumentException("exhaustiveCombinationLimit must be in [0, 10]");
    }
    if (maxValueBytes < 64) {
      throw new IllegalArgumentException("maxValueBytes must be >= 64");
    }
  }

  public static final ConfigKey<Duration> PHASE_TIMEOUT = ConfigKey.millis(
      "paxoscp.proposer.phase.timeout.ms", 2_000, 1, Integer.MAX_VALUE,
      "how long a client proposer's PREPARE, ACCEPT or grant phase waits for a quorum (the "
          + "paper used 2 s)");
  public static final ConfigKey<Duration> BACKOFF_BASE = ConfigKey.millis(
      "paxoscp.proposer.backoff.base.ms", 5, 1, Integer.MAX_VALUE,
      "first randomized back-off bound before a proposer retries a position; doubles per retry");
  public static final ConfigKey<Duration> BACKOFF_MAX = ConfigKey.millis(
      "paxoscp.proposer.backoff.max.ms", 200, 1, Integer.MAX_VALUE,
      "largest back-off bound (at least the base)");
  public static final ConfigKey<Integer> MAX_ATTEMPTS = ConfigKey.integer(
      "paxoscp.proposer.max.attempts.per.position", 6, 1, 1_000,
      "ballots a proposer tries at one position before it gives up");
  public static final ConfigKey<Integer> MAX_PROMOTIONS = ConfigKey.integer(
      "paxoscp.proposer.max.promotions", -1, -1, 1_000_000,
      "cap on Paxos-CP promotions of one transaction; -1 for none");
  public static final ConfigKey<Double> GRACE_FRACTION = ConfigKey.decimal(
      "paxoscp.proposer.grace.fraction", 0.5, 0, 10,
      "after a majority of promises, how long to wait for the others, as a fraction of the time "
          + "the majority took (more replies, more combination)");
  public static final ConfigKey<Integer> EXHAUSTIVE_COMBINATION = ConfigKey.integer(
      "paxoscp.proposer.exhaustive.combination.limit", 6, 0, 10,
      "up to this many candidate entries combination tries every subset and order; beyond it "
          + "a greedy pass");

  /** The proposer's keys (every process of a cluster reads them from the cluster file). */
  public static final ConfigKeys KEYS = new ConfigKeys("Proposer (every client and service)",
      PHASE_TIMEOUT, BACKOFF_BASE, BACKOFF_MAX, MAX_ATTEMPTS, MAX_PROMOTIONS, GRACE_FRACTION,
      EXHAUSTIVE_COMBINATION);

  /** The defaults of {@link #KEYS} (the paper's settings: 2 s phase timeout, no promotion cap). */
  public static ProposerConfig defaults(Protocol protocol, List<String> dcs) {
    return fromProperties(protocol, dcs, Map.of());
  }

  /**
   * The settings of {@link #KEYS} in {@code props} (defaults for the others); no limit on the
   * value size.
   *
   * @throws IllegalArgumentException naming the key of an invalid value
   */
  public static ProposerConfig fromProperties(Protocol protocol, List<String> dcs,
      Map<String, String> props) {
    long base = micros(BACKOFF_BASE.from(props));
    long max = micros(BACKOFF_MAX.from(props));
    if (max < base) {
      throw new IllegalArgumentException(BACKOFF_MAX.name() + " must be at least "
          + BACKOFF_BASE.name());
    }
    return new ProposerConfig(protocol, dcs, micros(PHASE_TIMEOUT.from(props)), base, max,
        MAX_ATTEMPTS.from(props), MAX_PROMOTIONS.from(props), GRACE_FRACTION.from(props),
        EXHAUSTIVE_COMBINATION.from(props), Integer.MAX_VALUE);
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1000;
  }

  public ProposerConfig withProtocol(Protocol p) {
    return new ProposerConfig(p, dcs, phaseTimeoutMicros, backoffBaseMicros, backoffMaxMicros,
        maxAttemptsPerPosition, maxPromotions, graceFraction, exhaustiveCombinationLimit,
        maxValueBytes);
  }

  public ProposerConfig withMaxPromotions(int cap) {
    return new ProposerConfig(protocol, dcs, phaseTimeoutMicros, backoffBaseMicros,
        backoffMaxMicros, maxAttemptsPerPosition, cap, graceFraction, exhaustiveCombinationLimit,
        maxValueBytes);
  }

  public ProposerConfig withPhaseTimeoutMicros(long t) {
    return new ProposerConfig(protocol, dcs, t, backoffBaseMicros, backoffMaxMicros,
        maxAttemptsPerPosition, maxPromotions, graceFraction, exhaustiveCombinationLimit,
        maxValueBytes);
  }

  /** The same settings with a limit on the encoded size of a proposed value. */
  public ProposerConfig withMaxValueBytes(int bytes) {
    return new ProposerConfig(protocol, dcs, phaseTimeoutMicros, backoffBaseMicros,
        backoffMaxMicros, maxAttemptsPerPosition, maxPromotions, graceFraction,
        exhaustiveCombinationLimit, bytes);
  }

  public int dcCount() {
    return dcs.size();
  }

  /** M = floor(D/2) + 1. */
  public int majority() {
    return dcs.size() / 2 + 1;
  }
}
