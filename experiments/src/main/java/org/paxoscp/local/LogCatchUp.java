package org.paxoscp.local;

import java.time.Duration;
import java.util.Collection;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.paxos.Acceptor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.store.KvStore;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.wal.LogValue;

/**
 * Bringing every DC's log of a group up to the same position after a run, so that the logs can
 * be compared position by position, and reading them: shared by {@link LocalCluster} and the
 * nemesis.
 *
 * <p>Only positions proved to exist are caught up to: chosen at some DC, or told to a client
 * (its highest commit or read position, {@link #provenPosition}). A position that only holds
 * votes is not proved: catching up to it would run instances that decide it, changing the log
 * under test instead of observing it.
 */
public final class LogCatchUp {
  private LogCatchUp() {}

  /** The highest commit or read position in {@code history}: positions its clients were told of. */
  public static long provenPosition(Collection<TxnRecord> history) {
    long p = 0;
    for (TxnRecord r : history) {
      p = Math.max(p, r.readPosition());
      if (r.status() == TxnRecord.Status.COMMITTED) {
        p = Math.max(p, r.commitPosition());
      }
    }
    return p;
  }

  /** The highest position proved to exist: {@code proven}, or chosen in one of {@code stores}. */
  public static long highestProved(String group, Collection<KvStore> stores, long proven) {
    long highest = proven;
    for (KvStore s : stores) {
      highest = Math.max(highest, highestChosen(group, s));
    }
    return highest;
  }

  /**
   * The highest position a store holds a chosen value for; searched past the applied watermark
   * until 64 positions in a row are not chosen there.
   */
  static long highestChosen(String group, KvStore store) {
    Acceptor a = new Acceptor(store);
    long highest = new LogApplier(store).appliedWatermark(group);
    for (long q = highest + 1, misses = 0; misses < 64; q++) {
      if (a.chosen(group, q).isPresent()) {
        highest = q;
        misses = 0;
      } else {
        misses++;
      }
    }
    return highest;
  }

  /**
   * Asks DC {@code dc}'s service, through {@code transport}, to begin {@code group} at {@code
   * position}, which makes it learn what it misses from its peers; asks again every 500 ms until
   * it confirms or {@code retryFor} has passed ({@link Duration#ZERO}: one request).
   *
   * @throws IllegalStateException if the DC does not confirm in time
   */
  public static void bringUp(UdpTransport transport, String dc, String group, long position,
      Duration requestTimeout, Duration retryFor) {
    long deadline = System.nanoTime() + retryFor.toNanos();
    while (true) {
      Object outcome;
      try {
        Message reply = transport.request(dc, new Message.BeginRequest(group, position),
            requestTimeout).join();
        if (reply instanceof Message.BeginReply b && b.position() >= position) {
          return;
        }
        outcome = reply;
      } catch (CompletionException e) {
        outcome = e.getCause();
      }
      if (System.nanoTime() - deadline >= 0) {
        IllegalStateException failure = new IllegalStateException("DC " + dc
            + " did not catch up to position " + position + " of group " + group + ": "
            + outcome);
        if (outcome instanceof Throwable t) {
          failure.initCause(t);
        }
        throw failure;
      }
      try {
        Thread.sleep(500);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted while catching up DC " + dc, e);
      }
    }
  }

  /**
   * The chosen values {@code store} holds for positions {@code from..upTo} of {@code group}
   * (positions it does not hold are left out, and so are those at or below its GC watermark).
   */
  public static SortedMap<Long, LogValue> chosenLog(KvStore store, String group, long from,
      long upTo) {
    Acceptor a = new Acceptor(store);
    SortedMap<Long, LogValue> log = new TreeMap<>();
    long first = Math.max(from, org.paxoscp.paxos.LogCollector.gcWatermark(store, group) + 1);
    for (long p = first; p <= upTo; p++) {
      Optional<LogValue> v = a.chosen(group, p);
      if (v.isPresent()) {
        log.put(p, v.get());
      }
    }
    return log;
  }
}
