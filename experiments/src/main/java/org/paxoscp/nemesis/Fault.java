package org.paxoscp.nemesis;

import java.util.Locale;

/** The kinds of fault the nemesis injects. */
public enum Fault {
  KILL_RESTART("kill -9 + restart of a service"),
  PAUSE("SIGSTOP/SIGCONT of a service"),
  PARTITION("one DC partitioned"),
  MAJORITY_DOWN("two DCs down at once"),
  NET_BURST("loss/dup/delay burst"),
  REPLAY("old datagrams replayed, redirected"),
  HBASE_RESTART("HBase restart"),
  CLIENT_CRASH("client crash mid-commit"),
  STORE_LOSS("a DC's tables emptied, then the DC rebuilt"),
  UPGRADE("rolling upgrade of every service, then cluster-version finalize"),
  REGION_MOVE("a region of a DC's WAL or data table moved to another region server"),
  REGION_SPLIT("a region of a DC's WAL or data table split at a bucket"),
  RS_CRASH("kill -9 of a region server; the master reassigns its regions"),
  BALANCER("HBase's balancer run");

  private final String label;

  Fault(String label) {
    this.label = label;
  }

  /** What the fault does, for the summary. */
  public String label() {
    return label;
  }

  /** Whether it is a fault of the HBase engine itself, which needs several region servers. */
  public boolean engine() {
    return compareTo(REGION_MOVE) >= 0;
  }

  /** The name on the command line ({@code --faults}) and in the log: {@code kill_restart}. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
