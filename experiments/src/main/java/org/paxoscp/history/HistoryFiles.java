package org.paxoscp.history;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.paxoscp.check.CrossGroupChecker;
import org.paxoscp.check.TxnRecord;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogEntry;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.Mutation;
import org.paxoscp.wal.XgStep;

/**
 * An exported run on disk, as JSON lines: {@code history/*.jsonl} (every client's transaction
 * attempts, written by {@code org.paxoscp.client.HistoryRecorder}) and {@code wal/<dc>.jsonl}
 * (every DC's log: {@code {"group", "pos", "entries": [{"txn", "readPos", "readSet", "writes"}]}},
 * each entry also with its {@code originDc}),
 * positions in order, an empty list for a no-op). Values are base64, null for absent or deleted.
 * A write, in an entry or a history line, is {@code {"key", "value"}} for a put ({@code value}
 * null: a delete), {@code {"key", "add": n}} for an add to a counter, or {@code {"key", "set":
 * {element: n, ...}}} for changes to the counts of a counting set's elements (commutative updates,
 * {@link org.paxoscp.wal.Updates}); files without updates read as before. A history line whose
 * outcome is ABORTED with a {@code commitPos} is a transaction whose entry is in the log there
 * but was refused (it had no effect); it is read as such a record.
 * An entry that scanned key ranges has {@code "readRanges": [{"from", "to"}]} ({@code to} null
 * for the group's end), and a history line (or a part of a line across groups) of a transaction
 * that scanned has {@code "scans": [{"from", "to", "entries": [{"key", "value", "version"}]}]};
 * both are left out when empty, and files without them read as without ranges.
 * An entry that is a step of a transaction across groups (docs/cross-group.md) carries one more
 * field, {@code "xg": {"kind": "PREPARE"|"DECIDE"|"RESOLVE"|"VALIDATE", "txn", "groups",
 * "deadlineMillis", "commit"}}; files without it read as before. A history line with an
 * {@code "xg"} field is a client's transaction across groups ({@code HistoryRecorder}); it is read
 * as a {@link CrossGroupChecker.Observation}.
 */
public final class HistoryFiles {
  private static final ObjectMapper JSON = new ObjectMapper();

  private HistoryFiles() {}

  /**
   * A run read back: per group, every DC's log and every client's one-group records; the
   * clients' transactions across groups; and per group, the highest position those read at or
   * were told their DECIDE was chosen at (positions proved to exist).
   */
  public record Run(Map<String, Map<String, SortedMap<Long, LogValue>>> logsByGroup,
      Map<String, List<TxnRecord>> recordsByGroup,
      List<CrossGroupChecker.Observation> crossGroup, Map<String, Long> crossGroupPositions) {

    /** Whether anything of a transaction across groups is in the run. */
    public boolean hasCrossGroup() {
      return !crossGroup.isEmpty() || logsByGroup.values().stream()
          .flatMap(byDc -> byDc.values().stream()).flatMap(log -> log.values().stream())
          .flatMap(v -> v.entries().stream()).anyMatch(e -> e.xg() != null);
    }
  }

  /** The directory a client of the run records its history file in. */
  public static Path historyDir(Path dir) {
    return dir.resolve("history");
  }

