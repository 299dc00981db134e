package org.paxoscp.transport;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A transport that calls the DCs' {@link RequestHandler}s directly, in this process, on a worker
 * pool: the shape of a cluster without sockets, for unit tests of the service and the client.
 * {@link Network#setDown} makes a DC drop everything, like a DC whose services are all down.
 * Explicit opt-in only; the product's transport is {@link UdpTransport}.
 */
public final class InProcessTransport implements Transport {

  /** The DCs' handlers, shared by every transport of one in-process cluster. */
  public static final class Network implements AutoCloseable {
    private final Map<String, RequestHandler> handlers = new ConcurrentHashMap<>();
    private final Set<String> down = ConcurrentHashMap.newKeySet();
    private final ExecutorService workers = Executors.newCachedThreadPool(r -> {
      Thread t = new Thread(r, "inproc-transport");
      t.setDaemon(true);
      return t;
    });

    /** Registers (or replaces) the handler serving DC {@code dc}. */
    public void register(String dc, RequestHandler handler) {
      handlers.put(dc, Objects.requireNonNull(handler));
    }

    /** While down, every message to or from {@code dc} is dropped. */
    public void setDown(String dc, boolean isDown) {
      if (isDown) {
        down.add(dc);
      } else {
        down.remove(dc);
      }
    }

    /** A transport speaking for {@code localDc}. */
    public InProcessTransport transport(String localDc) {
      return new InProcessTransport(this, localDc);
    }

    @Override
    public void close() {
      workers.shutdownNow();
      try {
        workers.awaitTermination(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private final Network network;
  private final String localDc;
  private final AtomicBoolean closed = new AtomicBoolean();

  private InProcessTransport(Network network, String localDc) {
    this.network = network;
    this.localDc = localDc;
  }

  @Override
  public String localDc() {
    return localDc;
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    CompletableFuture<Message> f = new CompletableFuture<>();
    if (closed.get()) {
      f.completeExceptionally(new TransportClosedException("transport of " + localDc + " closed"));
      return f;
    }
    RequestHandler h = network.handlers.get(dc);
    if (h == null) {
      f.completeExceptionally(new UnknownDcException("no service registered for DC " + dc));
      return f;
    }
    f.orTimeout(timeout.toNanos(), TimeUnit.NANOSECONDS);
    if (isCut(dc)) {
      return f.handle((r, t) -> {
        throw new TransportTimeoutException("no reply from DC " + dc + " in " + timeout);
      });
    }
    network.workers.execute(() -> {
      try {
        h.handle(localDc, request).whenComplete((reply, t) -> {
          if (t != null) {
            f.completeExceptionally(t);
          } else if (reply != null && !isCut(dc)) {
            f.complete(reply);
          }
        });
      } catch (RuntimeException e) {
        f.completeExceptionally(e);
      }
    });
    return f.handle((r, t) -> {
      if (t instanceof java.util.concurrent.TimeoutException) {
        throw new TransportTimeoutException("no reply from DC " + dc + " in " + timeout);
      }
      if (t != null) {
        throw t instanceof RuntimeException re ? re : new IllegalStateException(t);
      }
      return r;
    });
  }

  @Override
  public void send(String dc, Message message) {
    RequestHandler h = network.handlers.get(dc);
    if (h == null) {
      throw new UnknownDcException("no service registered for DC " + dc);
    }
    if (closed.get() || isCut(dc)) {
      return;
    }
    network.workers.execute(() -> h.handle(localDc, message));
  }

  private boolean isCut(String dc) {
    return network.down.contains(dc) || network.down.contains(localDc);
  }

  @Override
  public void close() {
    closed.set(true);
  }
}
