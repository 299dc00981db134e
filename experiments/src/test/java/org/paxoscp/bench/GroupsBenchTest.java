package org.paxoscp.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The pure parts of {@code paxoscp bench-groups}: parsing, group drawing, CSV rows. */
class GroupsBenchTest {

  @Test
  void countsAcceptPlainScientificPowerAndSuffixForms() {
    assertEquals(100, GroupsBench.parseCount("100"));
    assertEquals(1_000_000, GroupsBench.parseCount("1e6"));
    assertEquals(1_000_000, GroupsBench.parseCount("10^6"));
    assertEquals(10_000, GroupsBench.parseCount(" 10k"));
    assertEquals(2_500_000, GroupsBench.parseCount("2.5M"));
    for (String bad : List.of("0", "-5", "1.5", "abc", "", "1e-3")) {
      assertThrows(IllegalArgumentException.class, () -> GroupsBench.parseCount(bad), bad);
    }
  }

  @Test
  void defaultTransactionCountGrowsWithGroupsWithinBounds() {
    assertEquals(2_000, GroupsBench.defaultTxns(100));
    assertEquals(10_000, GroupsBench.defaultTxns(10_000));
    assertEquals(50_000, GroupsBench.defaultTxns(1_000_000));
  }

  @Test
  void distributionsParseAndStayInRange() {
    assertEquals(GroupPicker.Dist.ZIPF, GroupPicker.Dist.parse("Zipfian"));
    assertEquals(GroupPicker.Dist.UNIFORM, GroupPicker.Dist.parse("uniform"));
    assertThrows(IllegalArgumentException.class, () -> GroupPicker.Dist.parse("normal"));
    assertThrows(IllegalArgumentException.class,
        () -> new GroupPicker(GroupPicker.Dist.UNIFORM, 0));
    for (GroupPicker.Dist d : GroupPicker.Dist.values()) {
      GroupPicker p = new GroupPicker(d, 7);
      for (int i = 0; i < 20_000; i++) {
        long g = p.next();
        assertTrue(g >= 0 && g < 7, d + " drew " + g);
      }
    }
    assertEquals("g42", GroupPicker.name(42));
  }

  @Test
  void newDrawsEveryGroupOnceInOrderThenStartsOver() {
    assertEquals(GroupPicker.Dist.NEW, GroupPicker.Dist.parse("New"));
    GroupPicker p = new GroupPicker(GroupPicker.Dist.NEW, 3);
    java.util.List<Long> drawn = new java.util.ArrayList<>();
    for (int i = 0; i < 7; i++) {
      drawn.add(p.next());
    }
    assertEquals(java.util.List.of(0L, 1L, 2L, 0L, 1L, 2L, 0L), drawn);
  }

  @Test
  void zipfFavoursTheFirstGroupsAndUniformDoesNot() {
    int n = 1_000;
    int draws = 200_000;
    int[] zipf = histogram(new GroupPicker(GroupPicker.Dist.ZIPF, n), n, draws);
    int[] uniform = histogram(new GroupPicker(GroupPicker.Dist.UNIFORM, n), n, draws);
    // s = 0.99 over 1,000 groups: group 0 gets about 1/H(1000, 0.99), some 13% of the draws
    // (uniform: 0.1%); the ten hottest about 40%.
    assertTrue(zipf[0] > draws / 20, "zipf head " + zipf[0]);
    assertTrue(uniform[0] < draws / 200, "uniform head " + uniform[0]);
    int top10 = 0;
    for (int i = 0; i < 10; i++) {
      top10 += zipf[i];
    }
    assertTrue(top10 > draws / 4, "zipf top ten " + top10);
    assertTrue(zipf[0] > zipf[1] && zipf[1] > zipf[9] && zipf[9] > zipf[n - 1]);
  }

  @Test
  void groupSetCountsDistinctIndexes() {
    GroupsBench.GroupSet s = new GroupsBench.GroupSet(130);
    assertTrue(s.add(0));
    assertTrue(s.add(129));
    assertFalse(s.add(0));
    assertTrue(s.add(64));
    assertEquals(3, s.size());
  }