  /** Appends {@code group}'s log as DC {@code dc} holds it to {@code wal/<dc>.jsonl}. */
  public static void appendWal(Path dir, String dc, String group, SortedMap<Long, LogValue> log) {
    Path file = dir.resolve("wal").resolve(dc + ".jsonl");
    try {
      Files.createDirectories(file.getParent());
      try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND)) {
        for (var e : log.entrySet()) {
          ObjectNode line = JSON.createObjectNode();
          line.put("group", group);
          line.put("pos", e.getKey());
          ArrayNode entries = line.putArray("entries");
          for (LogEntry entry : e.getValue().entries()) {
            ObjectNode o = entries.addObject();
            o.put("txn", entry.txnId());
            o.put("originDc", entry.originDc());
            o.put("readPos", entry.readPosition());
            ArrayNode rs = o.putArray("readSet");
            entry.readSet().forEach(rs::add);
            if (!entry.readRanges().isEmpty()) {
              ArrayNode rr = o.putArray("readRanges");
              entry.readRanges().forEach(r -> putRange(rr.addObject(), r));
            }
            ArrayNode ws = o.putArray("writes");
            entry.writes().forEach((k, m) -> putWrite(ws.addObject(), k, m));
            XgStep x = entry.xg();
            if (x != null) {
              ObjectNode xo = o.putObject("xg");
              xo.put("kind", x.kind().name());
              xo.put("txn", x.txn());
              ArrayNode gs = xo.putArray("groups");
              x.groups().forEach(gs::add);
              xo.put("deadlineMillis", x.deadlineMillis());
              xo.put("commit", x.commit());
            }
          }
          w.write(JSON.writeValueAsString(line));
          w.newLine();
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  private static void putRange(ObjectNode o, KeyRange r) {
    o.put("from", r.from());
    if (r.to() == null) {
      o.putNull("to");
    } else {
      o.put("to", r.to());
    }
  }

  /** {@code [from, to)} of {@code n}; {@code to} absent or null is the group's end. */
  private static KeyRange range(JsonNode n, String where) {
    JsonNode to = n.get("to");
    try {
      return new KeyRange(text(n, "from", where), to == null || to.isNull() ? null : to.asText());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": bad key range: " + e.getMessage());
    }
  }

  /** The {@code "scans"} of a history line or part; none when absent. */
  private static List<TxnRecord.ScanRead> scans(JsonNode n, String where) {
    List<TxnRecord.ScanRead> scans = new ArrayList<>();
    for (JsonNode s : n.path("scans")) {
      KeyRange range = range(s, where);
      SortedMap<String, byte[]> entries = new TreeMap<>(KeyRange.ORDER);
      for (JsonNode e : s.path("entries")) {
        byte[] v = value(e, where);
        if (v == null) {
          // A scan returns the entries that have a value; a null one is not an entry.
          throw new IllegalArgumentException(where + ": a scan entry without a value");
        }
        entries.put(text(e, "key", where), v);
      }
      scans.add(new TxnRecord.ScanRead(range, entries));
    }
    return scans;
  }

  /** The versions a part's scans returned, key to the position that wrote each. */
  private static Map<String, Long> scanVersions(JsonNode n, String where) {
    Map<String, Long> versions = new TreeMap<>();
    for (JsonNode s : n.path("scans")) {
      for (JsonNode e : s.path("entries")) {
        versions.put(text(e, "key", where), e.path("version").asLong());
      }
    }
    return versions;
  }

  /** One write as the history files carry it (see the class comment). */
  private static void putWrite(ObjectNode o, String key, Mutation m) {
    o.put("key", key);
    switch (m.kind()) {
      case PUT -> putValue(o, m.value().orElseThrow());
      case DELETE -> putValue(o, null);
      case ADD -> o.put("add", m.delta());
      case SET_UPDATE -> {
        ObjectNode set = o.putObject("set");
        m.elements().forEach(set::put);
      }
    }
  }

  private static void putValue(ObjectNode o, byte[] v) {
    if (v == null) {
      o.putNull("value");
    } else {
      o.put("value", Base64.getEncoder().encodeToString(v));
    }
  }

  private static byte[] value(JsonNode n, String where) {
    JsonNode v = n.get("value");
    if (v == null) {
      throw new IllegalArgumentException(where + ": no \"value\"");
    }
    return v.isNull() ? null : Base64.getDecoder().decode(v.asText());
  }

  /**
   * Reads an exported run.
   *
   * @throws IllegalArgumentException naming the file and line of anything malformed
   */
  public static Run read(Path dir) {
    Map<String, Map<String, SortedMap<Long, LogValue>>> logs = new TreeMap<>();
    Map<String, List<TxnRecord>> records = new TreeMap<>();
    List<CrossGroupChecker.Observation> crossGroup = new ArrayList<>();
    Map<String, Long> crossGroupPositions = new TreeMap<>();
    for (Path f : jsonl(dir.resolve("wal"))) {
      String dc = f.getFileName().toString().replaceFirst("\\.jsonl$", "");
      forEachLine(f, (n, where) -> {
        String group = text(n, "group", where);
        List<LogEntry> entries = new ArrayList<>();
        for (JsonNode e : n.path("entries")) {
          TreeSet<String> readSet = new TreeSet<>();
          e.path("readSet").forEach(k -> readSet.add(k.asText()));
          List<KeyRange> readRanges = new ArrayList<>();
          for (JsonNode r : e.path("readRanges")) {
            readRanges.add(range(r, where));
          }
          String txn = text(e, "txn", where);
          SortedMap<String, Mutation> writes = writes(e, where);
          XgStep step = step(e.get("xg"), where);
          try {
            // The entry's origin DC is an extra field of ours; other writers may leave it out.
            entries.add(new LogEntry(txn, e.path("originDc").asText(""),
                e.path("readPos").asLong(), readSet, readRanges, writes, step));
          } catch (IllegalArgumentException x) {
            throw new IllegalArgumentException(where + ": bad entry " + txn + ": "
                + x.getMessage());
          }
        }
        logs.computeIfAbsent(group, g -> new LinkedHashMap<>())
            .computeIfAbsent(dc, d -> new TreeMap<>())
            .put(n.path("pos").asLong(), new LogValue(entries));
      });
    }
    for (Path f : jsonl(historyDir(dir))) {
      forEachLine(f, (n, where) -> {
        if (n.has("xg")) {
          CrossGroupChecker.Observation o = observation(n, where);
          crossGroup.add(o);
          for (JsonNode part : n.path("parts")) {
            crossGroupPositions.merge(text(part, "group", where),
                part.path("readPos").asLong(), Math::max);
          }
          JsonNode dp = n.get("decidePos");
          if (dp != null && !dp.isNull()) {
            crossGroupPositions.merge(o.groups().first(), dp.asLong(), Math::max);
          }
          return;
        }
        Map<String, Optional<byte[]>> reads = new LinkedHashMap<>();
        for (JsonNode r : n.path("reads")) {
          reads.put(text(r, "key", where), Optional.ofNullable(value(r, where)));
        }
        SortedMap<String, Mutation> writes = writes(n, where);
        TxnRecord.Status status = outcome(n, where);
        long readPos = n.path("readPos").asLong();
        JsonNode cp = n.get("commitPos");
        // A read-only transaction commits at its read position, outside the log.
        long commitPos = cp != null && !cp.isNull() ? cp.asLong()
            : status == TxnRecord.Status.COMMITTED && writes.isEmpty() ? readPos : -1;
        JsonNode at = n.path("unknownAt");
        long unknownFrom = at.size() == 2 ? at.get(0).asLong() : -1;
        long unknownThrough = at.size() == 2 ? at.get(1).asLong() : -1;
        records.computeIfAbsent(text(n, "group", where), g -> new ArrayList<>())
            .add(new TxnRecord(text(n, "txn", where), text(n, "client", where), status, readPos,
                reads, writes, commitPos, unknownFrom, unknownThrough, scans(n, where)));
      });
    }
    return new Run(logs, records, crossGroup, crossGroupPositions);
  }

  private static TxnRecord.Status outcome(JsonNode n, String where) {
    return switch (text(n, "outcome", where)) {
      case "COMMITTED" -> TxnRecord.Status.COMMITTED;
      case "ABORTED" -> TxnRecord.Status.ABORTED;
      case "UNKNOWN" -> TxnRecord.Status.UNKNOWN;
      default -> throw new IllegalArgumentException(where + ": unknown outcome "
          + n.get("outcome"));
    };
  }

  /** A client's line for a transaction across groups. */
  private static CrossGroupChecker.Observation observation(JsonNode n, String where) {
    TreeSet<String> groups = new TreeSet<>();
    n.path("groups").forEach(g -> groups.add(g.asText()));
    Map<String, Map<String, Long>> versions = new TreeMap<>();
    Map<String, List<CrossGroupChecker.RangeRead>> rangeReads = new TreeMap<>();
    boolean readOnly = true;
    for (JsonNode part : n.path("parts")) {
      String group = text(part, "group", where);
      if (!groups.contains(group)) {
        throw new IllegalArgumentException(where + ": part of group " + group + " not in "
            + groups);
      }
      Map<String, Long> v = versions.computeIfAbsent(group, g -> new TreeMap<>());
      // A scan's entries are reads of their versions too; a key read both ways was read once.
      v.putAll(scanVersions(part, where));
      for (JsonNode r : part.path("reads")) {
        v.put(text(r, "key", where), r.path("version").asLong());
      }
      long readPos = part.path("readPos").asLong();
      for (TxnRecord.ScanRead s : scans(part, where)) {
        rangeReads.computeIfAbsent(group, g -> new ArrayList<>())
            .add(new CrossGroupChecker.RangeRead(s.range(), readPos));
      }
      readOnly &= writes(part, where).isEmpty();
    }
    if (groups.size() < 2) {
      throw new IllegalArgumentException(where + ": a transaction across groups names "
          + groups.size() + " group(s)");
    }
    return new CrossGroupChecker.Observation(text(n, "xg", where), outcome(n, where), groups,
        versions, readOnly, rangeReads);
  }

  /** The cross-group step of an entry, or null when it has none. */
  private static XgStep step(JsonNode x, String where) {
    if (x == null || x.isNull()) {
      return null;
    }
    List<String> groups = new ArrayList<>();
    x.path("groups").forEach(g -> groups.add(g.asText()));
    try {
      return new XgStep(XgStep.Kind.valueOf(text(x, "kind", where)), text(x, "txn", where),
          groups, x.path("deadlineMillis").asLong(), x.path("commit").asBoolean());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + ": bad \"xg\": " + e.getMessage());
    }
  }

