package org.paxoscp.service;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.hbase.EmbeddedHBase;

/**
 * {@link GcScenarios} on a real embedded HBase (one for the class; a namespace per DC per test),
 * so that collection runs as HBase Deletes and the reads above the watermark go through HBase's
 * versioned Gets.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HBaseGcServiceIT extends GcScenarios {
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
  protected Map<String, KvStore> newStores(List<String> dcs) {
    int run = RUNS.incrementAndGet();
    Map<String, KvStore> m = new LinkedHashMap<>();
    dcs.forEach(dc -> m.put(dc, hbase.openStore("gc" + run + dc.toLowerCase())));
    return m;
  }
}
