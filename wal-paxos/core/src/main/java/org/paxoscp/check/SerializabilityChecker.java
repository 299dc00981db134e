package org.paxoscp.check;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import org.paxoscp.check.MergedLog.Slot;
import org.paxoscp.check.Violation.Kind;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.Updates;
import org.paxoscp.wal.XgLocks;
import org.paxoscp.wal.XgStep;

/**
 * The test oracle: checks that the write-ahead logs of all DCs, together with what every client
 * observed, form a one-copy serializable history (paper, Theorem 3.1 and Section 3).
 *
 * <p>Theorem 3.1 derives one-copy serializability from the replication property R1, the log
 * properties L1-L3 and the read properties A1-A2. This checker verifies each of them directly on
 * what a run left behind, without trusting any protocol code:
 *
 * <ul>
 *   <li><b>R1</b> (no two logs differ at a position): no two DCs hold different values at the
 *       same position ({@link Kind#AGREEMENT}). The union of the DCs' logs is then the one log
 *       of the proof. It must be contiguous from position 1 to its maximum ({@link Kind#LOG_GAP}):
 *       a position no DC holds leaves the history undefined there. A transaction id appears in it
 *       at most once ({@link Kind#DUPLICATE_ENTRY}): a transaction applied twice is not one
 *       transaction.
 *   <li><b>L3</b> (each new entry keeps the log one-copy serializable): the merged log is replayed
 *       in order (positions ascending, entries of a combined list in list order, from a state
 *       where every key is absent). A put or a delete sets its key; a commutative update (an add
 *       to a counter, a counting-set update) is folded into the value its key holds at that point
 *       of the replay by {@link Updates#fold}, the rule every DC's applier follows; an entry one
 *       of whose updates cannot apply there is <em>refused</em> and replays as nothing: none of
 *       its writes change the state or count as a write below. Each entry at position p with
 *       read position r must have r &lt; p ({@link Kind#READ_POSITION_NOT_BEFORE_SLOT}), and no
 *       key of its read set may have been written after r and before the entry: neither at
 *       positions r+1..p-1 nor by an earlier entry of the same list at p ({@link
 *       Kind#CONFLICTING_WRITE}). The same holds for every
 *       key inside one of its scanned ranges ({@link LogEntry#readRanges}), whether the key
 *       existed at r or not: a write there is a key its scan missed or read stale ({@link
 *       Kind#PHANTOM}). A cross-group decision key is in no range, so writing one is never a
 *       phantom. This is what makes the log equivalent to the serial order (position, index),
 *       the order used in the proofs of Theorems 4.1 and 5.1, including for combination (no
 *       entry reads from an earlier one in its list) and promotion (nothing between r and the
 *       new slot wrote what it read). It is stricter than "some serial order exists", on
 *       purpose: the protocol promises this one.
 *   <li><b>A2</b> (all store reads of a transaction come from one read position): every value a
 *       client observed must equal, byte for byte, the replayed state of its key at the end of the
 *       record's read position (empty = absent or deleted) ({@link Kind#WRONG_READ_VALUE}); a
 *       counter or a counting set is compared in its stored form, as the replay folded it. This
 *       holds for every record with reads, whatever its outcome: a read-only transaction must
 *       have seen a consistent snapshot (the proof inserts it after the last writer of its read
 *       position), and an aborted or unknown one reading from a wrong snapshot is a bug too. A
 *       read position past the merged log's end is itself a violation ({@link
 *       Kind#READ_BEYOND_LOG}). The observed values tie the log to reality: L3 alone checks the
 *       read sets the clients claimed, A2 checks that the values they got match. A scan ({@link
 *       TxnRecord#scans}) must have returned exactly the replayed state inside its range (as far
 *       as it read): a key the state holds there that the scan lacks is {@link Kind#PHANTOM}, a
 *       key it returned with another value, or that the state does not hold, {@link
 *       Kind#WRONG_READ_VALUE}. Comparing the whole range, not only the keys returned, is what
 *       catches a store that skips rows.
 *   <li><b>A1</b> (a transaction reads its own writes): reads served from a transaction's own
 *       buffer are not in {@link TxnRecord#reads()} and not in the entry's read set, so they are
 *       not visible here; as the paper notes, A1 is subsumed by L3. It is the client library's
 *       tests that check it.
 *   <li><b>L1</b> (the log holds only committed transactions) and <b>L2</b> (a committed
 *       read-write transaction is in exactly one position): a COMMITTED read-write transaction
 *       is in the merged log ({@link Kind#COMMITTED_NOT_IN_LOG}) exactly once, at the position
 *       it was told ({@link Kind#WRONG_COMMIT_POSITION}), and not refused there ({@link
 *       Kind#REFUSAL_MISMATCH}); an ABORTED one is not in it ({@link Kind#ABORTED_IN_LOG}),
 *       unless it was told a commit position: then its entry was refused, so it is in the log
 *       exactly at that position ({@link Kind#WRONG_COMMIT_POSITION}) and refused there ({@link
 *       Kind#REFUSAL_MISMATCH} when it is not, or is not in the log at all); an UNKNOWN or
 *       CRASHED one may be, at most once, and an UNKNOWN one told a range of positions only
 *       inside it ({@link Kind#UNKNOWN_OUTSIDE_RANGE}); a read-only one (no writes) commits
 *       outside the log and must not be in it ({@link Kind#READ_ONLY_IN_LOG}). A refusal at or
 *       after a gap in the merged log cannot be told from the replay, so the refusal of an entry
 *       there is not held against its record. A record whose transaction is in the log must
 *       agree with its entry: same read set, same scanned ranges, same writes (an update with
 *       its kind and deltas), same read position ({@link Kind#ENTRY_MISMATCH}), otherwise the
 *       checks above would be about different transactions. An entry without a record is
 *       allowed (its client may have left none, e.g. an entry finished by recovery) and counted
 *       in {@link CheckResult.Stats#entriesWithoutRecord()}.
 * </ul>
 *
 * <p>Steps of transactions across groups (docs/cross-group.md) replay as the applier applies
 * them: a PREPARE takes locks and writes nothing, the first RESOLVE(COMMIT) of a transaction
 * holding locks writes the PREPARE's writes at its own position, a RESOLVE without locks is
 * void; an entry that breaks a lock is {@link Kind#LOCK_VIOLATED}. What concerns several groups
 * at once is {@link CrossGroupChecker}'s.
 *
 * <p>Malformed input (a null value, a position below 1, a null record, two records with one txn
 * id, an UNKNOWN or CRASHED record with a commit position, ...) is reported as {@link
 * Kind#MALFORMED_LOG} or {@link Kind#MALFORMED_HISTORY}; the checker never throws on bad data.
 * Where the merged log has a gap, reads at or after the gap cannot be replayed exactly; they are
 * counted in {@link CheckResult.Stats#readsUnverifiable()} rather than reported, the gap being
 * reported.
 *
 * <p>Stateless and thread-safe. Runs in time linear in the size of the logs and the history,
 * except that each scanned range also costs the keys ever written inside it (times log of the
 * number of keys): the replay keeps keys in {@link KeyRange#ORDER} to find them.
 */
