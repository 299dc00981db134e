package org.paxoscp.client;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.ProposerId;
import org.paxoscp.transport.Message;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.Updates;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * One transaction on one entity group (docs/architecture.md section 4), begun by
 * {@link TxnClient#begin}: reads see the group as of the transaction's read position plus its own
 * buffered writes; writes are buffered until {@link #commit}, which runs the client's commit
 * protocol (optimistic concurrency: a conflicting commit makes this one abort).
 *
 * <p>Keys are non-empty strings of at most 1 KiB of UTF-8 without NUL. Values are byte arrays
 * and may be empty (an empty value is a value, distinct from an absent key). Arrays passed in are
 * copied and arrays returned are fresh copies.
 *
 * <p><b>Not thread-safe</b>: one operation at a time. The blocking reads and {@link #commit}
 * block the calling thread (see {@link TxnClient}); each {@code ...Async} method returns a future
 * instead, and the next operation starts when it completed (one started while another is in
 * flight throws {@link IllegalStateException}). Once committed (or its commit failed) or
 * aborted, every method except {@link #abort}, {@link #isActive} and the accessors throws
 * {@link IllegalStateException}.
 */
public final class Transaction implements AutoCloseable {
  private enum State { ACTIVE, FINISHED }

  private final TxnClient client;
  private final String group;
  private final String txnId;
  private final ProposerId proposerId;
  private final long readPosition;
  private final OptionalInt leader;
  private final int maxEntryBytes;
  /** The group's cross-group locks at the read position (docs/architecture.md section 10). */
  private final XgLocks locks;
  /**
   * The begin's reply held only the first locks in id order: no read or commit can be checked.
   */
  private final boolean locksCut;
  /** Values read from the store, in read order: the read set, and the cache for repeated gets. */
  private final Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
  /** For each key read: the log position that wrote the version read (0 if never written). */
  private final Map<String, Long> readVersions = new LinkedHashMap<>();
  /** Range reads served by the store, in the order made: the ranges the entry carries. */
  private final List<Scan> scans = new ArrayList<>();
  /** The ranges of {@link #scans}, merged ({@link KeyRange#normalize}). */
  private List<KeyRange> scannedRanges = List.of();
  private final long startMs;
  private final SortedMap<String, Mutation> writes = new TreeMap<>();
  private final int fixedBytes;
  private int readKeyBytes;
  private int writeBytes;
  /** How many of {@link #writes} are commutative updates. */
  private int updates;
  private volatile State state = State.ACTIVE;
  /** An asynchronous operation (read, scan, commit) is in flight. */
  private volatile boolean busy;
  /** {@link #outcomeHandle} was called: the commit's promotions are capped to its range. */
  private volatile boolean handleTaken;
  /** The transaction's deadline and its calls' timeout. */
  private final TxnClient.Timing timing;

  Transaction(TxnClient client, String group, String txnId, ProposerId proposerId,
      long readPosition, OptionalInt leader, int maxEntryBytes, XgLocks locks, boolean locksCut,
      TxnClient.Timing timing) {
    this.timing = timing;
    this.locks = locks;
    this.locksCut = locksCut;
    this.client = client;
    this.group = group;
    this.txnId = txnId;
    this.proposerId = proposerId;
    this.readPosition = readPosition;
    this.leader = leader;
    this.maxEntryBytes = maxEntryBytes;
    this.fixedBytes = EntrySize.string(txnId) + EntrySize.string(client.homeDc());
    this.startMs = client.wallMillis();
  }

  /** When the transaction began, by the client's wall clock (for its history). */
  long startMs() {
    return startMs;
  }

  /** The entity group. */
  public String group() {
    return group;
  }

  /** The transaction's id, unique in the cluster; it is written in the log entry. */
  public String txnId() {
    return txnId;
  }

  /** The log position every read of this transaction is served at. */
  public long readPosition() {
    return readPosition;
  }

  /** True until the transaction is committed (or its commit failed) or aborted. */
  public boolean isActive() {
    return state == State.ACTIVE;
  }

  /**
   * The value of {@code key}: this transaction's own buffered put or delete if any (empty for a
   * delete); otherwise what a scan of this transaction found there; otherwise the value at the
   * read position, read from the home DC's store or a service (with fail-over) and remembered, so
   * reading a key twice gives the same answer. A key read from the store joins the read set that
   * commit checks for conflicts. For a key this transaction updated ({@link #add},
   * {@link #setAdd}, {@link #setRemove}), the value read with its own updates applied: the key
   * joins the read set then too.
   *
   * @return the value, or empty if the key has no value
   * @throws InvalidArgumentException for an invalid key, or when this transaction's own update
   *     cannot apply to the value read (see {@link #add})
   * @throws UnavailableException if no DC could serve the read (the transaction stays usable)
   * @throws TransactionAbortedException if the read position can no longer be served, or the
   *     key is held by a cross-group transaction that is not resolved yet (the client helps
   *     resolve it first; a retry then reads past it); the transaction is then finished
   * @throws IllegalStateException if the transaction is finished
   */
  public Optional<byte[]> get(String key) {
    return blocking(getCore(key));
  }

  /**
   * The values of {@code keys}, each as {@link #get} gives it, read together: the keys not
   * answered from this transaction's own writes or earlier reads go to the store in as few
   * requests as the service's key limit (1,000) and one datagram allow, sent at once. Every key
   * read joins the read set, present or not.
   *
   * @return the keys that have a value, with it, in the order of {@code keys} (a key absent
   *     from the map has no value)
   * @throws InvalidArgumentException for an invalid key (nothing is read)
   * @throws UnavailableException, TransactionAbortedException, DeadlineExceededException as
   *     {@link #get}
   */
  public Map<String, byte[]> getAll(java.util.Collection<String> keys) {
    return blocking(getAllCore(keys));
  }

  /** {@link #getAll} without blocking, as {@link #getAsync}. */
  public CompletableFuture<Map<String, byte[]>> getAllAsync(java.util.Collection<String> keys) {
    return Futures.handOff(getAllCore(keys), client.callbacks());
  }

  /**
   * Waits for {@code f}, an operation of this transaction: on an interrupt, abandons it,
   * finishes the transaction and throws {@link TransactionInterruptedException} (the flag stays
   * set).
   */
  private <T> T blocking(CompletableFuture<T> f) {
    return Futures.joinInterruptibly(f, group, () -> finish(CommitResult.Status.ABORTED, -1, 0));
  }

  /** The asynchronous core of {@link #getAll}. */
  CompletableFuture<Map<String, byte[]>> getAllCore(java.util.Collection<String> keys) {
    return operation(() -> {
      java.util.LinkedHashSet<String> distinct = new java.util.LinkedHashSet<>(keys);
      for (String key : distinct) {
        TxnClient.validateKey(group, key);
      }
      List<String> toRead = new ArrayList<>();
      for (String key : distinct) {
        Mutation own = writes.get(key);
        if (own == null || own.isUpdate()) {
          toRead.add(key);
        }
      }
      return readStored(toRead).thenApply(stored -> {
        Map<String, byte[]> out = new LinkedHashMap<>();
        for (String key : distinct) {
          withOwn(key, stored.get(key)).ifPresent(v -> out.put(key, v));
        }
        return Collections.unmodifiableMap(out);
      });
    });
  }

  /**
   * The value of {@code key} given {@code stored}, what the store holds at the read position
   * (null when not read: the key has a buffered put or delete), with this transaction's own
   * write or update applied.
   */
  private Optional<byte[]> withOwn(String key, Optional<byte[]> stored) {
    Mutation own = writes.get(key);
    if (own != null && !own.isUpdate()) {
      return own.value();
    }
    if (own == null) {
      return stored.map(byte[]::clone);
    }
    Updates.Result r = Updates.apply(stored, own);
    if (r.refused()) {
      throw new InvalidArgumentException(group, "key " + key + ": "
          + Updates.describe(r.refusal()) + " (this transaction's own update, applied to "
          + "the value read)");
    }
    return r.value();
  }

  /**
   * {@link #get} without blocking: the future completes with the value, or fails with the
   * exceptions {@link #get} throws; on one of the client's worker threads. One operation of a
   * transaction at a time: start the next when this one's future completed.
   */
  public CompletableFuture<Optional<byte[]>> getAsync(String key) {
    return Futures.handOff(getCore(key), client.callbacks());
  }

  /** The asynchronous core of {@link #get}. */
  CompletableFuture<Optional<byte[]>> getCore(String key) {
    return operation(() -> {
      TxnClient.validateKey(group, key);
      Mutation own = writes.get(key);
      if (own != null && !own.isUpdate()) {
        return CompletableFuture.completedFuture(own.value());
      }
      return readStored(List.of(key)).thenApply(stored -> withOwn(key, stored.get(key)));
    });
  }

  /**
   * Runs one operation of the transaction ({@code step}, which may throw before returning its
   * future): checks the transaction is active and no other operation is in flight, and marks it
   * in flight until the returned future completes.
   */
  private <T> CompletableFuture<T> operation(
      java.util.function.Supplier<CompletableFuture<T>> step) {
    try {
      checkActive();
    } catch (IllegalStateException e) {
      return Futures.failed(e);
    }
    busy = true;
    CompletableFuture<T> f = Futures.guard(step);
    return f.whenComplete((v, t) -> busy = false);
  }

  /**
   * The values of {@code keys} at the read position (a scan's, or the store's), remembered: the
   * keys not read before are read together, and recorded in the order of {@code keys}.
   */
  private CompletableFuture<Map<String, Optional<byte[]>>> readStored(List<String> keys) {
    Map<String, Optional<byte[]>> known = new java.util.HashMap<>();
    java.util.LinkedHashSet<String> missing = new java.util.LinkedHashSet<>();
    for (String key : keys) {
      Optional<byte[]> cached = reads.get(key);
      if (cached == null) {
        cached = fromScans(key);
      }
      if (cached != null) {
        known.put(key, cached);
      } else {
        missing.add(key);
      }
    }
    if (missing.isEmpty()) {
      return CompletableFuture.completedFuture(known);
    }
    for (String key : missing) {
      Optional<XgLocks.Lock> lock = locksCut && !client.hooks().has(
          ClientHooks.Plant.CUT_TABLE_READS_UNCHECKED) ? Optional.of(firstLock())
          : locks.blockingRead(key);
      if (lock.isPresent() && obeyLocks()) {
        return lockedOut(lock.get(), "a read of " + key);
      }
    }
    return client.readAll(group, txnId, readPosition, List.copyOf(missing),
            timing.call(client.scheduler()))
        .handle((read, t) -> {
          if (t != null) {
            throw readFailed(t);
          }
          for (String key : missing) {
            LogApplier.VersionedRead r = read.get(key);
            reads.put(key, r.value());
            readVersions.put(key, r.version());
            readKeyBytes += EntrySize.string(key);
            known.put(key, r.value());
          }
          return known;
        });
  }

  /**
   * What a failed read throws: as it failed; a TOO_OLD answer (the read position was collected)
   * finishes the transaction first.
   */
  private RuntimeException readFailed(Throwable t) {
    Throwable c = Futures.unwrap(t);
    if (c instanceof TransactionAbortedException) {
      finish(CommitResult.Status.ABORTED, -1, 0);
      client.abortedBeforeCommit(ClientMetrics.AbortReason.TOO_OLD);
    } else if (c instanceof DeadlineExceededException
        && timing.transaction().passed(client.scheduler())) {
      // Past the transaction's own deadline nothing more can be done; past a call's only, the
      // transaction stays usable (as after an unavailable read).
      finish(CommitResult.Status.ABORTED, -1, 0);
      client.abortedBeforeCommit(ClientMetrics.AbortReason.DEADLINE);
    }
    return Futures.rethrow(c);
  }

  private boolean obeyLocks() {
    return !client.hooks().has(ClientHooks.Plant.IGNORE_LOCKS);
  }

  /**
   * The counter at {@code key} ({@link #add}): 0 for no value; with this transaction's own
   * adds. Reads the key as {@link #get} does (it joins the read set).
   *
   * @throws InvalidArgumentException when the value is not a counter (the decimal digits of a
   *     64-bit number, as {@link #add} writes them)
   */
  public long getCounter(String key) {
    Optional<byte[]> v = get(key);
    return Updates.decodeCounter(v).orElseThrow(() -> new InvalidArgumentException(group,
        "the value of key " + key + " is not a counter"));
  }

  /**
   * The elements present in the counting set at {@code key} ({@link #setAdd}): those whose
   * count is above 0; empty for no value; with this transaction's own updates. Reads the key as
   * {@link #get} does (it joins the read set).
   *
   * @throws InvalidArgumentException when the value is not a counting set
   */
  public java.util.SortedSet<String> getSet(String key) {
    return Updates.present(getSetCounts(key));
  }

  /**
   * Every element of the counting set at {@code key} with its count (Walter's csets: an element
   * removed more often than added has a negative count and is not present).
   *
   * @throws InvalidArgumentException when the value is not a counting set
   */
  public java.util.SortedMap<String, Long> getSetCounts(String key) {
    Optional<byte[]> v = get(key);
    return Updates.decodeSet(v).orElseThrow(() -> new InvalidArgumentException(group,
        "the value of key " + key + " is not a counting set"));
  }

  /**
   * Buffers an add of {@code delta} to the 64-bit counter at {@code key} (no value counts as 0):
   * a commutative update (docs/client.md, "Counters and counting sets"). It does not read the
   * key, so two transactions that only add to a key never conflict; one that reads the key
   * conflicts with a concurrent add as with a concurrent put. The add is applied where the
   * transaction lands in the log, after every put and add ordered before it. If it cannot apply
   * there — the counter would leave the 64-bit range, or the value is not a counter — the
   * whole transaction has no effect and its commit throws {@link UpdateRefusedException}.
   *
   * @throws InvalidArgumentException for an invalid key; when this transaction put a value that
   *     is not a counter at the key, or holds a set update of it; or when its own adds to the key
   *     sum past the 64-bit range
   * @throws TransactionTooLargeException as for {@link #put(String, byte[])}
   * @throws org.paxoscp.version.VersionNotActiveException when the cluster runs below version 5
   * @throws IllegalStateException if the transaction is finished
   */
  public void add(String key, long delta) {
    update(key, Mutation.add(delta));
  }

  /**
   * Buffers one more count of {@code element} in the counting set at {@code key}: Walter's
   * csets, whose elements are present while their count is above 0. A commutative update, as
   * {@link #add}.
   *
   * @throws InvalidArgumentException for an invalid key or element (empty, over 1 KiB of UTF-8,
   *     or half a surrogate pair), or when this transaction put a value at the key that is not a
   *     counting set, or added to it as a counter
   */
  public void setAdd(String key, String element) {
    update(key, setDelta(group, element, 1));
  }

  /**
   * Buffers one count less of {@code element} in the counting set at {@code key} (see
   * {@link #setAdd}); the element stays present if it was added more often than removed.
   */
  public void setRemove(String key, String element) {
    update(key, setDelta(group, element, -1));
  }

  private static Mutation setDelta(String group, String element, long delta) {
    try {
      return Mutation.setUpdate(java.util.Map.of(element, delta));
    } catch (IllegalArgumentException | NullPointerException e) {
      throw new InvalidArgumentException(group, e.getMessage());
    }
  }

  private void update(String key, Mutation m) {
    checkActive();
    TxnClient.validateKey(group, key);
    client.requireClusterVersion(org.paxoscp.version.ClusterVersion.COMMUTATIVE_UPDATES,
        "counter and set updates");
    Mutation old = writes.get(key);
    Mutation combined;
    try {
      combined = old == null ? m : Updates.combine(old, m);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(group, "key " + key + ": "
          + e.getMessage());
    }
    buffer(key, combined, EntrySize.write(key, combined));
  }

  /** {@link #get} decoded as UTF-8. */
  public Optional<String> getString(String key) {
    return get(key).map(v -> new String(v, StandardCharsets.UTF_8));
  }

  /** The most entries one scan may ask for. */
  public static final int MAX_SCAN_LIMIT = 10_000;

  /**
   * A range read as the store served it: the range as far as it was read and the entries it
   * held at the read position (key to value, and the position that wrote each).
   */
  record Scan(KeyRange range, SortedMap<String, byte[]> entries, Map<String, Long> versions) {}

  /** {@link #scan(KeyRange, int, boolean)} of {@code [from, to)} in key order. */
  public ScanResult scan(String from, String to, int limit) {
    return scan(from, to, limit, false);
  }

  /**
   * {@link #scan(KeyRange, int, boolean)} of {@code [from, to)}: {@code from} empty is the
   * group's first key, {@code to} null is past its last.
   *
   * @throws InvalidArgumentException if {@code from} is not below {@code to}, or a bound is too
   *     long or starts with NUL
   */
  public ScanResult scan(String from, String to, int limit, boolean reversed) {
    return scan(range(group, from, to), limit, reversed);
  }

  /** {@link #scan(KeyRange, int, boolean)} of the keys starting with {@code prefix}. */
  public ScanResult scanPrefix(String prefix, int limit) {
    return scan(prefixRange(group, prefix), limit, false);
  }

  /** {@code [from, to)}, or an {@link InvalidArgumentException} saying why not. */
  static KeyRange range(String group, String from, String to) {
    try {
      return new KeyRange(Objects.requireNonNull(from, "from"), to);
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(group, e.getMessage());
    }
  }

  /** The keys starting with {@code prefix}, or an {@link InvalidArgumentException}. */
  static KeyRange prefixRange(String group, String prefix) {
    try {
      return KeyRange.prefix(Objects.requireNonNull(prefix, "prefix"));
    } catch (IllegalArgumentException e) {
      throw new InvalidArgumentException(group, e.getMessage());
    }
  }

  /**
   * The entries of {@code range} at the read position with this transaction's own writes merged
   * in (a buffered put shows its value, a buffered delete hides the key), in key order or, with
   * {@code reversed}, from the range's end; at most {@code limit} of them. The part of the range
   * read joins the read set: to its end, or, when the limit stopped the scan, to the last key
   * returned. A write into that part by a transaction ordered between this one's read position
   * and its commit makes the commit abort, as a write to a key read does (docs/client.md, "Range
   * reads"). Served by the home DC's service in pages of one datagram each (another DC's when it
   * does not answer). A later {@link #get} of a key in the part read answers from the scan.
   *
   * @param limit at most {@link #MAX_SCAN_LIMIT}
   * @return the entries, and the unread rest of the range when the limit stopped the scan
   * @throws InvalidArgumentException for a limit out of bounds
   * @throws TransactionTooLargeException if the ranges read would exceed
   *     {@link LogEntry#MAX_READ_RANGES} or the entry a datagram (the transaction stays usable;
   *     the scan is not recorded)
   * @throws org.paxoscp.version.VersionNotActiveException if the cluster runs below version 4
   *     ({@code range-reads})
   * @throws UnavailableException if no DC could serve the scan (the transaction stays usable)
   * @throws TransactionAbortedException as {@link #get}: the read position can no longer be
   *     served, or a cross-group transaction not resolved yet writes a key in the range
   * @throws IllegalStateException if the transaction is finished
   */
  public ScanResult scan(KeyRange range, int limit, boolean reversed) {
    return blocking(scanCore(range, limit, reversed));
  }

  /**
   * {@link #scan(KeyRange, int, boolean)} without blocking: the future completes with the
   * result, or fails with the exceptions the blocking scan throws; on one of the client's worker
   * threads. One operation of a transaction at a time.
   */
  public CompletableFuture<ScanResult> scanAsync(KeyRange range, int limit, boolean reversed) {
    return Futures.handOff(scanCore(range, limit, reversed), client.callbacks());
  }

  /** The asynchronous core of {@link #scan(KeyRange, int, boolean)}. */
  CompletableFuture<ScanResult> scanCore(KeyRange range, int limit, boolean reversed) {
    return operation(() -> {
      Objects.requireNonNull(range, "range");
      if (limit < 1 || limit > MAX_SCAN_LIMIT) {
        throw new InvalidArgumentException(group, "a scan's limit must be 1-" + MAX_SCAN_LIMIT
            + ", got " + limit);
      }
      client.requireClusterVersion(ClusterVersion.RANGE_READS, "a range read");
      Optional<XgLocks.Lock> lock = locksCut ? Optional.of(firstLock())
          : locks.blockingScan(range);
      if (lock.isPresent() && obeyLocks()) {
        return lockedOut(lock.get(), "a scan of " + range);
      }
      CompletableFuture<ScanResult> done = new CompletableFuture<>();
      page(new ScanState(range, limit, reversed, timing.call(client.scheduler())), range, done);
      return done;
    });
  }

  /** A range read in progress: what was asked, and what the pages served so far. */
  private record ScanState(KeyRange range, int limit, boolean reversed, Deadline deadline,
      java.util.TreeMap<String, byte[]> served, Map<String, Long> versions) {
    ScanState(KeyRange range, int limit, boolean reversed, Deadline deadline) {
      this(range, limit, reversed, deadline, new java.util.TreeMap<>(KeyRange.ORDER),
          new java.util.HashMap<>());
    }
  }

  /**
   * Asks for the page of {@code unread}, the part of the range not read yet, and goes on with the
   * next page until the range is read or the limit is reached; completes {@code done}.
   */
  private void page(ScanState st, KeyRange unread, CompletableFuture<ScanResult> done) {
    client.scan(group, txnId, readPosition, unread,
            Math.min(st.limit(), client.hooks().scanPageLimit()), st.reversed(), st.deadline())
        .whenComplete((page, t) -> {
          try {
            if (t != null) {
              throw readFailed(t);
            }
            PageStep step = served(st, unread, page);
            if (step.result() == null) {
              page(st, step.next(), done);
            } else {
              done.complete(step.result());
            }
          } catch (RuntimeException e) {
            done.completeExceptionally(e);
          }
        });
  }

  /** After a page: the range still to read, or (when the scan is done) its result. */
  private record PageStep(KeyRange next, ScanResult result) {}

  /**
   * Takes in one page of a scan: the range still to read when another page is needed, or the
   * result when the scan is done (the part read then joined the read set).
   */
  private PageStep served(ScanState st, KeyRange unread, Message.ScanReply page) {
    KeyRange range = st.range();
    boolean reversed = st.reversed();
    int limit = st.limit();
    for (Message.ScanItem i : page.items()) {
      if (unread.contains(i.key())) {
        st.served().put(i.key(), i.value());
        st.versions().put(i.key(), i.version());
      }
    }
    Optional<KeyRange> next = Optional.empty();
    KeyRange readPart;
    if (page.complete()) {
      readPart = range;
    } else {
      readPart = reversed ? range.startingAt(page.lastKey()) : range.through(page.lastKey());
      next = reversed ? unread.before(page.lastKey()) : unread.after(page.lastKey());
      if (next.isEmpty()) {
        readPart = range;
      }
    }
    List<ScanResult.Entry> merged = merge(st.served(), readPart, reversed);
    Optional<KeyRange> rest = Optional.empty();
    if (merged.size() > limit || (merged.size() == limit && next.isPresent())) {
      String last = merged.get(limit - 1).key();
      readPart = reversed ? range.startingAt(last) : range.through(last);
      merged = merged.subList(0, limit);
      rest = reversed ? range.before(last) : range.after(last);
    } else if (next.isPresent()) {
      return new PageStep(next.get(), null);
    }
    KeyRange part = readPart;
    st.served().keySet().removeIf(k -> !part.contains(k));
    st.versions().keySet().removeIf(k -> !part.contains(k));
    recordScan(new Scan(part, st.served(), st.versions()));
    return new PageStep(null, new ScanResult(merged, rest));
  }

  /** The store's entries in {@code part} with this transaction's writes over them, in order. */
  private List<ScanResult.Entry> merge(java.util.NavigableMap<String, byte[]> served,
      KeyRange part, boolean reversed) {
    java.util.TreeMap<String, byte[]> view = new java.util.TreeMap<>(KeyRange.ORDER);
    served.forEach((k, v) -> {
      if (part.contains(k)) {
        view.put(k, v);
      }
    });
    writes.forEach((k, m) -> {
      if (part.contains(k)) {
        // An update applies to the value scanned (or none), as a get of the key sees it; one
        // that cannot apply shows the value scanned (its commit will be refused).
        Updates.Result r = Updates.apply(Optional.ofNullable(view.get(k)), m);
        Optional<byte[]> v = r.refused() ? Optional.ofNullable(view.get(k)) : r.value();
        if (v.isEmpty()) {
          view.remove(k);
        } else {
          view.put(k, v.get());
        }
      }
    });
    List<ScanResult.Entry> out = new ArrayList<>(view.size());
    (reversed ? view.descendingMap() : view).forEach((k, v) ->
        out.add(new ScanResult.Entry(k, v.clone())));
    return out;
  }

  /** Adds a scan to the read set, unless the entry would grow past its bounds. */
  private void recordScan(Scan scan) {
    List<KeyRange> all = new ArrayList<>(scannedRanges);
    all.add(scan.range());
    List<KeyRange> ranges = KeyRange.normalize(all);
    if (ranges.size() > LogEntry.MAX_READ_RANGES) {
      throw new TransactionTooLargeException(group, "a transaction may read at most "
          + LogEntry.MAX_READ_RANGES + " separate key ranges; this scan would make "
          + ranges.size() + " (scan fewer, wider ranges)");
    }
    int size = EntrySize.total(fixedBytes, reads.size(), readKeyBytes, writes.size(),
        writeBytes) + EntrySize.ranges(ranges, updates > 0);
    if (size > maxEntryBytes) {
      throw new TransactionTooLargeException(group, size, maxEntryBytes);
    }
    scans.add(scan);
    scannedRanges = ranges;
  }

  /**
   * A key's value from a scan that read it (a value, or empty when the scan found none there),
   * or null when no scan covered the key.
   */
  private Optional<byte[]> fromScans(String key) {
    for (int i = scans.size() - 1; i >= 0; i--) {
      Scan sc = scans.get(i);
      if (sc.range().contains(key)) {
        return Optional.ofNullable(sc.entries().get(key));
      }
    }
    return null;
  }

  /**
   * Buffers a write of {@code value} (copied) to {@code key}, replacing any earlier buffered
   * write of it.
   *
   * @throws InvalidArgumentException for an invalid key or a null value
   * @throws TransactionTooLargeException if the write would make the log entry too large for a
   *     datagram; the write is not buffered
   * @throws IllegalStateException if the transaction is finished
   */
  public void put(String key, byte[] value) {
    if (value == null) {
      throw new InvalidArgumentException(group, "value must not be null; use delete(key)");
    }
    checkActive();
    buffer(key, Mutation.put(value), EntrySize.write(key, value));
  }

  /** {@link #put(String, byte[])} of {@code value} encoded as UTF-8. */
  public void put(String key, String value) {
    Objects.requireNonNull(value, "value");
    put(key, value.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Buffers a delete of {@code key}, replacing any earlier buffered write of it.
   *
   * @throws InvalidArgumentException for an invalid key
   * @throws TransactionTooLargeException as for {@link #put(String, byte[])}
   * @throws IllegalStateException if the transaction is finished
   */
  public void delete(String key) {
    checkActive();
    buffer(key, Mutation.delete(), EntrySize.write(key, (byte[]) null));
  }

  private void buffer(String key, Mutation m, int itemBytes) {
    TxnClient.validateKey(group, key);
    Mutation old = writes.get(key);
    int oldBytes = old == null ? 0 : EntrySize.write(key, old);
    int newWriteBytes = writeBytes - oldBytes + itemBytes;
    int newUpdates = updates - (old != null && old.isUpdate() ? 1 : 0) + (m.isUpdate() ? 1 : 0);
    int size = EntrySize.total(fixedBytes, reads.size(), readKeyBytes,
        writes.size() + (old == null ? 1 : 0), newWriteBytes)
        + EntrySize.ranges(scannedRanges, newUpdates > 0);
    if (size > maxEntryBytes) {
      throw new TransactionTooLargeException(group, size, maxEntryBytes);
    }
    writes.put(key, m);
    writeBytes = newWriteBytes;
    updates = newUpdates;
  }

  /**
   * Commits the transaction. A read-only transaction commits at once at its read position,
   * without any message. Otherwise its log entry is proposed for the position after the read
   * position (with Paxos-CP possibly promoted to later ones), and the call blocks until the
   * commit protocol finishes. Either way the transaction is finished afterwards, except after a
   * {@link TransactionTooLargeException}.
   *
   * @return the result, always with status {@link CommitResult.Status#COMMITTED}
   * @throws TransactionAbortedException if the transaction lost to a conflicting one; it is
   *     certainly not in the log
   * @throws OutcomeUnknownException if the outcome was lost; it may or may not be in the log
   * @throws UnavailableException if no majority of DCs answered before the entry was ever sent
   *     for acceptance; it is certainly not in the log
   * @throws TransactionTooLargeException if the reads made the entry too large for a datagram;
   *     nothing was sent and the transaction stays active (it can only be aborted)
   * @throws IllegalStateException if the transaction is finished or the client closed
   */
  public CommitResult commit() {
    CompletableFuture<CommitResult> f = commitCore();
    try {
      return f.get();
    } catch (InterruptedException e) {
      // Stop following the commit: it ends as an unknown outcome at the position reached.
      Thread.currentThread().interrupt();
      client.stopCommit(txnId);
      return Futures.join(f);
    } catch (java.util.concurrent.ExecutionException e) {
      throw Futures.rethrow(e);
    }
  }

  /**
   * {@link #commit} without blocking: the future completes with the result, or fails with the
   * exceptions {@link #commit} throws; on one of the client's worker threads.
   */
  public CompletableFuture<CommitResult> commitAsync() {
    return Futures.handOff(commitCore(), client.callbacks());
  }

  /** The asynchronous core of {@link #commit}. */
  CompletableFuture<CommitResult> commitCore() {
    return operation(() -> {
      if (writes.isEmpty()) {
        finish(CommitResult.Status.COMMITTED, -1, 0);
        return CompletableFuture.completedFuture(new CommitResult(
            CommitResult.Status.COMMITTED, group, txnId, readPosition, 0, false, ""));
      }
      LogEntry entry = toEntry();
      checkSize(entry);
      return checkLocks(entry).thenCompose(v -> {
        state = State.FINISHED;
        return commitEntry(entry);
      });
    });
  }

  /**
   * Turns each buffered commutative update into a read of its key and a put of the value it
   * makes: what a transaction across groups does before its steps (a refusal where a step applies
   * could not be atomic across groups; docs/client.md "Counters and counting sets"). Fails with
   * {@link UpdateRefusedException} when an update cannot apply to the value read (the
   * transaction is finished, nothing was sent), or as {@link #get}.
   */
  CompletableFuture<Void> materializeUpdates() {
    List<String> keys = new ArrayList<>();
    writes.forEach((k, m) -> {
      if (m.isUpdate()) {
        keys.add(k);
      }
    });
    if (keys.isEmpty()) {
      return CompletableFuture.completedFuture(null);
    }
    return readStored(keys).thenAccept(stored -> {
      for (String key : keys) {
        Updates.Result r = Updates.apply(stored.get(key), writes.get(key));
        if (r.refused()) {
          finish(CommitResult.Status.ABORTED, -1, 0);
          throw new UpdateRefusedException(group, -1, txnId, key + ": "
              + Updates.describe(r.refusal()), client.homeDc());
        }
        Mutation m = r.value().map(Mutation::put).orElse(Mutation.delete());
        buffer(key, m, EntrySize.write(key, m));
      }
    });
  }

  /** Throws if {@code entry} is too large for a datagram (the transaction stays active). */
  void checkSize(LogEntry entry) {
    int size = LogCodec.encode(LogValue.of(entry)).length;
    if (size > maxEntryBytes) {
      throw new TransactionTooLargeException(group, size, maxEntryBytes);
    }
  }

  /**
   * The lock rule against the locks at the read position: if one blocks {@code entry}, helps
   * resolve it and fails (retryable abort; the transaction is finished). Nothing is sent for
   * {@code entry} then.
   */
  CompletableFuture<Void> checkLocks(LogEntry entry) {
    Optional<XgLocks.Lock> lock = locksCut && !neverBlocked(entry) ? Optional.of(firstLock())
        : locks.blocking(entry);
    if (lock.isPresent() && obeyLocks()) {
      return lockedOut(lock.get(), "its commit");
    }
    return CompletableFuture.completedFuture(null);
  }

  /**
   * A RESOLVE, or a DECIDE(ABORT): no lock blocks one with an effect (a RESOLVE of a
   * transaction holding its locks writes only those keys, which no other PREPARE can lock, and
   * one of a transaction holding none is void; a DECIDE(ABORT) touches only its decision key,
   * which no PREPARE locks), so it may be placed even when the begin's table was cut. The steps
   * that resolve locks must never wait for locks.
   */
  private static boolean neverBlocked(LogEntry entry) {
    XgStep x = entry.xg();
    return x != null && (x.kind() == XgStep.Kind.RESOLVE
        || (x.kind() == XgStep.Kind.DECIDE && !x.commit()));
  }

  /** Whether the begin's reply listed only the first of the group's locks, in id order. */
  boolean locksCut() {
    return locksCut;
  }

  /** The lock a reader of a cut table helps resolve: the first listed, in id order. */
  private XgLocks.Lock firstLock() {
    return locks.first().orElseThrow();
  }

  /**
   * Helps resolve {@code lock}, then fails with the retryable abort of this transaction (which
   * is finished then), saying what met the lock and what became of it.
   */
  private <T> CompletableFuture<T> lockedOut(XgLocks.Lock lock, String what) {
    return client.meetLock(group, lock).thenApply(resolution -> {
      throw lockedOut(lock, what, resolution);
    });
  }

  private TransactionAbortedException lockedOut(XgLocks.Lock lock, String what,
      String resolution) {
    finish(CommitResult.Status.ABORTED, -1, 0);
    client.abortedBeforeCommit(ClientMetrics.AbortReason.LOCK);
    String why = locksCut
        ? what + " cannot be checked against the locks of group " + group + ": it holds more "
            + "unresolved cross-group transactions than a begin reply lists; helped resolve the "
            + "first listed, " + lock.txn() + " since position " + lock.position() + " ("
            + resolution + "); retry"
        : what + " needs keys that cross-group transaction " + lock.txn() + " holds in group "
            + group + " since position " + lock.position() + " (" + resolution + "); retry";
    return new TransactionAbortedException(new CommitResult(CommitResult.Status.ABORTED, group,
        txnId, readPosition, 0, false, why), client.homeDc());
  }

  /**
   * Commits {@code entry} (this transaction's, perhaps as a cross-group step) and records the
   * attempt; the transaction must already be marked finished.
   */
  CompletableFuture<CommitResult> commitEntry(LogEntry entry) {
    client.recordCommitting(this);
    return client.commit(group, entry, proposerId, leader, timing.call(client.scheduler()),
            handleTaken)
        .handle((r, t) -> {
      if (t == null) {
        client.recordAttempt(this, r.status(), r.position(), r.promotions(), startMs);
        return r;
      }
      Throwable c = Futures.unwrap(t);
      if (c instanceof TransactionAbortedException e) {
        client.recordAttempt(this, CommitResult.Status.ABORTED, -1, e.result().promotions(),
            startMs);
      } else if (c instanceof DeadlineExceededException) {
        // Never sent where it could still be chosen: certainly not in the log.
        client.recordAttempt(this, CommitResult.Status.ABORTED, -1, 0, startMs);
      } else if (c instanceof UnavailableException) {
        // No majority before the entry was ever sent: certainly not in the log.
        client.recordAttempt(this, CommitResult.Status.ABORTED, -1, 0, startMs);
      } else if (c instanceof UpdateRefusedException e) {
        // In the log at its position, with no effect: ABORTED at that position.
        client.recordAttempt(this, CommitResult.Status.ABORTED, e.position().orElse(-1), 0,
            startMs);
      } else if (c instanceof OutcomeUnknownException e) {
        client.recordUnknown(this, e.result(), startMs);
      } else {
        // (The client closed under it, or a broken invariant: the entry was sent and may be
        // anywhere in the log.)
        client.recordAttempt(this, CommitResult.Status.UNKNOWN, -1, 0, startMs);
      }
      throw Futures.rethrow(c);
    });
  }

  /** Discards the transaction's writes; nothing is sent. Idempotent; a no-op once finished. */
  public void abort() {
    if (state == State.ACTIVE) {
      finish(CommitResult.Status.ABORTED, -1, 0);
    }
  }

  /**
   * A handle to store before committing, with which any client learns this transaction's
   * outcome later ({@link TxnClient#outcome(OutcomeHandle)}), after a crash during the commit
   * too. The positions it names are where the commit can be chosen: the next position in basic
   * Paxos, that and the positions of the promotions allowed in Paxos-CP (taking a handle caps a
   * commit with unlimited promotions at 16), the submit's range in leader combination. Taking it
   * sends nothing. A read-only transaction commits without entering the log, so its handle
   * settles as ABORTED (nothing of it is in the log; running it again is always safe). Settle a
   * handle before the group's log is collected past its positions
   * ({@code paxoscp.service.gc.retention.positions}): after that no DC can decide them.
   *
   * @throws IllegalStateException if the transaction is finished or its commit started
   */
  public OutcomeHandle outcomeHandle() {
    checkActive();
    if (client.hooks().has(ClientHooks.Plant.HANDLE_RANGE_FIRST_ONLY)) {
      return new OutcomeHandle(group, txnId, readPosition + 1, readPosition + 1);
    }
    handleTaken = true;
    return new OutcomeHandle(group, txnId, readPosition + 1,
        client.commits().lastReachable(readPosition));
  }

  /**
   * {@link #abort}: a transaction left in a try-with-resources block without a commit is
   * discarded; after a commit (whatever its outcome) it does nothing.
   */
  @Override
  public void close() {
    abort();
  }

  /** Finishes the transaction and records the attempt, once (a second finish does nothing). */
  private void finish(CommitResult.Status outcome, long commitPos, int promotions) {
    synchronized (this) {
      if (state != State.ACTIVE) {
        return;
      }
      state = State.FINISHED;
    }
    client.recordAttempt(this, outcome, commitPos, promotions, startMs);
  }

  /** The log entry a commit would propose now. */
  LogEntry toEntry() {
    TreeSet<String> readKeys = new TreeSet<>(reads.keySet());
    if (client.hooks().has(ClientHooks.Plant.UPDATED_READ_LEFT_OUT)) {
      writes.forEach((k, m) -> {
        if (m.isUpdate()) {
          readKeys.remove(k);
        }
      });
    }
    return new LogEntry(txnId, client.homeDc(), readPosition, readKeys, entryRanges(), writes);
  }

  /**
   * This transaction's part of cross-group transaction {@code step.txn()} as a log entry: a
   * PREPARE carries its reads and writes; the coordinator's DECIDE(COMMIT) adds the decision
   * key, read (absent at the read position) and written.
   */
  LogEntry stepEntry(XgStep step) {
    return stepEntry(step, false);
  }

  /**
   * {@link #stepEntry(XgStep)}; a PREPARE of a one-round commit ({@code readsCloseKey}) also
   * reads the transaction's close key, absent at the read position, so that no PREPARE of it
   * is placed after a CLOSE (docs/cross-group.md, "One round").
   */
  LogEntry stepEntry(XgStep step, boolean readsCloseKey) {
    TreeSet<String> readKeys = new TreeSet<>(reads.keySet());
    TreeMap<String, Mutation> w = new TreeMap<>(writes);
    if (readsCloseKey && step.kind() == XgStep.Kind.PREPARE
        && !client.hooks().has(ClientHooks.Plant.PREPARE_IGNORES_CLOSE)) {
      readKeys.add(XgStep.closeKey(step.txn()));
    }
    if (step.kind() == XgStep.Kind.DECIDE) {
      String dk = XgStep.decisionKey(step.txn());
      if (!client.hooks().has(ClientHooks.Plant.DECIDE_BLIND)) {
        readKeys.add(dk);
      }
      w.put(dk, Mutation.put(step.commit() ? XgStep.COMMIT_VALUE : XgStep.ABORT_VALUE));
    }
    return new LogEntry(txnId, client.homeDc(), readPosition, readKeys, entryRanges(), w, step);
  }

  /**
   * Commits {@code entry}, a cross-group step built from this transaction's read position, and
   * marks the transaction finished; records nothing in the history (the entry is not this
   * transaction's own reads and writes at its position).
   */
  CompletableFuture<CommitResult> commitUnrecorded(LogEntry entry) {
    state = State.FINISHED;
    return client.commit(group, entry, proposerId, leader, Deadline.NONE, false);
  }

  /** Marks the transaction finished without recording anything (its cross-group parent does). */
  void markFinished() {
    state = State.FINISHED;
  }

  /** The group's cross-group locks at the read position. */
  XgLocks locks() {
    return locks;
  }

  /** The values read from the store so far (a value, or empty for no value); for tests. */
  Map<String, Optional<byte[]>> reads() {
    return Collections.unmodifiableMap(reads);
  }

  /** The position that wrote each version read (0 if never written). */
  Map<String, Long> readVersions() {
    return Collections.unmodifiableMap(readVersions);
  }

  /** The range reads served by the store, in the order made. */
  List<Scan> scans() {
    return Collections.unmodifiableList(scans);
  }

  /** The ranges read, as the entry carries them. */
  List<KeyRange> scannedRanges() {
    return scannedRanges;
  }

  /** The ranges the entry carries: those read (none with a planted bug). */
  List<KeyRange> entryRanges() {
    return client.hooks().has(ClientHooks.Plant.DROP_SCANNED_RANGES) ? List.of() : scannedRanges;
  }

  /** The buffered writes; for tests. */
  SortedMap<String, Mutation> writes() {
    return Collections.unmodifiableSortedMap(writes);
  }

  /** The entry size tracked incrementally (checked against the real encoding in tests). */
  int trackedEntryBytes() {
    return EntrySize.total(fixedBytes, reads.size(), readKeyBytes, writes.size(), writeBytes)
        + EntrySize.ranges(scannedRanges, updates > 0);
  }

  private void checkActive() {
    if (state != State.ACTIVE) {
      throw new IllegalStateException("transaction " + txnId + " is finished");
    }
    if (busy) {
      throw new IllegalStateException("an operation of transaction " + txnId + " is in "
          + "flight; start the next when its future completed");
    }
  }

  @Override
  public String toString() {
    return "Transaction[" + txnId + " group=" + group + " r=" + readPosition + " reads="
        + reads.keySet() + (scannedRanges.isEmpty() ? "" : " ranges=" + scannedRanges)
        + " writes=" + writes.keySet() + (isActive() ? "" : " finished") + "]";
  }
}
