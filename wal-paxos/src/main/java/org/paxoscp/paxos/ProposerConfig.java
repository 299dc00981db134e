package org.paxoscp.paxos;

import java.util.List;

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

  /** The paper's settings: 2 s phase timeout, no promotion cap. */
  public static ProposerConfig defaults(Protocol protocol, List<String> dcs) {
    return new ProposerConfig(protocol, dcs, 2_000_000, 5_000, 200_000, 6, -1, 0.5, 6,
        Integer.MAX_VALUE);
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