public final class SerializabilityChecker {

  private SerializabilityChecker() {}

  /**
   * Checks the logs and the history; see the class comment for what is checked.
   *
   * @param logsByDc per DC name, the chosen values that DC knows, by position (from 1; a DC may
   *     miss positions, e.g. a lagging replica)
   * @param history what the clients observed, one record per transaction
   * @return the violations found (none means the run was one-copy serializable as far as the
   *     inputs show) and statistics; never null
   */
  public static CheckResult check(
      Map<String, ? extends SortedMap<Long, LogValue>> logsByDc, Collection<TxnRecord> history) {
    ViolationCollector out = new ViolationCollector();
    Run run = new Run(out);
    try {
      run.run(logsByDc, history);
    } catch (RuntimeException e) {
      // Safety net for inputs that fail in ways not foreseen above (e.g. a map whose iteration
      // throws): the caller still gets a result, saying the check is incomplete.
      out.add(run.blame, -1, "", "the check could not complete; the input threw " + e);
    }
    return new CheckResult(out, run.stats());
  }

  /**
   * The last write of a key during the replay.
   *
   * @param how "written", "deleted" or "updated" (a commutative update folded in)
   */
  private record WriteMark(long position, int index, String txnId, String how) {
    String describe() {
      return how + " by txn " + txnId + " at position " + position + " #" + index;
    }
  }

