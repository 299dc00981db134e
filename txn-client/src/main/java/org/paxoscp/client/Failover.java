package org.paxoscp.client;

import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.MessageTooLargeException;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportClosedException;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.transport.UnknownDcException;

/**
 * A client's begin and read requests with fail-over: the home DC first, then the others in the
 * cluster's order, each waiting at most the cluster's request timeout (less if the caller's
 * deadline comes sooner). Turns error replies into the client's typed exceptions. Asynchronous:
 * a request's future completes on the thread that delivered the deciding reply.
 *
 * <p>Remembers the DCs that stopped answering: a DC whose request timed out is asked last (after
 * every DC not known silent) until a probe gets an answer from it. The first probe goes
 * {@link #FIRST_PROBE} after the timeout, each further one twice as long after the one before,
 * up to {@link #LAST_PROBE}; any answer from the DC — to a probe or to a request — brings it back
 * at once. So with the home DC down a transaction pays one request timeout, not one per request.
 * A probe is a {@link Message.VersionRequest}, which every service answers without touching its
 * store. The order is only a preference: a DC asked last is still asked when the others fail;
 * and an answer that would end the request with an error at a DC asked out of the configured
 * order (TOO_OLD or BAD_REQUEST: a DC that collected or rebuilt past the position, or does not
 * follow the cluster's version yet, while a DC asked last may still serve it) is held until the
 * DCs asked last have been asked too, and is the request's outcome only if none of them serves
 * it. So no request fails that the configured order would have served. Probing stops when the
 * client closes.
 */
final class Failover {
  /** How long after a timeout a silent DC is first probed. */
  static final Duration FIRST_PROBE = Duration.ofMillis(500);
  /** The longest wait between two probes of a DC that stays silent. */
  static final Duration LAST_PROBE = Duration.ofSeconds(10);
  /** The first back-off after every DC refused a request OVERLOADED; doubles per round. */
  static final Duration FIRST_OVERLOAD_BACKOFF = Duration.ofMillis(50);
  /** Rounds over the DCs a request makes while every DC refuses it OVERLOADED. */
  static final int OVERLOAD_ROUNDS = 5;

