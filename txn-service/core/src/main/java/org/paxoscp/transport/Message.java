package org.paxoscp.transport;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.XgLocks;

/**
 * Everything a Transaction Service and its clients (and peer services) say to each other: the
 * protocol's {@link PaxosMessage}s, plus begin, read and error. Every message names its entity
 * group and a log position (docs/architecture.md section 6); the sending DC travels in the
 * {@link Envelope}.
 */
public sealed interface Message {
  String group();

  long position();

  /** A Paxos request or reply (PREPARE, ACCEPT, APPLY, grant, learn and their answers). */
  record Paxos(PaxosMessage message) implements Message {
    public Paxos {
      Objects.requireNonNull(message);
    }

    @Override
    public String group() {
      return message.group();
    }

    @Override
    public long position() {
      return message.position();
    }
  }

  /**
   * Begin a transaction (section 4, step 1): asks for the DC's read position, which must be at
   * least {@code position} (the client's last commit position in the group, for session
   * read-your-writes); the service catches up to it first when it is behind.
   */
  record BeginRequest(String group, long position) implements Message {}

  /**
   * The read position, and the DC that grants the fast path for {@code position + 1} (section
   * 5.3), or the empty string when no DC does (after a no-op, or for an empty log). {@code locks}
   * are the group's cross-group locks at the read position, keys without values; when the whole
   * table would not fit a datagram, only its oldest locks, and {@code locksCut} is true (the
   * client then cannot check the lock rule, and helps resolve the oldest lock instead).
   */
  record BeginReply(String group, long position, String leaderDc, XgLocks locks,
      boolean locksCut) implements Message {
    public BeginReply {
      Objects.requireNonNull(leaderDc);
      Objects.requireNonNull(locks);
      if (locksCut && locks.isEmpty()) {
        throw new IllegalArgumentException("a cut lock table keeps at least its oldest lock");
      }
    }

    /** A reply carrying the group's whole lock table at {@code position}. */
    public BeginReply(String group, long position, String leaderDc, XgLocks locks) {
      this(group, position, leaderDc, locks, false);
    }

    /** A reply for a group without unresolved cross-group PREPAREs at {@code position}. */
    public BeginReply(String group, long position, String leaderDc) {
      this(group, position, leaderDc, XgLocks.EMPTY);
    }
  }

  /** Read {@code keys} as of read position {@code position} (section 4, step 2). */
  record ReadRequest(String group, long position, List<String> keys) implements Message {
    public ReadRequest {
      keys = List.copyOf(keys);
    }
  }

  /**
   * Scan {@code range} of the group as of read position {@code position} (docs/client.md, "Range
   * reads"): at most {@code limit} entries with a value there, in key order, or from the range's
   * end when {@code reversed}. The service answers one page ({@link ScanReply}); the client asks
   * again for the rest. Sent only at cluster version 4 ({@code range-reads}) or above.
   */
  record ScanRequest(String group, long position, KeyRange range, int limit, boolean reversed)
      implements Message {
    public ScanRequest {
      Objects.requireNonNull(range, "range");
      if (limit < 1) {
        throw new IllegalArgumentException("a scan's limit must be positive, got " + limit);
      }
    }
  }

  /** One entry of a {@link ScanReply}: a key, its value, the position that wrote it. */
  record ScanItem(String key, byte[] value, long version) {
    public ScanItem {
      Objects.requireNonNull(key, "key");
      Objects.requireNonNull(value, "value");
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof ScanItem i && key.equals(i.key) && version == i.version
          && Arrays.equals(value, i.value);
    }

    @Override
    public int hashCode() {
      return Objects.hash(key, version) * 31 + Arrays.hashCode(value);
    }
  }

  /**
   * One page of a {@link ScanRequest}'s answer: the entries with a value at {@code position}, in
   * scan order. {@code complete}: the page read the requested range to its end. Otherwise
   * {@code lastKey} is the last key the page examined (perhaps a deleted one, not among the
   * entries): the part read is the range up to and including it (from it, reversed), and the
   * rest, if wanted, is asked for in a new request.
   */
  record ScanReply(String group, long position, List<ScanItem> items, boolean complete,
      String lastKey) implements Message {
    public ScanReply {
      items = List.copyOf(items);
      Objects.requireNonNull(lastKey, "lastKey");
      if (!complete && lastKey.isEmpty()) {
        throw new IllegalArgumentException("an incomplete scan page names its last key");
      }
    }
  }

