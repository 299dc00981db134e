package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.random.RandomGenerator;
import org.junit.jupiter.api.Test;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ErrorCode;
import org.paxoscp.transport.Message.ErrorReply;
import org.paxoscp.transport.Message.SubmitReply;
import org.paxoscp.transport.Message.SubmitRequest;
import org.paxoscp.transport.Latency;
import org.paxoscp.transport.RecentTimes;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.TransportTimeoutException;
import org.paxoscp.wal.LogEntry;

/**
 * Where leader combination batches, alone: the batcher by leader costs (and around a DC marked
 * down after an unanswered pass-on), the next position's leader without costs, and whose entry
 * leads a list.
 */
class BatcherPlacementTest {
  private static final List<String> DCS = List.of("V", "O", "C");
  private static final Map<String, Long> COSTS = Map.of("V", 90_000L, "O", 20_000L, "C", 20_000L);
  private static final long DOWN_MICROS = 1_000_000;

  /**
   * A clock the test moves; nothing runs on its own. Timers run only when the test moves it past
   * them with {@link #advance} (setting {@link #now} runs none).
   */
  private static final class Clock implements Scheduler {
    long now;
    final java.util.TreeMap<Long, List<Runnable>> timers = new java.util.TreeMap<>();

    void advance(long micros) {
      long until = now + micros;
      while (!timers.isEmpty() && timers.firstKey() <= until) {
        var first = timers.pollFirstEntry();
        now = first.getKey();
        first.getValue().forEach(Runnable::run);
      }
      now = until;
    }

    @Override
    public long nowMicros() {
      return now;
    }

    @Override
    public Cancellable schedule(long delayMicros, Runnable task) {
      boolean[] cancelled = {false};
      timers.computeIfAbsent(now + delayMicros, k -> new ArrayList<>())
          .add(() -> {
            if (!cancelled[0]) {
              task.run();
            }
          });
      return () -> cancelled[0] = true;
    }

    @Override
    public void execute(Runnable task) {
      task.run();
    }

    @Override
    public RandomGenerator random() {
      return new SplittableRandom(1);
    }
  }

  /** Answers each request with what the test queued for that DC, recording where it went. */
  private static final class Replies implements Transport {
    final List<String> sentTo = new ArrayList<>();
    final List<Message> sent = new ArrayList<>();
    final Map<String, CompletableFuture<Message>> answers = new TreeMap<>();

    @Override
    public String localDc() {
      return "V";
    }

    @Override
    public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
      sentTo.add(dc);
      sent.add(request);
      return answers.getOrDefault(dc, CompletableFuture.failedFuture(
          new TransportTimeoutException("no answer from " + dc)));
    }