  /** One check: the mutable state of the replay and the statistics. */
  private static final class Run {
    private final ViolationCollector out;
    /** The input being read by the current phase, blamed if it throws. */
    private Kind blame = Kind.MALFORMED_LOG;
    private MergedLog log;
    private final List<TxnRecord> records = new ArrayList<>();
    private final Map<String, TxnRecord> recordById = new HashMap<>();
    /** Records with reads to value-check, by read position. */
    private final TreeMap<Long, List<TxnRecord>> readsByPosition = new TreeMap<>();

    /** The replayed state; in key order, so that a scan's range can be read out of it. */
    private final TreeMap<String, byte[]> state = new TreeMap<>(KeyRange.ORDER);
    /** Unresolved PREPAREs during the replay, by cross-group transaction. */
    private final Map<String, XgLocks.Lock> locks = new LinkedHashMap<>();
    /** The last write of every key written so far; in key order, for the writes in a range. */
    private final TreeMap<String, WriteMark> lastWrite = new TreeMap<>(KeyRange.ORDER);
    /** The entries the replay refused: by position, by index in the list, the key and reason. */
    private final Map<Long, Map<Integer, String>> refused = new HashMap<>();

    private int entries;
    private int combinedPositions;
    private int noopPositions;
    private int committed;
    private int aborted;
    private int unknown;
    private int crashed;
    private int readOnly;
    private int entriesWithoutRecord;
    private int readsChecked;
    private int readsUnverifiable;
    private int scansChecked;
    private int updatesChecked;
    private int entriesRefused;

    Run(ViolationCollector out) {
      this.out = out;
    }

    void run(
        Map<String, ? extends SortedMap<Long, LogValue>> logsByDc,
        Collection<TxnRecord> history) {
      log = MergedLog.build(logsByDc, out);
      blame = Kind.MALFORMED_HISTORY;
      readHistory(history);
      blame = Kind.MALFORMED_LOG;
      replay();
      blame = Kind.MALFORMED_HISTORY;
      checkOutcomes();
    }

    CheckResult.Stats stats() {
      MergedLog l = log;
      return new CheckResult.Stats(
          l == null ? 0 : l.dcs(),
          l == null ? 0 : l.values().size(),
          l == null ? 0 : l.maxPosition(),
          entries, combinedPositions, noopPositions, records.size(), committed, aborted,
          unknown, crashed, readOnly, entriesWithoutRecord, readsChecked, readsUnverifiable,
          scansChecked, updatesChecked, entriesRefused);
    }

    // ---- history well-formedness ----

    private void readHistory(Collection<TxnRecord> history) {
      if (history == null) {
        out.add(Kind.MALFORMED_HISTORY, -1, "", "history is null; checking an empty history");
        return;
      }
      int index = 0;
      for (TxnRecord r : history) {
        if (r == null) {
          out.add(Kind.MALFORMED_HISTORY, -1, "", "history element #" + index + " is null");
        } else {
          readRecord(r);
        }
        index++;
      }
    }

