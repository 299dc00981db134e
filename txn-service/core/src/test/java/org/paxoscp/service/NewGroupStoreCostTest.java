package org.paxoscp.service;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.Outcome;
import org.paxoscp.paxos.Proposer;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.paxos.Protocol;
import org.paxoscp.store.CountingKvStore;
import org.paxoscp.store.InMemoryKvStore;
import org.paxoscp.transport.Message;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.Mutation;

/**
 * What the first commit in a new group costs in store operations against a commit in a warm
 * group (docs/architecture.md section 9: a group's first touch creates nothing a conditional write
 * could not fold in). Counts, not times: deterministic.
 */
class NewGroupStoreCostTest {
  private static final List<String> DCS = List.of("V1", "V2", "O");

  private final List<CountingKvStore> stores = new ArrayList<>();
  private final InProcessDcs dcs;
  private final List<LogApplier> appliers = new ArrayList<>();
  private final List<Acceptor> acceptors = new ArrayList<>();
  private long nextId = 1;

  NewGroupStoreCostTest() {
    for (int i = 0; i < DCS.size(); i++) {
      CountingKvStore s = new CountingKvStore(new InMemoryKvStore());
      stores.add(s);
      appliers.add(new LogApplier(s));
      acceptors.add(new Acceptor(s));
    }
    dcs = new InProcessDcs(DCS, stores);
  }

  private long operations() {
    return stores.stream().mapToLong(s -> s.counts().operations()).sum();
  }

  /** One read-modify-write transaction from DC 0, as a client does it; its store operations. */
  private long commit(Protocol protocol, String group) {
    long before = operations();
    // As a client: begin (read position and the next position's leader), read, commit.
    Message.BeginReply begin = (Message.BeginReply) dcs.service(0)
        .handle(DCS.get(0), new Message.BeginRequest(group, 0)).join();
    long readPos = begin.position();
    dcs.service(0).handle(DCS.get(0), new Message.ReadRequest(group, readPos, List.of("k")))
        .join();
    OptionalInt leader = begin.leaderDc().isEmpty() ? OptionalInt.empty()
        : OptionalInt.of(DCS.indexOf(begin.leaderDc()));
    String txn = "t" + nextId;
    LogEntry e = new LogEntry(txn, DCS.get(0), readPos, new TreeSet<>(List.of("k")),
        new TreeMap<>(java.util.Map.of("k", Mutation.put(txn.getBytes(StandardCharsets.UTF_8)))));
    Outcome o = dcs.run(new Proposer(ProposerConfig.defaults(protocol, DCS), group,
        ProposerId.of(nextId++), e, readPos + 1, leader, new SplittableRandom(nextId)));
    assertEquals(Outcome.Status.COMMITTED, o.status(), group + ": " + o);
    return operations() - before;
  }

  @Test
  void aNewGroupsFirstCommitCostsAtMostOneStoreOperationMoreThanAWarmOne() {
    for (Protocol p : List.of(Protocol.BASIC, Protocol.CP)) {
      for (int i = 0; i < 5; i++) {
        commit(p, "warm-" + p);
      }
      long warm = 0;
      long fresh = 0;
      for (int i = 0; i < 10; i++) {
        warm += commit(p, "warm-" + p);
        fresh += commit(p, "new-" + p + "-" + i);
      }
      System.out.printf("%s: store operations per transaction (begin, read, commit, apply at "
          + "every DC), warm group %.1f, new group %.1f%n", p, warm / 10.0, fresh / 10.0);
      // At most one more per DC. (Every vote reads the store marker in the batch that reads
      // the group's meta row, so a new group costs what a warm one does; docs/rebuilding.md.)
      assertTrue(fresh <= warm + 10L * DCS.size(), p + ": new " + fresh / 10.0 + " vs warm "
          + warm / 10.0);
    }
  }
}
