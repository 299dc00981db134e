package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Sender ids: a new one after an hour and after the wall clock jumped; role keys. */
class DatagramKeysTest {
  private static final byte[] KEY = "0123456789abcdef0123456789abcdef".getBytes();
  private final AtomicLong mono = new AtomicLong(TimeUnit.HOURS.toNanos(5));
  private final AtomicLong wall = new AtomicLong(1_800_000_000_000L);

  private DatagramKeys keys() {
    return new DatagramKeys(KEY, List.of(), null, EnumSet.allOf(Role.class), false, mono::get,
        wall::get);
  }

  @Test
  void aSenderIdSealsAtMostAnHourAndNeverAcrossAClockJump() {
    DatagramKeys k = keys();
    DatagramKeys.Seal first = k.next(Role.SERVICE);
    DatagramKeys.Seal second = k.next(Role.CLIENT);
    assertArrayEquals(first.sender(), second.sender(), "one sender id for every role");
    assertEquals(first.counter() + 1, second.counter(), "one counter for every role");
    step(TimeUnit.MINUTES.toMillis(59));
    assertArrayEquals(first.sender(), k.next(Role.SERVICE).sender());
    step(TimeUnit.MINUTES.toMillis(2));
    DatagramKeys.Seal hourLater = k.next(Role.SERVICE);
    assertFalse(Arrays.equals(first.sender(), hourLater.sender()), "a new id after an hour");
    assertEquals(0, hourLater.counter(), "its counter starts again");
    // A VM restored from a snapshot: the monotonic clock goes on, the wall clock jumps.
    wall.addAndGet(10_000);
    DatagramKeys.Seal afterJump = k.next(Role.SERVICE);
    assertFalse(Arrays.equals(hourLater.sender(), afterJump.sender()), "a new id after a jump");
    assertEquals(2, k.senderChanges());
  }

  @Test
  void aRoleKeyHolderSealsOnlyAsItsRole() {
    DatagramKeys client = new DatagramKeys(Role.CLIENT.keyFrom(KEY), List.of(), Role.CLIENT,
        EnumSet.of(Role.CLIENT), false, mono::get, wall::get);
    assertEquals(keys().sendingKeyId(Role.CLIENT), client.sendingKeyId(Role.CLIENT),
        "the same client key whether derived here or given");
    assertThrows(IllegalArgumentException.class, () -> client.next(Role.SERVICE));
    assertThrows(IllegalArgumentException.class, () -> client.next(null), "no version 3");
    assertEquals(null, client.accepted(keys().sendingKeyId(Role.SERVICE)));
  }

  private void step(long millis) {
    mono.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    wall.addAndGet(millis);
  }
}
