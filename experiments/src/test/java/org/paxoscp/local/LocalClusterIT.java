package org.paxoscp.local;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Latency;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.workload.WorkloadRunner;
import org.paxoscp.workload.WorkloadSpec;

/**
 * The whole system on one machine: three DCs (V1, V2, V3) on real embedded HBase, one UDP
 * Transaction Service per DC on loopback, the paper's 1.5 ms round trip between V DCs, and real
 * {@link TxnClient}s. Every scenario ends with every running DC caught up ({@link
 * LocalCluster#catchUpAll}) and is judged by the {@link SerializabilityChecker} over all DCs' logs
 * (R1: no two DCs differ at a position) and the clients' history; each DC must moreover hold
 * the whole log.
 *
 * <p>The cluster starts once for the class (HBase takes seconds); each test uses an entity group
 * of its own and leaves every service running.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class LocalClusterIT {
  private static final List<String> DCS = List.of("V1", "V2", "V3");
  private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(1);
  private static final Duration CATCH_UP = Duration.ofSeconds(20);

  private static Path dataDir;
  private static LocalCluster cluster;

  @BeforeAll
  static void startCluster() throws IOException {
    dataDir = Files.createTempDirectory("paxoscp-it-");
    ClusterConfig.Wan wan = new ClusterConfig.Wan(true, Latency.paperRegions(), 0, 0.1, 0, 0,
        Set.of());
    cluster = LocalCluster.start(new LocalCluster.Options(DCS, LocalCluster.StoreKind.HBASE,
        dataDir, wan, REQUEST_TIMEOUT, 16), line -> System.out.println("[cluster] " + line));
  }

  @AfterAll
  static void stopCluster() throws IOException {
    if (cluster != null) {
      cluster.close();
    }
    if (dataDir != null) {
      try (Stream<Path> s = Files.walk(dataDir)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  /** Transports the test's clients were given (a client does not close a supplied one). */
  private final List<UdpTransport> transports = new ArrayList<>();

  /** Whatever a test stopped, the next one finds every service running. */
  @AfterEach
  void restartStopped() {
    transports.forEach(UdpTransport::close);
    for (String dc : DCS) {
      if (!cluster.isRunning(dc)) {
        cluster.startService(dc);
      }
    }
  }

  // ---- 1. contention ------------------------------------------------------------------------

  @Test
  void basicPaxosUnderContentionIsSerializable() throws Exception {
    WorkloadRunner.Result r = runWorkload(contended("contention-basic", 11),
        CommitProtocol.BASIC);
    judge("contention-basic", r.history());
    assertTrue(committed(r) >= 5, "basic Paxos committed only " + committed(r) + ": " + r);
  }

  @Test
  void paxosCpUnderContentionIsSerializableAndPromotes() throws Exception {
    WorkloadRunner.Result r = runWorkload(contended("contention-cp", 12), CommitProtocol.CP);
    judge("contention-cp", r.history());
    assertTrue(committed(r) >= 10, "Paxos-CP committed only " + committed(r) + ": " + r);
    int promotedOrCombined = r.combined();
    for (Map.Entry<Integer, Integer> e : r.commitsByRound().entrySet()) {
      if (e.getKey() > 0) {
        promotedOrCombined += e.getValue();
      }
    }
    assertTrue(promotedOrCombined >= 1, "no commit of Paxos-CP was promoted or combined under "
        + "contention: " + r.commitsByRound());
  }

  /** Six clients, two per DC, on 20 attributes: many transactions race for each position. */
  private static WorkloadSpec contended(String group, long seed) {
    return new WorkloadSpec(group, DCS, 6, 20, 4, 0.5, 10, 50, Duration.ofMillis(2), seed);
  }

  // ---- 2. a non-home DC's service stops mid-run --------------------------------------------

  @Test
  void commitsContinueWhileOneDcIsDownAndItCatchesUpAfterRestart() throws Exception {
    String group = "one-dc-down";
    // Clients live in V1 and V2; V3 is stopped once a third of the transactions are done.
    WorkloadSpec spec = new WorkloadSpec(group, List.of("V1", "V2"), 4, 50, 4, 0.5, 12, 50,
        Duration.ofMillis(2), 21);
    AtomicInteger finished = new AtomicInteger();
    CompletableFuture<WorkloadRunner.Result> run = runInBackground(spec, CommitProtocol.CP,
        finished);
    poll("a third of the transactions to finish", Duration.ofSeconds(40),
        () -> finished.get() >= spec.totalTxns() / 3 || run.isDone());
    cluster.stopService("V3");
    WorkloadRunner.Result r = run.get(60, TimeUnit.SECONDS);
    System.out.println(describe(spec, CommitProtocol.CP, r));

    // V3's store only changes through V3's service: what it lacks was chosen after it stopped.
    long seenByV3 = lastPosition(cluster.logs(group, 10_000).get("V3"));
    long afterStop = r.history().stream()
        .filter(t -> t.status() == TxnRecord.Status.COMMITTED && t.commitPosition() > seenByV3)
        .count();
    assertTrue(afterStop >= 5, "only " + afterStop + " commits after V3 stopped (V3 knew up to "
        + seenByV3 + "): " + r);

    cluster.startService("V3");
    long upTo = judge(group, r.history());
    assertTrue(upTo > seenByV3, "V3 had nothing to catch up");
    assertTrue(new LogApplier(cluster.store("V3")).appliedWatermark(group) >= upTo,
        "V3 did not apply the positions it missed");
  }

  // ---- 2b. leader combination while the batching DC's service stops mid-run ------------------

  @Test
  void leaderCombinationStaysSerializableWhenTheBatchingDcStopsMidRun() throws Exception {
    String group = "leader-batcher-down";
    // Clients in every DC; equal leading costs, so V1 (first in cluster order) batches.
    WorkloadSpec spec = new WorkloadSpec(group, DCS, 6, 50, 4, 0.5, 12, 50,
        Duration.ofMillis(2), 31);
    AtomicInteger finished = new AtomicInteger();
    CompletableFuture<WorkloadRunner.Result> run = runInBackground(spec, CommitProtocol.LEADER,
        finished);
    poll("a third of the transactions to finish", Duration.ofSeconds(60),
        () -> finished.get() >= spec.totalTxns() / 3 || run.isDone());
    long batched = cluster.service("V1").orElseThrow().service().combiner().rounds();
    cluster.stopService("V1");
    WorkloadRunner.Result r = run.get(120, TimeUnit.SECONDS);
    System.out.println(describe(spec, CommitProtocol.LEADER, r));
    assertTrue(batched > 0, "V1 ran no leader rounds before it stopped");

    long seenByV1 = lastPosition(cluster.logs(group, 10_000).get("V1"));
    long afterStop = r.history().stream()
        .filter(t -> t.status() == TxnRecord.Status.COMMITTED && t.commitPosition() > seenByV1)
        .count();
    assertTrue(afterStop >= 5, "only " + afterStop + " commits after the batching DC stopped "
        + "(it knew up to " + seenByV1 + "): " + r);
    cluster.startService("V1");
    judge(group, r.history());
  }

  /**
   * Transfers across four groups (docs/architecture.md section 10) by clients homed in V1, while
   * V1's service stops mid-run and comes back: commits go on through V2 and V3, the money is all
   * there, and the cross-group checker passes over every group's log on every DC.
   */
  @Test
  void transfersAcrossGroupsGoOnWhileTheClientsHomeDcIsDown() throws Exception {
    List<String> groups = List.of("xg-it-a", "xg-it-b", "xg-it-c", "xg-it-d");
    int accounts = 3;
    TxnClient setup = cluster.client("V2", CommitProtocol.CP);
    try (setup) {
      for (String g : groups) {
        setup.runInTransaction(g, t -> {
          for (int i = 0; i < accounts; i++) {
            t.put("acct" + i, "100");
          }
          return null;
        });
      }
    }
    List<CrossGroupChecker.Observation> observations =
        Collections.synchronizedList(new ArrayList<>());
    AtomicInteger finished = new AtomicInteger();
    AtomicInteger committed = new AtomicInteger();
    AtomicInteger committedAfterStop = new AtomicInteger();
    java.util.concurrent.atomic.AtomicBoolean stopped =
        new java.util.concurrent.atomic.AtomicBoolean();
    List<CompletableFuture<Void>> clients = new ArrayList<>();
    for (int c = 0; c < 4; c++) {
      int seed = c;
      clients.add(CompletableFuture.runAsync(() -> {
        java.util.SplittableRandom rnd = new java.util.SplittableRandom(100 + seed);
        try (TxnClient client = cluster.client("V1", CommitProtocol.CP)) {
          // 20 transfers each, then on (to 100) until enough committed after V1 stopped and in
          // all for the checks below to mean something, however the clients' conflicts and the
          // stop fall on a loaded machine.
          for (int i = 0; i < 100 && (i < 20 || committedAfterStop.get() < 3
              || committed.get() < 12); i++) {
            String g1 = groups.get(rnd.nextInt(groups.size()));
            String g2 = groups.get(rnd.nextInt(groups.size()));
            String k1 = "acct" + rnd.nextInt(accounts);
            String k2 = "acct" + rnd.nextInt(accounts);
            if (g1.equals(g2)) {
              continue;
            }
            org.paxoscp.client.MultiTransaction t = client.beginMulti();
            TxnRecord.Status status;
            try {
              long a = Long.parseLong(t.getString(g1, k1).orElseThrow());
              long b = Long.parseLong(t.getString(g2, k2).orElseThrow());
              t.put(g1, k1, Long.toString(a - 1));
              t.put(g2, k2, Long.toString(b + 1));
              t.commit();
              status = TxnRecord.Status.COMMITTED;
              committed.incrementAndGet();
              if (stopped.get()) {
                committedAfterStop.incrementAndGet();
              }
            } catch (TransactionAbortedException | UnavailableException e) {
              status = TxnRecord.Status.ABORTED;
              if (t.isActive()) {
                t.abort();
              }
            } catch (OutcomeUnknownException e) {
              status = TxnRecord.Status.UNKNOWN;
            }
            observations.add(new CrossGroupChecker.Observation(t.txnId(), status, t.groups(),
                Map.of(), false));
            finished.incrementAndGet();
          }
        }
      }));
    }
    poll("a third of the transfers to finish", Duration.ofSeconds(60),
        () -> finished.get() >= 25);
    cluster.stopService("V1");
    stopped.set(true);
    CompletableFuture.allOf(clients.toArray(CompletableFuture[]::new)).get(150, TimeUnit.SECONDS);
    assertTrue(committedAfterStop.get() >= 3, "only " + committedAfterStop + " transfers "
        + "committed after V1 stopped: " + observations);
    cluster.startService("V1");
    // Every DC holds every group's log; the money is all there, read across groups at V1.
    Map<String, Map<String, SortedMap<Long, LogValue>>> logs = new TreeMap<>();
    for (String g : groups) {
      long upTo = cluster.catchUpAll(g, 0, CATCH_UP);
      logs.put(g, cluster.logs(g, upTo));
    }
    try (TxnClient auditor = cluster.client("V1", CommitProtocol.CP)) {
      // A transfer whose client gave up may hold its keys until its deadline (the lock timeout,
      // 5 s); the audit's reads abort it after that, so retry past it.
      AtomicLong total = new AtomicLong(-1);
      poll("an audit not aborted by a lock whose client gave up", Duration.ofSeconds(30), () -> {
        try {
          total.set(auditor.runInMultiTransaction(t -> {
            long sum = 0;
            for (String g : groups) {
              for (int i = 0; i < accounts; i++) {
                sum += Long.parseLong(t.getString(g, "acct" + i).orElseThrow());
              }
            }
            return sum;
          }));
          return true;
        } catch (TransactionAbortedException e) {
          return false;
        }
      });
      assertEquals(100L * accounts * groups.size(), total.get(), "money was created or lost");
    }
    CrossGroupChecker.Result verdict = CrossGroupChecker.check(logs, Map.of(),
        List.copyOf(observations));
    assertTrue(verdict.ok(), verdict.summary());
    assertTrue(verdict.committed() >= 10, verdict.summary());
    System.out.println("cross-group transfers with V1 stopped mid-run: " + verdict.summary());
  }

  // ---- 3. the home DC's service is down ------------------------------------------------------

  @Test
  void clientsFailOverWhenTheirHomeDcIsDown() throws Exception {
    String group = "home-down";
    cluster.stopService("V1");
    for (CommitProtocol p : List.of(CommitProtocol.BASIC, CommitProtocol.CP)) {
      // 10 each: two clients that fall into step commit about one in two under basic Paxos.
      WorkloadSpec spec = new WorkloadSpec(group, List.of("V1"), 2, 50, 4, 0.5, 10, 50,
          Duration.ofMillis(1), p == CommitProtocol.BASIC ? 31 : 32);
      WorkloadRunner.Result r = runWorkload(spec, p);
      assertEquals(0, r.unavailable(), p + ": begin or a read found no DC: " + r);
      assertTrue(committed(r) >= 4, p + ": only " + committed(r) + " commits with the home DC "
          + "down: " + r);
      history.addAll(r.history());
    }
    cluster.startService("V1");
    judge(group, history);
  }

  // ---- 4. a majority of DCs is down ----------------------------------------------------------

  @Test
  void noMajorityMeansNoCommitAndAClearError() throws Exception {
    String group = "majority-down";
    // The session of a client at home in V2 is ahead of V1: V1 misses its commit.
    try (TxnClient v2 = staticClient("V2", CommitProtocol.CP);
        TxnClient v1 = staticClient("V1", CommitProtocol.CP)) {
      cluster.stopService("V1");
      Outcome first = runTxn(v2, group, "v2", List.of("x"), Map.of("x", "1"));
      assertEquals(TxnRecord.Status.COMMITTED, first.status, "commit with V2, V3 up: " + first);
      cluster.startService("V1");
      cluster.stopService("V2");
      cluster.stopService("V3");

      // Only V1 runs. Its own client begins and reads there, but its commit cannot be chosen.
      long t0 = System.nanoTime();
      Outcome stuck = runTxn(v1, group, "v1", List.of("y"), Map.of("y", "lonely"));
      Duration took = Duration.ofNanos(System.nanoTime() - t0);
      assertTrue(stuck.error != null, "a commit with one DC of three running: " + stuck);
      assertTrue(!(stuck.error instanceof TransactionAbortedException)
          || stuck.status == TxnRecord.Status.ABORTED, stuck.toString());
      assertTrue(took.compareTo(Duration.ofSeconds(20)) < 0, "the commit took " + took);
      assertErrorNames(stuck.error, group);
      System.out.println("[no majority] commit after " + took.toMillis() + " ms: " + stuck.error);

      // The V2 client's session is at a position only V2 and V3 know: V1 cannot serve it, and
      // must not serve an older snapshot either.
      t0 = System.nanoTime();
      try {
        v2.begin(group);
        fail("begin served a read position below the session's own commit");
      } catch (UnavailableException e) {
        took = Duration.ofNanos(System.nanoTime() - t0);
        assertTrue(took.compareTo(Duration.ofSeconds(20)) < 0, "begin took " + took);
        assertErrorNames(e, group);
        System.out.println("[no majority] begin after " + took.toMillis() + " ms: " + e);
      }

      cluster.startService("V2");
      cluster.startService("V3");
      // V1 may still offer a stale read position (it missed position 1): that transaction
      // aborts, and a retry, reading at the position its abort taught V1, commits.
      Outcome after = runTxn(v1, group, "v1", List.of("x", "y"), Map.of("z", "after"));
      for (int attempt = 1; attempt < 5 && after.status != TxnRecord.Status.COMMITTED;
          attempt++) {
        after = runTxn(v1, group, "v1", List.of("x", "y"), Map.of("z", "after"));
      }
      assertEquals(TxnRecord.Status.COMMITTED, after.status,
          "commit once the majority is back: " + after);
    }
    judge(group, history);
  }

  private static void assertErrorNames(Throwable e, String group) {
    String m = String.valueOf(e.getMessage());
    assertTrue(m.contains("group=" + group), "the error does not name the group: " + m);
    assertTrue(m.contains("dc="), "the error does not name a DC: " + m);
    if (e instanceof TransactionException t) {
      assertEquals(group, t.group());
      assertTrue(t.dc().isPresent(), "no DC in " + m);
    }
  }

  // ---- 5. read-your-writes across a lagging DC -----------------------------------------------

  /**
   * A vote proves nothing: a proposer that crashed after one ACCEPT leaves a vote at a position
   * that may never be chosen. Catching every DC up must stop at what is proved to exist, and must
   * not run instances that decide the voted position.
   */
  @Test
  void catchUpAllStopsAtPositionsProvedToExist() throws Exception {
    String group = "vote-only";
    try (TxnClient c = cluster.client("V1", CommitProtocol.CP)) {
      Transaction t = c.begin(group);
      t.put("k", "v");
      assertEquals(1, t.commit().position());
    }
    TreeMap<String, Mutation> w = new TreeMap<>();
    w.put("k", Mutation.put(new byte[] {7}));
    LogValue stray = LogValue.of(new org.paxoscp.wal.LogEntry("crashed", "V2", 1,
        new java.util.TreeSet<>(), w));
    Acceptor v2 = new Acceptor(cluster.store("V2"));
    assertTrue(v2.accept(new PaxosMessage.Accept(group, 3, Ballot.FAST, stray)).accepted());

    assertEquals(1, cluster.catchUpAll(group, 1, CATCH_UP));
    for (String dc : DCS) {
      Acceptor a = new Acceptor(cluster.store(dc));
      assertTrue(a.chosen(group, 1).isPresent(), "DC " + dc + " holds position 1");
      for (long q = 2; q <= 3; q++) {
        assertTrue(a.chosen(group, q).isEmpty(), "DC " + dc + ": position " + q
            + " was decided by catch-up although nothing proved it exists");
      }
    }
  }

  @Test
  void aClientReadsItsOwnWriteFromItsLaggingHomeDc() throws Exception {
    String group = "read-your-writes";
    try (TxnClient c = staticClient("V3", CommitProtocol.CP)) {
      Outcome seed = runTxn(c, group, "c", List.of(), Map.of("k", "v0"));
      assertEquals(TxnRecord.Status.COMMITTED, seed.status, seed.toString());

      cluster.stopService("V3");
      // Fails over to V1 for begin and reads; V1 and V2 choose the entry; V3 misses it.
      Outcome write = runTxn(c, group, "c", List.of("k"), Map.of("k", "v1"));
      assertEquals(TxnRecord.Status.COMMITTED, write.status, write.toString());
      long v3Applied = new LogApplier(cluster.store("V3")).appliedWatermark(group);
      assertTrue(v3Applied < write.position,
          "V3 applied " + v3Applied + " although it was down at " + write.position);

      cluster.startService("V3");
      // The client asked V3 while it was down and now asks it last, until a probe hears it
      // again (docs/client.md, "Fail-over and DC health"): wait for that, then begin at home.
      org.paxoscp.testing.Poll.until("the client hears V3 again", Duration.ofSeconds(45),
          () -> !c.silentDcs().contains("V3"));
      Transaction t = c.begin(group);
      assertTrue(t.readPosition() >= write.position,
          "read position " + t.readPosition() + " is below the client's commit at "
              + write.position);
      assertEquals(Optional.of("v1"), t.getString("k"));
      history.add(new TxnRecord(t.txnId(), "c", TxnRecord.Status.COMMITTED, t.readPosition(),
          Map.of("k", Optional.of("v1".getBytes(StandardCharsets.UTF_8))), new TreeMap<>(), -1));
      t.commit();
      // The home DC served it, after catching up.
      assertTrue(new LogApplier(cluster.store("V3")).appliedWatermark(group) >= write.position,
          "V3 did not catch up to " + write.position);
    }
    judge(group, history);
  }

  // ---- helpers --------------------------------------------------------------------------------

  private final List<TxnRecord> history = Collections.synchronizedList(new ArrayList<>());

  private static WorkloadRunner.Result runWorkload(WorkloadSpec spec, CommitProtocol p)
      throws InterruptedException {
    WorkloadRunner.Result r = WorkloadRunner.run(spec, home -> cluster.client(home, p), n -> { });
    System.out.println(describe(spec, p, r));
    return r;
  }

  private static String describe(WorkloadSpec spec, CommitProtocol p, WorkloadRunner.Result r) {
    return String.format(java.util.Locale.ROOT, "[workload] %s %s seed=%d: committed by "
            + "promotions %s, combined %d, read-only %d, aborted %d, unknown %d, unavailable %d, "
            + "%.1f s", spec.group(), p, spec.seed(), r.commitsByRound(), r.combined(),
        r.readOnly(), r.aborted(), r.unknown(), r.unavailable(), r.seconds());
  }

  private static int committed(WorkloadRunner.Result r) {
    return r.commitsByRound().values().stream().mapToInt(Integer::intValue).sum();
  }

  /**
   * A client on the static endpoints of the config (no discovery): a stopped service's port is
   * silent, a restarted one answers at once, so which DC serves a request does not depend on
   * how fast discovery notices.
   */
  private TxnClient staticClient(String home, CommitProtocol p) {
    UdpTransport t = UdpTransport.builder(cluster.config(), home).build();
    transports.add(t);
    return TxnClient.builder(cluster.config(), home, p).transport(t).build();
  }

  /** What one hand-run transaction ended as. */
  private record Outcome(TxnRecord.Status status, long position, Throwable error) {}

  /**
   * Begins, reads {@code reads}, writes {@code writes} and commits, recording what was observed
   * in {@link #history}; a begin that fails leaves no record.
   */
  private Outcome runTxn(TxnClient c, String group, String client, List<String> reads,
      Map<String, String> writes) {
    Transaction t;
    try {
      t = c.begin(group);
    } catch (UnavailableException e) {
      return new Outcome(null, -1, e);
    }
    Map<String, Optional<byte[]>> observed = new LinkedHashMap<>();
    SortedMap<String, Mutation> buffered = new TreeMap<>();
    try {
      for (String k : reads) {
        observed.put(k, t.get(k));
      }
    } catch (UnavailableException e) {
      return new Outcome(null, -1, e);
    }
    writes.forEach((k, v) -> {
      t.put(k, v);
      buffered.put(k, Mutation.put(v.getBytes(StandardCharsets.UTF_8)));
    });
    TxnRecord.Status status;
    long position = -1;
    Throwable error = null;
    try {
      CommitResult r = t.commit();
      status = TxnRecord.Status.COMMITTED;
      position = buffered.isEmpty() ? -1 : r.position();
    } catch (TransactionAbortedException | UnavailableException e) {
      status = TxnRecord.Status.ABORTED;
      error = e;
    } catch (OutcomeUnknownException e) {
      status = TxnRecord.Status.UNKNOWN;
      error = e;
    }
    history.add(new TxnRecord(t.txnId(), client, status, t.readPosition(), observed, buffered,
        position));
    return new Outcome(status, position, error);
  }

  /**
   * Catches every DC up, asserts that each holds the whole log, and runs the checker over all
   * logs and {@code records}.
   *
   * @return the log's length
   */
  private static long judge(String group, List<TxnRecord> records) {
    long upTo = cluster.catchUpAll(group, LogCatchUp.provenPosition(records), CATCH_UP);
    Map<String, SortedMap<Long, LogValue>> logs = cluster.logs(group, upTo);
    for (Map.Entry<String, SortedMap<Long, LogValue>> e : logs.entrySet()) {
      assertEquals(upTo, e.getValue().size(),
          "DC " + e.getKey() + " holds positions " + e.getValue().keySet() + " of 1.." + upTo);
    }
    CheckResult check = SerializabilityChecker.check(logs, List.copyOf(records));
    assertTrue(check.ok(), "group " + group + ": " + check);
    return upTo;
  }

  private static long lastPosition(SortedMap<Long, LogValue> log) {
    return log.isEmpty() ? 0 : log.lastKey();
  }

  /** Runs {@code spec} on another thread; {@code finished} counts finished transactions. */
  private static CompletableFuture<WorkloadRunner.Result> runInBackground(WorkloadSpec spec,
      CommitProtocol protocol, AtomicInteger finished) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        return WorkloadRunner.run(spec, home -> cluster.client(home, protocol), finished::set);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    });
  }

  private static void poll(String what, Duration timeout, BooleanSupplier condition) {
    long end = System.nanoTime() + timeout.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("timed out after " + timeout + " waiting for " + what);
      }
      LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
    }
  }
}
