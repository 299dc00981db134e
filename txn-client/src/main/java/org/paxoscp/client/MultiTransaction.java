package org.paxoscp.client;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.Objects;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

/**
 * A transaction over several entity groups (docs/architecture.md section 10, docs/cross-group.md),
 * begun
 * by {@link TxnClient#beginMulti}. It joins a group the first time it reads or writes there
 * (one begin round trip to that group), reading each group at that group's own read position;
 * writes are buffered per group. {@link #commit} runs two-phase commit through the groups' logs
 * when more than one group was touched, and the ordinary one-group commit, at today's cost, when
 * only one was.
 *
 * <p>One type for both kinds, joining groups as it touches them, because an application often
 * learns which groups it needs from what it reads (the account a transfer credits), and because a
 * transaction that happens to stay in one group then pays nothing for the possibility of more.
 *
 * <p>Keys and values as for {@link Transaction}. At most {@code paxoscp.client.xg.max.groups}
 * groups (default 25): touching one more fails with {@link InvalidArgumentException} before
 * anything is sent, and the transaction stays usable.
 *
 * <p><b>Not thread-safe</b>: one operation at a time. The blocking methods block the calling
 * thread; each {@code ...Async} method returns a future, and the next operation starts when it
 * completed (a write while an operation is in flight throws {@link IllegalStateException}).
 */
public final class MultiTransaction implements AutoCloseable {
  private final TxnClient client;
  private final String txnId;
  private final int maxGroups;
  private final SortedMap<String, Transaction> parts = new TreeMap<>();
  private final long startMs;
  private volatile boolean finished;
  /** An asynchronous operation (a join, read, scan or the commit) is in flight. */
  private volatile boolean busy;

  /** The transaction's deadline and its calls' timeout, shared by its parts. */
  private final TxnClient.Timing timing;

  MultiTransaction(TxnClient client, String txnId, int maxGroups, TxnClient.Timing timing) {
    this.timing = timing;
    this.client = client;
    this.txnId = txnId;
    this.maxGroups = maxGroups;
    this.startMs = client.wallMillis();
  }

  /** The transaction's id; with more than one group, the id its log entries carry. */
  public String txnId() {
    return txnId;
  }

  /** The groups joined so far, sorted: the first is the coordinator of a cross-group commit. */
  public SortedSet<String> groups() {
    return Collections.unmodifiableSortedSet(new TreeSet<>(parts.keySet()));
  }

  /** The read position in {@code group}, if joined. */
  public Optional<Long> readPosition(String group) {
    Transaction t = parts.get(group);
    return t == null ? Optional.empty() : Optional.of(t.readPosition());
  }

  /** True until committed (or its commit failed) or aborted. */
  public boolean isActive() {
    return !finished;
  }

  /**
   * The value of {@code key} in {@code group}, as {@link Transaction#get}: joins the group first
   * if needed.
   *
   * @throws TransactionAbortedException as {@link Transaction#get}; the whole transaction is
   *     finished then
   */
  public Optional<byte[]> get(String group, String key) {
    return blocking(getCore(group, key), group);
  }

  /** The values of {@code keys} in {@code group}, read together, as {@link Transaction#getAll}. */
  public Map<String, byte[]> getAll(String group, java.util.Collection<String> keys) {
    return blocking(inPart(group, t -> t.getAllCore(keys)), group);
  }

  /** {@link #getAll} without blocking, as {@link #getAsync}. */
  public CompletableFuture<Map<String, byte[]>> getAllAsync(String group,
      java.util.Collection<String> keys) {
    return Futures.handOff(inPart(group, t -> t.getAllCore(keys)), client.callbacks());
  }

  /**
   * Waits for a join or read of this transaction; on an interrupt, abandons it, aborts the
   * transaction and throws {@link TransactionInterruptedException} (the flag stays set).
   */
  private <T> T blocking(CompletableFuture<T> f, String group) {
    return Futures.joinInterruptibly(f, group, this::abort);
  }

  /**
   * {@link #get} without blocking: the future completes with the value, or fails as {@link
   * #get} throws; on one of the client's worker threads. One operation at a time.
   */
  public CompletableFuture<Optional<byte[]>> getAsync(String group, String key) {
    return Futures.handOff(getCore(group, key), client.callbacks());
  }

  CompletableFuture<Optional<byte[]>> getCore(String group, String key) {
    return inPart(group, t -> t.getCore(key));
  }

  /**
   * Runs {@code op} in {@code group}'s part, joining the group first if needed; an abort (a
   * read position collected, a lock met) finishes the whole transaction.
   */
  private <T> CompletableFuture<T> inPart(String group,
      java.util.function.Function<Transaction, CompletableFuture<T>> op) {
    return operation(() -> part(group).thenCompose(op).whenComplete((v, t) -> {
      if (t != null && Futures.unwrap(t) instanceof TransactionAbortedException) {
        abort();
      }
    }));
  }

  /** {@link #get} decoded as UTF-8. */
  public Optional<String> getString(String group, String key) {
    return get(group, key).map(v -> new String(v, StandardCharsets.UTF_8));
  }

