package org.paxoscp.sim;

import java.util.List;
import java.util.Objects;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.transport.Latency;

/**
 * One simulated run: topology, workload and faults. Times are in microseconds of virtual time.
 *
 * @param protocol BASIC or CP
 * @param dcs DC names; a name's first letter (V, O, C) picks its region for {@link Latency}
 * @param latency round-trip times between DCs
 * @param clients number of clients, placed round-robin over the DCs
 * @param attributes number of items in the single entity group
 * @param opsPerTxn operations per transaction
 * @param readFraction fraction of operations that are reads
 * @param zipfian zipfian (theta 0.99) rather than uniform key choice
 * @param scanShare fraction of read operations that are range reads (scans) over the attribute
 *     keys rather than reads of one key ({@link SimClient}); 0 in the paper's workload
 * @param updateShare fraction of write operations that touch the counter and counting-set keys
 *     (mostly commutative updates: adds, set adds and removes; some puts and deletes of those
 *     keys), and of read operations that read one of them with {@code getCounter} semantics
 *     ({@link SimClient}); 0 in the paper's workload
 * @param txns total transactions over all clients
 * @param ratePerClient target transactions per second per client (Poisson arrivals)
 * @param opMicros virtual time one operation takes: sets the read-to-commit window
 * @param serviceMicros time a DC spends on one protocol message (its store operations)
 * @param jitter one-way delay is {@code rtt/2 * (1 + U(0, jitter))}
 * @param faults message and node faults
 * @param proposer proposer settings (the DC list and protocol are taken from this config)
 * @param seed the RNG seed: the same config and seed replay the same run
 */
