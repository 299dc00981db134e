package org.paxoscp.service;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.store.hbase.SharedHBase;

/** Concurrent proposers on a real embedded HBase: one namespace per DC, judged by the checker. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class HBaseConcurrentProposersIT extends ConcurrentProposersContract {
  private static EmbeddedHBase hbase;
  private static final AtomicInteger RUNS = new AtomicInteger();

  @BeforeAll
  static void startHBase() {
    hbase = SharedHBase.get();
  }

  @Override
  protected List<KvStore> newStores(Protocol protocol) {
    int run = RUNS.incrementAndGet();
    return List.of(hbase.openStore("cc" + run + "v1"), hbase.openStore("cc" + run + "v2"),
        hbase.openStore("cc" + run + "v3"));
  }
}
