package org.paxoscp.sim;

import org.paxoscp.sim.SimConfig.Faults;

/**
 * The simulator's fault mixes: the safety suite runs every commit mode under each
 * ({@code SimulationSafetyTest}), and {@code paxoscp bench-leader-faults} compares leader
 * combination with Paxos-CP under each (docs/leader-combination.md, "Under compound faults").
 */
public enum FaultMix {
  CLEAN(Faults.NONE),
  LOSSY(new Faults(0.10, 0.05, 0.10, false, false, false, false, false)),
  PARTITIONS(new Faults(0.01, 0, 0, true, false, false, false, false)),
  CRASHES(new Faults(0.02, 0.01, 0, false, true, false, false, false)),
  OUTAGES(new Faults(0.01, 0, 0.02, false, false, true, false, false)),
  /** Service instances killed and restarted; one DC served by two instances at once. */
  RESTARTS(new Faults(0.01, 0, 0.02, false, false, false, true, true)),
  EVERYTHING(new Faults(0.05, 0.02, 0.05, true, true, true, true, true)),
  /** Half of one message type (picked per run) lost, the rest delayed; a little loss. */
  TARGETED(new Faults(0.02, 0.01, 0.02, false, false, false, false, false, true, 0)),
  /**
   * Store operations fail (5%): unavailable before anything is done, or ambiguous after a
   * write was done; service restarts and two instances of a DC beside them.
   */
  STORE(new Faults(0.01, 0, 0.02, false, false, false, true, true, false, 0.05)),
  /**
   * Every fault at once, heavier loss (10%) and store faults (1%): the compound mix under which
   * leader combination once fell behind Paxos-CP.
   */
  COMPOUND(new Faults(0.10, 0.02, 0.10, true, true, true, true, false, false, 0.01));

  private final Faults faults;

  FaultMix(Faults faults) {
    this.faults = faults;
  }

  public Faults faults() {
    return faults;
  }
}
