package org.paxoscp.nemesis;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.paxoscp.nemesis.NemesisWorkload.Event;
import org.paxoscp.nemesis.NemesisWorkload.Outcome;

/** How soon after an engine fault its DCs commit at half their fault-free rate again. */
class EngineFaultsTest {
  private static final long S = 1_000_000_000L;

  /** Commits of DC {@code dc} every 100 ms (10/s) in [from, to) seconds. */
  private static void commits(List<Event> events, String dc, double from, double to) {
    for (long t = (long) (from * S); t < (long) (to * S); t += S / 10) {
      events.add(new Event(t, dc, Outcome.COMMITTED, 1000, true));
    }
  }

  @Test
  void aStallIsMeasuredFromTheFaultToTheFirstWindowAtHalfRate() {
    List<Event> events = new ArrayList<>();
    commits(events, "V1", 0, 20);
    // The fault at 20 s stops V1's commits for 5 s; V2's go on and must not count.
    commits(events, "V2", 20, 25);
    commits(events, "V1", 25, 60);
    // Aborts and read-only commits are not the rate.
    events.add(new Event(21 * S, "V1", Outcome.ABORTED, 1000, true));
    events.add(new Event(22 * S, "V1", Outcome.COMMITTED, 1000, false));
    EngineFaults.Window w = new EngineFaults.Window(Fault.RS_CRASH, "", List.of("V1"), 20 * S,
        21 * S, 0, true);
    // Half of 10/s over a 2 s window is 10 commits: [24, 26) holds 10 (25.0..25.9), so the
    // DC is at half rate again within 26 - 20 = 6 s.
    assertEquals("at half rate again within 6.0 s",
        EngineFaults.backToRate(w, List.of(w), events));
  }

  @Test
  void aFaultThatCostNothingIsBackWithinOneRateWindow() {
    List<Event> events = new ArrayList<>();
    commits(events, "V1", 0, 60);
    EngineFaults.Window w = new EngineFaults.Window(Fault.REGION_MOVE, "", List.of("V1"),
        30 * S, 31 * S, 0, true);
    assertEquals("at half rate again within 2.0 s",
        EngineFaults.backToRate(w, List.of(w), events));
  }

  @Test
  void noRecoveryAndNoReferenceAreSaidSo() {
    List<Event> events = new ArrayList<>();
    commits(events, "V1", 0, 20);
    events.add(new Event(40 * S, "V2", Outcome.COMMITTED, 1000, true));
    EngineFaults.Window w = new EngineFaults.Window(Fault.RS_CRASH, "", List.of("V1"), 20 * S,
        21 * S, 0, true);
    assertEquals("NOT at half rate again within the run",
        EngineFaults.backToRate(w, List.of(w), events));
    EngineFaults.Window other = new EngineFaults.Window(Fault.RS_CRASH, "", List.of("O"),
        20 * S, 21 * S, 0, true);
    assertEquals("no fault-free commits to compare with",
        EngineFaults.backToRate(other, List.of(other), events));
  }
}
