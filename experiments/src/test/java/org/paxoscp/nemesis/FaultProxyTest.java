package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.paxoscp.transport.UdpTransport;

/**
 * The fault proxy forwards both ways, and cuts, loses, duplicates and replays as its rules say.
 */
class FaultProxyTest {
  private DatagramSocket backend;
  /** What reached the backend: payload and source port, in order. */
  private final Queue<String> received = new ConcurrentLinkedQueue<>();
  private Thread echo;
  private FaultProxy proxy;
  private final NetRules rules = new NetRules();

  @BeforeEach
  void start() throws Exception {
    backend = new DatagramSocket(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    // The "service" of DC B: answers every datagram with a datagram from B echoing the payload.
    echo = new Thread(() -> {
      byte[] buf = new byte[2048];
      while (!backend.isClosed()) {
        try {
          DatagramPacket p = new DatagramPacket(buf, buf.length);
          backend.receive(p);
          byte[] in = Arrays.copyOf(p.getData(), p.getLength());
          received.add(payload(in) + "@" + p.getPort());
          byte[] reply = datagram("B", payload(in));
          backend.send(new DatagramPacket(reply, reply.length, p.getSocketAddress()));
        } catch (Exception e) {
          return;
        }
      }
    });
    echo.setDaemon(true);
    echo.start();
    proxy = FaultProxy.start("B", new InetSocketAddress("127.0.0.1", 0),
        (InetSocketAddress) backend.getLocalSocketAddress(), rules, 7);
  }

  @AfterEach
  void stop() {
    proxy.close();
    backend.close();
  }

  /** Length of the clear header up to the DC name (WireCodec): version .. counter, name length. */
  private static final int FIXED_HEADER = 1 + 1 + 4 + 16 + 8 + 1;

  /** A datagram with a clear header as WireCodec lays it out, then an unsealed payload. */
  static byte[] datagram(String fromDc, String payload) {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    b.write(3); // version
    b.write(1); // flags: encrypted
    b.writeBytes(new byte[4 + 16 + 8]); // key id, sender id, counter
    byte[] dc = fromDc.getBytes(StandardCharsets.UTF_8);
    b.write(dc.length);
    b.writeBytes(dc);
    b.writeBytes(payload.getBytes(StandardCharsets.UTF_8));
    return b.toByteArray();
  }

  static String payload(byte[] d) {
    int len = d[FIXED_HEADER - 1];
    return new String(d, FIXED_HEADER + len, d.length - FIXED_HEADER - len,
        StandardCharsets.UTF_8);
  }

  private String roundTrip(DatagramSocket client, String fromDc, String payload) throws Exception {
    byte[] out = datagram(fromDc, payload);
    client.send(new DatagramPacket(out, out.length, proxy.address()));
    byte[] buf = new byte[2048];
    DatagramPacket p = new DatagramPacket(buf, buf.length);
    try {
      client.receive(p);
    } catch (SocketTimeoutException e) {
      return null;
    }
    return payload(Arrays.copyOf(p.getData(), p.getLength()));
  }

  @Test
  void readsTheSenderDcFromTheHeader() {
    byte[] d = datagram("V1", "x");
    assertEquals(Optional.of("V1"), UdpTransport.senderDc(d, d.length));
    assertEquals(Optional.empty(), UdpTransport.senderDc(new byte[5], 5));
    assertArrayEquals("hello".getBytes(StandardCharsets.UTF_8),
        payload(datagram("B", "hello")).getBytes(StandardCharsets.UTF_8));
  }

  @Test
  void forwardsBothWaysAndCutsAPartitionedDc() throws Exception {
    try (DatagramSocket a = new DatagramSocket(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        DatagramSocket c = new DatagramSocket(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
      a.setSoTimeout(500);
      c.setSoTimeout(500);
      assertEquals("one", roundTrip(a, "A", "one"));
      rules.set(new NetRules.Rules(Set.of("A"), 0, 0, 0));
      assertNull(roundTrip(a, "A", "two"), "A is cut off from B");
      assertEquals("three", roundTrip(c, "C", "three"), "C still reaches B");
      rules.set(new NetRules.Rules(Set.of("B"), 0, 0, 0));
      assertNull(roundTrip(c, "C", "four"), "B is cut off from everyone else");
      assertEquals("five", roundTrip(a, "B", "five"), "within DC B traffic flows");
      rules.heal();
      assertEquals("six", roundTrip(a, "A", "six"));
    }
  }

  @Test
  void losesEverythingAtLossOneAndDuplicatesAtDuplicateOne() throws Exception {
    try (DatagramSocket a = new DatagramSocket(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
      a.setSoTimeout(500);
      rules.set(new NetRules.Rules(Set.of(), 1.0, 0, 0));
      assertNull(roundTrip(a, "A", "lost"));
      rules.set(new NetRules.Rules(Set.of(), 0, 1.0, 0));
      // Request and reply are both duplicated: four copies of the answer come back.
      assertEquals("dup", roundTrip(a, "A", "dup"));
      int more = 0;
      byte[] buf = new byte[2048];
      try {
        while (true) {
          a.receive(new DatagramPacket(buf, buf.length));
          more++;
        }
      } catch (SocketTimeoutException e) {
        // done
      }
      assertEquals(3, more);
    }
  }

  @Test
  void replaysOldDatagramsFromAFreshSocketToTheirDestinationAndToAnotherDc() throws Exception {
    try (DatagramSocket a = new DatagramSocket(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        DatagramSocket c = new DatagramSocket(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
      a.setSoTimeout(500);
      c.setSoTimeout(10);
      // Copies of datagrams 200 ms old or more; at most one recorded an hour, so that "old" is
      // the only one there is to replay however slowly this test runs.
      proxy.replayAges(200, 3_600_000);
      proxy.replayTargets(Map.of("B", List.of((InetSocketAddress) backend.getLocalSocketAddress()),
          "C", List.of((InetSocketAddress) c.getLocalSocketAddress())));
      assertEquals("old", roundTrip(a, "A", "old"));
      String original = received.peek();
      assertTrue(original != null && original.startsWith("old@"), String.valueOf(original));
      rules.set(new NetRules.Rules(Set.of(), 0, 0, 0, 1.0));
      // Every datagram forwarded now brings a copy of "old" once it is old enough: to B, its
      // destination, or to C, the other DC's service, from a socket other than the original's.
      List<String> atC = new ArrayList<>();
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (System.nanoTime() < deadline
          && (atC.isEmpty() || received.stream().filter(x -> x.startsWith("old@")).count() < 2)) {
        roundTrip(a, "A", "trigger");
        byte[] buf = new byte[2048];
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        try {
          c.receive(p);
          atC.add(payload(Arrays.copyOf(p.getData(), p.getLength())) + "@" + p.getPort());
        } catch (SocketTimeoutException e) {
          // none yet
        }
      }
      List<String> atB = received.stream().filter(x -> x.startsWith("old@")).toList();
      assertTrue(atB.size() >= 2, "copies of old at its destination: " + atB);
      assertNotEquals(original, atB.get(1), "a copy comes from a socket of its own: " + atB);
      assertTrue(!atC.isEmpty() && atC.get(0).startsWith("old@"), "at C: " + atC);
      assertNotEquals(original, atC.get(0));
      assertTrue(proxy.replayed() >= 2 && proxy.redirected() >= 1,
          proxy.replayed() + " replayed, " + proxy.redirected() + " redirected");
      rules.heal();
      long replayed = proxy.replayed();
      assertEquals("after", roundTrip(a, "A", "after"));
      assertEquals(replayed, proxy.replayed(), "nothing replayed once healed");
    }
  }
}
