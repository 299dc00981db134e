package org.paxoscp.paxos;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

class PlacementTest {
  private static LogEntry entry(String id, List<String> reads, String... writes) {
    TreeMap<String, Mutation> w = new TreeMap<>();
    for (String k : writes) {
      w.put(k, Mutation.put(id.getBytes(StandardCharsets.UTF_8)));
    }
    return new LogEntry(id, "V", 3, new TreeSet<>(reads), w);
  }

  @Test
  void aStaleReadConflictsAndDisjointKeysDoNot() {
    assertTrue(Placement.conflicts(entry("a", List.of(), "x"), entry("b", List.of("x"))));
    assertFalse(Placement.conflicts(entry("a", List.of(), "x"), entry("b", List.of("y"), "x")));
  }

  @Test
  void anEntrysWithdrawalConflictsWithItAndWithNothingElse() {
    LogEntry e = entry("V-1", List.of(), "x");
    LogEntry w = Placement.withdrawal(e);
    assertEquals("withdraw:V-1", w.txnId());
    assertEquals(e.readPosition(), w.readPosition());
    assertTrue(w.readSet().isEmpty() && w.writes().isEmpty() && w.xg() == null);
    assertTrue(Placement.isWithdrawal(w));
    assertFalse(Placement.isWithdrawal(e));
    assertTrue(Placement.conflicts(w, e), "a withdrawn entry may not follow its withdrawal");
    assertTrue(Placement.conflicts(LogValue.of(entry("other", List.of(), "z"), w), e));
    assertFalse(Placement.conflicts(w, entry("V-2", List.of("x"), "x")));
    assertFalse(Placement.conflicts(w, entry("V-10", List.of())), "ids match exactly");
    assertFalse(Placement.conflicts(e, w), "the withdrawal reads nothing, so nothing blocks it");
  }

  @Test
  void aWithdrawalIsAnOrdinaryEntryOnTheWire() {
    LogValue v = LogValue.of(Placement.withdrawal(entry("V-1", List.of("y"), "x")));
    assertEquals(v, LogCodec.decode(LogCodec.encode(v)));
  }
}
