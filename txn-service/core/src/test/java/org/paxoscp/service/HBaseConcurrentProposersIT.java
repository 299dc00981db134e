package org.paxoscp.service;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;

/** Concurrent proposers on a real embedded HBase: one namespace per DC, judged by the checker. */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class HBaseConcurrentProposersIT extends ConcurrentProposersContract {
  private static EmbeddedHBase hbase;
  private static final AtomicInteger RUNS = new AtomicInteger();

  @BeforeAll
  static void startHBase(@TempDir Path dir) {
    hbase = EmbeddedHBase.start(dir);
  }

  @AfterAll
  static void stopHBase() {
    if (hbase != null) {
      hbase.close();
    }
  }

  @Override
  protected List<KvStore> newStores(Protocol protocol) {
    int run = RUNS.incrementAndGet();
    return List.of(hbase.openStore("cc" + run + "v1"), hbase.openStore("cc" + run + "v2"),
        hbase.openStore("cc" + run + "v3"));
  }
}
