package org.paxoscp.store.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.store.StoreUnavailableException;

/**
 * A process that was frozen (SIGSTOP) must not report its healthy store as unavailable when it
 * resumes: time it did not run does not count against a store deadline.
 */
@Timeout(30)
class StallTest {

  /** A reply that arrives 300 ms into a 100 ms deadline. */
  private static CompletableFuture<String> lateReply() {
    return CompletableFuture.supplyAsync(() -> "row",
        CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS));
  }

  @Test
  void aDeadlineThatPassedWhileTheProcessStoodStillIsExtended() {
    // The process "stood still" for 500 ms during the wait (as the detector would report).
    AtomicLong stalled = new AtomicLong();
    CompletableFuture.delayedExecutor(50, TimeUnit.MILLISECONDS)
        .execute(() -> stalled.set(TimeUnit.MILLISECONDS.toNanos(500)));
    assertEquals("row", Await.get(lateReply(), Duration.ofMillis(100), () -> "read",
        stalled::get));
  }

  @Test
  void aDeadlineThatPassedWhileTheProcessRanIsAStoreFault() {
    StoreUnavailableException e = assertThrows(StoreUnavailableException.class,
        () -> Await.get(lateReply(), Duration.ofMillis(100), () -> "read of row r", () -> 0L));
    assertTrue(e.getMessage().contains("read of row r: no answer within 100 ms"),
        e.getMessage());
  }

  @Test
  void theExtensionIsBoundedByTheTimeTheProcessStoodStill() {
    // A 10 ms stall does not buy the 200 ms the late reply needs beyond the deadline.
    AtomicLong stalled = new AtomicLong();
    CompletableFuture.delayedExecutor(20, TimeUnit.MILLISECONDS)
        .execute(() -> stalled.set(TimeUnit.MILLISECONDS.toNanos(10)));
    assertThrows(StoreUnavailableException.class,
        () -> Await.get(lateReply(), Duration.ofMillis(100), () -> "read", stalled::get));
  }

  @Test
  void theDetectorCountsOnlyWakeUpsThatCameFarTooLate() {
    StallDetector d = new StallDetector();
    d.observe(StallDetector.TICK_NANOS);
    d.observe(StallDetector.TICK_NANOS + StallDetector.THRESHOLD_NANOS);
    assertEquals(0, d.stalledNanos(), "scheduling jitter is not a stall");
    long frozen = TimeUnit.SECONDS.toNanos(30);
    d.observe(StallDetector.TICK_NANOS + frozen);
    assertEquals(frozen, d.stalledNanos(), "a 30 s SIGSTOP");
  }
}
