package org.paxoscp.client;

import java.util.Optional;
import java.util.concurrent.ExecutorService;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.TooOldException;
import org.paxoscp.service.CatchUp;
import org.paxoscp.service.TransactionService;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreUnavailableException;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Scheduler;
import org.paxoscp.transport.Transport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The paper's direct home-DC store path: the home DC's own {@link TransactionService}, run in the
 * client's process on the home store, answers the commit protocol's messages to the home DC
 * ({@link DirectStoreTransport}), and reads come from the store once it has applied the read
 * position.
 */
final class DirectPath implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(DirectPath.class);

  private final String homeDc;
  private final LogApplier applier;
  private final CatchUp catchUp;
  private final Transport transport;

  /**
   * @param network the client's transport to the DCs' services (peers for catch-up)
   * @param clientScheduler the client's clock and timers
   * @param storeExecutor runs the store work; owned by the caller
   */
  DirectPath(ClusterConfig cluster, String homeDc, KvStore store, Transport network,
      Scheduler clientScheduler, ExecutorService storeExecutor) {
    this.homeDc = homeDc;
    this.applier = new LogApplier(store);
    Scheduler scheduler = new Scheduler() {
      @Override
      public long nowMicros() {
        return clientScheduler.nowMicros();
      }

      @Override
      public Cancellable schedule(long delayMicros, Runnable task) {
        return clientScheduler.schedule(delayMicros, task);
      }

      @Override
      public void execute(Runnable task) {
        try {
          storeExecutor.execute(task);
        } catch (java.util.concurrent.RejectedExecutionException e) {
          // Shutting down: dropped like every other pending task.
        }
      }

      @Override
      public java.util.random.RandomGenerator random() {
        return clientScheduler.random();
      }
    };
    this.catchUp = new CatchUp(homeDc, cluster.dcNames(), store, network,
        CatchUp.Settings.defaults(cluster.phaseTimeout()), scheduler);
    TransactionService home = new TransactionService(homeDc, cluster.dcNames(), store, catchUp,
        new TransactionService.Limits(1, cluster.maxDatagramBytes(), cluster.requestTimeout()),
        scheduler);
    this.transport = new DirectStoreTransport(network, homeDc, home, storeExecutor);
  }

  /** The transport the client's commits use: home-DC messages served here, the rest sent on. */
  Transport transport() {
    return transport;
  }

  /**
   * Reads {@code key} at {@code position} from the home store if it has applied the position;
   * empty when it has not or cannot answer (the caller reads through a service).
   *
   * @throws TransactionAbortedException when the position was collected (as a service answers
   *     TOO_OLD)
   */
  Optional<LogApplier.VersionedRead> read(String group, String txnId, long position, String key) {
    try {
      if (applier.appliedWatermark(group) >= position || applier.applyKnown(group) >= position) {
        return Optional.of(applier.readVersioned(group, key, position));
      }
    } catch (TooOldException e) {
      throw new TransactionAbortedException(new CommitResult(CommitResult.Status.ABORTED,
          group, txnId, position, 0, false, e.getMessage()), homeDc);
    } catch (StoreUnavailableException | org.paxoscp.paxos.RebuildingException e) {
      // (A store lost or being rebuilt: the services know which DC serves the group.)
      LOG.debug("direct read of {} failed, reading through a service: {}", group,
          e.getMessage());
    }
    return Optional.empty();
  }

  @Override
  public void close() {
    catchUp.close();
  }
}
