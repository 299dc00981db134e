package org.paxoscp.service;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import org.paxoscp.paxos.LogApplier;
import org.paxoscp.paxos.RebuildInstall;
import org.paxoscp.paxos.WalLayout;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.StoreMarker;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.Message.ExtentReply;
import org.paxoscp.transport.Message.ExtentRequest;
import org.paxoscp.transport.Message.SnapshotReply;
import org.paxoscp.transport.Message.SnapshotRequest;
import org.paxoscp.transport.Transport;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * Rebuilds groups at one DC from its peers (docs/architecture.md section 12, docs/rebuilding.md):
 * for each group, copies a peer's data as of a position the peer applied, records it as applied
 * here with everything below it collected, and lets catch-up bring the log above it from the peers'
 * WALs. It writes only this DC's store and asks its peers' services
 * (never their stores).
 *
 * <p><b>Two cases.</b> A store without a {@link StoreMarker} (or one being rebuilt) lost its
 * contents ({@link Mode#LOST}): every group gets a fence, the positions where this DC's lost
 * promises and votes may have counted, and this DC never votes there. A serving store kept its
 * acceptor state ({@link Mode#BEHIND}): a group that fell behind past its peers' GC watermark is
 * copied at a newer position and needs no fence.
 *
 * <p><b>The fence (safety).</b> A proposer writes acceptor state for position {@code p} only once
 * it knows {@code p - 1} chosen, except the grant asked ahead, which reaches {@code p + 1}; so
 * when this DC lost its store, it held state at no position above {@code d + 2}, where {@code d}
 * is the highest position chosen then. A value chosen at {@code d} was accepted by a majority;
 * every majority keeps, without this DC, at least {@code majority - 1} DCs, so any
 * {@code n - majority + 1} peers include one that holds it (its vote, its chosen value, or a GC
 * watermark at or above it). The fence is the highest position any of that many peers holds
 * anything at, plus {@link #FENCE_MARGIN}: at or above {@code d + 2}. Nothing this DC answers
 * between losing its store and the fence being set counts either: it serves no request of the
 * group until then ({@link org.paxoscp.paxos.RebuildGuard}). A group no peer holds anything of
 * when the whole store is declared rebuilt gets the store's fence, {@link #FENCE_MARGIN}.
 *
 * <p>Non-blocking: results complete futures, store work runs on the threads that complete the
 * transport's futures (or the caller's). Thread-safe; rebuilding one group twice at once is
 * harmless (the meta row is written once).
 */
public final class DcRebuild {
  /**
   * Positions above the highest one a quorum of peers holds anything at that the fence still
   * covers: the grant asked ahead reaches two above the highest chosen position, two more spare.
   */
  public static final long FENCE_MARGIN = 4;
  private static final int ATTEMPTS = 3;

  /** What the store lost. */
  public enum Mode {
    /** Everything (no marker, or a rebuild under way): groups get fences. */
    LOST,
    /** Nothing: its groups may have fallen behind past the peers' GC watermark. */
    BEHIND
  }

  /** What rebuilding a group did. */
  public enum Outcome {
    /** Copied from a peer and installed. */
    REBUILT,
    /** It was rebuilt before (a resumed rebuild): nothing done. */
    ALREADY_REBUILT,
    /** A DC that kept its state is within its peers' logs: catch-up alone brings it up. */
    NOT_BEHIND
  }

  /**
   * @param position the position copied at (the applied watermark here after it)
   * @param fence positions at or below it get no vote here (0: none)
   * @param items data versions copied
   * @param source the peer copied from ("" when nothing was copied)
   * @param peersApplied the highest applied watermark a peer reported (catch-up's target)
   */
  public record GroupResult(String group, Outcome outcome, long position, long fence, int items,
      String source, long peersApplied) {}

  private final String dc;
  private final List<String> peers;
  private final int peersNeeded;
  private final KvStore store;
  private final Transport transport;
  private final Duration timeout;
  /** Where store work after a peer's reply runs (never the transport's receiving thread). */
  private final Executor storeWork;
  private final Mode mode;
  /** The store marker's id when this rebuild began: what its completion must name. */
  private final String rebuildId;
  /** Whether the lock table is copied in pages of its own (cluster version 7). */
  private final boolean lockPages;

  /**
   * Reads the store's marker; a store without one is marked as being rebuilt (from then on it
   * serves only groups it has rebuilt).
   *
   * @param dcs the cluster's DCs
   * @param timeout how long one request to a peer waits for its reply (each is tried 3 times)
   * @param storeWork runs what follows a peer's reply (store reads and writes): replies complete
   *     on the transport's receiving thread, which must never wait for the store
   * @param lockPages whether the cluster runs at {@link ClusterVersion#SNAPSHOT_LOCK_PAGES} or
   *     above: the lock table is then asked for in pages of its own, each within a datagram
   *     whatever the locks hold; below it, in the format before (the first page carries the
   *     whole table, which fails when it does not fit a datagram)
   */
  public DcRebuild(String dc, List<String> dcs, KvStore store, Transport transport,
      Duration timeout, Executor storeWork, boolean lockPages) {
    this.dc = Objects.requireNonNull(dc);
    this.peers = dcs.stream().filter(d -> !d.equals(dc)).toList();
    if (peers.size() != dcs.size() - 1 || peers.isEmpty()) {
      throw new IllegalArgumentException("DC " + dc + " must be one of at least two DCs: " + dcs);
    }
    this.store = Objects.requireNonNull(store);
    this.transport = Objects.requireNonNull(transport);
    this.timeout = Objects.requireNonNull(timeout);
    this.storeWork = Objects.requireNonNull(storeWork);
    this.lockPages = lockPages;
    StoreMarker m = StoreMarker.read(store).orElse(null);
    this.mode = m != null && m.state() == StoreMarker.State.SERVING ? Mode.BEHIND : Mode.LOST;
    this.rebuildId = mode == Mode.LOST ? StoreMarker.markRebuilding(store).id() : m.id();
    int majority = dcs.size() / 2 + 1;
    this.peersNeeded = mode == Mode.LOST ? dcs.size() - majority + 1 : 1;
  }

  public Mode mode() {
    return mode;
  }

  /**
   * The id of this rebuild (the store marker's when it began): a completion must name it, so a
   * completion of any other rebuild, or one sent after the store was lost again, acts on nothing.
   */
  public String rebuildId() {
    return rebuildId;
  }

  /** Whether the store is still the one this rebuild began on (its marker has this id). */
  public boolean current() {
    return StoreMarker.read(store).map(x -> x.id().equals(rebuildId)).orElse(false);
  }

  /** How many peers must answer for a group's fence ({@code n - majority + 1}; 1 for BEHIND). */
  public int peersNeeded() {
    return peersNeeded;
  }

  /**
   * Rebuilds one group; see the class comment. Copies from {@code from} when it answered ("" or
   * null: the peer that applied the most). Fails when too few peers answer.
   */
  public CompletableFuture<GroupResult> rebuild(String group, String from) {
    WalLayout.validateGroup(group);
    // Only a row this rebuild installed counts: a row written after the loss by a service that
    // had not noticed it yet, or by an earlier rebuild, is replaced.
    if (mode == Mode.LOST && org.paxoscp.paxos.RebuildGuard.rebuiltBy(
        store.readRow(KvStore.Table.META, WalLayout.metaRow(group)), rebuildId)) {
      return CompletableFuture.completedFuture(new GroupResult(group, Outcome.ALREADY_REBUILT,
          0, 0, 0, "", 0));
    }
    return extents(group).thenCompose(ext -> {
      long highest = 0;
      long peersApplied = 0;
      long peersGc = 0;
      String source = null;
      for (var e : ext.entrySet()) {
        highest = Math.max(highest, e.getValue().highest());
        peersGc = Math.max(peersGc, e.getValue().gcWatermark());
        if (e.getKey().equals(from)) {
          source = from;
        } else if (!Objects.equals(source, from)
            && (source == null || e.getValue().applied() > peersApplied)) {
          source = e.getKey();
        }
        peersApplied = Math.max(peersApplied, e.getValue().applied());
      }
      long fence = mode == Mode.LOST ? highest + FENCE_MARGIN : 0;
      long applied = peersApplied;
      if (mode == Mode.BEHIND && new LogApplier(store).appliedWatermark(group) >= peersGc) {
        return CompletableFuture.completedFuture(new GroupResult(group, Outcome.NOT_BEHIND, 0,
            0, 0, "", applied));
      }
      String src = source;
      return copy(group, src, ATTEMPTS).thenApply(c -> {
        if (!current()) {
          // The store was lost again (or rebuilt) while this group was copied: its fence was
          // computed for a store that is gone. (A loss between this check and the install
          // leaves a row stamped with this rebuild's id in a store whose marker is another's
          // or none: no guard trusts it, and the next rebuild replaces it.)
          throw new IllegalStateException("the store of DC " + dc + " changed while group "
              + group + " was copied (lost again, or rebuilt by another instance): start the "
              + "rebuild again");
        }
        if (!RebuildInstall.finish(store, group, c.position, c.table(group, src), c.chosen,
            fence, rebuildId)) {
          return new GroupResult(group, Outcome.ALREADY_REBUILT, 0, 0, 0, "", applied);
        }
        return new GroupResult(group, Outcome.REBUILT, c.position, fence, c.items, src,
            applied);
      });
    });
  }

  /**
   * Declares the store rebuilt under the rebuild {@code id}, once every group any of
   * {@link #peersNeeded} peers holds anything of was rebuilt: from then on a group without a meta
   * row here is new here, fenced at {@link #FENCE_MARGIN}. The store acts on it only while it is
   * being rebuilt under {@code id}, and once ({@link StoreMarker#markRebuilt}): a completion of
   * another rebuild, or one sent before the store was lost again, changes nothing. Nothing to do
   * for a store that lost nothing.
   *
   * @return whether this call ended the rebuild (false: it had ended already, or lost nothing)
   * @throws IllegalStateException when the store is not being rebuilt under {@code id}
   */
  public boolean finish(String id) {
    return mode == Mode.LOST && StoreMarker.markRebuilt(store, id, FENCE_MARGIN);
  }

  // ---- steps ----------------------------------------------------------------------------

  /** The peers' extents of the group; at least {@link #peersNeeded} of them. */
  private CompletableFuture<Map<String, ExtentReply>> extents(String group) {
    Map<String, CompletableFuture<Message>> asked = new LinkedHashMap<>();
    for (String p : peers) {
      asked.put(p, ask(p, new ExtentRequest(group), ATTEMPTS));
    }
    return CompletableFuture.allOf(asked.values().stream()
        .map(f -> f.handle((r, t) -> null)).toArray(CompletableFuture[]::new)).thenApply(x -> {
          Map<String, ExtentReply> got = new LinkedHashMap<>();
          List<String> missing = new ArrayList<>();
          for (var e : asked.entrySet()) {
            Message r = e.getValue().exceptionally(t -> null).join();
            if (r instanceof ExtentReply x2) {
              got.put(e.getKey(), x2);
            } else {
              missing.add(e.getKey() + " (" + describe(e.getValue()) + ")");
            }
          }
          if (got.size() < peersNeeded) {
            throw new IllegalStateException("group " + group + ": " + got.size() + " of "
                + peers.size() + " peers answered; rebuilding DC " + dc + " needs "
                + peersNeeded + ". No answer from " + String.join(", ", missing));
          }
          return got;
        });
  }

  /** A group's data copied at one position, pages written to the store as they come. */
  private static final class Copy {
    long position;
    /** The lock table, whole (the format before lock pages) or put together from its pages. */
    XgLocks locks = XgLocks.EMPTY;
    /** In lock pages: the digest of the table every page must name; null before them. */
    byte[] locksDigest;
    LogValue chosen;
    int items;
    /** The last key copied so far ("" for none): where the next data page goes on from. */
    String lastKey = "";

    /**
     * The table to install: in lock pages, the slices must make up the table whose digest each
     * named (they do unless a peer pages wrongly; then nothing is installed).
     */
    XgLocks table(String group, String source) {
      if (locksDigest != null
          && !java.util.Arrays.equals(SnapshotLocks.digest(locks), locksDigest)) {
        throw new IllegalStateException("group " + group + ": the lock pages of DC " + source
            + " do not make up the table they were cut from; nothing installed");
      }
      return locks;
    }
  }

  private CompletableFuture<Copy> copy(String group, String source, int attemptsLeft) {
    Copy c = new Copy();
    return page(group, source, c, new SnapshotRequest(group, 0, "", lockPages ? "" : null))
        .handle((ok, t) -> {
          Throwable cause = t instanceof CompletionException && t.getCause() != null
              ? t.getCause() : t;
          if (cause instanceof CopyAgain && attemptsLeft > 1) {
            // The peer collected past the position while it was copied, or its lock table
            // changed between lock pages: again, at a newer position.
            return copy(group, source, attemptsLeft - 1);
          }
          return t == null ? CompletableFuture.completedFuture(ok)
              : CompletableFuture.<Copy>failedFuture(cause);
        }).thenCompose(f -> f);
  }

  private CompletableFuture<Copy> page(String group, String source, Copy c, SnapshotRequest q) {
    return ask(source, q, ATTEMPTS).thenCompose(m -> {
      if (m instanceof Message.ErrorReply e && e.code() == Message.ErrorCode.TOO_OLD) {
        throw new CopyAgain("collected meanwhile");
      }
      if (!(m instanceof SnapshotReply r)
          || (q.locksAfter() != null) != (r.locksDigest() != null)) {
        throw new IllegalStateException("group " + group + ": DC " + source
            + " answered a snapshot request " + q + " with " + m);
      }
      if (q.position() == 0) {
        c.position = r.position();
        c.chosen = r.chosen();
        c.locks = r.locks();
        c.locksDigest = r.locksDigest();
      } else if (q.lockPage()) {
        if (!java.util.Arrays.equals(r.locksDigest(), c.locksDigest)) {
          throw new CopyAgain("its lock table changed while it was copied");
        }
        if (r.locks().isEmpty() || !r.items().isEmpty()
            || r.locks().locks().get(0).txn().compareTo(q.locksAfter()) <= 0) {
          throw new IllegalStateException("group " + group + ": DC " + source
              + " answered lock page " + q + " with " + r);
        }
        List<XgLocks.Lock> all = new ArrayList<>(c.locks.locks());
        all.addAll(r.locks().locks());
        c.locks = XgLocks.of(all);
      }
      List<RebuildInstall.Item> items = r.items().stream()
          .map(i -> new RebuildInstall.Item(i.key(), i.version(), i.cell())).toList();
      RebuildInstall.writeItems(store, group, items);
      c.items += items.size();
      if (!r.items().isEmpty()) {
        c.lastKey = r.items().get(r.items().size() - 1).key();
      }
      if (r.locksMore()) {
        // The locks are installed only once every page arrived (RebuildInstall.finish).
        List<XgLocks.Lock> got = c.locks.locks();
        String lastTxn = got.isEmpty() ? "" : got.get(got.size() - 1).txn();
        return page(group, source, c, new SnapshotRequest(group, c.position, "", lastTxn));
      }
      if (!r.more()) {
        return CompletableFuture.completedFuture(c);
      }
      return page(group, source, c, new SnapshotRequest(group, c.position, c.lastKey));
    });
  }

  /** A request with retries on no reply; an error reply other than TOO_OLD fails it. */
  private CompletableFuture<Message> ask(String peer, Message m, int attemptsLeft) {
    return transport.request(peer, m, timeout).handleAsync((r, t) -> {
      if (t != null) {
        return attemptsLeft > 1 ? ask(peer, m, attemptsLeft - 1)
            : CompletableFuture.<Message>failedFuture(t);
      }
      if (r instanceof Message.ErrorReply e && e.code() != Message.ErrorCode.TOO_OLD) {
        return CompletableFuture.<Message>failedFuture(new IllegalStateException("DC " + peer
            + ": " + e.code() + " " + e.detail()));
      }
      return CompletableFuture.completedFuture(r);
    }, storeWork).thenCompose(f -> f);
  }

  private static String describe(CompletableFuture<Message> f) {
    try {
      f.join();
      return "unexpected reply";
    } catch (CompletionException e) {
      Throwable c = e.getCause() == null ? e : e.getCause();
      return c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage();
    }
  }

  /**
   * The copy cannot be finished at its position: the source collected past it meanwhile, or its
   * lock table changed between two lock pages. The copy starts again at a newer one.
   */
  private static final class CopyAgain extends RuntimeException {
    private static final long serialVersionUID = 1L;

    CopyAgain(String why) {
      super(why, null, false, false);
    }
  }
}
