package org.paxoscp.store.hbase;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStoreContract;

/** The {@link KvStore} contract on {@link HBaseKvStore} over a real embedded HBase. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HBaseKvStoreIT extends KvStoreContract {
  private static EmbeddedHBase hbase;
  private static final AtomicInteger DCS = new AtomicInteger();

  @BeforeAll
  static void startHBase() {
    hbase = SharedHBase.get();
  }

  /** Every test gets a DC (namespace and tables) of its own. */
  @Override
  protected KvStore newStore() {
    return hbase.openStore("kv" + DCS.incrementAndGet());
  }
}
