package org.paxoscp.paxos;

import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.store.KvStore;

/** The acceptor rules over {@link InMemoryKvStore}. */
class InMemoryAcceptorTest extends AcceptorContract {
  @Override
  protected KvStore newStore() {
    return new InMemoryKvStore();
  }
}
