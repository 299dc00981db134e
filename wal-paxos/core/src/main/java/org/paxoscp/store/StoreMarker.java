package org.paxoscp.store;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;

/**
 * What a DC's store says about itself, in one row of its meta table (docs/architecture.md
 * section 12): whether it serves, or lost its contents and is being rebuilt. A store is marked
 * serving when it is created empty for a new DC ({@link #initialize}); a store that lost its rows
 * lost this one too, so an absent marker means "lost", never "new", and the DC's acceptor then
 * votes for no group it has not rebuilt (a wiped acceptor that voted as if empty could make a
 * second value chosen where its lost promise or vote counted).
 *
 * @param state serving, or being rebuilt
 * @param id a random identity written with the marker: a rebuild's id while it is under way
 *     (requests that complete it must name it), a new one once the store is rebuilt
 * @param unknownGroupFence after a rebuild: the positions at or below which the DC does not vote
 *     in a group it rebuilt no state for (0 for a store that never lost anything)
 * @param rebuiltFrom the id of the rebuild that made this store serving ("" if none did)
 */
public record StoreMarker(State state, String id, long unknownGroupFence, String rebuiltFrom) {

  /** A store's state. */
  public enum State {
    /** Every group without a meta row here is new here. */
    SERVING,
    /** The store lost its contents: only groups already rebuilt (with a meta row) are served. */
    REBUILDING
  }

  /**
   * The store row: bucket 0 and a NUL where a group name would start, so it is no group's meta
   * row (a group name is never empty and has no NUL).
   */
  public static final byte[] ROW = {0, 0, 0, 's', 't', 'o', 'r', 'e'};
  static final String STATE = "s";
  static final String ID = "i";
  static final String FENCE = "f";
  static final String REBUILT_FROM = "r";
  /** How a rebuild's id begins; a serving store's id never does. */
  static final String REBUILD_ID = "rebuild-";

  /** The store's marker; empty when it has none (a store that lost its contents). */
  public static Optional<StoreMarker> read(KvStore store) {
    return parse(store.readRow(Table.META, ROW));
  }

  /** The marker in the cells of the store row ({@link #ROW}); empty when there is none. */
  public static Optional<StoreMarker> parse(Map<String, Cell> cells) {
    Cell state = cells.get(STATE);
    if (state == null) {
      return Optional.empty();
    }
    String s = new String(state.value(), StandardCharsets.UTF_8);
    State st = switch (s) {
      case "serving" -> State.SERVING;
      case "rebuilding" -> State.REBUILDING;
      default -> throw new org.paxoscp.wal.CorruptDataException("store marker state '" + s + "'");
    };
    Cell id = cells.get(ID);
    Cell fence = cells.get(FENCE);
    Cell from = cells.get(REBUILT_FROM);
    return Optional.of(new StoreMarker(st,
        id == null ? "" : new String(id.value(), StandardCharsets.UTF_8),
        fence == null ? 0 : ByteBuffer.wrap(fence.value()).getLong(),
        from == null ? "" : new String(from.value(), StandardCharsets.UTF_8)));
  }

  /**
   * Whether {@code other} is this same marker: the same state and id. A store that lost its
   * contents and was rebuilt since, or is being rebuilt, never has the marker it had before (each
   * rebuild and each completion writes a new random id).
   */
  public boolean sameAs(StoreMarker other) {
    return other != null && state == other.state && id.equals(other.id);
  }

  /** For log lines and errors: {@code serving as 1f3a...}. */
  public String describe() {
    return state.name().toLowerCase(java.util.Locale.ROOT) + " as " + id;
  }

  /**
   * Marks a new, empty store as serving; does nothing to a store that has a marker. Call it only
   * for a store created empty for a new DC (creating its tables, or a new in-memory store): on a
   * store that lost its contents it would let the DC vote as if it had never voted.
   *
   * @return whether the marker was written now
   */
  public static boolean initialize(KvStore store) {
    return store.checkAndWrite(Table.META, ROW, STATE, null, KvStore.UNVERSIONED,
        Map.of(STATE, bytes("serving"), ID, bytes(UUID.randomUUID().toString())));
  }

  /** What {@link #initializeIfFromEarlierVersion} found. */
  public enum Earlier {
    /** The store has a marker: nothing to do. */
    MARKED,
    /** No marker and no meta rows: a store that lost its contents (or a new one never marked). */
    EMPTY,
    /** Meta rows written only by a version without markers: marked serving now. */
    MARKED_NOW,
    /**
     * Meta rows of which at least one was written by a version with markers (a group's
     * {@code STORE_ID}, {@code REBUILT_BY} or fence cell), and no marker: the store lost its
     * contents and a service still running wrote rows into it since; never marked.
     */
    LOST
  }