  private static SortedMap<String, Mutation> writes(JsonNode n, String where) {
    SortedMap<String, Mutation> writes = new TreeMap<>();
    for (JsonNode w : n.path("writes")) {
      writes.put(text(w, "key", where), mutation(w, where));
    }
    return writes;
  }

  /** A write: exactly one of {@code "value"}, {@code "add"} and {@code "set"}. */
  private static Mutation mutation(JsonNode w, String where) {
    JsonNode add = w.get("add");
    JsonNode set = w.get("set");
    int forms = (w.has("value") ? 1 : 0) + (add != null ? 1 : 0) + (set != null ? 1 : 0);
    if (forms != 1) {
      throw new IllegalArgumentException(where + ": a write has exactly one of \"value\", "
          + "\"add\" and \"set\"");
    }
    if (add != null) {
      return Mutation.add(int64(add, "add", where));
    }
    if (set != null) {
      if (!set.isObject()) {
        throw new IllegalArgumentException(where + ": \"set\" is not an object: " + set);
      }
      Map<String, Long> deltas = new TreeMap<>();
      for (var e : set.properties()) {
        deltas.put(e.getKey(), int64(e.getValue(), "set", where));
      }
      try {
        return Mutation.setUpdate(deltas);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(where + ": bad \"set\": " + e.getMessage());
      }
    }
    byte[] v = value(w, where);
    return v == null ? Mutation.delete() : Mutation.put(v);
  }

