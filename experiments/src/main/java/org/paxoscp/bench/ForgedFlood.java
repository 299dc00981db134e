package org.paxoscp.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetSocketAddress;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.UdpTransport;

/**
 * A flood of forged datagrams at one service ({@code bench-fastpath --flood}): each passes the
 * checks a receiver makes without cryptography and fails authentication, the most a sender
 * without the key can make a service do. Paced in 1 ms slots on one thread; {@link
 * #achievedRate} says what the thread managed on a busy machine.
 */
public final class ForgedFlood implements AutoCloseable {
  private static final int DISTINCT = 64;

  private final Thread thread;
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong sent = new AtomicLong();
  private final long startNanos = System.nanoTime();
  private volatile long endNanos;

  private ForgedFlood(ClusterConfig config, String dc, InetSocketAddress endpoint,
      int perSecond, int bytes) {
    InetSocketAddress target = endpoint.isUnresolved()
        ? new InetSocketAddress(endpoint.getHostString(), endpoint.getPort()) : endpoint;
    if (target.isUnresolved()) {
      throw new IllegalArgumentException("flood: cannot resolve " + endpoint);
    }
    byte[][] forged = new byte[DISTINCT][];
    SplittableRandom seeds = new SplittableRandom(42);
    for (int i = 0; i < DISTINCT; i++) {
      forged[i] = UdpTransport.forgedDatagram(config, dc, bytes,
          new java.util.Random(seeds.nextLong()));
    }
    DatagramSocket socket;
    try {
      socket = new DatagramSocket();
    } catch (IOException e) {
      throw new UncheckedIOException("flood: cannot open a socket", e);
    }
    this.thread = new Thread(() -> {
      try (socket) {
        long slot = TimeUnit.MILLISECONDS.toNanos(1);
        long next = System.nanoTime();
        double owed = 0;
        int i = 0;
        while (!stop.get()) {
          owed += perSecond / 1000.0;
          for (; owed >= 1; owed--) {
            byte[] d = forged[i++ % DISTINCT];
            socket.send(new DatagramPacket(d, d.length, target));
            sent.incrementAndGet();
          }
          next += slot;
          long wait = next - System.nanoTime();
          if (wait > 0) {
            LockSupport.parkNanos(wait);
          }
        }
      } catch (IOException e) {
        // The target went away (the cluster stopped): the flood ends.
      }
    }, "forged-flood");
    thread.setDaemon(true);
  }

  /** Starts {@code perSecond} forged datagrams of {@code bytes} bytes at {@code target}. */
  public static ForgedFlood start(ClusterConfig config, String dc, InetSocketAddress target,
      int perSecond, int bytes) {
    ForgedFlood f = new ForgedFlood(config, dc, target, perSecond, bytes);
    f.thread.start();
    return f;
  }

  /** Datagrams sent per second, from start to {@link #close} (or now). */
  public double achievedRate() {
    long end = endNanos != 0 ? endNanos : System.nanoTime();
    return sent.get() / Math.max(1e-9, (end - startNanos) / 1e9);
  }

  @Override
  public void close() {
    stop.set(true);
    endNanos = System.nanoTime();
    try {
      thread.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
