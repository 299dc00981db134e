package org.paxoscp.cli;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import org.paxoscp.client.CommitProtocol;
import org.paxoscp.client.CommitResult;
import org.paxoscp.client.InvalidArgumentException;
import org.paxoscp.client.MultiTransaction;
import org.paxoscp.client.OutcomeUnknownException;
import org.paxoscp.client.Transaction;
import org.paxoscp.client.TransactionAbortedException;
import org.paxoscp.client.TransactionTooLargeException;
import org.paxoscp.client.TxnClient;
import org.paxoscp.client.UnavailableException;
import org.paxoscp.client.UpdateRefusedException;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.wal.Updates;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code paxoscp shell}: an interactive prompt against a running cluster. One transaction at a
 * time: {@code begin <group>} (or {@code begin <group>,<group>,...} for a transaction across
 * groups, whose keys are then written {@code group:key}), then {@code get}, {@code scan},
 * {@code put}, {@code delete}, {@code add} (a counter), {@code sadd} and {@code srem} (a
 * counting set), then {@code commit} or {@code abort}. Reads commands line by line from standard
 * input (piped input works too; the prompt is shown only on a terminal) and answers in plain
 * words; a failed command prints a one-line error and the shell goes on. Keys and values are
 * UTF-8 strings; {@code get} and {@code scan} show a counter as its number (it is stored as
 * decimal text) and a counting set as the elements present, {@code {a, b}}.
 *
 * <p>Exit codes: 0 at {@code quit}, {@code exit} or end of input; 1 the client could not start;
 * 2 usage or a bad configuration.
 */
@Command(name = "shell", mixinStandardHelpOptions = true,
    description = "An interactive prompt for transactions against a running cluster "
        + "(begin, get, scan, put, delete, add, sadd, srem, commit, abort, settle, status).",
    footer = "%nStart a cluster with `./paxoscp cluster`; it prints the command to connect."
        + "%nExplained in docs/running.md.")
public final class ShellCommand implements Callable<Integer> {

  private static final String HELP = String.join(System.lineSeparator(),
      "  begin <group>        start a transaction on an entity group",
      "  begin <g1>,<g2>,...  start a transaction across groups; keys are then <group>:<key>",
      "  get <key>            read a key (at the transaction's read position, or its own write);",
      "                       a counter prints as its number, a counting set as {elem, ...}",
      "  scan <from> <to> [n] list keys from <from> up to (not including) <to>, as get prints",
      "                       them, own writes included; at most n (default "
          + Session.SCAN_LIMIT + ")",
      "  scan <prefix>* [n]   list the keys that start with <prefix> (* alone: the whole group)",
      "  put <key> <value>    buffer a write; the value is the rest of the line",
      "  delete <key>         buffer a delete",
      "  add <key> <delta>    buffer an add to a counter (no value counts as 0); it does not",
      "                       read the key, so concurrent adds do not conflict",
      "  sadd <key> <elem>    buffer one more count of an element of a counting set (the rest",
      "                       of the line); an element is present while its count is above 0",
      "  srem <key> <elem>    buffer one count less of an element of a counting set",
      "  commit               commit the transaction (a read-only one commits at once)",
      "  abort                discard the transaction; nothing is written",
      "  settle               decide the last unknown outcome now (needs a majority of DCs)",
      "  status               home DC, protocol, the open transaction, session positions",
      "  help                 this list",
      "  quit, exit           leave (an open transaction is aborted)");

  @Spec
  CommandSpec spec;

  @Mixin
  SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

  @Option(names = "--dc", paramLabel = "DC",
      description = "The client's home DC (default: the first DC of the cluster).")
  String dc;

  @Option(names = "--protocol", defaultValue = "cp", paramLabel = "cp|basic|leader",
      description = "Commit protocol: cp (Paxos-CP, default), basic (basic Paxos) or leader "
          + "(leader combination).")
  String protocolName;

  @Option(names = "--verbose",
      description = "Log the client's start-up and progress on stderr (default: warnings "
          + "only, so that the log does not interleave with the prompt).")
  boolean verbose;

  private final InputStream in;
  private final boolean interactive;

  /** A shell on standard input; prompts when it runs on a terminal. */
  public ShellCommand() {
    this(System.in, System.console() != null);
  }

