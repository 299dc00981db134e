package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Forwards TCP connections from listening addresses to targets, a thread per direction of each
 * connection. In the network-namespace mode it carries HBase's traffic (ZooKeeper, master and
 * region server ports, which the server binds and advertises on 127.0.0.1) from a DC's
 * namespace, across its veth link, to the server in the root namespace: a forwarder process in
 * each namespace ({@link #main}) and one in the nemesis on the bridge address.
 */
public final class TcpForwarder implements AutoCloseable {
  private final List<ServerSocket> listeners = new ArrayList<>();
  private final List<Socket> open = new CopyOnWriteArrayList<>();
  private volatile boolean closed;

  /** One rule: connections to {@code listen} go to {@code target}. */
  public record Rule(InetSocketAddress listen, InetSocketAddress target) {
    /** Parses {@code host:port=host:port}. */
    static Rule parse(String s) {
      String[] sides = s.split("=");
      if (sides.length != 2) {
        throw new IllegalArgumentException("expected listen-host:port=target-host:port: " + s);
      }
      return new Rule(address(sides[0]), address(sides[1]));
    }

    private static InetSocketAddress address(String hp) {
      int c = hp.lastIndexOf(':');
      return new InetSocketAddress(hp.substring(0, c), Integer.parseInt(hp.substring(c + 1)));
    }

    @Override
    public String toString() {
      return listen.getHostString() + ":" + listen.getPort() + "=" + target.getHostString() + ":"
          + target.getPort();
    }
  }

  /** Starts forwarding every rule. */
  public static TcpForwarder start(List<Rule> rules) throws IOException {
    TcpForwarder f = new TcpForwarder();
    try {
      for (Rule r : rules) {
        ServerSocket ss = new ServerSocket();
        ss.setReuseAddress(true);
        ss.bind(r.listen());
        f.listeners.add(ss);
        Thread t = new Thread(() -> f.accept(ss, r.target()), "tcp-forward-" + r);
        t.setDaemon(true);
        t.start();
      }
    } catch (IOException | RuntimeException e) {
      f.close();
      throw e;
    }
    return f;
  }

  private void accept(ServerSocket ss, InetSocketAddress target) {
    while (!closed) {
      Socket in;
      try {
        in = ss.accept();
      } catch (IOException e) {
        return;
      }
      Socket outSock = new Socket();
      try {
        outSock.connect(target, 5000);
      } catch (IOException e) {
        closeQuietly(in);
        closeQuietly(outSock);
        continue;
      }
      open.add(in);
      open.add(outSock);
      pipe(in, outSock);
      pipe(outSock, in);
    }
  }

  private void pipe(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[64 * 1024];
      try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
        int n;
        while ((n = i.read(buf)) >= 0) {
          o.write(buf, 0, n);
          o.flush();
        }
      } catch (IOException e) {
        // either side closed
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        open.remove(from);
        open.remove(to);
      }
    }, "tcp-forward-pipe");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // ignore
    }
  }

  @Override
  public void close() {
    closed = true;
    listeners.forEach(TcpForwarder::closeQuietly);
    open.forEach(TcpForwarder::closeQuietly);
  }

  /**
   * Runs a forwarder until killed: {@code TcpForwarder listen-host:port=target-host:port ...};
   * prints "forwarding" once every rule listens.
   */
  public static void main(String[] args) throws Exception {
    List<Rule> rules = new ArrayList<>();
    for (String a : args) {
      rules.add(Rule.parse(a));
    }
    try (TcpForwarder f = start(rules)) {
      System.out.println("forwarding " + rules);
      System.out.flush();
      Thread.currentThread().join();
    }
  }
}