    private void readRecord(TxnRecord r) {
      records.add(r);
      TxnRecord first = recordById.putIfAbsent(r.txnId(), r);
      if (first != null) {
        out.add(Kind.MALFORMED_HISTORY, -1, r.txnId(),
            "two records for txn " + r.txnId() + " (clients " + first.client() + " and "
                + r.client() + "); each record is still checked");
      }
      switch (r.status()) {
        case COMMITTED -> committed++;
        case ABORTED -> aborted++;
        case UNKNOWN -> unknown++;
        case CRASHED -> crashed++;
      }
      if (r.readOnly()) {
        readOnly++;
      }
      if ((r.unknownFrom() != -1 || r.unknownThrough() != -1)
          && (r.status() != TxnRecord.Status.UNKNOWN || r.unknownFrom() < 1
              || r.unknownThrough() < r.unknownFrom())) {
        out.add(Kind.MALFORMED_HISTORY, -1, r.txnId(),
            "txn " + r.txnId() + " is " + r.status() + " with positions " + r.unknownFrom()
                + ".." + r.unknownThrough() + " (only an UNKNOWN txn is told a non-empty range)");
      }
      // An ABORTED read-write txn told a position was refused there (its entry is in the log
      // with no effect); a read-only one has no entry to refuse.
      boolean toldPosition = r.status() == TxnRecord.Status.COMMITTED
          || (r.status() == TxnRecord.Status.ABORTED && r.commitPosition() >= 1
              && !r.readOnly());
      if (r.commitPosition() != -1 && !toldPosition) {
        out.add(Kind.MALFORMED_HISTORY, r.commitPosition(), r.txnId(),
            "txn " + r.txnId() + " is " + r.status() + " but has commit position "
                + r.commitPosition() + " (only a committed txn is told one, or an aborted "
                + "read-write txn whose entry was refused there)");
      }
      for (var read : r.reads().entrySet()) {
        if (read.getKey() == null || read.getValue() == null) {
          out.add(Kind.MALFORMED_HISTORY, -1, r.txnId(),
              "txn " + r.txnId() + " has a null " + (read.getKey() == null ? "key" : "value")
                  + " in its reads (an absent value is Optional.empty()); that read is skipped");
        }
      }
      for (var w : r.writes().entrySet()) {
        if (w.getValue() == null) {
          out.add(Kind.MALFORMED_HISTORY, -1, r.txnId(),
              "txn " + r.txnId() + " has a null mutation for key " + Render.key(w.getKey()));
        }
      }
      for (TxnRecord.ScanRead scan : r.scans()) {
        for (var e : scan.entries().entrySet()) {
          if (e.getValue() == null || !scan.range().contains(e.getKey())) {
            out.add(Kind.MALFORMED_HISTORY, -1, r.txnId(),
                "txn " + r.txnId() + " has a scan of " + scan.range() + " that returned key "
                    + Render.key(e.getKey()) + (e.getValue() == null ? " without a value"
                        : ", which is outside the range") + "; that entry is skipped");
          }
        }
      }
      if (!r.readsAnything()) {
        return;
      }
      if (r.readPosition() < 0) {
        out.add(Kind.MALFORMED_HISTORY, r.readPosition(), r.txnId(),
            "txn " + r.txnId() + " has reads but read position " + r.readPosition());
        return;
      }
      readsByPosition.computeIfAbsent(r.readPosition(), p -> new ArrayList<>()).add(r);
    }

    // ---- replay: L3 per entry, A2 per record ----

    private void replay() {
      long firstGap = log.firstGap();
      checkReadsAt(0);
      for (var p : log.values().entrySet()) {
        long position = p.getKey();
        List<LogEntry> list = p.getValue().entries();
        entries += list.size();
        if (list.isEmpty()) {
          noopPositions++;
        } else if (list.size() > 1) {
          combinedPositions++;
        }
        for (int i = 0; i < list.size(); i++) {
          LogEntry e = list.get(i);
          checkEntryReads(position, i, e);
          checkLocks(position, i, e);
          XgStep x = e.xg();
          if (x != null && x.kind() == XgStep.Kind.PREPARE) {
            locks.putIfAbsent(x.txn(), new XgLocks.Lock(position, e));
          } else if (x != null && x.kind() == XgStep.Kind.RESOLVE) {
            XgLocks.Lock held = locks.remove(x.txn());
            if (held != null && x.commit()) {
              applyWrites(position, i, held.txn(), held.prepare().writes());
            }
          } else {
            applyWrites(position, i, e.txnId(), e.writes());
            if (x != null && x.kind() == XgStep.Kind.DECIDE) {
              // A one-round transaction's DECIDE is also its RESOLVE in the coordinator.
              XgLocks.Lock held = locks.remove(x.txn());
              if (held != null && x.commit()) {
                applyWrites(position, i, held.txn(), held.prepare().writes());
              }
            }
          }
        }
        if (position < firstGap) {
          checkReadsAt(position);
        }
      }
      for (var pending : readsByPosition.entrySet()) {
        for (TxnRecord r : pending.getValue()) {
          if (pending.getKey() > log.maxPosition()) {
            out.add(Kind.READ_BEYOND_LOG, pending.getKey(), r.txnId(),
                "txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                    + ") read at read position " + pending.getKey()
                    + ", beyond the merged log's last position " + log.maxPosition());
          } else {
            readsUnverifiable++;
          }
        }
      }
    }