  ShellCommand(InputStream in, boolean interactive) {
    this.in = in;
    this.interactive = interactive;
  }

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    PrintWriter err = spec.commandLine().getErr();
    if (!verbose && System.getProperty("org.slf4j.simpleLogger.log.org.paxoscp") == null) {
      // slf4j-simple reads its levels once, when the first logger is made: here, before the
      // client exists. A system property overrides simplelogger.properties; --log-level
      // sets one first.
      System.setProperty("org.slf4j.simpleLogger.log.org.paxoscp", "warn");
    }
    ClusterConfig cluster;
    CommitProtocol protocol;
    String home;
    try {
      protocol = switch (protocolName.toLowerCase(Locale.ROOT)) {
        case "cp" -> CommitProtocol.CP;
        case "basic" -> CommitProtocol.BASIC;
        case "leader" -> CommitProtocol.LEADER;
        default -> throw new IllegalArgumentException("--protocol must be cp, basic or leader, "
            + "was " + protocolName);
      };
      cluster = config.load();
      home = dc == null ? cluster.dcNames().get(0) : dc;
      if (!cluster.dcNames().contains(home)) {
        throw new IllegalArgumentException("--dc " + home + " is not a DC of the cluster "
            + cluster.dcNames());
      }
    } catch (IllegalArgumentException | UncheckedIOException e) {
      err.println("shell: " + ClusterCommand.oneLine(e));
      return 2;
    }
    TxnClient client;
    try {
      client = TxnClient.builder(cluster, home, protocol).build();
    } catch (RuntimeException e) {
      err.println("shell: could not start the client: " + ClusterCommand.oneLine(e));
      return 1;
    }
    try (client) {
      Session session = new Session(client, out);
      out.printf("Client of DC %s (DCs %s, %s). Type help for commands.%n", home,
          cluster.dcNames(), modeName(protocol));
      out.flush();
      BufferedReader lines = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8));
      while (true) {
        if (interactive) {
          out.print(session.prompt());
          out.flush();
        }
        String line = lines.readLine();
        if (line == null || !session.execute(line)) {
          break;
        }
        out.flush();
      }
      session.leave();
      out.flush();
      return 0;
    } catch (IOException e) {
      err.println("shell: could not read input: " + ClusterCommand.oneLine(e));
      return 1;
    }
  }

  /** One shell session: the client, the open transaction, and what the shell shows of it. */
  static final class Session {
    private final TxnClient client;
    private final PrintWriter out;
    private Transaction txn;
    /** The open transaction across groups, or null. */
    private MultiTransaction multi;
    /** The groups {@code multi} was begun on, in the order given. */
    private final List<String> multiGroups = new ArrayList<>();
    /** The open transaction's buffered writes in order, each as {@code status} lists it. */
    private final Map<String, String> writes = new LinkedHashMap<>();
    /** The last unknown outcome of a one-group commit, for {@code settle}; or null. */
    private OutcomeUnknownException unknown;
    /** Groups this session began transactions on, for their session positions. */
    private final TreeSet<String> groups = new TreeSet<>();

    Session(TxnClient client, PrintWriter out) {
      this.client = client;
      this.out = out;
    }

    String prompt() {
      if (multi != null) {
        return "paxoscp " + client.homeDc() + " [" + String.join(",", multiGroups) + "]> ";
      }
      return txn == null ? "paxoscp " + client.homeDc() + "> "
          : "paxoscp " + client.homeDc() + " [" + txn.group() + "]> ";
    }

    /** Runs one command line; false when the shell should end. Never throws. */
    boolean execute(String line) {
      String trimmed = line.strip();
      if (trimmed.isEmpty() || trimmed.startsWith("#")) {
        return true;
      }
      String[] parts = trimmed.split("\\s+", 2);
      String cmd = parts[0].toLowerCase(Locale.ROOT);
      String rest = parts.length > 1 ? parts[1] : "";
      try {
        switch (cmd) {
          case "begin" -> begin(oneArg(cmd, rest, "<group>"));
          case "get" -> get(oneArg(cmd, rest, "<key>"));
          case "scan" -> scan(rest);
          case "put" -> put(rest);
          case "delete" -> delete(oneArg(cmd, rest, "<key>"));
          case "add" -> add(rest);
          case "sadd" -> setUpdate(cmd, rest, true);
          case "srem" -> setUpdate(cmd, rest, false);
          case "commit" -> {
            noArg(cmd, rest);
            commit();
          }
          case "abort" -> {
            noArg(cmd, rest);
            abort();
          }
          case "settle" -> {
            noArg(cmd, rest);
            settle();
          }
          case "status" -> {
            noArg(cmd, rest);
            status();
          }
          case "help", "?" -> out.println(HELP);
          case "quit", "exit" -> {
            return false;
          }
          default -> out.println("error: unknown command '" + parts[0] + "'; type help");
        }
      } catch (TransactionAbortedException e) {
        finishIfDone();
        out.println("aborted: " + e.result().reason() + " — run it again");
      } catch (UpdateRefusedException e) {
        finishIfDone();
        // A transaction across groups checks its updates before sending anything (no position).
        out.println("refused: " + e.detail() + " — " + (e.position().isPresent()
            && e.position().getAsLong() > 0 ? "the transaction is in the log at position "
                + e.position().getAsLong() + " but has no effect; " : "") + "nothing was written");
      } catch (OutcomeUnknownException e) {
        finishIfDone();
        unknown = e;
        out.println("outcome unknown: " + e.result().reason() + " — it may or may not be in the "
            + "log" + (e.firstPosition() < 1 ? "" : ", at positions " + e.firstPosition() + ".."
                + e.lastPosition()) + "; type settle to find out (or read what it wrote) before "
            + "running it again");
      } catch (UnavailableException e) {
        finishIfDone();
        out.println("unavailable: " + ClusterCommand.oneLine(e) + " — nothing was written; "
            + "try again later" + (txn != null || multi != null ? " (the transaction is still open)"
          : ""));
      } catch (TransactionTooLargeException e) {
        out.println("too large: " + ClusterCommand.oneLine(e)
            + " (the transaction is still open; abort it or start a smaller one)");
      } catch (InvalidArgumentException | UsageException e) {
        out.println("error: " + ClusterCommand.oneLine(e));
      } catch (RuntimeException e) {
        finishIfDone();
        out.println("error: " + ClusterCommand.oneLine(e));
      }
      return true;
    }

    /** Aborts a transaction left open at the end of the session. */
    void leave() {
      if (txn != null) {
        txn.abort();
        out.println("the open transaction on " + txn.group() + " was aborted");
        clear();
      } else if (multi != null) {
        multi.abort();
        out.println("the open transaction across " + multiGroups + " was aborted");
        clear();
      }
    }

    private void begin(String group) {
      if (txn != null || multi != null) {
        throw new UsageException("a transaction on " + (txn != null ? txn.group()
            : String.join(",", multiGroups)) + " is open; commit or abort it first");
      }
      if (group.contains(",")) {
        beginMulti(group);
        return;
      }
      groups.add(group);
      txn = client.begin(group);
      out.println("began " + txn.txnId() + " on " + group + ", reading at position "
          + txn.readPosition());
    }

    private void beginMulti(String list) {
      List<String> named = new ArrayList<>();
      for (String g : list.split(",")) {
        if (g.isBlank() || named.contains(g.strip())) {
          throw new UsageException("usage: begin <group>,<group>,... (distinct, non-empty names)");
        }
        named.add(g.strip());
      }
      multi = client.beginMulti();
      multiGroups.addAll(named);
      groups.addAll(named);
      out.println("began " + multi.txnId() + " across " + String.join(", ", named)
          + " (coordinator " + new TreeSet<>(named).first() + "); keys are <group>:<key>");
    }

    /** In a transaction across groups, {@code group:key} split in two (checked). */
    private String[] groupKey(String arg) {
      int colon = arg.indexOf(':');
      if (colon <= 0 || colon == arg.length() - 1) {
        throw new UsageException("in a transaction across groups, name keys <group>:<key>, e.g. "
            + multiGroups.get(0) + ":" + arg);
      }
      String g = arg.substring(0, colon);
      if (!multiGroups.contains(g)) {
        throw new UsageException("group " + g + " is not one of this transaction's "
            + multiGroups);
      }
      return new String[] {g, arg.substring(colon + 1)};
    }

    private void get(String key) {
      Optional<byte[]> v;
      if (multi != null) {
        String[] gk = groupKey(key);
        v = multi.get(gk[0], gk[1]);
      } else {
        v = open().get(key);
      }
      out.println(v.map(b -> key + " = " + show(b)).orElse(key + ": (no value)"));
    }

    /**
     * A value as {@code get} and {@code scan} print it: a counting set as the elements present,
     * {@code {a, b}} (its binary form is never UTF-8 text); anything else, a counter's decimal
     * digits included, as UTF-8 text.
     */
    static String show(byte[] value) {
      Optional<java.util.SortedMap<String, Long>> set = Updates.decodeSet(Optional.of(value));
      if (set.isPresent()) {
        return "{" + String.join(", ", Updates.present(set.get())) + "}";
      }
      return new String(value, StandardCharsets.UTF_8);
    }

    /** The entries a scan lists when the command names no limit. */
    static final int SCAN_LIMIT = 100;

    private static final String SCAN_USAGE = "usage: scan <from> <to> [limit] or scan <prefix>* "
        + "[limit]";

    /**
     * {@code scan FROM TO [LIMIT]} or {@code scan PREFIX* [LIMIT]}: one {@code key = value} line
     * per entry, as {@code get} prints it, then a note when the limit left entries unread. In a
     * transaction across groups the bounds (or the prefix) are {@code group:...}, both of one
     * group.
     */
    private void scan(String rest) {
      String[] args = rest.isEmpty() ? new String[0] : rest.split("\\s+");
      boolean prefix = args.length >= 1 && args[0].endsWith("*");
      int bounds = prefix ? 1 : 2;
      if (args.length < bounds || args.length > bounds + 1) {
        throw new UsageException(SCAN_USAGE);
      }
      int limit = SCAN_LIMIT;
      if (args.length == bounds + 1) {
        try {
          limit = Integer.parseInt(args[bounds]);
        } catch (NumberFormatException e) {
          throw new UsageException(SCAN_USAGE + " (the limit is a number, not " + args[bounds]
              + ")");
        }
      }
      String group = null;
      String from = args[0];
      String to = prefix ? null : args[1];
      if (multi != null) {
        String[] gf = groupKey(from);
        group = gf[0];
        from = gf[1];
        if (!prefix) {
          String[] gt = groupKey(to);
          if (!gt[0].equals(group)) {
            throw new UsageException("a scan reads one group: " + args[0] + " and " + args[1]
                + " name two");
          }
          to = gt[1];
        }
      }
      org.paxoscp.client.ScanResult r;
      if (prefix) {
        String p = from.substring(0, from.length() - 1);
        r = multi != null ? multi.scanPrefix(group, p, limit) : open().scanPrefix(p, limit);
      } else {
        r = multi != null ? multi.scan(group, from, to, limit) : open().scan(from, to, limit);
      }
      String shown = group == null ? "" : group + ":";
      for (org.paxoscp.client.ScanResult.Entry e : r.entries()) {
        out.println(shown + e.key() + " = " + show(e.value()));
      }
      if (r.entries().isEmpty()) {
        out.println("(no keys in the range)");
      }
      if (r.hasMore()) {
        out.println("(the limit of " + limit + " stopped the scan: more keys follow "
            + shown + r.lastKey().orElseThrow() + ")");
      }
    }

    private void put(String rest) {
      String[] kv = rest.split("\\s+", 2);
      if (kv.length < 2 || kv[0].isEmpty()) {
        throw new UsageException("usage: put <key> <value>");
      }
      if (multi != null) {
        String[] gk = groupKey(kv[0]);
        multi.put(gk[0], gk[1], kv[1]);
      } else {
        open().put(kv[0], kv[1]);
      }
      writes.remove(kv[0]);
      writes.put(kv[0], "put " + kv[0] + " = " + kv[1]);
      out.println("ok, " + kv[0] + " will be " + kv[1] + " once committed");
    }

    private static final String ADD_USAGE = "usage: add <key> <delta>";

    /** {@code add KEY DELTA}: a commutative add to the counter at the key. */
    private void add(String rest) {
      String[] kd = rest.isEmpty() ? new String[0] : rest.split("\\s+");
      if (kd.length != 2) {
        throw new UsageException(ADD_USAGE);
      }
      long delta;
      try {
        delta = Long.parseLong(kd[1]);
      } catch (NumberFormatException e) {
        throw new UsageException(ADD_USAGE + " (the delta is a whole number, not " + kd[1]
            + ")");
      }
      if (multi != null) {
        String[] gk = groupKey(kd[0]);
        multi.add(gk[0], gk[1], delta);
      } else {
        open().add(kd[0], delta);
      }
      noteUpdate(kd[0], "add " + kd[0] + " " + delta);
      out.println("ok, " + delta + " will be added to counter " + kd[0] + " once committed");
    }

    /** {@code sadd KEY ELEM} or {@code srem KEY ELEM}: the element is the rest of the line. */
    private void setUpdate(String cmd, String rest, boolean add) {
      String[] ke = rest.split("\\s+", 2);
      if (ke.length < 2 || ke[0].isEmpty()) {
        throw new UsageException("usage: " + cmd + " <key> <element>");
      }
      if (multi != null) {
        String[] gk = groupKey(ke[0]);
        if (add) {
          multi.setAdd(gk[0], gk[1], ke[1]);
        } else {
          multi.setRemove(gk[0], gk[1], ke[1]);
        }
      } else if (add) {
        open().setAdd(ke[0], ke[1]);
      } else {
        open().setRemove(ke[0], ke[1]);
      }
      noteUpdate(ke[0], cmd + " " + ke[0] + " " + ke[1]);
      out.println("ok, one count " + (add ? "more" : "less") + " of " + ke[1] + " in set "
          + ke[0] + " once committed");
    }

    /** Lists an update of {@code key} after the key's earlier writes in this transaction. */
    private void noteUpdate(String key, String what) {
      String before = writes.remove(key);
      writes.put(key, before == null ? what : before + ", " + what);
    }

    private void delete(String key) {
      if (multi != null) {
        String[] gk = groupKey(key);
        multi.delete(gk[0], gk[1]);
      } else {
        open().delete(key);
      }
      writes.remove(key);
      writes.put(key, "delete " + key);
      out.println("ok, " + key + " will be deleted once committed");
    }

    private void settle() {
      if (unknown == null) {
        out.println("error: no unknown outcome to settle");
        return;
      }
      OutcomeUnknownException e = unknown;
      unknown = null;
      CommitResult r = client.settle(e);
      out.println("committed at position " + r.position() + " (settled)");
    }

    private void commit() {
      if (multi != null) {
        MultiTransaction m = multi;
        boolean readOnly = writes.isEmpty();
        CommitResult r = m.commit();
        int joined = m.groups().size();
        clear();
        if (readOnly) {
          out.println("committed (read-only" + (joined > 1 ? " across " + joined
              + " groups, validated" : "") + ")");
        } else if (joined > 1) {
          // (The coordinator's PREPARE in one round, its DECIDE below cluster version 6.)
          out.println("committed across " + m.groups() + " (at position " + r.position()
              + " of " + r.group() + ")");
        } else {
          out.println("committed at position " + r.position() + " of " + r.group());
        }
        return;
      }
      Transaction t = open();
      boolean readOnly = writes.isEmpty();
      CommitResult r = t.commit();
      clear();
      if (readOnly) {
        out.println("committed (read-only, at read position " + r.position() + ")");
      } else {
        out.println("committed at position " + r.position() + " (promotions " + r.promotions()
            + (r.combined() ? ", combined with other transactions" : "") + ")");
      }
    }

    private void abort() {
      if (multi != null) {
        multi.abort();
        clear();
        out.println("aborted; nothing was written");
        return;
      }
      Transaction t = open();
      t.abort();
      clear();
      out.println("aborted; nothing was written");
    }

    private void status() {
      out.println("home DC " + client.homeDc() + ", protocol "
          + modeName(client.protocol()));
      if (multi != null) {
        out.println("transaction " + multi.txnId() + " across " + multiGroups + ", joined "
            + multi.groups() + ", " + writes.size() + " buffered write"
            + (writes.size() == 1 ? "" : "s"));
        writes.values().forEach(w -> out.println("  " + w));
      } else if (txn == null) {
        out.println("no open transaction");
      } else {
        out.println("transaction " + txn.txnId() + " on " + txn.group() + ", read position "
            + txn.readPosition() + ", " + writes.size() + " buffered write"
            + (writes.size() == 1 ? "" : "s"));
        writes.values().forEach(w -> out.println("  " + w));
      }
      if (groups.isEmpty()) {
        out.println("session positions: none yet");
      } else {
        StringBuilder b = new StringBuilder("session positions:");
        for (String g : groups) {
          b.append(' ').append(g).append('=').append(client.sessionPosition(g));
        }
        out.println(b);
      }
    }

    private Transaction open() {
      if (txn == null) {
        throw new UsageException("no open transaction; begin <group> first");
      }
      return txn;
    }

    /** Forgets the transaction when the failed call finished it. */
    private void finishIfDone() {
      if ((txn != null && !txn.isActive()) || (multi != null && !multi.isActive())) {
        clear();
      }
    }

    private void clear() {
      txn = null;
      multi = null;
      multiGroups.clear();
      writes.clear();
    }

    private static String oneArg(String cmd, String rest, String what) {
      if (rest.isEmpty() || rest.split("\\s+").length != 1) {
        throw new UsageException("usage: " + cmd + " " + what);
      }
      return rest;
    }

    private static void noArg(String cmd, String rest) {
      if (!rest.isEmpty()) {
        throw new UsageException("usage: " + cmd + " (no arguments)");
      }
    }
  }

  /** A shell command used wrongly; reported, nothing done. */
  static final class UsageException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    UsageException(String message) {
      super(message);
    }
  }

  private static String modeName(CommitProtocol p) {
    return switch (p) {
      case BASIC -> "basic Paxos";
      case CP -> "Paxos-CP";
      case LEADER -> "leader combination";
    };
  }
}
