package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class LeaderSubmitTest {
  private static final List<String> DCS = List.of("V", "O", "C");
  private static final Map<String, Long> COSTS = Map.of("V", 90_000L, "O", 20_000L,
      "C", 20_000L);

  @Test
  void theBatcherIsTheCheapestDcTiesInClusterOrder() {
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, Map.of(), 0));
  }

  @Test
  void aDcMarkedDownIsSkippedUntilItsMarkExpires() {
    Map<String, Long> down = Map.of("O", 1_000L);
    assertEquals("C", LeaderSubmit.batcher(COSTS, DCS, down, 999));
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, down, 1_000));
  }

  @Test
  void withEveryDcDownTheCheapestIsTriedAnyway() {
    Map<String, Long> down = Map.of("V", 5L, "O", 5L, "C", 5L);
    assertEquals("O", LeaderSubmit.batcher(COSTS, DCS, down, 0));
  }

  @Test
  void boundsFollowThePromotionCap() {
    assertEquals(LeaderSubmit.DEFAULT_BOUND, LeaderSubmit.boundFor(-1));
    assertEquals(3, LeaderSubmit.boundFor(3));
    assertEquals(Message.SubmitRequest.MAX_BOUND, LeaderSubmit.boundFor(1_000));
  }
}