    /**
     * L3 for one entry: it reads from before its slot, and nothing since wrote what it read, by
     * key or inside a scanned range.
     */
    private void checkEntryReads(long position, int index, LogEntry e) {
      long r = e.readPosition();
      if (r >= position) {
        out.add(Kind.READ_POSITION_NOT_BEFORE_SLOT, position, e.txnId(),
            "txn " + e.txnId() + " at position " + position + " #" + index
                + " has read position " + r + ", not below its own position");
        return;
      }
      for (String key : e.readSet()) {
        WriteMark w = lastWrite.get(key);
        // Writes are applied in log order, so w is the latest write before this entry: at an
        // earlier position, or at this one by an earlier entry of the list.
        if (w != null && w.position() > r) {
          out.add(Kind.CONFLICTING_WRITE, position, e.txnId(),
              "L3: txn " + e.txnId() + " at position " + position + " #" + index
                  + " read key " + Render.key(key) + " at read position " + r
                  + ", but it was " + w.describe() + ", after its read position and before it");
        }
      }
      for (KeyRange range : e.readRanges()) {
        for (var kw : keysWrittenIn(range).entrySet()) {
          WriteMark w = kw.getValue();
          // A key also in the read set was reported above; a decision key is in no range.
          if (w.position() > r && range.contains(kw.getKey())
              && !e.readSet().contains(kw.getKey())) {
            out.add(Kind.PHANTOM, position, e.txnId(),
                "L3: txn " + e.txnId() + " at position " + position + " #" + index
                    + " scanned " + range + " at read position " + r + ", but key "
                    + Render.key(kw.getKey()) + " in it was " + w.describe()
                    + ", after its read position and before it");
          }
        }
      }
    }

    /** The last writes of the keys between {@code range}'s bounds (decision keys included). */
    private SortedMap<String, WriteMark> keysWrittenIn(KeyRange range) {
      return range.to() == null ? lastWrite.tailMap(range.from())
          : lastWrite.subMap(range.from(), range.to());
    }

    /**
     * The lock rule: no unresolved PREPARE of another transaction blocks {@code e}. A RESOLVE of a
     * transaction that holds no lock here is void (it writes nothing): a client whose begin
     * listed only the oldest locks cannot tell that one was resolved already, and may propose
     * it again after another PREPARE took the same keys.
     */
    private void checkLocks(long position, int index, LogEntry e) {
      XgStep x = e.xg();
      if (x != null && x.kind() == XgStep.Kind.RESOLVE && !locks.containsKey(x.txn())) {
        return;
      }
      for (XgLocks.Lock l : locks.values()) {
        if (l.blocks(e)) {
          out.add(Kind.LOCK_VIOLATED, position, e.txnId(),
              "txn " + e.txnId() + " at position " + position + " #" + index + " reads or writes "
                  + "keys (or scans a range holding keys) that cross-group transaction "
                  + l.txn() + " holds since its PREPARE at position " + l.position()
                  + " (reads " + l.prepare().readSet()
                  + (l.prepare().readRanges().isEmpty() ? ""
                      : ", scans " + l.prepare().readRanges())
                  + ", writes " + l.prepare().writes().keySet() + ")");
          return;
        }
      }
    }

