package org.paxoscp.paxos;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;
import org.paxoscp.store.hbase.HBaseKvStore;
import org.paxoscp.store.hbase.SharedHBase;

/** GC watermark and collection over {@link HBaseKvStore} on a real embedded HBase. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HBaseLogCollectorIT extends LogCollectorContract {
  private static EmbeddedHBase hbase;
  private static final AtomicInteger DCS = new AtomicInteger();

  @BeforeAll
  static void startHBase() {
    hbase = SharedHBase.get();
  }

  /** Every test gets a DC (namespace and tables) of its own. */
  @Override
  protected KvStore newStore() {
    return hbase.openStore("gc" + DCS.incrementAndGet());
  }
}