  /** A DC refused the request OVERLOADED: it did nothing for it; asking again later may do. */
  private static final class Overloaded extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    Overloaded(String dc, String detail) {
      super(dc + ": OVERLOADED " + detail);
    }
  }

  private final ClusterConfig cluster;
  private final String homeDc;
  private final Transport transport;
  private final Scheduler scheduler;
  private final List<String> order;
  /** Requests a DC failed or did not answer (the client then asks the next DC, if any). */
  private final Counter failovers;
  /** Back-offs after every DC refused a request OVERLOADED. */
  private final Counter backoffs;
  /** Whether silent DCs are asked last ({@link ClientHooks#withoutDcHealth} turns it off). */
  private final boolean remember;
  /** The DCs that timed out and have not answered since, with their probe state. */
  private final Map<String, Silent> silent = new ConcurrentHashMap<>();
  private volatile boolean closed;

  /** A DC that stopped answering: the wait before its next probe. */
  private static final class Silent {
    long nextProbeMicros;
    boolean probing;

    Silent(long nextProbeMicros) {
      this.nextProbeMicros = nextProbeMicros;
    }
  }

  Failover(ClusterConfig cluster, String homeDc, Transport transport, Scheduler scheduler,
      Counter failovers, boolean remember, Counter backoffs) {
    this.backoffs = backoffs;
    this.remember = remember;
    this.failovers = failovers;
    this.cluster = cluster;
    this.homeDc = homeDc;
    this.transport = transport;
    this.scheduler = scheduler;
    List<String> o = new ArrayList<>();
    o.add(homeDc);
    for (String dc : cluster.dcNames()) {
      if (!dc.equals(homeDc)) {
        o.add(dc);
      }
    }
    this.order = List.copyOf(o);
  }

  /**
   * Sends {@code request} to the DCs in fail-over order until one gives an acceptable reply
   * ({@code accept} returns non-null), and completes with it. A timeout, an unknown DC, an
   * unavailable store, a failed catch-up, an OVERLOADED refusal or an unacceptable reply moves on
   * to the next DC. When every DC failed and one of them refused OVERLOADED, the request backs
   * off ({@link #FIRST_OVERLOAD_BACKOFF}, doubling, with jitter) and asks them all again, at most
   * {@link #OVERLOAD_ROUNDS} rounds and never past {@code deadline}. Never blocks: each DC is
   * asked when the one before it failed.
   *
   * <p>The future fails with {@link UnavailableException} when no DC gave an acceptable reply,
   * {@link TransactionAbortedException} when the position was collected (TOO_OLD),
   * {@link InvalidArgumentException} when a DC refused the request as invalid or too large
   * ({@link RefusedException}), and
   * {@link DeadlineExceededException} when {@code deadline} passed first.
   */
  <R> CompletableFuture<R> request(String group, String txnId, long position, Message request,
      Function<Message, R> accept, Deadline deadline) {
    return request(group, txnId, position, request, accept, false, deadline);
  }

  /**
   * {@link #request}, with {@code anyDc}: TOO_OLD and BAD_REQUEST move on to the next DC too (a
   * question about a position already decided, which one DC may have collected or rebuilt past,
   * or may not yet follow the cluster's version for, while another can answer it).
   */
  <R> CompletableFuture<R> request(String group, String txnId, long position, Message request,
      Function<Message, R> accept, boolean anyDc, Deadline deadline) {
    CompletableFuture<R> out = new CompletableFuture<>();
    List<String> dcs = preferred();
    ask(0, new Attempt<>(group, txnId, position, request, accept, anyDc, deadline, dcs,
        dcs == order ? 0 : firstMoved(dcs), new ArrayList<>(), new RuntimeException[1],
        new int[2], out));
    return out;
  }

  /** The index in {@code dcs} of the first DC asked later than the configured order has it. */
  private int firstMoved(List<String> dcs) {
    int firstSilent = dcs.size();
    for (int i = 0; i < dcs.size(); i++) {
      if (silent.containsKey(dcs.get(i))) {
        firstSilent = i;
        break;
      }
    }
    return firstSilent;
  }

  /** The DCs in the order to ask them now: those answering first, then the silent ones. */
  List<String> preferred() {
    if (silent.isEmpty()) {
      return order;
    }
    List<String> o = new ArrayList<>(order.size());
    for (String dc : order) {
      if (!silent.containsKey(dc)) {
        o.add(dc);
      }
    }
    for (String dc : order) {
      if (silent.containsKey(dc)) {
        o.add(dc);
      }
    }
    return o;
  }

  /**
   * One request's fail-over state: what to ask, what failed so far, where the answer goes.
   * {@code dcs} from index {@code moved} on are the silent DCs, asked last; {@code held} keeps
   * an error answer met before them, to end the request with if none of them serves it; {@code
   * overloadRounds} holds the back-offs taken after OVERLOADED refusals and the index in
   * {@code failures} where the current round's begin.
   */
  private record Attempt<R>(String group, String txnId, long position, Message request,
      Function<Message, R> accept, boolean anyDc, Deadline deadline, List<String> dcs, int moved,
      List<Throwable> failures, RuntimeException[] held, int[] overloadRounds,
      CompletableFuture<R> out) {}

  /** Asks the {@code i}-th DC of the order, and the next one when it fails. */
  private <R> void ask(int i, Attempt<R> a) {
    if (i == a.dcs().size()) {
      if (a.held()[0] == null && overloadBackoff(a)) {
        return;
      }
      a.out().completeExceptionally(a.held()[0] != null ? a.held()[0] : unavailable(a));
      return;
    }
    Duration timeout = cluster.requestTimeout();
    Duration left = a.deadline().remaining(scheduler);
    if (left.isZero()) {
      a.out().completeExceptionally(a.deadline().exceeded(a.group(), a.position(),
          a.request().getClass().getSimpleName() + " after asking " + a.dcs().subList(0, i)));
      return;
    }
    boolean cut = left.compareTo(timeout) < 0;
    if (cut) {
      timeout = left;
    }
    String dc = a.dcs().get(i);
    CompletableFuture<Message> reply;
    try {
      reply = transport.request(dc, a.request(), timeout);
    } catch (UnknownDcException | TransportClosedException | MessageTooLargeException e) {
      reply = CompletableFuture.failedFuture(e);
    } catch (RuntimeException e) {
      a.out().completeExceptionally(e); // A broken transport: no DC would do better.
      return;
    }
    int asked = i;
    reply.whenComplete((m, t) -> {
      heard(dc, m, t, cut);
      try {
        if (answered(dc, m, t, a)) {
          return;
        }
      } catch (TransactionAbortedException | RefusedException e) {
        if (asked >= a.moved() || (e instanceof RefusedException r && r.tooLarge())) {
          a.out().completeExceptionally(e);
          return;
        }
        // Out of the configured order: a DC asked last may still serve it.
        a.held()[0] = e;
      } catch (RuntimeException e) {
        a.out().completeExceptionally(e);
        return;
      }
      failovers.increment();
      ask(i + 1, a);
    });
  }

  /**
   * After every DC failed {@code a}: when one of them refused it OVERLOADED in this round and
   * rounds are left, asks them all again after a back-off (true); else false. The jitter comes
   * from the scheduler's random generator (seeded in the simulator), so clients refused at the
   * same moment spread out rather than all asking again at once. Failures of earlier rounds are
   * kept for the final {@link UnavailableException}.
   */
  private <R> boolean overloadBackoff(Attempt<R> a) {
    int round = a.overloadRounds()[0];
    boolean refused = false;
    for (Throwable f : a.failures().subList(a.overloadRounds()[1], a.failures().size())) {
      refused |= f instanceof Overloaded;
    }
    if (!refused || round >= OVERLOAD_ROUNDS || closed) {
      return false;
    }
    long bound = FIRST_OVERLOAD_BACKOFF.toNanos() / 1000 << round;
    long half = Math.max(1, bound / 2);
    long delay = half + scheduler.random().nextLong(half);
    if (!a.deadline().isNone()
        && a.deadline().remaining(scheduler).toNanos() / 1000 <= delay) {
      return false;
    }
    a.overloadRounds()[0] = round + 1;
    a.overloadRounds()[1] = a.failures().size();
    backoffs.increment();
    scheduler.schedule(delay, () -> ask(0, a));
    return true;
  }

  /**
   * Takes DC {@code dc}'s reply {@code m} (or failure {@code t}): true when it completed the
   * request (with a value); false when the next DC is to be asked. Throws for an answer that
   * ends the request with an error.
   */
  private <R> boolean answered(String dc, Message m, Throwable t, Attempt<R> a) {
    if (t != null) {
      Throwable cause = Futures.unwrap(t);
      if (cause instanceof TransportClosedException) {
        throw new IllegalStateException("the client's transport is closed", cause);
      }
      if (cause instanceof MessageTooLargeException) {
        throw new InvalidArgumentException(a.group(), "request does not fit in a datagram: "
            + cause.getMessage());
      }
      a.failures().add(cause);
      return false;
    }
    if (m instanceof Message.ErrorReply err) {
      if (a.anyDc() && (err.code() == Message.ErrorCode.TOO_OLD
          || err.code() == Message.ErrorCode.BAD_REQUEST)) {
        a.failures().add(new IllegalStateException(dc + ": " + err.code() + " " + err.detail()));
        return false;
      }
      switch (err.code()) {
        case OVERLOADED -> {
          a.failures().add(new Overloaded(dc, err.detail()));
          return false;
        }
        case STORE_UNAVAILABLE, CATCH_UP_FAILED, REBUILDING -> {
          a.failures().add(new IllegalStateException(dc + ": " + err.code() + " "
              + err.detail()));
          return false;
        }
        case TOO_OLD -> throw new TransactionAbortedException(new CommitResult(
            CommitResult.Status.ABORTED, a.group(), a.txnId(), a.position(), 0, false,
            "position " + a.position() + " is below the group's GC watermark: "
                + err.detail()), dc);
        case BAD_REQUEST, TOO_LARGE -> throw new RefusedException(a.group(),
            err.code() == Message.ErrorCode.TOO_LARGE,
            "DC " + dc + " rejected the request: " + err.code() + " " + err.detail());
        default -> throw new IllegalStateException("unhandled error code " + err.code());
      }
    }
    R r = a.accept().apply(m);
    if (r != null) {
      a.out().complete(r);
      return true;
    }
    a.failures().add(new IllegalStateException(dc + ": unexpected reply " + m));
    return false;
  }

  /**
   * Notes what DC {@code dc} did with a request: any reply brings it back; a timeout the deadline
   * did not shorten ({@code cut}) makes it silent.
   */
  private void heard(String dc, Message m, Throwable t, boolean cut) {
    if (m != null) {
      silent.remove(dc);
    } else if (remember && !cut && Futures.unwrap(t) instanceof TransportTimeoutException) {
      markSilent(dc);
    }
  }

  /** Makes {@code dc} silent (if it is not yet) and schedules its first probe. */
  private void markSilent(String dc) {
    Silent fresh = new Silent(FIRST_PROBE.toNanos() / 1000);
    if (silent.putIfAbsent(dc, fresh) == null) {
      scheduleProbe(dc, fresh);
    }
  }

  private void scheduleProbe(String dc, Silent s) {
    if (!closed) {
      scheduler.schedule(s.nextProbeMicros, () -> probe(dc, s));
    }
  }

  /** Stops probing (the client closed). */
  void close() {
    closed = true;
  }

  /**
   * Asks {@code dc}, still silent as {@code s}, for its version: an answer brings it back;
   * silence doubles the wait before the next probe.
   */
  private void probe(String dc, Silent s) {
    synchronized (s) {
      if (closed || silent.get(dc) != s || s.probing) {
        return; // Closed, back already (a request got an answer), or a probe is out.
      }
      s.probing = true;
    }
    CompletableFuture<Message> reply;
    try {
      reply = transport.request(dc, new Message.VersionRequest(), cluster.requestTimeout());
    } catch (RuntimeException e) {
      reply = CompletableFuture.failedFuture(e);
    }
    reply.whenComplete((m, t) -> {
      if (m != null) {
        silent.remove(dc, s);
        return;
      }
      if (Futures.unwrap(t) instanceof TransportClosedException) {
        return; // The client's transport closed: nothing to probe any more.
      }
      synchronized (s) {
        s.probing = false;
        s.nextProbeMicros = Math.min(LAST_PROBE.toNanos() / 1000, s.nextProbeMicros * 2);
      }
      if (silent.get(dc) == s) {
        scheduleProbe(dc, s);
      }
    });
  }

  /** The DCs asked last because they stopped answering (tests, status). */
  java.util.Set<String> silentDcs() {
    return java.util.Set.copyOf(silent.keySet());
  }

  private UnavailableException unavailable(Attempt<?> a) {
    StringBuilder why = new StringBuilder();
    for (Throwable f : a.failures()) {
      why.append(why.length() == 0 ? ": " : "; ").append(f.getMessage());
    }
    if (!a.failures().isEmpty()
        && a.failures().stream().allMatch(f -> f instanceof TransportTimeoutException)) {
      // Silence from every DC: down, unreachable, or dropping our datagrams (another key).
      why.append(" (no DC answered at all: check that the services run, that this host reaches "
          + "them, and that they accept this client's paxoscp.key; a datagram under another key "
          + "is dropped without a reply)");
    }
    UnavailableException u = new UnavailableException("no DC of " + a.dcs()
        + " served " + a.request().getClass().getSimpleName() + why, a.group(), a.position(),
        a.dcs().get(a.dcs().size() - 1));
    a.failures().forEach(u::addSuppressed);
    return u;
  }
}