  /**
   * Were the commutative updates of transaction {@code txnId} applied, or refused
   * ({@link org.paxoscp.wal.Updates})? Its entry is in the value chosen at {@code position}.
   * Sent by a client after a commit whose entry holds an update, only at cluster version 5
   * ({@code commutative-updates}) or above.
   */
  record UpdatesRequest(String group, long position, String txnId)
      implements Message {
    public UpdatesRequest {
      Objects.requireNonNull(txnId, "txnId");
      if (position < 1) {
        throw new IllegalArgumentException("position must be >= 1, got " + position);
      }
    }
  }

  /**
   * The answer to an {@link UpdatesRequest}: {@code found} false when the value chosen at the
   * position holds no entry of the transaction; else {@code refused} is empty when every update
   * applied, or names the key and the reason the entry was refused.
   */
  record UpdatesReply(String group, long position, String txnId, boolean found, String refused)
      implements Message {
    public UpdatesReply {
      Objects.requireNonNull(txnId, "txnId");
      Objects.requireNonNull(refused, "refused");
    }
  }

  /**
   * The values of a {@link ReadRequest}'s keys at {@code position}; a key with no value there
   * (never written, or deleted) is absent from {@code values}. {@code versions} gives, for each
   * key read, the log position that wrote the version read (a put or a delete), 0 when the key
   * was never written at or below {@code position}.
   */
  record ReadReply(String group, long position, Map<String, byte[]> values,
      Map<String, Long> versions) implements Message {
    public ReadReply {
      values = Collections.unmodifiableMap(new TreeMap<>(values));
      versions = Collections.unmodifiableMap(new TreeMap<>(versions));
    }

    /** A reply without versions. */
    public ReadReply(String group, long position, Map<String, byte[]> values) {
      this(group, position, values, Map.of());
    }

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof ReadReply r) || !group.equals(r.group) || position != r.position
          || !values.keySet().equals(r.values.keySet()) || !versions.equals(r.versions)) {
        return false;
      }
      for (var e : values.entrySet()) {
        if (!Arrays.equals(e.getValue(), r.values.get(e.getKey()))) {
          return false;
        }
      }
      return true;
    }

    @Override
    public int hashCode() {
      int h = Objects.hash(group, position, versions);
      for (var e : values.entrySet()) {
        h = 31 * h + e.getKey().hashCode() * 17 + Arrays.hashCode(e.getValue());
      }
      return h;
    }
  }

  /**
   * Leader combination (docs/architecture.md section 5.5, docs/leader-combination.md): asks a
   * service of the position's leader DC to place {@code entry} in a combined list at a position
   * from {@code position} (= the entry's read position + 1) to {@code position + bound}, and to
   * answer once that is decided. A service that does not lead the group's next position passes the
   * request on to the one that does, once, with {@code forwarded} set.
   */
  record SubmitRequest(String group, long position, LogEntry entry, int bound,
      boolean forwarded) implements Message {
    /** The largest promotion bound a client may name. */
    public static final int MAX_BOUND = 64;

    public SubmitRequest {
      Objects.requireNonNull(entry);
      if (bound < 0 || bound > MAX_BOUND) {
        throw new IllegalArgumentException("promotion bound must be in 0.." + MAX_BOUND + ", got "
            + bound);
      }
      if (entry.readPosition() + 1 != position) {
        throw new IllegalArgumentException("a submit names position read position + 1 ("
            + (entry.readPosition() + 1) + "), not " + position);
      }
    }

    /** A client's submit (not yet forwarded). */
    public SubmitRequest(String group, long position, LogEntry entry, int bound) {
      this(group, position, entry, bound, false);
    }

    /** This request as passed on by a service to the leader. */
    public SubmitRequest asForwarded() {
      return new SubmitRequest(group, position, entry, bound, true);
    }
  }

  /**
   * The answer to a {@link SubmitRequest} for transaction {@code txnId}; {@code position} is the
   * position it refers to (see {@link SubmitStatus}); {@code entries} is how many entries the
   * value chosen there holds (COMMITTED; 0 otherwise); {@code detail} is the reason of an abort.
   */
  record SubmitReply(String group, long position, String txnId, SubmitStatus status,
      int entries, String detail) implements Message {
    public SubmitReply {
      Objects.requireNonNull(txnId);
      Objects.requireNonNull(status);
      Objects.requireNonNull(detail);
      if (entries < 0) {
        throw new IllegalArgumentException("entries must be >= 0, got " + entries);
      }
    }

    /** A COMMITTED answer: the entry is in the value chosen at {@code position}. */
    public static SubmitReply committed(String group, long position, String txnId,
        int entries) {
      return new SubmitReply(group, position, txnId, SubmitStatus.COMMITTED, entries, "");
    }

    /** An ABORTED answer naming the position that settled it and why. */
    public static SubmitReply aborted(String group, long position, String txnId, String why) {
      return new SubmitReply(group, position, txnId, SubmitStatus.ABORTED, 0, why);
    }
  }

  /** What a leader service says about a submitted entry. */
  enum SubmitStatus {
    /** The entry is in the value chosen at the reply's position. */
    COMMITTED,
    /**
     * The entry is in no value chosen at the submitted position ... the reply's position (all
     * decided) and the leader will not place it anywhere: it read a key a value there wrote, a
     * value there withdraws it (its client settled), or its promotion bound is used up.
     */
    ABORTED
  }

  /**
   * Asks one service instance how it is (for {@code paxoscp status}): answered by a {@link
   * StatusReply}. With a non-empty {@code group}, the reply also describes that group at the
   * instance's DC.
   */
  record StatusRequest(String group) implements Message {
    public StatusRequest {
      Objects.requireNonNull(group);
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * A service instance's status: named fields, each a decimal number or a short text (uptime,
   * counters, latency percentiles, and the group's positions when one was asked for). A name it
   * does not know a reader shows as it is, so a newer service adds fields without a new message.
   */
  record StatusReply(String group, Map<String, String> fields) implements Message {
    /** At most this many fields, so a reply always fits a datagram. */
    public static final int MAX_FIELDS = 64;

    public StatusReply {
      Objects.requireNonNull(group);
      if (fields.size() > MAX_FIELDS) {
        throw new IllegalArgumentException("a status holds at most " + MAX_FIELDS + " fields");
      }
      fields = Collections.unmodifiableMap(new TreeMap<>(fields));
    }

    @Override
    public long position() {
      return 0;
    }
  }

  // ---- rebuilding a DC (docs/architecture.md section 12, docs/rebuilding.md) --------------------

  /** Asks a peer's service how far {@code group} reaches there: answered by {@link ExtentReply}. */
  record ExtentRequest(String group) implements Message {
    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * A group at one DC: its applied watermark, its GC watermark, the highest position of its WAL
   * rows there (a promise, vote, grant or chosen value; 0 when it has none) and its rebuild fence
   * there (0 unless that DC was rebuilt: it lost what it held up to there).
   */
  record ExtentReply(String group, long applied, long gcWatermark, long lastWalPosition,
      long fence) implements Message {
    public ExtentReply {
      if (applied < 0 || gcWatermark < 0 || lastWalPosition < 0 || fence < 0) {
        throw new IllegalArgumentException("positions must be >= 0");
      }
    }

    @Override
    public long position() {
      return 0;
    }

    /** The highest position this DC holds anything of the group at, or lost something at. */
    public long highest() {
      return Math.max(Math.max(applied, gcWatermark), Math.max(lastWalPosition, fence));
    }
  }

  /**
   * Asks a peer's service for a page of {@code group}'s data as of position {@code position}: the
   * first page names position 0 and key "" (the peer picks its applied watermark and says it), the
   * next ones that position and the last key copied so far ("" if none). Answered by
   * {@link SnapshotReply}.
   *
   * <p>{@code locksAfter} asks for the lock table in pages of its own (cluster version 7,
   * {@code snapshot-lock-pages}; null: the format before it, where the first page carries the
   * whole table): "" on the first page (position 0), and on a <em>lock page</em> (the copy's
   * position, key "") the transaction id of the last lock copied so far ("" if none), after which
   * the page goes on. A data page names null.
   */
  record SnapshotRequest(String group, long position, String after, String locksAfter)
      implements Message {
    public SnapshotRequest {
      Objects.requireNonNull(after);
      if (position < 0 || (position == 0 && !after.isEmpty())) {
        throw new IllegalArgumentException("a first page names position 0 and no key; a next "
            + "one the position and the last key before it (\"\": none yet)");
      }
      if (locksAfter != null && (!after.isEmpty() || (position == 0 && !locksAfter.isEmpty()))) {
        throw new IllegalArgumentException("a lock page names no key; a first page in lock "
            + "pages asks for the locks from the first (\"\")");
      }
    }

    /** A page in the format before lock pages (a data page, or a first page at version 6-). */
    public SnapshotRequest(String group, long position, String after) {
      this(group, position, after, null);
    }

    /** Whether this asks for one of the lock pages after the first page. */
    public boolean lockPage() {
      return locksAfter != null && position > 0;
    }
  }

  /** One item of a {@link SnapshotReply}: its key, the position that wrote it, the stored cell. */
  record SnapshotItem(String key, long version, byte[] cell) {
    public SnapshotItem {
      Objects.requireNonNull(key);
      Objects.requireNonNull(cell);
      if (version < 1 || cell.length == 0) {
        throw new IllegalArgumentException("an item has a version >= 1 and a cell");
      }
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof SnapshotItem i && key.equals(i.key) && version == i.version
          && Arrays.equals(cell, i.cell);
    }

    @Override
    public int hashCode() {
      return Objects.hash(key, version) * 31 + Arrays.hashCode(cell);
    }
  }

  /**
   * A page of a group's data at one DC as of {@code position} (at most the DC's applied
   * watermark, above its GC watermark): of each key after the request's, in key order, the newest
   * version at or below it. The first page also carries the lock table at {@code position} and
   * the value chosen there ({@code chosen}, null on later pages and at position 0); {@code more}
   * says another page follows.
   *
   * <p>In lock pages (a request with {@code locksAfter}, cluster version 7) {@code locks} is a
   * slice of the table: on the first page the locks that fit beside the chosen value (maybe none),
   * on a lock page the next locks in transaction order that fit one datagram (at least one);
   * {@code locksMore} says lock pages follow (the page then carries no items, and data pages
   * follow them from the first key); {@code locksDigest} is the SHA-256 of the whole table's
   * encoding ({@link XgLocks#encode}) where the page was read, so that slices of two different
   * tables are never put together. Null in the format before (then {@code locksMore} is false).
   */
  record SnapshotReply(String group, long position, long gcWatermark, XgLocks locks,
      org.paxoscp.wal.LogValue chosen, List<SnapshotItem> items, boolean more,
      boolean locksMore, byte[] locksDigest) implements Message {
    /** The length of {@link #locksDigest}: a SHA-256. */
    public static final int DIGEST_BYTES = 32;

    public SnapshotReply {
      Objects.requireNonNull(locks);
      items = List.copyOf(items);
      if (gcWatermark < 0 || position < 0) {
        throw new IllegalArgumentException("positions must be >= 0");
      }
      if (locksDigest == null ? locksMore : locksDigest.length != DIGEST_BYTES) {
        throw new IllegalArgumentException("a page in lock pages names the table's digest ("
            + DIGEST_BYTES + " bytes); one before them has none and no lock pages");
      }
      if (locksMore && (!items.isEmpty() || !more)) {
        throw new IllegalArgumentException("a page that lock pages follow carries no items, "
            + "and data pages follow");
      }
    }

    /** A page in the format before lock pages. */
    public SnapshotReply(String group, long position, long gcWatermark, XgLocks locks,
        org.paxoscp.wal.LogValue chosen, List<SnapshotItem> items, boolean more) {
      this(group, position, gcWatermark, locks, chosen, items, more, false, null);
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof SnapshotReply r && group.equals(r.group) && position == r.position
          && gcWatermark == r.gcWatermark && locks.equals(r.locks)
          && Objects.equals(chosen, r.chosen) && items.equals(r.items) && more == r.more
          && locksMore == r.locksMore && Arrays.equals(locksDigest, r.locksDigest);
    }

    @Override
    public int hashCode() {
      return Objects.hash(group, position, gcWatermark, locks, chosen, items, more, locksMore)
          * 31 + Arrays.hashCode(locksDigest);
    }
  }

  /**
   * Asks a peer's service for the groups it holds anything of after {@code group} in its store's
   * order ("" from the first): answered by {@link GroupsReply}.
   */
  record GroupsRequest(String group) implements Message {
    public GroupsRequest {
      Objects.requireNonNull(group);
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /** A page of groups a DC holds anything of (a meta row or a WAL row); {@code more}: ask again. */
  record GroupsReply(String group, List<String> groups, boolean more) implements Message {
    public GroupsReply {
      Objects.requireNonNull(group);
      groups = List.copyOf(groups);
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * Asks a service of DC {@code dc} (the DC being rebuilt) to rebuild {@code group} there from its
   * peers ({@code org.paxoscp.service.DcRebuild}), copying from DC {@code from} if it can ("": the
   * peer that applied the most). With group "" and not {@code complete}, only starts (or joins)
   * the rebuild and learns its id. With {@code complete} (and group ""), declares instead that
   * every group the peers hold was rebuilt under the rebuild {@code rebuildId}: the service acts
   * on it only when its store is being rebuilt under that id, and only once. A group's request
   * naming a rebuild id is refused when the rebuild under way has another ("": any). Answered by
   * {@link RebuildReply}; only an operator's key may send it ({@code Role}).
   */
  record RebuildRequest(String group, String from, String dc, String rebuildId, boolean complete)
      implements Message {
    public RebuildRequest {
      Objects.requireNonNull(group);
      Objects.requireNonNull(from);
      Objects.requireNonNull(dc);
      Objects.requireNonNull(rebuildId);
      if (complete && (!group.isEmpty() || rebuildId.isEmpty())) {
        throw new IllegalArgumentException("a rebuild's completion names no group and names the "
            + "rebuild it completes");
      }
      if (dc.isEmpty()) {
        throw new IllegalArgumentException("a rebuild request names the DC it rebuilds");
      }
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * What rebuilding a group did ({@code outcome}: REBUILT, ALREADY_REBUILT, NOT_BEHIND, BEGUN,
   * COMPLETE), the position copied at, the fence set, the data versions copied, the peer copied
   * from, and the id of the rebuild under way (what a completion must name).
   */
  record RebuildReply(String group, String outcome, long position, long fence, long items,
      String source, String rebuildId) implements Message {
    public RebuildReply {
      Objects.requireNonNull(group);
      Objects.requireNonNull(outcome);
      Objects.requireNonNull(source);
      Objects.requireNonNull(rebuildId);
      if (position < 0 || fence < 0 || items < 0) {
        throw new IllegalArgumentException("counts must be >= 0");
      }
    }
  }

  // ---- round trips between DCs (docs/leader-combination.md "Round trips measured") --------

  /**
   * One DC's round trips to the other DCs as it last published them, in microseconds by peer DC
   * name; {@code version} orders the rows one DC's instances publish (the publishing instance's
   * wall clock in ms; the higher wins, ties by content), so that every DC keeps the same row.
   */
  record RttRow(String dc, long version, Map<String, Long> rttMicros) {
    /** At most this many peers in a row, and rows in a message. */
    public static final int MAX_DCS = 32;
    /** The largest round trip a row carries (µs): a minute. */
    public static final long MAX_RTT_MICROS = 60_000_000L;

    public RttRow {
      Objects.requireNonNull(dc);
      if (version < 0) {
        throw new IllegalArgumentException("version must be >= 0");
      }
      if (rttMicros.size() > MAX_DCS) {
        throw new IllegalArgumentException("a row holds at most " + MAX_DCS + " DCs");
      }
      for (Map.Entry<String, Long> e : rttMicros.entrySet()) {
        if (e.getKey().equals(dc) || e.getValue() < 0 || e.getValue() > MAX_RTT_MICROS) {
          throw new IllegalArgumentException("a row's round trips are to other DCs, 0.."
              + MAX_RTT_MICROS + " µs: " + e);
        }
      }
      rttMicros = Collections.unmodifiableMap(new TreeMap<>(rttMicros));
    }
  }

  /** A probe or its answer: every row the sender knows; no group, no position. */
  sealed interface RttRows extends Message permits RttProbe, RttReply {
    List<RttRow> rows();

    @Override
    default String group() {
      return "";
    }

    @Override
    default long position() {
      return 0;
    }
  }

  /**
   * Sent by a service to one service of each other DC every probe interval, to time the round
   * trip; carries the rows the sender knows. Answered at once, without touching the store, by
   * an {@link RttReply} with the rows the answering service knows.
   */
  record RttProbe(List<RttRow> rows) implements RttRows {
    public RttProbe {
      rows = checkedRows(rows);
    }
  }

  /** The answer to an {@link RttProbe}: the rows the answering service knows. */
  record RttReply(List<RttRow> rows) implements RttRows {
    public RttReply {
      rows = checkedRows(rows);
    }
  }

  private static List<RttRow> checkedRows(List<RttRow> rows) {
    if (rows.size() > RttRow.MAX_DCS) {
      throw new IllegalArgumentException("at most " + RttRow.MAX_DCS + " rows");
    }
    return List.copyOf(rows);
  }

  // ---- cluster versions (docs/upgrading.md) ----------------------------------------------

  /**
   * Asks a process which cluster versions it speaks and which version it runs at (any role):
   * answered by a {@link VersionReply}. A build from before cluster versions does not know it and
   * does not answer.
   */
  record VersionRequest() implements Message {
    @Override
    public String group() {
      return "";
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * The operator's change of the cluster version row in the answering service's DC: with {@code
   * fence}, set the fence to version {@code to} as the attempt after attempt {@code from} (the
   * attempts the row counts so far), or with {@code to} 0 remove fence attempt {@code from};
   * without, raise the active version from {@code from} to {@code to}. A change whose result the
   * row already holds is answered as done. Answered by a {@link VersionReply}; {@code detail}
   * says why nothing was written.
   */
  record VersionChange(boolean fence, int from, int to) implements Message {
    public VersionChange {
      if (from < 0 || to < 0 || (!fence && to <= from)) {
        throw new IllegalArgumentException("version change " + from + " to " + to);
      }
    }

    @Override
    public String group() {
      return "";
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /**
   * A process's versions: the cluster version it runs at (0: not known yet), its DC's fence (0:
   * none) and fence attempts so far, the range it speaks, and when it last opened a datagram of
   * wire version 3 ({@code wire3AgoMillis} before it answered, -1 never) and from where; {@code
   * detail} is empty unless a {@link VersionChange} was refused.
   */
  record VersionReply(int active, int fence, int attempt, int min, int max,
      long wire3AgoMillis, String wire3From, String detail) implements Message {
    public VersionReply {
      Objects.requireNonNull(wire3From);
      Objects.requireNonNull(detail);
      if (active < 0 || fence < 0 || attempt < 0 || min < 1 || max < min
          || wire3AgoMillis < -1) {
        throw new IllegalArgumentException("version reply " + active + "/" + fence + " "
            + min + "-" + max);
      }
    }

    @Override
    public String group() {
      return "";
    }

    @Override
    public long position() {
      return 0;
    }
  }

  /** A request the service could not serve; see {@link ErrorCode}. Nothing changed. */
  record ErrorReply(String group, long position, ErrorCode code, String detail)
      implements Message {
    public ErrorReply {
      Objects.requireNonNull(code);
      Objects.requireNonNull(detail);
    }
  }

  /** Why a request failed. */
  enum ErrorCode {
    /** The DC's store did not answer in time; another DC may. */
    STORE_UNAVAILABLE,
    /** The request was well-formed on the wire but invalid (bad group name, bad key...). */
    BAD_REQUEST,
    /** The answer would not fit in one datagram. */
    TOO_LARGE,
    /** The DC could not learn the positions it needed to serve the request. */
    CATCH_UP_FAILED,
    /** The position is below the group's GC watermark (section 7). */
    TOO_OLD,
    /**
     * The service refused the request before acting on it: too many requests waited for a
     * worker, or this one waited too long ({@link Admission}); or, for a submit, the leader
     * service holds too many waiting submits. Nothing was promised, voted, granted or placed.
     */
    OVERLOADED,
    /** A service passed a submit on to the leader DC, which did not answer in time. */
    LEADER_UNREACHABLE,
    /**
     * The DC lost its store and has not rebuilt the group yet, or the position is at or below
     * the group's rebuild fence there (docs/architecture.md section 12); another DC serves it.
     */
    REBUILDING
  }
}
