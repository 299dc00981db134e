package org.paxoscp.transport;

import java.net.InetSocketAddress;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.paxoscp.store.StoreUnavailableException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Request dispatch of a service's {@link UdpTransport}: runs the {@link RequestHandler} on a
 * bounded pool of worker threads (never on the I/O thread: handlers do store work) and passes the
 * reply, once the handler's future completes, to the transport to send back. When every worker is
 * busy and the queue is full a request is dropped (the requester times out, as for a lost
 * datagram), counted and logged at most every 10 s.
 *
 * <p>A handler that throws {@link IllegalArgumentException} is answered with
 * {@link Message.ErrorCode#BAD_REQUEST}, {@link StoreUnavailableException} with
 * {@link Message.ErrorCode#STORE_UNAVAILABLE}; any other failure is logged and not answered.
 */
final class RequestDispatcher {
  private static final Logger LOG = LoggerFactory.getLogger(RequestDispatcher.class);
  private static final int QUEUED_REQUESTS_PER_WORKER = 256;
  private static final long LOG_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final long CLOSE_WAIT_SECONDS = 5;
  private static final int MAX_DETAIL_CHARS = 300;

  private final String name;
  private final RequestHandler handler;
  private final ThreadPoolExecutor workers;
  private final AtomicLong rejected = new AtomicLong();
  private final AtomicLong lastRejectLogNanos = new AtomicLong();

  RequestDispatcher(String name, RequestHandler handler, int workerThreads) {
    this.name = name;
    this.handler = handler;
    AtomicInteger n = new AtomicInteger();
    this.workers = new ThreadPoolExecutor(workerThreads, workerThreads, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(workerThreads * QUEUED_REQUESTS_PER_WORKER), r -> {
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
    try {
      workers.execute(() -> serve(env, sender, reply));
    } catch (RejectedExecutionException e) {
      onRejected(env, sender);
    }
  }

  /** Authentic requests dropped because every worker was busy and the queue full. */
  long rejectedCount() {
    return rejected.get();
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

  private void onRejected(Envelope env, InetSocketAddress sender) {
    if (workers.isShutdown()) {
      return;
    }
    rejected.incrementAndGet();
    long now = System.nanoTime();
    long last = lastRejectLogNanos.get();
    if ((last == 0 || now - last >= LOG_INTERVAL_NANOS)
        && lastRejectLogNanos.compareAndSet(last, now)) {
      LOG.warn("{}: all workers busy, dropped a request from {} ({}); {} so far", name,
          env.fromDc(), sender, rejected.get());
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
