package org.paxoscp.bench;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.WanTransport;

/**
 * Uncontended commit latency of one client: sequential transactions (begin, two blind puts,
 * commit) on a group no one else uses, so after the first commit every commit should take the
 * fast path (section 5.3: the client's DC won the previous position and grants it the next; it
 * skips PREPARE and sends one ACCEPT round). Begin and commit are timed separately; each commit
 * is checked to be a fast-path one (no promotion, no PREPARE sent, one grant request when the
 * grant goes through the service).
 */
public final class FastPathLatency {

  /**
   * What one setting measured.
   *
   * @param home the client's DC
   * @param direct whether the client accessed its home DC's store directly
   * @param measured commits measured (after the warm-up)
   * @param fastPath measured commits that took the fast path
   * @param failed measured transactions that did not commit (none expected)
   * @param beginMicros begin latency
   * @param commitMicros commit latency
   * @param replyMicros per "KIND@DC", request-to-reply time of the protocol messages the client
   *     sent over the network during the measured commits
   */
  public record Result(String home, boolean direct, int measured, int fastPath, int failed,
      Histogram beginMicros, Histogram commitMicros, Map<String, Histogram> replyMicros) {}

  private FastPathLatency() {}

  /** Runs {@code warmup} unmeasured, then {@code txns} measured transactions on {@code group}. */
  public static Result run(LocalCluster cluster, String home, boolean direct, String group,
      int warmup, int txns) {
    Histogram begin = new Histogram(3);
    Histogram commit = new Histogram(3);
    int fast = 0;
    int failed = 0;
    CountingTransport transport = new CountingTransport(new WanTransport(
        UdpTransport.builder(cluster.config(), home).build(), cluster.config()));
    TxnClient.Builder b = TxnClient.builder(cluster.config(), home, CommitProtocol.CP)
        .transport(transport);
    if (direct) {
      b.directStore(cluster.store(home));
    }
    try (transport; TxnClient client = b.build()) {
      for (int i = 0; i < warmup + txns; i++) {
        boolean measured = i >= warmup;
        if (i == warmup) {
          transport.resetReplyTimes();
        }
        CountingTransport.Counts before = transport.counts();
        long t0 = System.nanoTime();
        Transaction tx = client.begin(group);
        long t1 = System.nanoTime();
        byte[] v = (tx.txnId() + "/" + i).getBytes(StandardCharsets.UTF_8);
        tx.put("k0", v);
        tx.put("k1", v);
        CommitResult r;
        long t2 = System.nanoTime();
        try {
          r = tx.commit();
        } catch (TransactionException e) {
          if (measured) {
            failed++;
          }
          continue;
        }
        long t3 = System.nanoTime();
        if (!measured) {
          continue;
        }
        CountingTransport.Counts d = transport.counts().minus(before);
        begin.recordValue(Math.max(1, (t1 - t0) / 1000));
        commit.recordValue(Math.max(1, (t3 - t2) / 1000));
        if (r.promotions() == 0 && d.prepares() == 0 && (direct || d.grants() == 1)) {
          fast++;
        }
      }
      return new Result(home, direct, txns, fast, failed, begin, commit, transport.replyMicros());
    }
  }
}
