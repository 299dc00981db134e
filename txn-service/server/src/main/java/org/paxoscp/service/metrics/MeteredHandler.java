package org.paxoscp.service.metrics;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.RequestHandler;

/**
 * A {@link RequestHandler} decorator that times every request the service handles by type and
 * result ({@code paxoscp_service_request_seconds{type, result}}). The result is what the reply
 * says: {@code ok}; an error code ({@code too_old}, {@code store_unavailable}, ...); a vote
 * ({@code promised}/{@code rejected}, {@code accepted}/{@code rejected},
 * {@code granted}/{@code refused}); a leader-combination outcome ({@code committed},
 * {@code aborted}). Thread-safe; adds a map lookup and a timer update to each request.
 */
final class MeteredHandler implements RequestHandler {
  static final String REQUEST = "paxoscp.service.request";

  private final RequestHandler inner;
  private final MeterRegistry registry;
  /** Timers by type, then result: a few dozen at most. */
  private final Map<String, Map<String, Timer>> timers = new ConcurrentHashMap<>();

  MeteredHandler(RequestHandler inner, MeterRegistry registry) {
    this.inner = inner;
    this.registry = registry;
  }

  @Override
  public CompletableFuture<Message> handle(String fromDc, Message request) {
    long start = System.nanoTime();
    String type = type(request);
    return inner.handle(fromDc, request).whenComplete((reply, t) ->
        timer(type, t != null ? "error" : result(reply))
            .record(System.nanoTime() - start, TimeUnit.NANOSECONDS));
  }

  private Timer timer(String type, String result) {
    return timers.computeIfAbsent(type, k -> new ConcurrentHashMap<>()).computeIfAbsent(result,
        r -> Timer.builder(REQUEST)
            .description("requests this service handled, by type and result")
            .tag("type", type).tag("result", r)
            .publishPercentileHistogram()
            .publishPercentiles(0.5, 0.99)
            .register(registry));
  }

  /** The request's type as the {@code type} tag names it: {@code begin_request}, {@code accept}. */
  static String type(Message m) {
    Object o = m instanceof Message.Paxos p ? p.message() : m;
    return o == null ? "none" : snake(o.getClass().getSimpleName());
  }

  /** What the reply says, as the {@code result} tag names it. */
  static String result(Message reply) {
    if (reply == null) {
      return "ok"; // a one-way message
    } else if (reply instanceof Message.ErrorReply e) {
      return e.code().name().toLowerCase(Locale.ROOT);
    } else if (reply instanceof Message.SubmitReply s) {
      return s.status().name().toLowerCase(Locale.ROOT);
    } else if (reply instanceof Message.Paxos p) {
      if (p.message() instanceof PaxosMessage.PrepareReply r) {
        return r.promised() ? "promised" : "rejected";
      } else if (p.message() instanceof PaxosMessage.AcceptReply r) {
        return r.accepted() ? "accepted" : "rejected";
      } else if (p.message() instanceof PaxosMessage.GrantReply r) {
        return r.granted() ? "granted" : "refused";
      }
    }
    return "ok";
  }

  private static String snake(String camel) {
    return camel.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT);
  }
}
