package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SortedMap;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.paxoscp.check.CheckResult;
import org.paxoscp.check.SerializabilityChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;

/**
 * Several client threads commit contended transactions concurrently through the shipped service
 * of three DCs over a store ({@link InProcessDcs}), with either protocol; every DC's log and every history are then judged by the
 * checker. One suite, run on the in-memory store and on HBase.
 */
@Timeout(300)
public abstract class ConcurrentProposersContract {
  private static final String GROUP = "concurrent";
  private static final List<String> DCS = List.of("V1", "V2", "V3");
  private static final int THREADS = 4;
  private static final int TXNS_PER_THREAD = 50;
  private static final int ATTRIBUTES = 20;

  /** Three fresh, empty stores, one per DC. */
  protected abstract List<KvStore> newStores(Protocol protocol) throws Exception;

  @ParameterizedTest
  @EnumSource(value = Protocol.class, names = {"BASIC", "CP"})
  void concurrentCommitsAreOneCopySerializable(Protocol protocol) throws Exception {
    List<KvStore> stores = newStores(protocol);
    List<Acceptor> acceptors = stores.stream().map(Acceptor::new).toList();
    List<LogApplier> appliers = stores.stream().map(LogApplier::new).toList();
    InProcessDcs runner = new InProcessDcs(DCS, stores);
    ProposerConfig cfg = ProposerConfig.defaults(protocol, DCS);
    AtomicLong ids = new AtomicLong(1);
    List<TxnRecord> history = Collections.synchronizedList(new ArrayList<>());
    AtomicLong maxPosition = new AtomicLong();
    AtomicLong promoted = new AtomicLong();

    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> futures = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int thread = t;
        futures.add(pool.submit(() -> {
          SplittableRandom rng = new SplittableRandom(thread);
          int home = thread % DCS.size();
          for (int i = 0; i < TXNS_PER_THREAD; i++) {
            String txnId = "t" + thread + "-" + i;
            long readPos = appliers.get(home).applyKnown(GROUP);
            Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
            TreeMap<String, Mutation> writes = new TreeMap<>();
            for (int op = 0; op < 4; op++) {
              String key = "k" + rng.nextInt(ATTRIBUTES);
              if (rng.nextBoolean()) {
                if (!writes.containsKey(key)) {
                  reads.putIfAbsent(key, appliers.get(home).read(GROUP, key, readPos));
                }
              } else {
                writes.put(key, Mutation.put((txnId + "/" + key).getBytes(StandardCharsets.UTF_8)));
              }
            }
            if (writes.isEmpty()) {
              history.add(new TxnRecord(txnId, "c" + thread, TxnRecord.Status.COMMITTED, readPos,
                  reads, writes, -1));
              continue;
            }
            OptionalInt leader = readPos == 0 ? OptionalInt.empty()
                : acceptors.get(home).chosen(GROUP, readPos).map(v -> Proposer.leaderAfter(DCS, v)).orElse(OptionalInt.empty());
            LogEntry entry = new LogEntry(txnId, DCS.get(home), readPos,
                new TreeSet<>(reads.keySet()), writes);
            Proposer p = new Proposer(cfg, GROUP, ProposerId.of(ids.getAndIncrement()), entry, readPos + 1,
                leader, rng.split());
            Outcome o = runner.run(p);
            maxPosition.accumulateAndGet(p.position(), Math::max);
            TxnRecord.Status status = switch (o.status()) {
              case COMMITTED -> TxnRecord.Status.COMMITTED;
              case ABORTED -> TxnRecord.Status.ABORTED;
              default -> TxnRecord.Status.UNKNOWN;
            };
            if (o.status() == Outcome.Status.COMMITTED && o.promotions() > 0) {
              promoted.incrementAndGet();
            }
            history.add(new TxnRecord(txnId, "c" + thread, status, readPos, reads, writes,
                status == TxnRecord.Status.COMMITTED ? o.position() : -1));
          }
          return null;
        }));
      }
      for (Future<?> f : futures) {
        f.get(240, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    runner.close();

    // Learn every position at every DC, then judge.
    for (long pos = 1; pos <= maxPosition.get(); pos++) {
      long position = pos;
      if (acceptors.stream().anyMatch(a -> a.chosen(GROUP, position).isEmpty())) {
        Outcome o = runner.run(Proposer.learner(cfg, GROUP, ProposerId.of(ids.getAndIncrement()), pos,
            new SplittableRandom(pos)));
        assertEquals(Outcome.Status.LEARNED, o.status());
      }
    }
    Map<String, SortedMap<Long, LogValue>> logs = new LinkedHashMap<>();
    for (int dc = 0; dc < DCS.size(); dc++) {
      SortedMap<Long, LogValue> log = new TreeMap<>();
      for (long pos = 1; pos <= maxPosition.get(); pos++) {
        Optional<LogValue> v = acceptors.get(dc).chosen(GROUP, pos);
        if (v.isPresent()) {
          log.put(pos, v.get());
        }
      }
      logs.put(DCS.get(dc), log);
    }
    CheckResult check = SerializabilityChecker.check(logs, history);
    assertTrue(check.ok(), check.toString());
    long committed = history.stream()
        .filter(r -> r.status() == TxnRecord.Status.COMMITTED && !r.readOnly()).count();
    assertTrue(committed >= 20, "too few commits to mean anything: " + committed);
    assertEquals(THREADS * TXNS_PER_THREAD, history.size());
    if (protocol == Protocol.BASIC) {
      assertEquals(0, promoted.get());
    }
  }
}