    @Override
    public void send(String dc, Message message) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void close() {}
  }

  private final Clock clock = new Clock();
  private static final LeaderCosts PAPER = new LeaderCosts(COSTS, Latency.paperRegions());
  private final Replies transport = new Replies();
  private final OriginShares shares = new OriginShares(DCS);

  private BatcherPlacement placement(String dc, Map<String, Long> costs) {
    LeaderCosts known = new LeaderCosts(costs, null);
    return new BatcherPlacement(dc, DCS, () -> known, transport, clock, Duration.ofMillis(500),
        DOWN_MICROS, new OriginShares(DCS));
  }

  /** A placement that knows the paper's RTTs and weighs by {@link #shares}. */
  private BatcherPlacement weighted(String dc) {
    return new BatcherPlacement(dc, DCS, () -> PAPER, transport, clock, Duration.ofMillis(500),
        DOWN_MICROS, shares);
  }

  /** {@code n} committed entries from {@code origins} in turn, 10 ms apart. */
  private void entries(int n, String... origins) {
    for (int i = 0; i < n; i++) {
      shares.record(origins[i % origins.length]);
      clock.now += 10_000;
    }
  }

  private static SubmitRequest submit(String txn, String origin) {
    LogEntry e = new LogEntry(txn, origin, 0, new TreeSet<>(), new TreeMap<>());
    return new SubmitRequest("g", 1, e, 4, false);
  }

  private static OptionalInt neverAsked() {
    throw new AssertionError("with leader costs the next position's leader is not asked");
  }

  @Test
  void withCostsTheCheapestDcBatchesAndATieGoesToTheFirstListed() {
    BatcherPlacement atV = placement("V", COSTS);
    assertEquals(Optional.of("O"), atV.passOnTo(BatcherPlacementTest::neverAsked));
    assertEquals(Optional.empty(), placement("O", COSTS).passOnTo(
        BatcherPlacementTest::neverAsked));
    assertEquals(Optional.of("O"), placement("C", COSTS).passOnTo(
        BatcherPlacementTest::neverAsked));
    // With costs, a round never passes its entries on: the batcher asks the leader's grant.
    assertEquals(Optional.empty(), atV.roundPassesOnTo(OptionalInt.of(1)));
  }

  @Test
  void aBatcherThatDidNotAnswerIsPassedOverUntilItsDownTimeEnds() throws Exception {
    BatcherPlacement atV = placement("V", COSTS);
    Message m = atV.forward(submit("t1", "V"), "O").get();
    ErrorReply e = assertInstanceOf(ErrorReply.class, m);
    assertEquals(ErrorCode.LEADER_UNREACHABLE, e.code());
    assertTrue(e.detail().contains("DC V passed the entry on to DC O"), e.detail());
    // One unanswered pass-on may be a lost datagram; so may the next, if one answer came between.
    assertEquals(Optional.of("O"), atV.passOnTo(BatcherPlacementTest::neverAsked));
    atV.forward(submit("t2", "V"), "O").get();
    transport.answers.put("O", CompletableFuture.completedFuture(
        SubmitReply.committed("g", 1, "t3", 1)));
    atV.forward(submit("t3", "V"), "O").get();
    transport.answers.remove("O");
    for (int i = 0; i < BatcherPlacement.DOWN_AFTER_MISSES - 1; i++) {
      atV.forward(submit("t" + (4 + i), "V"), "O").get();
      assertEquals(Optional.of("O"), atV.passOnTo(BatcherPlacementTest::neverAsked));
    }
    atV.forward(submit("t9", "V"), "O").get();
    assertEquals(Optional.of("C"), atV.passOnTo(BatcherPlacementTest::neverAsked));
    clock.now += DOWN_MICROS;
    assertEquals(Optional.of("O"), atV.passOnTo(BatcherPlacementTest::neverAsked));
    assertEquals(2 + BatcherPlacement.DOWN_AFTER_MISSES + 1, atV.forwarded());
  }

  @Test
  void aPassOnIsSentMarkedForwardedAndItsAnswerRelayed() throws Exception {
    BatcherPlacement atV = placement("V", COSTS);
    SubmitReply committed = SubmitReply.committed("g", 1, "t1", 1);
    transport.answers.put("O", CompletableFuture.completedFuture(committed));
    assertEquals(committed, atV.forward(submit("t1", "V"), "O").get());
    assertEquals(List.of("O"), transport.sentTo);
    SubmitRequest sent = assertInstanceOf(SubmitRequest.class, transport.sent.get(0));
    assertTrue(sent.forwarded(), "marked as passed on, so the batcher does not pass it again");
    // Answered: O is not marked down.
    assertEquals(Optional.of("O"), atV.passOnTo(BatcherPlacementTest::neverAsked));
  }

  @Test
  void withoutCostsEntriesGoToTheNextPositionsLeader() {
    BatcherPlacement atV = placement("V", Map.of());
    assertEquals(Optional.of("C"), atV.passOnTo(() -> OptionalInt.of(2)));
    assertEquals(Optional.empty(), atV.passOnTo(() -> OptionalInt.of(0)));
    assertEquals(Optional.empty(), atV.passOnTo(OptionalInt::empty));
    assertEquals(Optional.of("O"), atV.roundPassesOnTo(OptionalInt.of(1)));
    assertEquals(Optional.empty(), atV.roundPassesOnTo(OptionalInt.of(0)));
    assertEquals(Optional.empty(), atV.roundPassesOnTo(OptionalInt.empty()));
  }

  @Test
  void theCheapestOriginLeadsAListAndThisDcWinsATie() {
    Comparator<LogEntry> atO = placement("O", COSTS).firstEntryOrder();
    LogEntry v = submit("v", "V").entry();
    LogEntry o = submit("o", "O").entry();
    LogEntry c = submit("c", "C").entry();
    assertEquals(o, java.util.stream.Stream.of(v, c, o).min(atO).orElseThrow());
    assertEquals(c, java.util.stream.Stream.of(v, c).min(atO).orElseThrow());
    Comparator<LogEntry> atC = placement("C", COSTS).firstEntryOrder();
    assertEquals(c, java.util.stream.Stream.of(o, c).min(atC).orElseThrow());
    // Without costs every DC costs the same: this DC's entry first.
    Comparator<LogEntry> flat = placement("V", Map.of()).firstEntryOrder();
    assertEquals(v, java.util.stream.Stream.of(c, o, v).min(flat).orElseThrow());
  }

  @Test
  void clientsOnlyInAFarDcMoveTheBatcherThereAndSpreadClientsBringItBack() {
    // O and C lead for 20 ms, V for 90 ms: O batches while nothing was recorded.
    BatcherPlacement atO = weighted("O");
    BatcherPlacement atV = weighted("V");
    assertEquals("O", atO.batcher());
    // Every entry from V: batching at V costs 90 ms a commit, at O 90 + 20 ms.
    entries(BatcherPlacement.MIN_ENTRIES, "V");
    assertEquals("V", atO.batcher());
    assertEquals("V", atV.batcher());
    assertEquals(Optional.of("V"), atO.passOnTo(BatcherPlacementTest::neverAsked));
    assertEquals(Optional.empty(), atV.passOnTo(BatcherPlacementTest::neverAsked));
    // Clients in every DC: O is cheapest again (20 + 110/3 ms against 90 + 180/3 at V).
    long movesBefore = atO.moves();
    for (int i = 0; i < 200; i++) {
      entries(5, "V", "O", "C");
      atO.batcher();
      atV.batcher();
    }
    assertEquals("O", atO.batcher());
    assertEquals("O", atV.batcher());
    assertEquals(1, atO.moves() - movesBefore, "moved back once and stayed");
    assertEquals(1, atV.moves());
  }

  @Test
  void sharesHoveringAroundTheBoundaryMoveTheBatcherAtMostOnce() {
    // Batching at V and at O cost the same when about 88% of the entries come from V (the rest
    // split between O and C). Around there, a rule without the margin, the band and the dwell
    // moved the batcher 35 (V's share 0.885), 25 (0.9) and 8 (0.92) times in these 50 s.
    for (double pV : new double[] {0.86, 0.885, 0.9, 0.92, 0.94, 0.96}) {
      OriginShares origins = new OriginShares(DCS);
      BatcherPlacement atO = new BatcherPlacement("O", DCS, () -> PAPER, transport, clock,
          Duration.ofMillis(500), DOWN_MICROS, origins);
      java.util.SplittableRandom random = new java.util.SplittableRandom(42);
      for (int i = 0; i < 5_000; i++) {
        origins.record(random.nextDouble() < pV ? "V" : random.nextBoolean() ? "O" : "C");
        clock.now += 10_000;
        atO.batcher();
      }
      assertTrue(atO.moves() <= 1, "V's share " + pV + ": the batcher moved " + atO.moves()
          + " times in 50 s");
    }
  }

  @Test
  void aWeightedBatcherThatStopsAnsweringIsReplacedAtOnce() throws Exception {
    BatcherPlacement atO = weighted("O");
    entries(BatcherPlacement.MIN_ENTRIES, "V");
    assertEquals("V", atO.batcher());
    // One pass-on unanswered is a lost datagram, not a DC down.
    atO.forward(submit("t1", "O"), "V").get();
    assertEquals("V", atO.batcher());
    for (int i = 1; i < BatcherPlacement.DOWN_AFTER_MISSES; i++) {
      atO.forward(submit("t" + i, "O"), "V").get();
    }
    assertEquals("O", atO.batcher(), "V is marked down: the cheapest of the rest");
    // Back once V is no longer marked down and the move's dwell is over.
    clock.now += Math.max(DOWN_MICROS, BatcherPlacement.DWELL_MICROS);
    assertEquals("V", atO.batcher());
    assertEquals(2, atO.moves());
  }

  @Test
  void anEntryItsBatcherLeavesUnansweredMovesOnAndSilenceAfterAMarkMarksAgainLonger()
      throws Exception {
    BatcherPlacement atV = placement("V", COSTS);
    SubmitReply fromHere = SubmitReply.committed("g", 1, "t1", 1);
    Message m = atV.forward(submit("t1", "V"), "O",
        () -> CompletableFuture.completedFuture(fromHere)).get();
    assertEquals(fromHere, m, "the entry went elsewhere, and that answer is relayed");
    assertEquals(1, atV.moved());
    assertFalse(atV.isDown("O"), "one unanswered pass-on may be a lost datagram");
    for (int i = 2; i <= BatcherPlacement.DOWN_AFTER_MISSES; i++) {
      atV.forward(submit("t" + i, "V"), "O").get();
    }
    assertTrue(atV.isDown("O"));
    long first = DOWN_MICROS / BatcherPlacement.FIRST_MARK_SHARE;
    clock.now += first;
    assertFalse(atV.isDown("O"), "the first mark is short");
    // Still silent when its mark ran out: one unanswered pass-on marks it again, twice as long.
    atV.forward(submit("t8", "V"), "O").get();
    assertTrue(atV.isDown("O"));
    clock.now += first;
    assertTrue(atV.isDown("O"), "the second mark lasts twice as long as the first");
    clock.now += first;
    assertFalse(atV.isDown("O"));
    // An answer forgets the marks: the next unanswered pass-on is one miss again.
    transport.answers.put("O", CompletableFuture.completedFuture(
        SubmitReply.committed("g", 1, "t9", 1)));
    atV.forward(submit("t9", "V"), "O").get();
    transport.answers.remove("O");
    atV.forward(submit("t10", "V"), "O").get();
    assertFalse(atV.isDown("O"));
  }

  @Test
  void anEntryMovedOffASilentBatcherGoesToTheNextOneOrStaysHere() throws Exception {
    assertEquals(Optional.of("O"), placement("V", COSTS).passOnTo(
        BatcherPlacementTest::neverAsked));
    assertEquals(Optional.of("C"), placement("V", COSTS).passOnTo(
        BatcherPlacementTest::neverAsked, "O"), "the cheapest DC to lead but O");
    assertEquals(Optional.empty(), placement("C", COSTS).passOnTo(
        BatcherPlacementTest::neverAsked, "O"), "C is the next batcher itself");
    // Without costs the next position's leader batches; one that left the entry unanswered
    // does not, and neither does one marked down: the entry runs here.
    BatcherPlacement atV = placement("V", Map.of());
    assertEquals(Optional.empty(), atV.passOnTo(() -> OptionalInt.of(1), "O"));
    for (int i = 0; i < BatcherPlacement.DOWN_AFTER_MISSES; i++) {
      atV.forward(submit("t" + i, "V"), "O").get();
    }
    assertEquals(Optional.empty(), atV.passOnTo(() -> OptionalInt.of(1)));
    assertEquals(Optional.empty(), atV.roundPassesOnTo(OptionalInt.of(1)));
  }

  @Test
  void aListStartsWithAnEntryOfADcNotMarkedDown() throws Exception {
    BatcherPlacement atV = placement("V", COSTS);
    Comparator<LogEntry> order = atV.firstEntryOrder();
    LogEntry fromO = submit("t1", "O").entry();
    LogEntry fromV = submit("t2", "V").entry();
    assertTrue(order.compare(fromO, fromV) < 0, "O is cheaper to lead");
    for (int i = 0; i < BatcherPlacement.DOWN_AFTER_MISSES; i++) {
      atV.forward(submit("t" + (3 + i), "V"), "O").get();
    }
    assertTrue(order.compare(fromV, fromO) < 0, "O is marked down: its grant is not asked");
  }

  @Test
  void theMoveBoundFollowsTheBatchersRecentAnswers() {
    BatcherPlacement atO = weighted("O");
    long ceiling = 500_000;
    // Before answers: three times a round there by the round trips known (O to V and back,
    // and V's nearest majority).
    long expected = Latency.paperRegions().rttMicros("O", "V") + COSTS.get("V");
    assertEquals(Math.min(ceiling, BatcherPlacement.MOVE_AFTER_MEDIANS * expected),
        atO.moveBoundMicros("V"));
    for (int i = 0; i < RecentTimes.WINDOW; i++) {
      CompletableFuture<Message> answer = new CompletableFuture<>();
      transport.answers.put("V", answer);
      CompletableFuture<Message> relayed = atO.forward(submit("t" + i, "O"), "V");
      clock.now += 40_000;
      answer.complete(SubmitReply.committed("g", 1, "t" + i, 1));
      assertTrue(relayed.isDone());
    }
    assertEquals(BatcherPlacement.MOVE_AFTER_MEDIANS * 40_000L, atO.moveBoundMicros("V"));
  }

  @Test
  void aBatcherThatBecameSlowerButAnswersRaisesItsBoundAndKeepsItsEntries() throws Exception {
    Clock timerClock = new Clock();
    List<CompletableFuture<Message>> pending = new ArrayList<>();
    Transport slow = new Transport() {
      @Override
      public String localDc() {
        return "V";
      }

      @Override
      public CompletableFuture<Message> request(String dc, Message request, Duration timeout) {
        CompletableFuture<Message> f = new CompletableFuture<>();
        pending.add(f);
        return f;
      }

      @Override
      public void send(String dc, Message message) {}

      @Override
      public void close() {}
    };
    BatcherPlacement atV = new BatcherPlacement("V", DCS, () -> new LeaderCosts(COSTS, null),
        slow, timerClock, Duration.ofMillis(500), DOWN_MICROS, new OriginShares(DCS));
    SubmitReply elsewhere = SubmitReply.committed("g", 1, "elsewhere", 1);
    int[] movedAt = new int[1];
    java.util.function.IntConsumer passOn = i -> {
      CompletableFuture<Message> relayed = atV.forward(submit("t" + i, "V"), "O",
          () -> CompletableFuture.completedFuture(elsewhere));
      timerClock.advance(i < RecentTimes.WINDOW ? 20_000 : 80_000);
      pending.get(pending.size() - 1).complete(SubmitReply.committed("g", 1, "t" + i, 1));
      if (relayed.join() == elsewhere) {
        movedAt[0] = i;
      }
    };
    for (int i = 0; i < RecentTimes.WINDOW; i++) {
      passOn.accept(i);
    }
    assertEquals(0, atV.moved());
    assertEquals(BatcherPlacement.MOVE_AFTER_MEDIANS * 20_000L, atV.moveBoundMicros("O"));
    // O now answers every pass-on in 80 ms, past the 60 ms bound: the first entries move on,
    // but their late answers are timed, the bound rises, and the entries after stay with O.
    for (int i = RecentTimes.WINDOW; i < 4 * RecentTimes.WINDOW; i++) {
      passOn.accept(i);
    }
    assertTrue(atV.moved() > 0 && atV.moved() <= RecentTimes.WINDOW / 2 + 1,
        "moved " + atV.moved());
    assertTrue(movedAt[0] < 2 * RecentTimes.WINDOW, "the last entry moved was " + movedAt[0]);
    assertEquals(BatcherPlacement.MOVE_AFTER_MEDIANS * 80_000L, atV.moveBoundMicros("O"));
    assertFalse(atV.isDown("O"), "a batcher that answers every pass-on is not marked down");
  }
}
