package org.paxoscp.ycsb;

import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.TxnClient;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.transport.ClusterConfig;
import site.ycsb.ByteIterator;
import site.ycsb.StringByteIterator;
import site.ycsb.Workload;
import site.ycsb.WorkloadException;

/**
 * What this module's transactional workloads share: each client thread's state (the paxoscp
 * binding YCSB initialised on the thread, and a random generator of its own), the numbering of
 * load-phase inserts (one entity group per insert, from YCSB's {@code insertstart}), values in
 * the binding's value field, and the outcome summary printed at the end.
 */
abstract class TxnWorkload extends Workload {
  private final AtomicLong nextInsert = new AtomicLong();
  private final AtomicLong seeds = new AtomicLong(System.nanoTime());

  /** One client thread's state. */
  record State(PaxosCpDB binding, SplittableRandom random) {}

  /** Reads YCSB's insert start; subclasses call it from their {@code init}. */
  void initInserts(Properties p) throws WorkloadException {
    nextInsert.set(TxnWorkloads.longProp(p, INSERT_START_PROPERTY, 0, 0));
  }

  /** The number of the next group the load phase fills. */
  long nextInsert() {
    return nextInsert.getAndIncrement();
  }

  @Override
  public Object initThread(Properties p, int threadId, int threadCount)
      throws WorkloadException {
    return new State(TxnWorkloads.binding(), new SplittableRandom(seeds.incrementAndGet()));
  }

  /**
   * The cluster the binding's file ({@value PaxosCpDB#CONFIG}) names, for the validation's own
   * clients. Tests override it (and {@link #validationClient}) to validate a cluster in their
   * own process.
   */
  ClusterConfig clusterConfig(Properties p) throws WorkloadException {
    String file = p.getProperty(PaxosCpDB.CONFIG);
    if (file == null) {
      throw new WorkloadException(PaxosCpDB.CONFIG + " is required");
    }
    try {
      return ClusterConfig.fromProperties(KeyFiles.read(Path.of(file)));
    } catch (IllegalArgumentException | UncheckedIOException e) {
      throw new WorkloadException("bad cluster configuration " + file + ": " + e.getMessage(), e);
    }
  }

  /** A client of DC {@code dc} for the validation's reads; the caller closes it. */
  TxnClient validationClient(ClusterConfig cluster, String dc) {
    return TxnClient.builder(cluster, dc, CommitProtocol.values()[0]).build();
  }

  /** Prints every transaction's outcome, next to YCSB's own measurements. */
  @Override
  public void cleanup() throws WorkloadException {
    PaxosCpDB.COUNTERS.print(System.out);
  }

  /** A record holding {@code v} in the binding's value field. */
  static Map<String, ByteIterator> value(String v) {
    Map<String, ByteIterator> m = new HashMap<>();
    m.put(PaxosCpDB.VALUE_FIELD, new StringByteIterator(v));
    return m;
  }
}
