package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.paxoscp.testing.Poll;

/** The TCP forwarder carries a connection both ways and stops listening when closed. */
class TcpForwarderTest {

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }

  @Test
  void forwardsBothWays() throws Exception {
    try (ServerSocket target = new ServerSocket(0, 5, InetAddress.getLoopbackAddress())) {
      Thread echo = new Thread(() -> {
        try (Socket s = target.accept()) {
          s.getInputStream().transferTo(s.getOutputStream());
        } catch (IOException e) {
          // closed
        }
      });
      echo.setDaemon(true);
      echo.start();
      int port = freePort();
      InetSocketAddress listen = new InetSocketAddress("127.0.0.1", port);
      try (TcpForwarder f = TcpForwarder.start(List.of(TcpForwarder.Rule.parse(
          "127.0.0.1:" + port + "=127.0.0.1:" + target.getLocalPort())))) {
        try (Socket c = new Socket()) {
          c.connect(listen, 2000);
          c.setSoTimeout(2000);
          OutputStream o = c.getOutputStream();
          byte[] msg = "through the forwarder".getBytes(StandardCharsets.UTF_8);
          o.write(msg);
          o.flush();
          byte[] back = new byte[msg.length];
          new DataInputStream(c.getInputStream()).readFully(back);
          assertEquals("through the forwarder", new String(back, StandardCharsets.UTF_8));
        }
      }
      // It stopped listening: the address can be bound again. (A connect attempt is no proof: a
      // TCP connection to a free local port can occasionally connect to itself.) Closing the
      // listening channel completes asynchronously, so allow it two seconds.
      Poll.until("the forwarder to release " + listen, Duration.ofSeconds(2),
          () -> bindable(listen));
    }
  }

  private static boolean bindable(InetSocketAddress address) {
    try (ServerSocket again = new ServerSocket()) {
      again.setReuseAddress(true);
      again.bind(address);
      return true;
    } catch (IOException e) {
      return false;
    }
  }
}