  /** A JSON integer in the 64-bit range. */
  private static long int64(JsonNode n, String field, String where) {
    if (!n.isIntegralNumber() || !n.canConvertToLong()) {
      throw new IllegalArgumentException(where + ": \"" + field + "\" holds " + n
          + ", not a 64-bit integer");
    }
    return n.longValue();
  }

  private static String text(JsonNode n, String field, String where) {
    JsonNode v = n.get(field);
    if (v == null || v.isNull()) {
      throw new IllegalArgumentException(where + ": no \"" + field + "\"");
    }
    return v.asText();
  }

  private interface LineHandler {
    void accept(JsonNode line, String where);
  }

  private static void forEachLine(Path f, LineHandler h) {
    try {
      List<String> lines = Files.readAllLines(f, StandardCharsets.UTF_8);
      for (int i = 0; i < lines.size(); i++) {
        if (lines.get(i).isBlank()) {
          continue;
        }
        String where = f + ":" + (i + 1);
        JsonNode n;
        try {
          n = JSON.readTree(lines.get(i));
        } catch (IOException e) {
          throw new IllegalArgumentException(where + ": not JSON: " + e.getMessage());
        }
        h.accept(n, where);
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + f, e);
    }
  }

  private static List<Path> jsonl(Path dir) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.toString().endsWith(".jsonl")).sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot list " + dir, e);
    }
  }
}