  /**
   * A range read in {@code group}, as {@link Transaction#scan(org.paxoscp.wal.KeyRange, int,
   * boolean)}: joins the group first if needed. The range joins that group's part of the read set
   * (its PREPARE or VALIDATE carries it), so a write into it ordered before the commit aborts the
   * whole transaction.
   *
   * @throws TransactionAbortedException as {@link Transaction#scan}; the whole transaction is
   *     finished then
   */
  public ScanResult scan(String group, org.paxoscp.wal.KeyRange range, int limit,
      boolean reversed) {
    return blocking(inPart(group, t -> t.scanCore(range, limit, reversed)), group);
  }

  /** {@link #scan(String, org.paxoscp.wal.KeyRange, int, boolean)} without blocking. */
  public CompletableFuture<ScanResult> scanAsync(String group, org.paxoscp.wal.KeyRange range,
      int limit, boolean reversed) {
    return Futures.handOff(inPart(group, t -> t.scanCore(range, limit, reversed)),
        client.callbacks());
  }

  /** {@link #scan(String, org.paxoscp.wal.KeyRange, int, boolean)} of {@code [from, to)}. */
  public ScanResult scan(String group, String from, String to, int limit) {
    return scan(group, Transaction.range(group, from, to), limit, false);
  }

  /** {@link #scan(String, org.paxoscp.wal.KeyRange, int, boolean)} of a prefix's keys. */
  public ScanResult scanPrefix(String group, String prefix, int limit) {
    return scan(group, Transaction.prefixRange(group, prefix), limit, false);
  }

  /** Buffers a write, as {@link Transaction#put(String, byte[])}, joining the group if needed. */
  public void put(String group, String key, byte[] value) {
    joined(group).put(key, value);
  }

  /** {@link #put(String, String, byte[])} of {@code value} encoded as UTF-8. */
  public void put(String group, String key, String value) {
    Objects.requireNonNull(value, "value");
    put(group, key, value.getBytes(StandardCharsets.UTF_8));
  }

  /** Buffers a delete, as {@link Transaction#delete}, joining the group if needed. */
  public void delete(String group, String key) {
    joined(group).delete(key);
  }

  /**
   * Buffers an add to a counter, as {@link Transaction#add}, joining the group if needed. In a
   * transaction that commits in one group it is a commutative update; across groups, the commit
   * first reads the key and writes the sum as a put (docs/client.md, "Counters and counting
   * sets"), so it conflicts as a read-modify-write would.
   */
  public void add(String group, String key, long delta) {
    joined(group).add(key, delta);
  }

  /** Buffers one more count of a counting set's element: {@link #add}'s rules, per group. */
  public void setAdd(String group, String key, String element) {
    joined(group).setAdd(key, element);
  }

  /** Buffers one count less of a counting set's element: {@link #add}'s rules, per group. */
  public void setRemove(String group, String key, String element) {
    joined(group).setRemove(key, element);
  }

  /** The counter at {@code key} in {@code group}, as {@link Transaction#getCounter}. */
  public long getCounter(String group, String key) {
    Optional<byte[]> v = get(group, key);
    return org.paxoscp.wal.Updates.decodeCounter(v).orElseThrow(() ->
        new InvalidArgumentException(group, "the value of key " + key + " is not a counter"));
  }

  /** The elements present in a counting set, as {@link Transaction#getSet}. */
  public java.util.SortedSet<String> getSet(String group, String key) {
    Optional<byte[]> v = get(group, key);
    return org.paxoscp.wal.Updates.present(org.paxoscp.wal.Updates.decodeSet(v).orElseThrow(
        () -> new InvalidArgumentException(group, "the value of key " + key
            + " is not a counting set")));
  }

  /**
   * Commits. One group: exactly {@link Transaction#commit}. Several, read-only: commits a
   * VALIDATE entry (its reads, no writes) in every group read, in parallel, and is committed
   * when all are chosen, else aborts retryably. Several with writes: PREPARE in every group but
   * the coordinator (in parallel), then DECIDE(COMMIT) in the coordinator; the outcome is the
   * DECIDE's. The other groups show the writes once their RESOLVE is applied, which the client
   * proposes in the background; this client's next transaction in such a group waits for it.
   *
   * @return the result (group: the coordinator; position: the DECIDE's)
   * @throws TransactionAbortedException the transaction did not commit and never will
   * @throws OutcomeUnknownException the DECIDE's fate is unknown and could not be settled; the
   *     outcome can be read later with {@link TxnClient#crossGroupOutcome}
   * @throws UnavailableException one group only, as {@link Transaction#commit}
   * @throws TransactionTooLargeException a group's entry is too large (nothing was sent; the
   *     transaction stays active)
   */
  public CommitResult commit() {
    CompletableFuture<CommitResult> f = commitCore();
    try {
      return f.get();
    } catch (InterruptedException e) {
      // Stop following the steps: each ends as an unknown outcome at the position reached.
      Thread.currentThread().interrupt();
      parts.values().forEach(t -> client.stopCommit(t.txnId()));
      return Futures.join(f);
    } catch (java.util.concurrent.ExecutionException e) {
      throw Futures.rethrow(e);
    }
  }

