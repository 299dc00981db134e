package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.paxoscp.transport.MalformedDatagramException.Reason;

/** The freshness checks of version 4 datagrams, on a clock the test moves. */
class FreshnessTest {
  private static final Duration WINDOW = Duration.ofSeconds(30);
  private final AtomicLong now = new AtomicLong(1_000_000);

  private static WireCodec.Opened opened(Role role, int sender, long counter, long sentMillis,
      String toDc) {
    byte[] id = new byte[DatagramKeys.SENDER_BYTES];
    id[0] = (byte) sender;
    id[1] = (byte) (sender >> 8);
    return new WireCodec.Opened(new Envelope(1, "V1", false, new Message.BeginRequest("g", 1)),
        WireCodec.VERSION, role, 7, id, counter, sentMillis, toDc, true);
  }

  private Reason refusal(Freshness f, WireCodec.Opened o) {
    return assertThrows(MalformedDatagramException.class, () -> f.check(o)).reason();
  }

  @Test
  void copiesAreRefusedAsStaleRepeatedOrMisdirected() {
    Freshness f = new Freshness("O", WINDOW, now::get);
    now.addAndGet(60_000); // long after the receiver started
    f.check(opened(Role.CLIENT, 1, 5, now.get(), "O"));
    assertEquals(Reason.REPLAY, refusal(f, opened(Role.CLIENT, 1, 5, now.get(), "O")));
    f.check(opened(Role.CLIENT, 1, 3, now.get(), "O")); // reordered, not seen: fresh
    f.check(opened(Role.CLIENT, 1, 5 + Freshness.WINDOW, now.get(), "O"));
    assertEquals(Reason.REPLAY, refusal(f, opened(Role.CLIENT, 1, 5, now.get(), "O")),
        "below the window now");
    f.check(opened(Role.CLIENT, 1, 6 + 1, now.get(), "O")); // 1023 below the newest: fresh
    assertEquals(Reason.MISDIRECTED, refusal(f, opened(Role.CLIENT, 1, 9000, now.get(), "V1")));
    assertEquals(Reason.STALE, refusal(f, opened(Role.CLIENT, 2, 1, now.get() - 30_001, "O")));
    assertEquals(Reason.STALE, refusal(f, opened(Role.CLIENT, 2, 1, now.get() + 30_001, "O")));
    f.check(opened(Role.CLIENT, 2, 1, now.get() - 29_000, "O"));
    now.addAndGet(31_000);
    assertEquals(Reason.STALE, refusal(f, opened(Role.CLIENT, 1, 4, now.get() - 31_000, "O")));
  }

  @Test
  void aReceiverThatJustStartedRefusesWhatWasSealedBeforeIt() {
    long before = now.get() - 5;
    Freshness f = new Freshness("O", WINDOW, now::get);
    assertEquals(Reason.REPLAY, refusal(f, opened(Role.SERVICE, 1, 1, before, "O")));
    now.addAndGet(1);
    f.check(opened(Role.SERVICE, 1, 1, now.get(), "O"));
  }

  @Test
  void aFloodOfClientSendersNeitherRaisesTheFloorPastNowNorTouchesServices() {
    Freshness f = new Freshness("O", WINDOW, now::get, 10);
    now.addAndGet(100);
    f.check(opened(Role.SERVICE, 500, 1, now.get(), "O"));
    for (int s = 1; s <= 200; s++) {
      // Senders claiming a time ahead of this clock (within the window).
      f.check(opened(Role.CLIENT, s, 1, now.get() + 29_000, "O"));
    }
    now.addAndGet(5);
    f.check(opened(Role.CLIENT, 999, 1, now.get(), "O")); // a new client, sealed after the floor
    f.check(opened(Role.SERVICE, 501, 1, now.get(), "O")); // a new service
    assertEquals(Reason.REPLAY, refusal(f, opened(Role.SERVICE, 500, 1, now.get(), "O")),
        "a service's state was not evicted by the clients' flood");
  }
}
