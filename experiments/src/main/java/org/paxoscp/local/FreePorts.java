package org.paxoscp.local;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/**
 * Free loopback ports for the servers a local run starts (services, ZooKeeper, HBase). A port is
 * free when asked; whoever binds it next usually gets it, which is all a local run needs.
 */
public final class FreePorts {
  private FreePorts() {}

  /** A UDP port free on loopback now. */
  public static int udp() {
    try (DatagramSocket s = new DatagramSocket(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free UDP port on loopback", e);
    }
  }

  /**
   * UDP ports on loopback held bound until each is released, right before its server binds it:
   * nothing that binds an ephemeral port meanwhile (another DC's sockets, a client) can take it.
   */
  public static final class HeldUdp implements AutoCloseable {
    private final java.util.Map<Integer, DatagramSocket> held = new java.util.HashMap<>();

    /** Binds a fresh port and holds it. */
    public synchronized int hold() {
      try {
        DatagramSocket s = new DatagramSocket(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        held.put(s.getLocalPort(), s);
        return s.getLocalPort();
      } catch (IOException e) {
        throw new UncheckedIOException("no free UDP port on loopback", e);
      }
    }

    /** Lets {@code port} go, for its server to bind now; a port not held is ignored. */
    public synchronized void release(int port) {
      DatagramSocket s = held.remove(port);
      if (s != null) {
        s.close();
      }
    }

    /** Releases every port still held. */
    @Override
    public synchronized void close() {
      held.values().forEach(DatagramSocket::close);
      held.clear();
    }
  }

  /** Whether TCP port {@code port} (1 to 65535) is free on loopback now; false for others. */
  public static boolean tcpFree(int port) {
    if (port < 1 || port > 65535) {
      return false;
    }
    try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** A TCP port free on loopback now. */
  public static int tcp() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free TCP port on loopback", e);
    }
  }
}