  /**
   * {@link #commit} without blocking: the future completes with the result, or fails as {@link
   * #commit} throws; on one of the client's worker threads.
   */
  public CompletableFuture<CommitResult> commitAsync() {
    return Futures.handOff(commitCore(), client.callbacks());
  }

  CompletableFuture<CommitResult> commitCore() {
    return operation(() -> {
      if (parts.isEmpty()) {
        finished = true;
        return CompletableFuture.completedFuture(new CommitResult(CommitResult.Status.COMMITTED,
            "", txnId, 0, 0, false, ""));
      }
      if (parts.size() == 1) {
        Transaction only = parts.values().iterator().next();
        // (A TransactionTooLargeException leaves it active, and so this one too.)
        return only.commitCore().whenComplete((r, t) -> finished = !only.isActive());
      }
      CompletableFuture<Void> materialized = CompletableFuture.completedFuture(null);
      for (Transaction t : parts.values()) {
        materialized = materialized.thenCompose(v -> t.materializeUpdates());
      }
      return materialized.whenComplete((v, t) -> {
        Throwable c = t == null ? null : Futures.unwrap(t);
        if (c instanceof TransactionAbortedException || c instanceof UpdateRefusedException) {
          abort();
        }
      }).thenCompose(v -> client.crossGroup().commit(txnId, parts, startMs)
          .whenComplete((r, t) -> {
            if (parts.values().stream().noneMatch(Transaction::isActive)) {
              finished = true;
              // (A part too large leaves the transaction active and unrecorded, as in one
              // group.)
              CommitResult.Status outcome = t == null ? r.status()
                  : Futures.unwrap(t) instanceof TransactionAbortedException
                      ? CommitResult.Status.ABORTED : CommitResult.Status.UNKNOWN;
              client.recordCrossGroup(txnId, parts.values(), outcome,
                  t == null ? r.position() : -1, startMs);
            }
          }));
    });
  }

  /**
   * Runs one operation of the transaction ({@code step}, which may throw before returning its
   * future): checks the transaction is active and no other operation is in flight, and marks it
   * in flight until the returned future completes. A commit stays in flight to its end, so
   * nothing joins, reads or writes while its steps are built and sent.
   */
  private <T> CompletableFuture<T> operation(
      java.util.function.Supplier<CompletableFuture<T>> step) {
    try {
      checkActive();
    } catch (IllegalStateException e) {
      return Futures.failed(e);
    }
    busy = true;
    return Futures.guard(step).whenComplete((v, t) -> busy = false);
  }

  /** Discards every group's writes; nothing is sent. Idempotent. */
  public void abort() {
    finished = true;
    parts.values().forEach(Transaction::abort);
  }

  /**
   * {@link #abort} if not committed: a transaction left in a try-with-resources block without a
   * commit is discarded; after a commit (whatever its outcome) it does nothing.
   */
  @Override
  public void close() {
    if (!finished) {
      abort();
    }
  }

  /** The per-group parts; for tests and history. */
  SortedMap<String, Transaction> parts() {
    return Collections.unmodifiableSortedMap(parts);
  }

  /**
   * {@code group}'s part, joined now if needed (one begin round trip); the transaction stays
   * usable when the group is one too many.
   */
  private CompletableFuture<Transaction> part(String group) {
    Transaction t = parts.get(group);
    if (t != null) {
      return CompletableFuture.completedFuture(t);
    }
    TxnClient.validateGroup(group);
    if (parts.size() >= maxGroups) {
      throw new InvalidArgumentException(group, "transaction " + txnId + " touches groups "
          + parts.keySet() + " and cannot join " + group + ": at most " + maxGroups
          + " groups per transaction (paxoscp.client.xg.max.groups)");
    }
    return client.begin(group, true, timing).thenApply(b -> {
      parts.put(group, b);
      return b;
    });
  }

  /**
   * Joins {@code group} now if the transaction has not yet (one begin round trip there), so
   * that writes there never wait: what an application that does not block calls before it
   * writes in a group it has not read. The future fails as a begin does ({@link
   * TxnClient#begin}); on one of the client's worker threads.
   */
  public CompletableFuture<Void> joinAsync(String group) {
    return Futures.handOff(operation(() -> part(group).thenApply(t -> (Void) null)),
        client.callbacks());
  }

  /**
   * {@code group}'s part for a buffered write, joining the group now if needed: this blocks for
   * one begin when the transaction has not touched the group ({@link #joinAsync} first to not).
   */
  private Transaction joined(String group) {
    checkActive();
    return blocking(part(group), group);
  }

  private void checkActive() {
    if (finished) {
      throw new IllegalStateException("transaction " + txnId + " is finished");
    }
    if (busy) {
      throw new IllegalStateException("an operation of transaction " + txnId + " is in "
          + "flight; start the next when its future completed");
    }
  }

  @Override
  public String toString() {
    return "MultiTransaction[" + txnId + " groups=" + parts.keySet()
        + (finished ? " finished" : "") + "]";
  }
}
