package org.paxoscp.service;

import java.util.List;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;

class InMemoryConcurrentProposersTest extends ConcurrentProposersContract {
  @Override
  protected List<KvStore> newStores(Protocol protocol) {
    return List.of(new InMemoryKvStore(), new InMemoryKvStore(), new InMemoryKvStore());
  }
}
