package org.paxoscp.service;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;

/** {@link GcScenarios} over in-memory stores. */
@Timeout(60)
class GcServiceTest extends GcScenarios {
  @Override
  protected Map<String, KvStore> newStores(List<String> dcs) {
    Map<String, KvStore> m = new LinkedHashMap<>();
    dcs.forEach(dc -> m.put(dc, new InMemoryKvStore()));
    return m;
  }
}
