package org.paxoscp.transport;

import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.version.ClusterVersion;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Request dispatch of a service's {@link UdpTransport}: runs the {@link RequestHandler} on a
 * bounded pool of worker threads (never on the I/O thread: handlers do store work) and passes the
 * reply, once the handler's future completes, to the transport to send back.
 *
 * <p>Admission ({@link Admission}): when {@link Admission#maxQueued} requests wait for a worker,
 * a request is refused at once with {@link Message.ErrorCode#OVERLOADED}, and a request that
 * waited longer than {@link Admission#maxWait} is refused so by the worker that takes it; in both
 * cases before the handler sees it, so nothing was promised, voted or granted for it. A one-way
 * message (no reply expected) is dropped instead. Below cluster version {@link
 * ClusterVersion#OVERLOADED_REFUSALS} only Paxos requests and submits are refused, whose
 * requesters of every build take an error reply as no answer; any other request (begin, read,
 * scan...) is dropped as before that version, since older clients fail on an OVERLOADED answer
 * to it. Refusals are counted by request kind, drops apart; both are logged at most every 10 s.
 *
 * <p>A handler that throws {@link IllegalArgumentException} is answered with
 * {@link Message.ErrorCode#BAD_REQUEST}, {@link StoreUnavailableException} with
 * {@link Message.ErrorCode#STORE_UNAVAILABLE}; any other failure is logged and not answered.
 */
final class RequestDispatcher {
  private static final Logger LOG = LoggerFactory.getLogger(RequestDispatcher.class);
  private static final long LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final long CLOSE_WAIT_SECONDS = 5;
  private static final int MAX_DETAIL_CHARS = 300;

  private final String name;
  private final RequestHandler handler;
  private final ThreadPoolExecutor workers;
  private final Admission admission;
  private final String dc;
  private final long maxWaitNanos;
  /** One-way messages dropped because {@link Admission#maxQueued} requests waited. */
  private final AtomicLong rejected = new AtomicLong();
  /** Requests refused OVERLOADED, by {@link Admission#kind}. */
  private final Map<String, LongAdder> refused = new ConcurrentHashMap<>();
  private final AtomicLong lastRejectLogNanos = new AtomicLong();
  /** The cluster's version as last learned ({@link #clusterVersion}). */
  private volatile int clusterVersion;

  /**
   * @param clusterVersion the cluster version assumed until {@link #clusterVersion} says
   */
  RequestDispatcher(String name, String dc, RequestHandler handler, int workerThreads,
      Admission admission, int clusterVersion) {
    this.name = name;
    this.clusterVersion = clusterVersion;
    this.dc = dc;
    this.handler = handler;
    this.admission = admission;
    this.maxWaitNanos = admission.maxWait().toNanos();
    AtomicInteger n = new AtomicInteger();
    this.workers = new ThreadPoolExecutor(workerThreads, workerThreads, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(admission.maxQueued()), r -> {
          Thread t = new Thread(r, name + "-worker-" + n.incrementAndGet());
          t.setDaemon(true);
          return t;
        });
  }

  /**
   * Serves {@code env} on a worker; {@code reply} receives the answer (never for a one-way
   * message) with the sender's address.
   */
  void dispatch(Envelope env, InetSocketAddress sender,
      BiConsumer<Message, InetSocketAddress> reply) {
    long queued = System.nanoTime();
    try {
      workers.execute(() -> {
        long waited = System.nanoTime() - queued;
        if (waited > maxWaitNanos) {
          refuse(env, sender, reply, "a request waited " + TimeUnit.NANOSECONDS.toMillis(waited)
              + " ms for a worker (at most " + admission.maxWait().toMillis() + " ms)");
        } else {
          serve(env, sender, reply);
        }
      });
    } catch (RejectedExecutionException e) {
      if (!workers.isShutdown()) {
        refuse(env, sender, reply, admission.maxQueued() + " requests wait for a worker");
      }
    }
  }

  /**
   * Refuses {@code env} without running the handler: OVERLOADED to a request, a drop for a
   * one-way message.
   */
  private void refuse(Envelope env, InetSocketAddress sender,
      BiConsumer<Message, InetSocketAddress> reply, String why) {
    if (env.requestId() == 0 || !refusable(env.message(), clusterVersion)) {
      onRejected(env, sender, why);
      return;
    }
    refused.computeIfAbsent(Admission.kind(env.message()), k -> new LongAdder()).increment();
    logAtMostEvery(() -> LOG.warn("{}: overloaded, refusing requests ({}); {} refused so far",
        name, why, refusedCount()));
    reply.accept(Admission.refusal(env.message(), dc, why), sender);
  }

  /** The cluster runs at {@code version} from now on: what may be refused OVERLOADED. */
  void clusterVersion(int version) {
    clusterVersion = version;
  }

  /**
   * Whether an overloaded service answers {@code request} with OVERLOADED at cluster version
   * {@code version} (else it drops it): Paxos requests and submits always, whose requesters of
   * every build take an error reply as no answer; other requests from {@link
   * ClusterVersion#OVERLOADED_REFUSALS} on.
   */
  static boolean refusable(Message request, int version) {
    return request instanceof Message.Paxos || request instanceof Message.SubmitRequest
        || version >= ClusterVersion.OVERLOADED_REFUSALS;
  }

  /**
   * One-way messages (APPLY, pushed learn replies), and below {@link
   * ClusterVersion#OVERLOADED_REFUSALS} client requests, dropped because the service was
   * overloaded.
   */
  long rejectedCount() {
    return rejected.get();
  }

  /** Requests refused with OVERLOADED, by {@link Admission#kind}. */
  long refusedCount(String kind) {
    LongAdder a = refused.get(kind);
    return a == null ? 0 : a.sum();
  }

  /** Requests refused with OVERLOADED, of every kind. */
  long refusedCount() {
    long n = 0;
    for (LongAdder a : refused.values()) {
      n += a.sum();
    }
    return n;
  }

  /** Requests waiting for a worker now. */
  int queued() {
    return workers.getQueue().size();
  }

  /** Stops the workers, letting running handlers finish (at most 5 s). */
  void close() {
    workers.shutdown();
    try {
      if (!workers.awaitTermination(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS)) {
        LOG.warn("{}: handlers still running after {} s, interrupting", name, CLOSE_WAIT_SECONDS);
        workers.shutdownNow();
      }
    } catch (InterruptedException e) {
      workers.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  private void serve(Envelope env, InetSocketAddress sender,
      BiConsumer<Message, InetSocketAddress> reply) {
    Message request = env.message();
    CompletableFuture<Message> answer;
    try {
      answer = handler.handle(env.fromDc(), request);
    } catch (IllegalArgumentException e) {
      answer = CompletableFuture.completedFuture(
          error(request, Message.ErrorCode.BAD_REQUEST, e.getMessage()));
    } catch (StoreUnavailableException e) {
      answer = CompletableFuture.completedFuture(
          error(request, Message.ErrorCode.STORE_UNAVAILABLE, e.getMessage()));
    } catch (RuntimeException e) {
      answer = CompletableFuture.failedFuture(e);
    }
    answer.whenComplete((r, failure) -> {
      if (failure != null) {
        // No answer is the honest one: the requester times out, as for a lost datagram.
        LOG.warn("{}: handler failed on {} from {}", name, request, env.fromDc(), failure);
      } else if (r != null && env.requestId() != 0) {
        reply.accept(r, sender);
      }
    });
  }

  private void onRejected(Envelope env, InetSocketAddress sender, String why) {
    rejected.incrementAndGet();
    logAtMostEvery(() -> LOG.warn("{}: overloaded ({}), dropped a {} from {} ({}); {} "
        + "so far", name, why, Admission.kind(env.message()), env.fromDc(), sender,
        rejected.get()));
  }

  private void logAtMostEvery(Runnable log) {
    long now = System.nanoTime();
    long last = lastRejectLogNanos.get();
    if ((last == 0 || now - last >= LOG_INTERVAL_NANOS)
        && lastRejectLogNanos.compareAndSet(last, now)) {
      log.run();
    }
  }

  /** An error reply about {@code about}, its detail cut to a size that fits a datagram. */
  static Message error(Message about, Message.ErrorCode code, String detail) {
    String d = detail == null ? "" : detail;
    if (d.length() > MAX_DETAIL_CHARS) {
      d = d.substring(0, MAX_DETAIL_CHARS) + "...";
    }
    return new Message.ErrorReply(about.group(), about.position(), code, d);
  }
}
