package org.paxoscp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.bench.AsyncClosedLoop.Mode;
import org.paxoscp.bench.AsyncClosedLoop.Outcome;

/** The pure parts of {@code paxoscp bench-async}: modes, outcomes, thread kinds, the RSS. */
@Timeout(10)
class AsyncClosedLoopTest {

  @Test
  void modesParseAndARepeatedModeIsLabelledWithItsPass() {
    assertEquals(Mode.ASYNC, Mode.parse(" Async"));
    assertEquals(Mode.BLOCKING, Mode.parse("blocking"));
    assertThrows(IllegalArgumentException.class, () -> Mode.parse("virtual"));
    assertEquals(AsyncClosedLoop.Api.RUN, AsyncClosedLoop.Api.parse("RUN"));
    assertThrows(IllegalArgumentException.class, () -> AsyncClosedLoop.Api.parse("retry"));
    assertEquals(List.of("async", "blocking", "blocking-2", "async-2"),
        AsyncClosedLoop.labels(List.of(Mode.ASYNC, Mode.BLOCKING, Mode.BLOCKING, Mode.ASYNC)));
  }

  @Test
  void outcomesComeFromTheExceptionEvenWrapped() {
    assertEquals(Outcome.COMMITTED, AsyncClosedLoop.outcome(null));
    assertEquals(Outcome.ERROR, AsyncClosedLoop.outcome(new IllegalStateException("busy")));
    assertEquals(Outcome.ERROR, AsyncClosedLoop.outcome(
        new CompletionException(new IllegalArgumentException("bad key"))));
  }

  @Test
  void aPoolsThreadsCountTogetherAndADcsDigitStays() {
    assertEquals("paxoscp-client-callbacks-O-#",
        AsyncClosedLoop.threadKind("paxoscp-client-callbacks-O-17"));
    assertEquals("bench-async-blocking-#", AsyncClosedLoop.threadKind("bench-async-blocking-999"));
    assertEquals("wan-V1", AsyncClosedLoop.threadKind("wan-V1"));
    assertEquals("bench-async-app", AsyncClosedLoop.threadKind("bench-async-app"));
  }

  @Test
  void theResidentSetIsReadFromProcStatus() {
    assertEquals(123_456L * 1024, AsyncClosedLoop.parseRssBytes(
        "Name:\tjava\nVmPeak:\t 9999 kB\nVmRSS:\t  123456 kB\nThreads:\t42\n"));
    assertEquals(-1, AsyncClosedLoop.parseRssBytes("Name:\tjava\n"));
  }

  @Test
  void aSpecNeedsSomethingInFlightAndAWindow() {
    Duration s = Duration.ofSeconds(1);
    AsyncClosedLoop.Spec ok = new AsyncClosedLoop.Spec("blocking", Mode.BLOCKING,
        AsyncClosedLoop.Api.STEPS, "b-", 10, 1, 0, 7, Duration.ZERO, s, s);
    assertEquals(7, ok.appThreads());
    assertEquals(1, new AsyncClosedLoop.Spec("async", Mode.ASYNC, AsyncClosedLoop.Api.STEPS,
        "a-", 10, 1, 0, 7, Duration.ZERO, s, s).appThreads());
    assertThrows(IllegalArgumentException.class, () -> new AsyncClosedLoop.Spec("async",
        Mode.ASYNC, AsyncClosedLoop.Api.STEPS, "a-", 10, 1, 0, 0, Duration.ZERO, s, s));
    assertThrows(IllegalArgumentException.class, () -> new AsyncClosedLoop.Spec("async",
        Mode.ASYNC, AsyncClosedLoop.Api.STEPS, "a-", 10, 1, 0, 5, Duration.ZERO,
        Duration.ZERO, s));
  }
}
