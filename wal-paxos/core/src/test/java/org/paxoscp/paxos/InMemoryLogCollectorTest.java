package org.paxoscp.paxos;

import org.junit.jupiter.api.Timeout;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;

/** {@link LogCollectorContract} over {@link InMemoryKvStore}. */
@Timeout(30)
class InMemoryLogCollectorTest extends LogCollectorContract {
  @Override
  protected KvStore newStore() {
    return new InMemoryKvStore();
  }
}
