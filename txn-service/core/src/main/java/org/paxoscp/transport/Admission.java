package org.paxoscp.transport;

import java.time.Duration;
import java.util.Locale;
import org.paxoscp.paxos.PaxosMessage;

/**
 * A service's admission control (docs/operating.md, "Overload"): how many requests may wait for
 * a worker, and how long. A request that finds {@link #maxQueued} waiting, or that waited longer
 * than {@link #maxWait} when a worker takes it, is refused with {@link
 * Message.ErrorCode#OVERLOADED} <em>before any handler sees it</em>: the acceptor has neither read
 * nor written anything for it, so a refused PREPARE is certainly not a promise, a refused ACCEPT
 * certainly not a vote, a refused grant request certainly no grant (docs/guarantees.md,
 * "Overload"). One-way messages (APPLY, a pushed learn reply) have no reply: in their place they
 * are dropped, which loses nothing (a chosen value is learned again by catch-up).
 *
 * <p>One queue per service, shared by its workers, rather than one per worker: any idle worker
 * takes the oldest request, so one slow store call holds back only its own request, and the bound
 * is on what the service as a whole has accepted to do. The refusal comes from the thread that
 * would have queued the request (the transport's opener) or from the worker that dequeued it, in
 * either case without the handler.
 *
 * <p>Immutable and thread-safe.
 *
 * @param maxQueued requests that may wait for a worker at once; more are refused at once
 * @param maxWait the longest a request may have waited for a worker and still be served; a
 *     request older than this is refused by the worker that takes it (the client's phase timeout
 *     is 2 s by default: an answer after it would be useless, a refusal before it is an answer)
 */
public record Admission(int maxQueued, Duration maxWait) {

  /** What a service admits unless configured otherwise (docs/operating.md). */
  public static final Admission DEFAULT = new Admission(1024, Duration.ofMillis(500));

  public Admission {
    if (maxQueued < 1) {
      throw new IllegalArgumentException("maxQueued must be >= 1, was " + maxQueued);
    }
    if (maxWait == null || maxWait.isNegative() || maxWait.isZero()) {
      throw new IllegalArgumentException("maxWait must be positive, was " + maxWait);
    }
  }

  /**
   * The refusal of {@code request}: an {@link Message.ErrorCode#OVERLOADED} reply about its group
   * and position, naming {@code dc} and {@code why}.
   */
  public static Message.ErrorReply refusal(Message request, String dc, String why) {
    String group = request.group() == null ? "" : request.group();
    return new Message.ErrorReply(group, request.position(), Message.ErrorCode.OVERLOADED,
        "DC " + dc + " overloaded: " + why);
  }

  /**
   * The kind a refusal of {@code request} is counted under: {@code prepare}, {@code accept},
   * {@code grant}, {@code learn}, {@code apply} (a Paxos message), {@code begin}, {@code read},
   * {@code scan}, {@code submit}, or {@code other}.
   */
  public static String kind(Message request) {
    if (request instanceof Message.Paxos p) {
      PaxosMessage m = p.message();
      if (m instanceof PaxosMessage.Prepare) {
        return "prepare";
      } else if (m instanceof PaxosMessage.Accept) {
        return "accept";
      } else if (m instanceof PaxosMessage.GrantRequest) {
        return "grant";
      } else if (m instanceof PaxosMessage.Learn) {
        return "learn";
      } else if (m instanceof PaxosMessage.Apply) {
        return "apply";
      }
      return m.getClass().getSimpleName().toLowerCase(Locale.ROOT);
    }
    if (request instanceof Message.BeginRequest) {
      return "begin";
    } else if (request instanceof Message.ReadRequest) {
      return "read";
    } else if (request instanceof Message.ScanRequest) {
      return "scan";
    } else if (request instanceof Message.SubmitRequest) {
      return "submit";
    }
    return "other";
  }

  /** Every kind {@link #kind} names, for metrics that list them up front. */
  public static final java.util.List<String> KINDS = java.util.List.of("prepare", "accept",
      "grant", "learn", "begin", "read", "scan", "submit", "other");
}