    /**
     * Replays one entry's writes (or a resolved PREPARE's, under its transaction's id) at the
     * end of the state so far: {@link Updates#fold} of this one entry into the state is what
     * folding the whole position into the values before it gives at this point of its list, as
     * the applier does, since the state already holds the entries before it in the list. A
     * refused entry changes nothing and leaves no write mark.
     */
    private void applyWrites(long position, int index, String txnId,
        Map<String, Mutation> writes) {
      Map<String, Mutation> sane = new LinkedHashMap<>();
      for (var w : writes.entrySet()) {
        Mutation m = w.getValue();
        if (m == null) {
          out.add(Kind.MALFORMED_LOG, position, txnId,
              "txn " + txnId + " at position " + position + " #" + index
                  + " has a null mutation for key " + Render.key(w.getKey())
                  + "; replayed as a delete");
          m = Mutation.delete();
        } else if (m.isUpdate()) {
          updatesChecked++;
        }
        sane.put(w.getKey(), m);
      }
      Updates.Folded folded = Updates.fold(List.of(new Updates.Effect(txnId, sane)),
          key -> Optional.ofNullable(state.get(key)));
      if (!folded.refused().isEmpty()) {
        entriesRefused++;
        refused.computeIfAbsent(position, p -> new HashMap<>())
            .put(index, folded.refused().values().iterator().next());
        return;
      }
      for (var v : folded.values().entrySet()) {
        String key = v.getKey();
        if (v.getValue().isEmpty()) {
          state.remove(key);
        } else {
          state.put(key, v.getValue().get());
        }
        String how = sane.get(key).isUpdate() ? "updated"
            : v.getValue().isEmpty() ? "deleted" : "written";
        lastWrite.put(key, new WriteMark(position, index, txnId, how));
      }
    }

