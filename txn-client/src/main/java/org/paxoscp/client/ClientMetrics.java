package org.paxoscp.client;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.paxoscp.wal.LogEntry;

/**
 * A client's meters, in the registry the application gives ({@link
 * TxnClient.Builder#meterRegistry};
 * by default Micrometer's global registry, which keeps nothing until the application adds a
 * registry to it). Tagged with the client's home DC and commit mode:
 * {@code paxoscp_client_commit_seconds{kind, outcome, reason}} (count and latency of every commit
 * that sent its entry, by kind: {@code txn} for a transaction's own entry, {@code xg_prepare},
 * {@code xg_decide}, ... for a step of a transaction across groups; by outcome: committed,
 * aborted, unknown, unavailable; an abort by reason: conflict, lock, too_old),
 * {@code paxoscp_client_begin_seconds{result}},
 * {@code paxoscp_client_failovers_total} (requests that moved on from a DC that failed them) and
 * {@code paxoscp_client_overload_backoffs_total{step}} (back-offs after a service refused a
 * request OVERLOADED: {@code commit} for a commit's Paxos phases, {@code request} for a begin,
 * read or other request that every DC refused so).
 * Thread-safe.
 */
final class ClientMetrics {
  /** Why a transaction aborted, as the {@code reason} tag names it. */
  enum AbortReason {
    /** A conflicting transaction took the positions it could commit at. */
    CONFLICT,
    /** A cross-group transaction held keys it needed. */
    LOCK,
    /** Its read position was collected (TOO_OLD). */
    TOO_OLD,
    /** In the log, but a commutative update could not apply there (no effect). */
    REFUSED,
    /** Its deadline passed before its entry was sent where it could still be chosen. */
    DEADLINE,
    /**
     * DCs refused its PREPAREs (or grant requests) OVERLOADED until its attempts were spent,
     * before its entry was sent at the position: not in the log.
     */
    OVERLOADED;

    String tag() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private final MeterRegistry registry;
  private final Tags tags;
  private final Map<String, Timer> commits = new ConcurrentHashMap<>();
  private final Timer beginOk;
  private final Timer beginUnavailable;
  private final Counter failovers;
  private final Counter commitBackoffs;
  private final Counter requestBackoffs;

  ClientMetrics(MeterRegistry registry, String homeDc, CommitProtocol protocol) {
    this.registry = registry;
    this.tags = Tags.of("dc", homeDc, "mode", protocol.name().toLowerCase(Locale.ROOT));
    this.beginOk = begin("ok");
    this.beginUnavailable = begin("unavailable");
    // A plain counter: clients of one home DC and mode share it and their counts add up.
    this.failovers = Counter.builder("paxoscp.client.failovers")
        .description("begin and read requests a DC failed or did not answer (the client then "
            + "asks the next DC, if any)")
        .tags(tags).register(registry);
    this.commitBackoffs = backoffs("commit");
    this.requestBackoffs = backoffs("request");
  }

  private Counter backoffs(String step) {
    return Counter.builder("paxoscp.client.overload.backoffs")
        .description("back-offs after a service refused a request OVERLOADED, by step: commit "
            + "(a Paxos phase of a commit), request (a begin, read or other request every DC "
            + "refused)")
        .tags(tags).tag("step", step).register(registry);
  }

  /** The counter of back-offs in commits (the proposers' {@code overloadBackoffs}). */
  Counter commitBackoffs() {
    return commitBackoffs;
  }

  /** The counter of back-offs of requests {@link Failover} sends. */
  Counter requestBackoffs() {
    return requestBackoffs;
  }

  /** The counter {@link Failover} adds to. */
  Counter failovers() {
    return failovers;
  }

  private Timer begin(String result) {
    return Timer.builder("paxoscp.client.begin").description("begins, by result")
        .tags(tags).tag("result", result).publishPercentiles(0.5, 0.99)
        .publishPercentileHistogram().register(registry);
  }

  void begun(long startNanos, boolean ok) {
    (ok ? beginOk : beginUnavailable).record(System.nanoTime() - startNanos,
        TimeUnit.NANOSECONDS);
  }

  /** The {@code kind} tag of a commit of {@code entry}. */
  static String kind(LogEntry entry) {
    return entry.xg() == null ? "txn" : "xg_" + entry.xg().kind().name().toLowerCase(Locale.ROOT);
  }

  void committed(String kind, long startNanos) {
    commit(kind, "committed", "none", startNanos);
  }

  void aborted(String kind, AbortReason reason, long startNanos) {
    commit(kind, "aborted", reason.tag(), startNanos);
  }

  void unknown(String kind, long startNanos) {
    commit(kind, "unknown", "none", startNanos);
  }

  void unavailable(String kind, long startNanos) {
    commit(kind, "unavailable", "none", startNanos);
  }

  private void commit(String kind, String outcome, String reason, long startNanos) {
    commits.computeIfAbsent(kind + "/" + outcome + "/" + reason, k ->
            Timer.builder("paxoscp.client.commit")
                .description("commits that sent their entry (and aborts before it), by kind "
                    + "and outcome")
                .tags(tags).tag("kind", kind).tag("outcome", outcome).tag("reason", reason)
                .publishPercentiles(0.5, 0.99).publishPercentileHistogram().register(registry))
        .record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
  }
}
