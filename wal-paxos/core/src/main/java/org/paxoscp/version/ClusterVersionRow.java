package org.paxoscp.version;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import org.paxoscp.store.KvStore;
import org.paxoscp.store.KvStore.Cell;
import org.paxoscp.store.KvStore.Table;
import org.paxoscp.wal.CorruptDataException;

/**
 * The cluster's version as one DC's store holds it: a row of the meta table beside the store
 * marker, with the version the cluster runs at ({@value #ACTIVE}) and, while an operator raises
 * it, the version being raised to ({@value #FENCE}): a process that does not speak the fence
 * refuses to start, so none can join between the check of every process and the raise. The
 * fence cell is {@code version/attempt}: every fence set counts a new attempt, and a change names
 * the attempt it expects, so a copy of an earlier fence or removal (delivered late, or to
 * another service of the DC) changes nothing.
 *
 * <p>Every DC's store holds the row; {@code paxoscp cluster-version finalize} writes each of
 * them, and a DC whose row is missing (its store lost, or a new DC) takes the version its peers
 * report (docs/upgrading.md, "Where the version lives"). The active version only grows: every
 * write is a check-and-write against the value read. A service writes the row only while its
 * store's marker is serving, so a store that lost its contents never gets a row before it has a
 * marker (and {@code StoreMarker.initializeIfFromEarlierVersion} does not count this row as a
 * group's).
 */
public final class ClusterVersionRow {
  /** The row key; not a group's meta row (a group's starts with its two-byte bucket). */
  public static final byte[] ROW = {0, 0, 0, 'v', 'e', 'r', 's', 'i', 'o', 'n'};
  static final String ACTIVE = "v";
  static final String FENCE = "f";

  /**
   * What one store holds: the active version, the fence (0 when none) and the fence attempts so
   * far (0 before the first).
   */
  public record State(int active, int fence, int attempt) {
    public State {
      if (active < 1 || fence < 0 || attempt < 0) {
        throw new IllegalArgumentException("cluster version " + active + ", fence " + fence
            + "/" + attempt);
      }
    }
  }

  private ClusterVersionRow() {}

  /** The row in {@code store}; empty when it has none. */
  public static Optional<State> read(KvStore store) {
    return parse(store.readRow(Table.META, ROW));
  }

  /** The state in the row's cells; empty when there is no active version. */
  public static Optional<State> parse(Map<String, Cell> cells) {
    Cell a = cells.get(ACTIVE);
    if (a == null) {
      return Optional.empty();
    }
    Cell f = cells.get(FENCE);
    if (f == null) {
      return Optional.of(new State(number(a.value(), "active"), 0, 0));
    }
    String[] parts = new String(f.value(), StandardCharsets.US_ASCII).split("/", -1);
    if (parts.length != 2) {
      throw new CorruptDataException("cluster version row: fence cell '"
          + new String(f.value(), StandardCharsets.US_ASCII) + "'");
    }
    return Optional.of(new State(number(a.value(), "active"),
        number(parts[0].getBytes(StandardCharsets.US_ASCII), "fence"),
        number(parts[1].getBytes(StandardCharsets.US_ASCII), "fence attempt")));
  }

  /**
   * Writes {@code version} into a store without a row.
   *
   * @return whether it was written (false: the store has a row, perhaps written by a peer now)
   */
  public static boolean create(KvStore store, int version) {
    return store.checkAndWrite(Table.META, ROW, ACTIVE, null, KvStore.UNVERSIONED,
        Map.of(ACTIVE, bytes(version)));
  }

  /**
   * Raises the active version from {@code from} to {@code to}, clearing a fence at or below
   * {@code to} (the attempt count stays).
   *
   * @return whether it was written (false: the row did not hold {@code from})
   */
  public static boolean raise(KvStore store, int from, int to) {
    if (to <= from) {
      throw new IllegalArgumentException("a cluster version only grows: " + from + " to " + to);
    }
    Optional<State> now = read(store);
    if (now.isEmpty() || now.get().active() != from) {
      return false;
    }
    State s = now.get();
    Map<String, byte[]> cells = new java.util.HashMap<>();
    cells.put(ACTIVE, bytes(to));
    if (s.fence() > 0 && s.fence() <= to) {
      cells.put(FENCE, fenceCell(0, s.attempt()));
    }
    return store.checkAndWrite(Table.META, ROW, ACTIVE, bytes(from), KvStore.UNVERSIONED, cells);
  }

  /**
   * Sets the fence to {@code version} as attempt {@code expectedAttempt + 1}, if the row's
   * attempts so far are {@code expectedAttempt}.
   *
   * @return whether it was written
   */
  public static boolean fence(KvStore store, int expectedAttempt, int version) {
    if (version < 1) {
      throw new IllegalArgumentException("a fence is a version, not " + version);
    }
    Optional<State> now = read(store);
    if (now.isEmpty() || now.get().attempt() != expectedAttempt) {
      return false;
    }
    return store.checkAndWrite(Table.META, ROW, FENCE, fenceCellOf(now.get()),
        KvStore.UNVERSIONED, Map.of(FENCE, fenceCell(version, expectedAttempt + 1)));
  }

  /**
   * Removes fence attempt {@code attempt}, if the row still holds it.
   *
   * @return whether it was written
   */
  public static boolean unfence(KvStore store, int attempt) {
    Optional<State> now = read(store);
    if (now.isEmpty() || now.get().attempt() != attempt || now.get().fence() == 0) {
      return false;
    }
    return store.checkAndWrite(Table.META, ROW, FENCE, fenceCellOf(now.get()),
        KvStore.UNVERSIONED, Map.of(FENCE, fenceCell(0, attempt)));
  }

  /** The fence cell {@code s} was read from; null when the row has none. */
  private static byte[] fenceCellOf(State s) {
    return s.fence() == 0 && s.attempt() == 0 ? null : fenceCell(s.fence(), s.attempt());
  }

  private static byte[] fenceCell(int version, int attempt) {
    return (version + "/" + attempt).getBytes(StandardCharsets.US_ASCII);
  }

  private static byte[] bytes(int n) {
    return Integer.toString(n).getBytes(StandardCharsets.US_ASCII);
  }

  private static int number(byte[] b, String what) {
    String s = new String(b, StandardCharsets.US_ASCII);
    if (!s.matches("\\d{1,6}")) {
      throw new CorruptDataException("cluster version row: " + what + " cell '" + s + "'");
    }
    return Integer.parseInt(s);
  }
}
