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
 * {@link Network#setDown} makes a DC drop everything, like a DC whose services are all down;
 * {@link Network#limitDatagrams} carries every message in a sealed datagram of the cluster's size,
 * as UDP does. Explicit opt-in only; the product's transport is {@link UdpTransport}.
 */
public final class InProcessTransport implements Transport {

  /** The DCs' handlers, shared by every transport of one in-process cluster. */
  public static final class Network implements AutoCloseable {
    private final Map<String, RequestHandler> handlers = new ConcurrentHashMap<>();
    private final Set<String> down = ConcurrentHashMap.newKeySet();
    /** What every message is carried through ({@link #limitDatagrams}); null: passed as is. */
    private volatile WireCodec codec;
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

    /**
     * From now on every message is sealed in one datagram of at most {@code maxDatagramBytes}
     * and opened again, as {@link UdpTransport} carries it: a request or one-way message that
     * does not fit fails with {@link MessageTooLargeException}; a reply that does not fit is
     * answered {@code TOO_LARGE} in its place, as a service's transport answers it.
     */
    public void limitDatagrams(int maxDatagramBytes) {
      codec = new WireCodec(new byte[32], maxDatagramBytes);
    }

    /** {@code m} from {@code fromDc} as the receiver gets it (see {@link #limitDatagrams}). */
    Message carry(String fromDc, Message m, boolean reply) {
      WireCodec c = codec;
      if (c == null) {
        return m;
      }
      Envelope e = new Envelope(0, fromDc, reply, m);
      byte[] datagram;
      try {
        datagram = c.encode(e);
      } catch (MessageTooLargeException tooLarge) {
        if (!reply) {
          throw tooLarge;
        }
        datagram = c.encode(new Envelope(0, fromDc, true, RequestDispatcher.error(m,
            Message.ErrorCode.TOO_LARGE, tooLarge.getMessage())));
      }
      return c.decode(datagram).message();
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
    Message carried;
    try {
      carried = network.carry(localDc, request, false);
    } catch (MessageTooLargeException e) {
      f.completeExceptionally(e);
      return f;
    }
    network.workers.execute(() -> {
      try {
        h.handle(localDc, carried).whenComplete((reply, t) -> {
          if (t != null) {
            f.completeExceptionally(t);
          } else if (reply != null && !isCut(dc)) {
            try {
              f.complete(network.carry(dc, reply, true));
            } catch (RuntimeException e) {
              f.completeExceptionally(e);
            }
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
    Message carried = network.carry(localDc, message, false);
    network.workers.execute(() -> h.handle(localDc, carried));
  }

  private boolean isCut(String dc) {
    return network.down.contains(dc) || network.down.contains(localDc);
  }

  @Override
  public void close() {
    closed.set(true);
  }
}
