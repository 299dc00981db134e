package org.paxoscp.bench;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Transport;

/**
 * A client transport that counts the commit protocol's messages it carries (grant requests,
 * PREPAREs, ACCEPTs, APPLYs), so a benchmark can tell a fast-path commit (a grant, then one
 * ACCEPT round) from one that needed PREPARE. Everything is passed to the wrapped transport
 * unchanged. Behind a direct-store client only the messages to other DCs pass through here, which
 * still shows every PREPARE round (it goes to all DCs). It also times each request until its
 * reply, per message kind and DC ("ACCEPT@C"), to show where a commit's time goes.
 *
 * <p>Thread-safe. Closing it closes the wrapped transport.
 */
public final class CountingTransport implements Transport {

  /** Message counts at one moment. */
  public record Counts(long grants, long prepares, long accepts, long applies) {
    public Counts minus(Counts o) {
      return new Counts(grants - o.grants, prepares - o.prepares, accepts - o.accepts,
          applies - o.applies);
    }
  }

  private final Transport delegate;
  private final LongAdder grants = new LongAdder();
  private final LongAdder prepares = new LongAdder();
  private final LongAdder accepts = new LongAdder();
  private final LongAdder applies = new LongAdder();
  private final Map<String, Histogram> replyMicros = new ConcurrentHashMap<>();

  public CountingTransport(Transport delegate) {
    this.delegate = Objects.requireNonNull(delegate);
  }

  public Counts counts() {
    return new Counts(grants.sum(), prepares.sum(), accepts.sum(), applies.sum());
  }

  @Override
  public String localDc() {
    return delegate.localDc();
  }

  @Override
  public void clusterVersion(int version) {
    delegate.clusterVersion(version);
  }

  @Override
  public CompletableFuture<Message.VersionReply> askVersions(String dc, Duration timeout) {
    return delegate.askVersions(dc, timeout);
  }

  @Override
  public CompletableFuture<Message.VersionReply> askVersionsFirst(String dc, Duration timeout) {
    return delegate.askVersionsFirst(dc, timeout);
  }

  @Override
  public CompletableFuture<java.util.Set<Integer>> wireVersionsOf(String dc, Duration timeout) {
    return delegate.wireVersionsOf(dc, timeout);
  }

  /** Request-to-reply times in microseconds by "KIND@DC", for replies that arrived. */
  public Map<String, Histogram> replyMicros() {
    return new TreeMap<>(replyMicros);
  }

  /** Forgets the reply times recorded so far (counts are kept). */
  public void resetReplyTimes() {
    replyMicros.clear();
  }

  @Override
  public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
    String kind = count(request);
    long start = System.nanoTime();
    CompletableFuture<Message> f = delegate.request(dc, request, timeout);
    if (kind != null) {
      f.whenComplete((reply, failure) -> {
        if (failure == null) {
          replyMicros.computeIfAbsent(kind + "@" + dc, k -> new ConcurrentHistogram(3))
              .recordValue(Math.max(1, (System.nanoTime() - start) / 1000));
        }
      });
    }
    return f;
  }

  @Override
  public void send(String dc, Message message) {
    count(message);
    delegate.send(dc, message);
  }

  /** Counts {@code m}; returns its kind for the reply timing, or null if not timed. */
  private String count(Message m) {
    if (m instanceof Message.Paxos p) {
      PaxosMessage pm = p.message();
      if (pm instanceof PaxosMessage.GrantRequest) {
        grants.increment();
        return "GRANT";
      } else if (pm instanceof PaxosMessage.Prepare) {
        prepares.increment();
        return "PREPARE";
      } else if (pm instanceof PaxosMessage.Accept) {
        accepts.increment();
        return "ACCEPT";
      } else if (pm instanceof PaxosMessage.Apply) {
        applies.increment();
      }
      return null;
    }
    return m instanceof Message.BeginRequest ? "BEGIN" : null;
  }

  @Override
  public void close() {
    delegate.close();
  }
}
