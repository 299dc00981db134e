package org.paxoscp.client;

import com.fasterxml.jackson.core.JsonEncoding;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.wal.Mutation;

/**
 * Records every transaction attempt of the clients that share it as one JSON object per line, so
 * that any checker can judge the history (with the DCs' logs; see docs/guarantees.md, "History export"):
 * <pre>
 * {"txn": id, "client": id, "dc": home DC, "group": key, "readPos": n,
 *  "reads": [{"key": k, "value": base64-or-null, "version": n}],
 *  "scans": [{"from": k, "to": k-or-null, "entries": [{"key": k, "value": base64, "version": n}]}],
 *  "writes": [{"key": k, "value": base64-or-null} | {"key": k, "add": n}
 *             | {"key": k, "set": {element: n, ...}}],
 *  "outcome": "COMMITTED"|"ABORTED"|"UNKNOWN", "commitPos": n-or-null, "promotions": n,
 *  "protocol": "basic"|"cp"|..., "readOnly": bool, "startMs": t, "endMs": t}
 * </pre>
 * A value is null when absent or deleted; {@code version} is the log position that wrote the
 * version read (0 if never written). {@code scans} (present only when the transaction scanned)
 * lists each range read as far as it was read ({@code [from, to)}, {@code to} null for the
 * group's end; a {@code to} ending in NUL is "up to and including" the key before it) with every
 * entry the store held there at the read position; the transaction's own writes are not in it.
 * A write is a put ({@code value}), a delete ({@code value} null), or a commutative update: an
 * add of {@code n} to the counter at the key ({@code add}), or signed changes to the counts of
 * the counting set's elements ({@code set}, no change 0). An update is folded where its entry
 * lands in the log, after the writes ordered before it (positions ascending, then the entries of
 * a position in list order); a counter's value is the decimal text of a signed 64-bit number, a
 * counting set's the encoding of {@code org.paxoscp.wal.Updates}, and an entry one of whose
 * updates cannot apply there is refused whole (docs/guarantees.md, "History export").
 * {@code commitPos} is null unless the transaction's log entry was chosen and the client
 * learned where (a read-only transaction commits without one). An attempt that ended without a
 * commit call (aborted by the application, or by a read) is ABORTED. An ABORTED attempt with a
 * {@code commitPos} is in the log there but was refused: it has no effect.
 *
 * <p>A transaction across groups (docs/cross-group.md) that reached its commit is one line of
 * another shape, marked by its {@code "xg"} field:
 * <pre>
 * {"xg": id, "client": id, "dc": home DC, "groups": [group, ...],
 *  "parts": [{"group": g, "readPos": n, "reads": [...], "writes": [...]}],
 *  "outcome": "COMMITTED"|"ABORTED"|"UNKNOWN", "decidePos": n-or-null, "readOnly": bool,
 *  "protocol": ..., "startMs": t, "endMs": t}
 * </pre>
 * with reads and writes as above; {@code decidePos} is the position in the first group (the
 * coordinator) of its DECIDE(COMMIT) below cluster version 6, of its PREPARE from 6 (one round:
 * committed when every PREPARE is chosen), when the client learned it. Its steps are in the groups' logs
 * under the id {@code xg}.
 *
 * <p>{@link #to} hands the same history to a {@link Listener} in memory instead, as the
 * checker reads it ({@link TxnRecord}, {@link CrossGroupChecker.Observation}): what the simulator
 * judges its runs by.
 *
 * <p>Thread-safe; lines are written whole and flushed as they are recorded.
 */
public final class HistoryRecorder implements AutoCloseable {
  private static final JsonFactory JSON = new JsonFactory();
  /** Where lines go, or null when a listener takes the records. */
  private final OutputStream out;
  private final Listener listener;

  private HistoryRecorder(OutputStream out, Listener listener) {
    this.out = out;
    this.listener = listener;
  }

  /**
   * Takes a client's history in memory, as the checkers read it: one record per attempt as it
   * ends, and, as a commit's messages are about to go out, the record its transaction has if
   * the process dies before the outcome (status CRASHED). Called on the client's threads.
   */
  public interface Listener {
    /** A one-group transaction attempt ended. */
    void attempt(String group, TxnRecord record);

    /** A transaction across groups that reached its commit ended. */
    void crossGroup(CrossGroupChecker.Observation observation);

    /**
     * A one-group transaction's entry is about to be sent: {@code crashed} is its record should
     * the client die before {@link #attempt} tells the outcome.
     */
    default void committing(String group, TxnRecord crashed) {
    }

    /** A transaction across groups is about to send its steps; as {@link #committing}. */
    default void committingAcrossGroups(CrossGroupChecker.Observation crashed) {
    }
  }

  /** A recorder that hands every record to {@code listener} instead of writing lines. */
  public static HistoryRecorder to(Listener listener) {
    return new HistoryRecorder(null, java.util.Objects.requireNonNull(listener));
  }