    /** A2: the records reading at {@code position} saw the state now (the end of it). */
    private void checkReadsAt(long position) {
      List<TxnRecord> readers = readsByPosition.remove(position);
      if (readers == null) {
        return;
      }
      for (TxnRecord r : readers) {
        readsChecked++;
        for (var read : r.reads().entrySet()) {
          if (read.getKey() == null || read.getValue() == null) {
            continue; // reported as malformed
          }
          byte[] expected = state.get(read.getKey());
          byte[] seen = read.getValue().orElse(null);
          if (!Arrays.equals(expected, seen)) {
            WriteMark w = lastWrite.get(read.getKey());
            out.add(Kind.WRONG_READ_VALUE, position, r.txnId(),
                "A2: txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                    + ") read key " + Render.key(read.getKey()) + " at read position "
                    + position + " and observed " + Render.bytes(seen)
                    + ", but the state at the end of position " + position + " is "
                    + Render.bytes(expected) + " ("
                    + (w == null ? "never written" : w.describe()) + ")");
          }
        }
        for (TxnRecord.ScanRead scan : r.scans()) {
          scansChecked++;
          checkScan(position, r, scan);
        }
      }
    }

    /**
     * A2 for one scan: it returned exactly the state inside its range, key by key; the keys the
     * state holds there and the scan lacks are phantoms.
     */
    private void checkScan(long position, TxnRecord r, TxnRecord.ScanRead scan) {
      KeyRange range = scan.range();
      for (var e : scan.entries().entrySet()) {
        if (e.getValue() == null || !range.contains(e.getKey())) {
          continue; // reported as malformed
        }
        byte[] expected = state.get(e.getKey());
        if (!Arrays.equals(expected, e.getValue())) {
          WriteMark w = lastWrite.get(e.getKey());
          out.add(Kind.WRONG_READ_VALUE, position, r.txnId(),
              "A2: txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                  + ") scanned " + range + " at read position " + position + " and observed "
                  + Render.key(e.getKey()) + " = " + Render.bytes(e.getValue())
                  + ", but the state at the end of position " + position + " is "
                  + Render.bytes(expected) + " (" + (w == null ? "never written" : w.describe())
                  + ")");
        }
      }
      SortedMap<String, byte[]> held = range.to() == null ? state.tailMap(range.from())
          : state.subMap(range.from(), range.to());
      for (var e : held.entrySet()) {
        if (range.contains(e.getKey()) && !scan.entries().containsKey(e.getKey())) {
          WriteMark w = lastWrite.get(e.getKey());
          out.add(Kind.PHANTOM, position, r.txnId(),
              "A2: txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                  + ") scanned " + range + " at read position " + position + " and did not see "
                  + Render.key(e.getKey()) + ", which the state at the end of position "
                  + position + " holds as " + Render.bytes(e.getValue()) + " ("
                  + (w == null ? "never written" : w.describe()) + ")");
        }
      }
    }

    // ---- L1/L2 outcomes and record-entry agreement ----

    private void checkOutcomes() {
      for (var o : log.occurrences().entrySet()) {
        if (!recordById.containsKey(o.getKey())) {
          entriesWithoutRecord += o.getValue().size();
        }
      }
      for (TxnRecord r : records) {
        List<Slot> slots = log.occurrences().getOrDefault(r.txnId(), List.of());
        if (r.readOnly()) {
          if (!slots.isEmpty()) {
            out.add(Kind.READ_ONLY_IN_LOG, slots.get(0).position(), r.txnId(),
                "read-only txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                    + ") is in the log at " + slots + "; read-only txns commit outside it");
          }
          continue;
        }
        if (!slots.isEmpty()) {
          compareWithEntry(r, slots.get(0));
        }
        switch (r.status()) {
          case COMMITTED -> checkCommitted(r, slots);
          case ABORTED -> checkAborted(r, slots);
          case UNKNOWN -> {
            // May or may not be in the log; more than once is reported as DUPLICATE_ENTRY.
            if (r.unknownFrom() > 0 && !slots.isEmpty()
                && (slots.get(0).position() < r.unknownFrom()
                    || slots.get(0).position() > r.unknownThrough())) {
              out.add(Kind.UNKNOWN_OUTSIDE_RANGE, slots.get(0).position(), r.txnId(),
                  "txn " + r.txnId() + " (client " + r.client() + ") was reported UNKNOWN at "
                      + "positions " + r.unknownFrom() + ".." + r.unknownThrough()
                      + " but is in the log at " + slots);
            }
          }
          case CRASHED -> {
            // May or may not be in the log, at most once.
          }
        }
      }
    }

    private void checkCommitted(TxnRecord r, List<Slot> slots) {
      if (slots.isEmpty()) {
        out.add(Kind.COMMITTED_NOT_IN_LOG, r.commitPosition(), r.txnId(),
            "L2: txn " + r.txnId() + " (client " + r.client()
                + ") was reported COMMITTED at position " + r.commitPosition()
                + " but is not in the merged log (last position " + log.maxPosition() + ")");
        return;
      }
      Slot at = slotAt(slots, r.commitPosition());
      if (at == null) {
        out.add(Kind.WRONG_COMMIT_POSITION, r.commitPosition(), r.txnId(),
            "L2: txn " + r.txnId() + " (client " + r.client()
                + ") was reported COMMITTED at position " + r.commitPosition()
                + " but is in the log at " + slots);
        return;
      }
      String why = refusal(at);
      if (why != null) {
        out.add(Kind.REFUSAL_MISMATCH, at.position(), r.txnId(),
            "txn " + r.txnId() + " (client " + r.client() + ") was reported COMMITTED at "
                + at + ", but the replay refuses its entry there (" + why
                + "): it has no effect");
      }
    }

    /**
     * L1 for an ABORTED record: not in the log; or, told a commit position, in the log exactly
     * there and refused (in the log with no effect).
     */
    private void checkAborted(TxnRecord r, List<Slot> slots) {
      if (r.commitPosition() == -1) {
        if (!slots.isEmpty()) {
          out.add(Kind.ABORTED_IN_LOG, slots.get(0).position(), r.txnId(),
              "L1: txn " + r.txnId() + " (client " + r.client()
                  + ") was reported ABORTED but is in the log at " + slots);
        }
        return;
      }
      if (r.commitPosition() < 1 || r.readOnly()) {
        return; // reported as malformed
      }
      if (slots.isEmpty()) {
        out.add(Kind.REFUSAL_MISMATCH, r.commitPosition(), r.txnId(),
            "txn " + r.txnId() + " (client " + r.client() + ") was reported ABORTED as "
                + "refused at position " + r.commitPosition() + " but is not in the merged "
                + "log (last position " + log.maxPosition() + ")");
        return;
      }
      Slot at = slotAt(slots, r.commitPosition());
      if (at == null) {
        out.add(Kind.WRONG_COMMIT_POSITION, r.commitPosition(), r.txnId(),
            "txn " + r.txnId() + " (client " + r.client() + ") was reported ABORTED as "
                + "refused at position " + r.commitPosition() + " but is in the log at "
                + slots);
        return;
      }
      if (at.position() < log.firstGap() && refusal(at) == null) {
        out.add(Kind.REFUSAL_MISMATCH, at.position(), r.txnId(),
            "L1: txn " + r.txnId() + " (client " + r.client() + ") was reported ABORTED as "
                + "refused at " + at + ", but the replay applies its entry there: its writes "
                + describeWrites(at.entry().writes()) + " took effect");
      }
    }

    /** The slot at {@code position} among {@code slots}, or null. */
    private static Slot slotAt(List<Slot> slots, long position) {
      for (Slot s : slots) {
        if (s.position() == position) {
          return s;
        }
      }
      return null;
    }

    /**
     * Why the replay refused the entry in {@code slot}, or null when it applied it, or when the
     * slot lies at or after a gap in the merged log, where the replayed values are not exact.
     */
    private String refusal(Slot slot) {
      if (slot.position() >= log.firstGap()) {
        return null;
      }
      return refused.getOrDefault(slot.position(), Map.of()).get(slot.index());
    }

    private void compareWithEntry(TxnRecord r, Slot slot) {
      LogEntry e = slot.entry();
      List<String> diffs = new ArrayList<>();
      if (r.readPosition() != e.readPosition()) {
        diffs.add("read position " + r.readPosition() + " vs " + e.readPosition());
      }
      if (!r.reads().keySet().equals(e.readSet())) {
        diffs.add("read keys " + sortedKeys(r.reads().keySet()) + " vs " + e.readSet());
      }
      List<KeyRange> scanned = r.scannedRanges();
      if (!scanned.equals(e.readRanges())) {
        diffs.add("scanned ranges " + scanned + " vs " + e.readRanges());
      }
      if (!r.writes().equals(e.writes())) {
        diffs.add("writes " + describeWrites(r.writes()) + " vs " + describeWrites(e.writes()));
      }
      if (!diffs.isEmpty()) {
        out.add(Kind.ENTRY_MISMATCH, slot.position(), r.txnId(),
            "txn " + r.txnId() + " (" + r.status() + ", client " + r.client()
                + ") differs from its log entry at " + slot + " (record vs entry): "
                + String.join("; ", diffs));
      }
    }

    private static List<String> sortedKeys(Collection<String> keys) {
      TreeSet<String> sorted = new TreeSet<>();
      boolean hasNull = false;
      for (String k : keys) {
        if (k == null) {
          hasNull = true;
        } else {
          sorted.add(k);
        }
      }
      List<String> list = new ArrayList<>(sorted);
      if (hasNull) {
        list.add("null");
      }
      return list;
    }

    private static Map<String, String> describeWrites(SortedMap<String, Mutation> writes) {
      Map<String, String> d = new LinkedHashMap<>();
      for (var w : writes.entrySet()) {
        Mutation m = w.getValue();
        // A put renders its value; a delete and an update their kind (and deltas).
        d.put(w.getKey(), m == null ? "null"
            : m.kind() == Mutation.Kind.PUT ? Render.bytes(m.value().orElseThrow())
            : m.toString());
      }
      return d;
    }
  }
}
