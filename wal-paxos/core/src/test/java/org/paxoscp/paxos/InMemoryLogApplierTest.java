package org.paxoscp.paxos;

import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;

/** Reads at a read position over {@link InMemoryKvStore}. */
class InMemoryLogApplierTest extends LogApplierContract {
  @Override
  protected KvStore newStore() {
    return new InMemoryKvStore();
  }
}