  /**
   * Appends to {@code file}, creating it (and its directory) when missing.
   *
   * @throws UncheckedIOException if the file cannot be opened
   */
  public static HistoryRecorder append(Path file) {
    try {
      if (file.toAbsolutePath().getParent() != null) {
        Files.createDirectories(file.toAbsolutePath().getParent());
      }
      return new HistoryRecorder(Files.newOutputStream(file, StandardOpenOption.CREATE,
          StandardOpenOption.APPEND), null);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot open history file " + file, e);
    }
  }

  /** One attempt, as {@link Transaction} saw it. */
  record Attempt(String txn, String client, String dc, String group, long readPos,
      Map<String, Optional<byte[]>> reads, Map<String, Long> versions,
      List<Transaction.Scan> scans,
      SortedMap<String, Mutation> writes, CommitResult.Status outcome, long commitPos,
      int promotions, String protocol, long startMs, long endMs, long unknownFrom,
      long unknownThrough) {}

  /** A transaction across groups that reached its commit, as {@link MultiTransaction} saw it. */
  record CrossGroupAttempt(String xg, String client, String dc, List<Transaction> parts,
      CommitResult.Status outcome, long decidePos, String protocol, long startMs, long endMs) {}

  synchronized void record(CrossGroupAttempt a) {
    if (listener != null) {
      listener.crossGroup(observation(a, status(a.outcome())));
      return;
    }
    writeLine(g -> {
      g.writeStringField("xg", a.xg());
      g.writeStringField("client", a.client());
      g.writeStringField("dc", a.dc());
      g.writeArrayFieldStart("groups");
      for (Transaction t : a.parts()) {
        g.writeString(t.group());
      }
      g.writeEndArray();
      g.writeArrayFieldStart("parts");
      boolean readOnly = true;
      for (Transaction t : a.parts()) {
        g.writeStartObject();
        g.writeStringField("group", t.group());
        g.writeNumberField("readPos", t.readPosition());
        writeReads(g, t.reads(), t.readVersions());
        writeScans(g, t.scans());
        writeWrites(g, t.writes());
        g.writeEndObject();
        readOnly &= t.writes().isEmpty();
      }
      g.writeEndArray();
      g.writeStringField("outcome", a.outcome().name());
      writePosition(g, "decidePos", a.decidePos());
      g.writeBooleanField("readOnly", readOnly);
      g.writeStringField("protocol", a.protocol());
      g.writeNumberField("startMs", a.startMs());
      g.writeNumberField("endMs", a.endMs());
    });
  }