  @Test
  void heapInfoOfTheSerialAndG1CollectorsIsSummedWithoutMetaspace() {
    String serial = """
        12345:
         def new generation   total 9792K, used 1024K [0x00000000f0000000, 0x00000000f0aa0000)
          eden space 8704K,  11% used [0x00000000f0000000, 0x00000000f0100000)
          from space 1088K,   0% used [0x00000000f0100000, 0x00000000f0100000)
          to   space 1088K,   0% used [0x00000000f0100000, 0x00000000f0100000)
         tenured generation   total 21888K, used 10240K [0x00000000f5550000, 0x00000000f6aa0000)
           the space 21888K,  46% used [0x00000000f5550000, 0x00000000f5f50000)
         Metaspace       used 30000K, committed 30500K, reserved 1081344K
          class space    used 3000K, committed 3200K, reserved 1048576K
        """;
    HeapProbe.Heap h = HeapProbe.parseHeapInfo(serial);
    assertEquals((1024 + 10240) * 1024L, h.usedBytes());
    assertEquals((9792 + 21888) * 1024L, h.committedBytes());
    assertEquals(11.0, h.usedMb(), 1e-9);
    String g1 = " garbage-first heap   total 262144K, used 5120K [0x0000000700000000, "
        + "0x0000000800000000)\n  region size 1024K, 3 young (3072K), 0 survivors (0K)\n"
        + " Metaspace       used 900K, committed 1000K, reserved 1056768K\n";
    assertEquals(5120 * 1024L, HeapProbe.parseHeapInfo(g1).usedBytes());
    assertThrows(IllegalStateException.class, () -> HeapProbe.parseHeapInfo("12345:\n"));
  }

  @Test
  void storeCountsFileParses() {
    CountingServiceMain.StoreCounts c = CountingServiceMain.parse("1700000000000 10 2 5 7 999\n");
    assertEquals(1_700_000_000_000L, c.atMillis());
    assertEquals(24, c.counts().operations());
    assertEquals(0, c.overloaded());
    assertEquals(3, CountingServiceMain.parse("1700000000000 10 2 5 7 999 3\n").overloaded());
    assertThrows(IllegalArgumentException.class, () -> CountingServiceMain.parse("1 2 3"));
  }

  @Test
  void csvRowMatchesItsHeaderAndWritesMinusOneForWhatWasNotMeasured() {
    List<String> dcs = List.of("V1", "V2", "O");
    Map<String, Double> idle = new LinkedHashMap<>(Map.of("V1", 20.0, "V2", 21.0, "O", 19.5));
    Map<String, Double> after = new LinkedHashMap<>();
    after.put("V1", 60.0);
    after.put("V2", 50.0);
    after.put("O", -1.0); // died
    GroupsRow r = new GroupsRow(10_000, GroupPicker.Dist.ZIPF, "cp", "memory", true, 8, 20.0,
        1_000, 900, 60, 30, 0, 10, 5.25, 120.5, 7.0, 130.0, 800, 750, idle, after, 4_500.0,
        1_800.0, 27_000, 2);
    String[] header = GroupsRow.csvHeader(dcs).split(",");
    String[] line = r.csvLine(dcs).split(",");
    assertEquals(header.length, line.length);
    Map<String, String> cols = new LinkedHashMap<>();
    for (int i = 0; i < header.length; i++) {
      cols.put(header[i], line[i]);
    }
    assertEquals("10000", cols.get("groups"));
    assertEquals("zipf", cols.get("dist"));
    assertEquals("on", cols.get("wan"));
    assertEquals("45.00", cols.get("commits_per_s"));
    // 30 unknown + 0 unavailable + 10 errors; the 60 aborts are not failures.
    assertEquals("40", cols.get("failed"));
    assertEquals("5.250", cols.get("commit_p50_ms"));
    assertEquals("120.500", cols.get("commit_p99_ms"));
    assertEquals("800", cols.get("distinct_groups_touched"));
    assertEquals("750", cols.get("distinct_groups_committed"));
    assertEquals("21.00", cols.get("service_heap_mb_idle_max"));
    assertEquals("60.00", cols.get("service_heap_mb_max"));
    // V1 grew by 40 MB over 750 groups.
    assertEquals(String.format(java.util.Locale.ROOT, "%.1f", 40.0 * 1024 * 1024 / 750),
        cols.get("heap_growth_bytes_per_group"));
    assertEquals("5.000", cols.get("cpu_ms_per_commit"));
    assertEquals("2.000", cols.get("client_cpu_ms_per_commit"));
    assertEquals("30.00", cols.get("store_requests_per_commit"));
    assertEquals("2", cols.get("services_alive"));
    assertEquals("-1", cols.get("heap_mb_O"));
    assertEquals("19.50", cols.get("heap_idle_mb_O"));

    GroupsRow uncounted = new GroupsRow(100, GroupPicker.Dist.UNIFORM, "cp", "hbase", false, 1,
        1.0, 0, 0, 0, 0, 0, 0, -1, -1, -1, -1, 0, 0, Map.of(), Map.of(), -1, -1, -1, 0);
    String l = uncounted.csvLine(dcs);
    assertTrue(l.startsWith("100,uniform,cp,hbase,off,1,0,1.0,0,0.00,"), l);
    assertEquals(header.length, l.split(",").length);
    assertEquals("-1", l.split(",")[27]); // store_requests_per_commit
  }

  private static int[] histogram(GroupPicker p, int n, int draws) {
    int[] h = new int[n];
    for (int i = 0; i < draws; i++) {
      h[(int) p.next()]++;
    }
    return h;
  }
}
