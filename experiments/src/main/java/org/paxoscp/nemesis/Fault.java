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
  UPGRADE("rolling upgrade of every service, then cluster-version finalize");

  private final String label;

  Fault(String label) {
    this.label = label;
  }

  /** What the fault does, for the summary. */
  public String label() {
    return label;
  }

  /** The name on the command line ({@code --faults}) and in the log: {@code kill_restart}. */
  public String cliName() {
    return name().toLowerCase(Locale.ROOT);
  }
}