  /**
   * Marks serving a store written by a version without markers: one whose meta table holds rows
   * but no marker, none of them written by a version with markers. Such a version ran only
   * before any store had a marker, so a store with a row of a version with markers had one and
   * lost it, with its contents; the rows it holds were written after the loss by a service that
   * did not notice it yet, and it is left for {@code paxoscp dc rebuild}. Scans the whole meta
   * table, only when the marker is missing.
   *
   * @param markedColumns meta cells only versions with markers write (the caller's layout)
   */
  public static Earlier initializeIfFromEarlierVersion(KvStore store,
      java.util.Set<String> markedColumns) {
    if (read(store).isPresent()) {
      return Earlier.MARKED;
    }
    byte[] from = new byte[0];
    boolean any = false;
    while (true) {
      java.util.List<KvStore.ScannedRow> rows = store.scan(Table.META, from, null, KvStore.LATEST,
          1024, false);
      for (KvStore.ScannedRow r : rows) {
        if (java.util.Arrays.equals(r.row(), org.paxoscp.version.ClusterVersionRow.ROW)) {
          // Written only while the store had a marker: it had one and lost it.
          return Earlier.LOST;
        }
        any = true;
        for (String c : markedColumns) {
          if (r.cells().containsKey(c)) {
            return Earlier.LOST;
          }
        }
      }
      if (rows.size() < 1024) {
        break;
      }
      byte[] last = rows.get(rows.size() - 1).row();
      from = java.util.Arrays.copyOf(last, last.length + 1);
    }
    if (!any) {
      return Earlier.EMPTY;
    }
    return initialize(store) ? Earlier.MARKED_NOW : Earlier.MARKED;
  }

  /**
   * Starts a rebuild of a store that has no marker (it lost its contents): marks it rebuilding.
   * A store already being rebuilt stays so (a rebuild resumed).
   *
   * @return the marker now
   * @throws IllegalStateException if the store is serving (it lost nothing; its groups that fell
   *     behind are rebuilt without a mark)
   */
  public static StoreMarker markRebuilding(KvStore store) {
    store.checkAndWrite(Table.META, ROW, STATE, null, KvStore.UNVERSIONED,
        Map.of(STATE, bytes("rebuilding"), ID, bytes(REBUILD_ID + UUID.randomUUID())));
    StoreMarker m = read(store).orElseThrow(() -> new StoreUnavailableException(
        "the store marker just written is not there"));
    if (m.state() == State.SERVING) {
      throw new IllegalStateException("the store is serving; it lost nothing");
    }
    if (!m.id().startsWith(REBUILD_ID)) {
      // A rebuild begun by a version whose ids had no prefix: given one, so it can complete.
      store.checkAndWrite(Table.META, ROW, ID, bytes(m.id()), KvStore.UNVERSIONED,
          Map.of(ID, bytes(REBUILD_ID + UUID.randomUUID())));
      return markRebuilding(store);
    }
    return m;
  }

  /**
   * Ends the rebuild {@code rebuildId}: every group that had state at the peers is rebuilt here,
   * so a group without a meta row is new here except for positions at or below
   * {@code unknownGroupFence}. Acts once, and only on that rebuild: the write is conditional on
   * the marker's id being {@code rebuildId} and gives the store a new id, so a completion of an
   * earlier rebuild (a copy delivered late, or a store lost again since) changes nothing. Calling
   * it again for the rebuild that made the store serving (a first call whose answer was lost)
   * returns {@code false} and changes nothing.
   *
   * @return whether this call ended the rebuild
   * @throws IllegalStateException if the store is not being rebuilt under {@code rebuildId}
   *     and was not made serving by it
   */
  public static boolean markRebuilt(KvStore store, String rebuildId, long unknownGroupFence) {
    if (!rebuildId.startsWith(REBUILD_ID)) {
      throw new IllegalStateException("'" + rebuildId + "' is no rebuild's id");
    }
    if (store.checkAndWrite(Table.META, ROW, ID, bytes(rebuildId), KvStore.UNVERSIONED,
        Map.of(STATE, bytes("serving"), ID, bytes(UUID.randomUUID().toString()),
            REBUILT_FROM, bytes(rebuildId),
            FENCE, ByteBuffer.allocate(8).putLong(unknownGroupFence).array()))) {
      return true;
    }
    Optional<StoreMarker> now = read(store);
    if (now.isPresent() && now.get().state() == State.SERVING
        && now.get().rebuiltFrom().equals(rebuildId)) {
      return false;
    }
    throw new IllegalStateException("the store is not being rebuilt under rebuild " + rebuildId
        + ": " + now.map(m -> m.state() + " as " + m.id()).orElse("it has no marker (lost)"));
  }

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }
}