  private static void writeReads(JsonGenerator g, Map<String, Optional<byte[]>> reads,
      Map<String, Long> versions) throws IOException {
    g.writeArrayFieldStart("reads");
    for (var e : reads.entrySet()) {
      g.writeStartObject();
      g.writeStringField("key", e.getKey());
      writeValue(g, e.getValue().orElse(null));
      g.writeNumberField("version", versions.getOrDefault(e.getKey(), 0L));
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  private static void writeScans(JsonGenerator g, List<Transaction.Scan> scans)
      throws IOException {
    if (scans.isEmpty()) {
      return;
    }
    g.writeArrayFieldStart("scans");
    for (Transaction.Scan s : scans) {
      g.writeStartObject();
      g.writeStringField("from", s.range().from());
      if (s.range().to() == null) {
        g.writeNullField("to");
      } else {
        g.writeStringField("to", s.range().to());
      }
      g.writeArrayFieldStart("entries");
      for (var e : s.entries().entrySet()) {
        g.writeStartObject();
        g.writeStringField("key", e.getKey());
        writeValue(g, e.getValue());
        g.writeNumberField("version", s.versions().getOrDefault(e.getKey(), 0L));
        g.writeEndObject();
      }
      g.writeEndArray();
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  private static void writeWrites(JsonGenerator g, SortedMap<String, Mutation> writes)
      throws IOException {
    g.writeArrayFieldStart("writes");
    for (var e : writes.entrySet()) {
      g.writeStartObject();
      g.writeStringField("key", e.getKey());
      Mutation m = e.getValue();
      switch (m.kind()) {
        case PUT -> writeValue(g, m.value().orElseThrow());
        case DELETE -> writeValue(g, null);
        case ADD -> g.writeNumberField("add", m.delta());
        case SET_UPDATE -> {
          g.writeObjectFieldStart("set");
          for (var d : m.elements().entrySet()) {
            g.writeNumberField(d.getKey(), d.getValue());
          }
          g.writeEndObject();
        }
      }
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  /** A one-group commit is about to send its entry (see {@link Listener#committing}). */
  synchronized void committing(Attempt a) {
    if (listener != null) {
      listener.committing(a.group(), record(a, TxnRecord.Status.CRASHED, -1, -1, -1));
    }
  }

  /** A cross-group commit is about to send its steps. */
  synchronized void committing(CrossGroupAttempt a) {
    if (listener != null) {
      listener.committingAcrossGroups(observation(a, TxnRecord.Status.CRASHED));
    }
  }

  /** {@code a} as the checker's record, with {@code status} and where it is in the log. */
  private static TxnRecord record(Attempt a, TxnRecord.Status status, long commitPos,
      long unknownFrom, long unknownThrough) {
    List<TxnRecord.ScanRead> scans = new java.util.ArrayList<>();
    for (Transaction.Scan s : a.scans()) {
      scans.add(new TxnRecord.ScanRead(s.range(), new java.util.TreeMap<>(s.entries())));
    }
    return new TxnRecord(a.txn(), a.client(), status, a.readPos(),
        new java.util.LinkedHashMap<>(a.reads()), new java.util.TreeMap<>(a.writes()), commitPos,
        unknownFrom, unknownThrough, scans);
  }

  /** {@code a} as the checker's record (as {@code HistoryFiles} reads its line). */
  private static TxnRecord checkerRecord(Attempt a) {
    TxnRecord.Status status = status(a.outcome());
    // A read-only transaction commits at its read position, outside the log.
    long commitPos = a.commitPos() > 0 ? a.commitPos()
        : status == TxnRecord.Status.COMMITTED && a.writes().isEmpty() ? a.readPos() : -1;
    boolean range = status == TxnRecord.Status.UNKNOWN && a.unknownFrom() > 0;
    return record(a, status, commitPos, range ? a.unknownFrom() : -1,
        range ? a.unknownThrough() : -1);
  }

  private static TxnRecord.Status status(CommitResult.Status outcome) {
    return switch (outcome) {
      case COMMITTED -> TxnRecord.Status.COMMITTED;
      case ABORTED -> TxnRecord.Status.ABORTED;
      case UNKNOWN -> TxnRecord.Status.UNKNOWN;
    };
  }

  /** A cross-group attempt as the checker's observation, with {@code status}. */
  private static CrossGroupChecker.Observation observation(CrossGroupAttempt a,
      TxnRecord.Status status) {
    java.util.TreeSet<String> groups = new java.util.TreeSet<>();
    Map<String, Map<String, Long>> versions = new java.util.TreeMap<>();
    Map<String, List<CrossGroupChecker.RangeRead>> rangeReads = new java.util.TreeMap<>();
    boolean readOnly = true;
    for (Transaction t : a.parts()) {
      groups.add(t.group());
      Map<String, Long> v = versions.computeIfAbsent(t.group(), g -> new java.util.TreeMap<>());
      for (Transaction.Scan s : t.scans()) {
        v.putAll(s.versions());
        rangeReads.computeIfAbsent(t.group(), g -> new java.util.ArrayList<>())
            .add(new CrossGroupChecker.RangeRead(s.range(), t.readPosition()));
      }
      v.putAll(t.readVersions());
      readOnly &= t.writes().isEmpty();
    }
    return new CrossGroupChecker.Observation(a.xg(), status, groups, versions, readOnly,
        rangeReads);
  }

  synchronized void record(Attempt a) {
    if (listener != null) {
      listener.attempt(a.group(), checkerRecord(a));
      return;
    }
    writeLine(g -> {
      g.writeStringField("txn", a.txn());
      g.writeStringField("client", a.client());
      g.writeStringField("dc", a.dc());
      g.writeStringField("group", a.group());
      g.writeNumberField("readPos", a.readPos());
      writeReads(g, a.reads(), a.versions());
      writeScans(g, a.scans());
      writeWrites(g, a.writes());
      g.writeStringField("outcome", a.outcome().name());
      writePosition(g, "commitPos", a.commitPos());
      if (a.unknownFrom() > 0) {
        // Where an UNKNOWN entry can still be chosen, as the client was told.
        g.writeArrayFieldStart("unknownAt");
        g.writeNumber(a.unknownFrom());
        g.writeNumber(a.unknownThrough());
        g.writeEndArray();
      }
      g.writeNumberField("promotions", a.promotions());
      g.writeStringField("protocol", a.protocol());
      g.writeBooleanField("readOnly", a.writes().isEmpty());
      g.writeNumberField("startMs", a.startMs());
      g.writeNumberField("endMs", a.endMs());
    });
  }

  /** One JSON object's fields, written between its braces. */
  private interface Fields {
    void write(JsonGenerator g) throws IOException;
  }

  /** Writes one object as a whole line and flushes it. */
  private void writeLine(Fields fields) {
    try {
      java.io.ByteArrayOutputStream line = new java.io.ByteArrayOutputStream();
      try (JsonGenerator g = JSON.createGenerator(line, JsonEncoding.UTF8)) {
        g.writeStartObject();
        fields.write(g);
        g.writeEndObject();
      }
      line.write('\n');
      out.write(line.toByteArray());
      out.flush();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write the history", e);
    }
  }

  /** A log position, or null when there is none (not positive). */
  private static void writePosition(JsonGenerator g, String field, long pos) throws IOException {
    if (pos > 0) {
      g.writeNumberField(field, pos);
    } else {
      g.writeNullField(field);
    }
  }

  private static void writeValue(JsonGenerator g, byte[] v) throws IOException {
    if (v == null) {
      g.writeNullField("value");
    } else {
      g.writeStringField("value", Base64.getEncoder().encodeToString(v));
    }
  }

  /** Idempotent. */
  @Override
  public synchronized void close() {
    if (out == null) {
      return;
    }
    try {
      out.close();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot close the history file", e);
    }
  }
}