public record SimConfig(
    Protocol protocol,
    List<String> dcs,
    Latency latency,
    int clients,
    int attributes,
    int opsPerTxn,
    double readFraction,
    boolean zipfian,
    double scanShare,
    double updateShare,
    int txns,
    double ratePerClient,
    long opMicros,
    long serviceMicros,
    double jitter,
    Faults faults,
    ProposerConfig proposer,
    long seed) {

  /**
   * Fault mix.
   *
   * @param loss probability that a message is lost
   * @param duplicate probability that a message is delivered twice
   * @param reorder probability that a message gets an extra delay of up to one maximum RTT
   * @param partitions isolate a random DC from the others for a while, now and then
   * @param crashes clients crash in mid-commit now and then (and come back later)
   * @param outages a random DC goes down for a while, now and then (its store survives)
   * @param restarts a random service instance is killed now and then (its memory and pending
   *     work are lost, the DC's store is kept) and a fresh one starts a little later
   * @param twoInstances one DC is served by two service instances at once, each request going
   *     to either
   * @param targeted the run picks one message type ({@link #TARGETS}, by its seed) and loses
   *     half of the messages of that type, delaying the rest by up to one maximum RTT: the
   *     interleavings where one step of the protocol fails while the others go on
   * @param storeFaults probability that a service's store operation fails: half of the failures
   *     before the operation (nothing done), half after a write (done, reported failed)
   * @param replay late copies of delivered messages, to their destination or another DC's
   *     service ({@link Replay})
   */
  public record Faults(double loss, double duplicate, double reorder, boolean partitions,
      boolean crashes, boolean outages, boolean restarts, boolean twoInstances,
      boolean targeted, double storeFaults, Replay replay) {
    public static final Faults NONE = new Faults(0, 0, 0, false, false, false, false, false);

    /** The message types a targeted run may pick (requests and replies). */
    public static final List<String> TARGETS = List.of("Prepare", "PrepareReply", "Accept",
        "AcceptReply", "Apply", "GrantRequest", "GrantReply", "Learn", "LearnReply",
        "SubmitRequest", "SubmitReply", "BeginReply", "ReadReply");

    public Faults {
      if (loss < 0 || loss >= 1 || duplicate < 0 || duplicate >= 1 || reorder < 0 || reorder > 1
          || storeFaults < 0 || storeFaults >= 1) {
        throw new IllegalArgumentException("fault probabilities must be in [0, 1)");
      }
      Objects.requireNonNull(replay, "replay (Replay.NONE for none)");
    }

    /** Faults without replayed messages. */
    public Faults(double loss, double duplicate, double reorder, boolean partitions,
        boolean crashes, boolean outages, boolean restarts, boolean twoInstances,
        boolean targeted, double storeFaults) {
      this(loss, duplicate, reorder, partitions, crashes, outages, restarts, twoInstances,
          targeted, storeFaults, Replay.NONE);
    }

    /** Faults without a targeted message type. */
    public Faults(double loss, double duplicate, double reorder, boolean partitions,
        boolean crashes, boolean outages, boolean restarts, boolean twoInstances) {
      this(loss, duplicate, reorder, partitions, crashes, outages, restarts, twoInstances, false,
          0);
    }

    /** These faults, with {@code r} replaying messages. */
    public Faults withReplay(Replay r) {
      return new Faults(loss, duplicate, reorder, partitions, crashes, outages, restarts,
          twoInstances, targeted, storeFaults, r);
    }

    public boolean any() {
      return loss > 0 || duplicate > 0 || reorder > 0 || partitions || crashes || outages
          || restarts || twoInstances || targeted || storeFaults > 0 || replay.on();
    }

    @Override
    public String toString() {
      return String.format("loss=%.3f dup=%.3f reorder=%.3f%s%s%s%s%s%s%s%s", loss, duplicate,
          reorder, partitions ? " partitions" : "", crashes ? " crashes" : "",
          outages ? " outages" : "", restarts ? " restarts" : "",
          twoInstances ? " two-instances" : "", targeted ? " targeted" : "",
          storeFaults > 0 ? String.format(" store-faults=%.3f", storeFaults) : "",
          replay.on() ? " " + replay : "");
    }
  }

  /**
   * Replayed messages: what an on-path attacker (or a badly broken network) does with recorded
   * datagrams, docs/architecture.md section 13. With probability {@code probability} per delivered
   * message, the network keeps a copy and sends it once more, a uniform
   * {@code minDelayMicros}..{@code maxDelayMicros} after the original (it then crosses the
   * network as any message does): to the same destination, or, half of the time, to another
   * DC's service (redirected). A copy of a reply, or the answer to a redirected copy of a
   * request, reaches a node with no request to match it and is ignored there, as the real
   * transport ignores an unmatched reply. The simulator passes message objects, not datagrams,
   * so the copies reach the protocol: what the wire would refuse (stale, repeated, misdirected)
   * must still be harmless to Paxos and the services.
   *
   * @param probability probability that a delivered message is replayed once, in [0, 1)
   * @param minDelayMicros the earliest a copy is sent after its original
   * @param maxDelayMicros the latest (at most one hour)
   */
  public record Replay(double probability, long minDelayMicros, long maxDelayMicros) {
    /** Seconds to minutes: within the wire's freshness window of 30 s, and long past it. */
    public static final long DEFAULT_MIN_MICROS = 2_000_000;
    public static final long DEFAULT_MAX_MICROS = 120_000_000;
    private static final long MAX_MICROS = 3_600_000_000L;
    /** No replayed messages. */
    public static final Replay NONE = new Replay(0, DEFAULT_MIN_MICROS, DEFAULT_MAX_MICROS);

    public Replay {
      if (probability < 0 || probability >= 1) {
        throw new IllegalArgumentException("the replay probability must be in [0, 1), not "
            + probability);
      }
      if (minDelayMicros < 1 || maxDelayMicros < minDelayMicros || maxDelayMicros > MAX_MICROS) {
        throw new IllegalArgumentException("replay delays need 1 us <= min <= max <= 1 h, not "
            + minDelayMicros + ".." + maxDelayMicros + " us");
      }
    }

    public boolean on() {
      return probability > 0;
    }

    @Override
    public String toString() {
      return String.format("replay=%.3f (%d-%d ms late)", probability, minDelayMicros / 1000,
          maxDelayMicros / 1000);
    }
  }

  /**
   * The share of reads the test suites' schedules make range reads: enough that every suite
   * scans (a schedule of five operations half reads scans in about one transaction in five),
   * few enough that the key reads' contention stays what it was.
   */
  public static final double DEFAULT_SCAN_SHARE = 0.1;

  /**
   * The share of writes (and reads) the test suites' schedules make operations on counters and
   * counting sets: with five operations half of them writes, about one transaction in five
   * updates, on a handful of keys, so that updates of one key meet in a position and
   * transactions that read a counter conflict with those that add to it.
   */
  public static final double DEFAULT_UPDATE_SHARE = 0.1;

  public SimConfig {
    Objects.requireNonNull(protocol);
    dcs = List.copyOf(dcs);
    if (dcs.isEmpty()) {
      throw new IllegalArgumentException("at least one DC");
    }
    if (clients < 1 || attributes < 1 || opsPerTxn < 1 || txns < 0) {
      throw new IllegalArgumentException("clients, attributes and ops must be >= 1, txns >= 0");
    }
    if (readFraction < 0 || readFraction > 1) {
      throw new IllegalArgumentException("readFraction must be in [0, 1]");
    }
    if (!(scanShare >= 0 && scanShare <= 1)) {
      throw new IllegalArgumentException("scanShare must be in [0, 1]");
    }
    if (!(updateShare >= 0 && updateShare <= 1)) {
      throw new IllegalArgumentException("updateShare must be in [0, 1]");
    }
    if (ratePerClient <= 0 || opMicros < 0 || serviceMicros < 0 || jitter < 0) {
      throw new IllegalArgumentException("rate must be positive; times and jitter non-negative");
    }
    proposer = new ProposerConfig(protocol, dcs, proposer.phaseTimeoutMicros(),
        proposer.backoffBaseMicros(), proposer.backoffMaxMicros(),
        proposer.maxAttemptsPerPosition(), proposer.maxPromotions(), proposer.graceFraction(),
        proposer.exhaustiveCombinationLimit(), proposer.maxValueBytes());
  }

  /**
   * The paper's contention experiment shape (section 6) on the given DCs: no range reads, no
   * counters or counting sets.
   */
  public static SimConfig paperDefaults(Protocol protocol, List<String> dcs, long seed) {
    return new SimConfig(protocol, dcs, Latency.paperRegions(), 4, 100, 10, 0.5, false, 0, 0,
        500, 1.0, 20_000, 500, 0.2, Faults.NONE, ProposerConfig.defaults(protocol, dcs), seed);
  }

  public SimConfig withSeed(long s) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, s);
  }

  public SimConfig withProtocol(Protocol p) {
    return new SimConfig(p, dcs, latency, clients, attributes, opsPerTxn, readFraction, zipfian,
        scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter, faults,
        proposer, seed);
  }

  public SimConfig withFaults(Faults f) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter, f,
        proposer, seed);
  }

  public SimConfig withWorkload(int clients, int attributes, int opsPerTxn, int txns) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, seed);
  }

  public SimConfig withTiming(double ratePerClient, long opMicros) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, seed);
  }

  public SimConfig withKeys(double readFraction, boolean zipfian) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, seed);
  }

  /**
   * These settings with a share {@code scanShare} of the read operations made range reads
   * ({@link #DEFAULT_SCAN_SHARE} in the test suites' schedules; 0: every read reads one key).
   */
  public SimConfig withScanShare(double scanShare) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, seed);
  }

  /**
   * These settings with a share {@code updateShare} of the write operations made operations on
   * the counter and counting-set keys, and as large a share of the reads made reads of them
   * ({@link #DEFAULT_UPDATE_SHARE} in the test suites' schedules; 0: none, the paper's workload).
   */
  public SimConfig withUpdateShare(double updateShare) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, proposer, seed);
  }

  public SimConfig withProposer(ProposerConfig p) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter,
        faults, p, seed);
  }

  /** These settings with {@code micros} of a DC's time per protocol message. */
  public SimConfig withServiceMicros(long micros) {
    return new SimConfig(protocol, dcs, latency, clients, attributes, opsPerTxn, readFraction,
        zipfian, scanShare, updateShare, txns, ratePerClient, opMicros, micros, jitter, faults,
        proposer, seed);
  }

  public SimConfig withLatency(Latency l) {
    return new SimConfig(protocol, dcs, l, clients, attributes, opsPerTxn, readFraction, zipfian,
        scanShare, updateShare, txns, ratePerClient, opMicros, serviceMicros, jitter, faults,
        proposer, seed);
  }
}
