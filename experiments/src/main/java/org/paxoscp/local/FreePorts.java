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

  /** A TCP port free on loopback now. */
  public static int tcp() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException("no free TCP port on loopback", e);
    }
  }
}
