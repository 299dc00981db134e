package org.paxoscp.store;

/** The {@link KvStore} contract on {@link InMemoryKvStore}. */
class InMemoryKvStoreTest extends KvStoreContract {
  @Override
  protected KvStore newStore() {
    return new InMemoryKvStore();
  }
}
