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
 * refuses to start, so none can join between the check of every process and the raise.
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

  /** What one store holds: the active version, and the fence (0 when none). */
  public record State(int active, int fence) {
    public State {
      if (active < 1 || fence < 0) {
        throw new IllegalArgumentException("cluster version " + active + ", fence " + fence);
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
    return Optional.of(new State(number(a.value(), "active"),
        f == null ? 0 : number(f.value(), "fence")));
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
   * {@code to}.
   *
   * @return whether it was written (false: the row did not hold {@code from})
   */
  public static boolean raise(KvStore store, int from, int to) {
    if (to <= from) {
      throw new IllegalArgumentException("a cluster version only grows: " + from + " to " + to);
    }
    Optional<State> now = read(store);
    int fence = now.map(State::fence).orElse(0);
    return store.checkAndWrite(Table.META, ROW, ACTIVE, bytes(from), KvStore.UNVERSIONED,
        Map.of(ACTIVE, bytes(to), FENCE, bytes(fence > to ? fence : 0)));
  }

  /**
   * Sets the fence to {@code version} (0 removes it) if it still holds {@code expected}.
   *
   * @return whether it was written
   */
  public static boolean fence(KvStore store, int expected, int version) {
    return store.checkAndWrite(Table.META, ROW, FENCE, expected == 0 ? null : bytes(expected),
        KvStore.UNVERSIONED, Map.of(FENCE, bytes(version)))
        || (expected == 0 && store.checkAndWrite(Table.META, ROW, FENCE, bytes(0),
            KvStore.UNVERSIONED, Map.of(FENCE, bytes(version))));
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
