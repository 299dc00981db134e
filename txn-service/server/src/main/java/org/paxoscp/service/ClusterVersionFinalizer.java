package org.paxoscp.service;

import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.Message;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.version.ClusterVersion;

/**
 * Raises the cluster version one step at a time ({@code paxoscp cluster-version finalize},
 * docs/upgrading.md). For each step N:
 *
 * <ol>
 *   <li>every service instance of every DC (from discovery or the static endpoints) must answer
 *       and speak N; else nothing is written and the laggards are named;
 *   <li>each DC's row is fenced at N: from then on a process that does not speak N refuses to
 *       start in that DC;
 *   <li>every instance is asked again (one that started between the first question and its DC's
 *       fence is found now); a laggard removes the fences and refuses;
 *   <li>for a step that stops opening wire version 3, it waits until no instance has opened a
 *       request of version 3 for the drain time (every process, clients included, learned the
 *       version before it); if that does not come within the wait, the fences go and the
 *       instances still receiving it are named with who sends it;
 *   <li>each DC's row is raised to N (which clears the fence); its services take it at their next
 *       poll, clients at theirs.
 * </ol>
 *
 * Until a raise nothing a process writes depends on N, so every older build can still take a
 * process's place (going back). A raise that reached some DCs and not others (a DC became
 * unreachable between) is finished by the services of the DCs behind, which take the version
 * their peers run at within a poll interval, or by running the command again (the DCs already
 * raised are skipped). Fences name their attempt, so a copy of a fence or of its removal
 * changes nothing later.
 */
public final class ClusterVersionFinalizer {
  /** One service instance. */
  public record Instance(String dc, InetSocketAddress address) {
    @Override
    public String toString() {
      return dc + " " + address.getHostString() + ":" + address.getPort();
    }
  }

  /** What a run did: the version before and after, and, when it stopped, why. */
  public record Result(int from, int to, List<String> laggards) {
    public boolean complete() {
      return laggards.isEmpty();
    }
  }

  /** How many times an instance that does not answer is asked before it counts as a laggard. */
  static final int ASKS = 3;

  private final UdpTransport transport;
  private final List<String> dcs;
  private final Endpoints endpoints;
  private final Duration timeout;
  private final Duration drain;
  private final Duration drainWait;
  private final PrintWriter out;

  /**
   * @param transport an operator's transport speaking the cluster's current version
   * @param drain how long no instance may have opened wire version 3 before a step that closes it
   * @param drainWait how long to wait for that before giving up
   */
  public ClusterVersionFinalizer(UdpTransport transport, List<String> dcs, Endpoints endpoints,
      Duration timeout, Duration drain, Duration drainWait, PrintWriter out) {
    this.transport = transport;
    this.dcs = List.copyOf(dcs);
    this.endpoints = endpoints;
    this.timeout = timeout;
    this.drain = drain;
    this.drainWait = drainWait;
    this.out = out;
  }

  /**
   * Every instance's answer; null for one that did not answer within the timeout, asked {@value
   * #ASKS} times (a datagram or its answer may be lost, or the instance slow just after a start).
   */
  public Map<Instance, Message.VersionReply> survey() {
    Map<Instance, Message.VersionReply> answers = new LinkedHashMap<>();
    for (String dc : dcs) {
      for (InetSocketAddress a : endpoints.of(dc)) {
        answers.put(new Instance(dc, a), null);
      }
    }
    for (int round = 0; round < ASKS && answers.containsValue(null); round++) {
      Map<Instance, CompletableFuture<Message.VersionReply>> asked = new LinkedHashMap<>();
      answers.forEach((i, r) -> {
        if (r == null) {
          asked.put(i, transport.askVersions(i.dc(), i.address(), timeout));
        }
      });
      asked.forEach((i, f) -> answers.put(i, await(f)));
    }
    return answers;
  }

  /** The highest version a DC's instances report it runs at (0: none answered). */
  private static Map<String, Message.VersionReply> byDc(Map<Instance, Message.VersionReply> s) {
    Map<String, Message.VersionReply> out = new LinkedHashMap<>();
    s.forEach((i, r) -> {
      if (r != null) {
        out.merge(i.dc(), r, (a, b) -> a.active() >= b.active() ? a : b);
      }
    });
    return out;
  }

  /**
   * Raises the cluster to {@code target} one step at a time, or stops at the first step that
   * cannot be taken.
   */
  public Result finalizeTo(int target) {
    Map<Instance, Message.VersionReply> s = survey();
    int current = byDc(s).values().stream().mapToInt(Message.VersionReply::active).min()
        .orElse(0);
    List<String> missing = laggards(s, Math.max(current, 1));
    if (current == 0 || !missing.isEmpty()) {
      return new Result(current, current, missing.isEmpty()
          ? List.of("a DC's services do not know its cluster version yet (a store being "
              + "rebuilt, or peers that have not answered): run the command again later")
          : missing);
    }
    if (target > ClusterVersion.LATEST) {
      return new Result(current, current, List.of("this tool knows cluster versions up to "
          + ClusterVersion.LATEST + ", not " + target));
    }
    int reached = current;
    for (int n = current + 1; n <= target; n++) {
      List<String> why = step(n);
      if (!why.isEmpty()) {
        return new Result(current, reached, why);
      }
      reached = n;
    }
    out.printf("cluster version %s%n", ClusterVersion.describe(reached));
    out.flush();
    return new Result(current, reached, List.of());
  }

  private List<String> step(int n) {
    out.printf("raising to cluster version %s: %s%n", ClusterVersion.describe(n),
        ClusterVersion.of(n).switchesOn());
    out.flush();
    Map<Instance, Message.VersionReply> s = survey();
    List<String> lag = laggards(s, n);
    if (!lag.isEmpty()) {
      return lag;
    }
    Map<String, Message.VersionReply> dcAt = byDc(s);
    Map<String, Integer> fenced = new LinkedHashMap<>();
    List<String> why = new ArrayList<>();
    for (String dc : dcs) {
      Message.VersionReply r = dcAt.get(dc);
      if (r.active() >= n) {
        continue; // raised by an earlier run
      }
      Message.VersionReply a = change(dc, new Message.VersionChange(true, r.attempt(), n));
      if (a != null && !a.detail().isEmpty() && a.fence() == 0) {
        // The survey's attempt count was behind the row's (read at the service's last poll):
        // once more with the row's own, which the refusal carries.
        a = change(dc, new Message.VersionChange(true, a.attempt(), n));
      }
      if (a == null || !a.detail().isEmpty()) {
        why.add("DC " + dc + ": fence not set: " + (a == null ? "no answer" : a.detail()));
        break;
      }
      fenced.put(dc, a.attempt());
    }
    out.printf("  fenced %s at %d%n", fenced.keySet(), n);
    if (why.isEmpty()) {
      why.addAll(laggards(survey(), n));
    }
    if (why.isEmpty() && ClusterVersion.of(n).closesWire3()) {
      why.addAll(drained(n));
    }
    if (why.isEmpty()) {
      // A service that registered during the drain is asked too.
      why.addAll(laggards(survey(), n));
    }
    if (!why.isEmpty()) {
      fenced.forEach((dc, attempt) -> {
        Message.VersionReply a = change(dc, new Message.VersionChange(true, attempt, 0));
        if (a == null || !a.detail().isEmpty()) {
          why.add("DC " + dc + ": fence at " + n + " not removed (" + (a == null ? "no answer"
              : a.detail()) + "): processes that do not speak it cannot start there until "
              + "a run of this command completes");
        }
      });
      return why;
    }
    for (String dc : dcs) {
      Message.VersionReply r = dcAt.get(dc);
      if (r.active() >= n) {
        continue;
      }
      Message.VersionReply a = change(dc, new Message.VersionChange(false, n - 1, n));
      if (a == null || !a.detail().isEmpty()) {
        why.add("DC " + dc + ": not raised to " + n + " (" + (a == null ? "no answer"
            : a.detail()) + "); its services take the version from the DCs raised within a "
            + "poll interval once they reach them, or run the command again");
        return why;
      }
      out.printf("  DC %s at cluster version %d%n", dc, n);
      out.flush();
    }
    // This tool speaks the new version too: its own questions must not look like a laggard's.
    transport.clusterVersion(n);
    return why;
  }

  /** Every instance that does not answer or does not speak {@code n}. */
  private List<String> laggards(Map<Instance, Message.VersionReply> s, int n) {
    List<String> out = new ArrayList<>();
    for (String dc : dcs) {
      if (endpoints.of(dc).isEmpty()) {
        out.add("DC " + dc + ": no service instance known");
      }
    }
    s.forEach((i, r) -> {
      if (r == null) {
        out.add(i + ": no answer (down, or a build from before cluster versions)");
      } else if (r.max() < n) {
        out.add(i + ": speaks cluster versions " + r.min() + "-" + r.max() + ", not " + n);
      }
    });
    return out;
  }

  /**
   * Waits until no instance opened wire version 3 within {@link #drain}; who still does, or
   * who does not speak {@code n} (an instance that started meanwhile).
   */
  private List<String> drained(int n) {
    long deadline = System.nanoTime() + drainWait.toNanos();
    out.printf("  waiting until no service has received wire version 3 for %d s (at most %d s)"
        + "%n", drain.toSeconds(), drainWait.toSeconds());
    out.flush();
    while (true) {
      Map<Instance, Message.VersionReply> s = survey();
      List<String> still = new ArrayList<>(laggards(s, n));
      s.forEach((i, r) -> {
        if (r != null && r.wire3AgoMillis() >= 0 && r.wire3AgoMillis() < drain.toMillis()) {
          still.add(i + ": received wire version 3 " + r.wire3AgoMillis() + " ms ago from "
              + r.wire3From() + " (a process that has not learned the version, or a build "
              + "from before it)");
        }
      });
      if (still.isEmpty() || System.nanoTime() > deadline) {
        return still;
      }
      sleep(Math.min(1000, Math.max(50, drain.toMillis() / 4)));
    }
  }

  private Message.VersionReply change(String dc, Message.VersionChange c) {
    for (InetSocketAddress a : endpoints.of(dc)) {
      try {
        Message m = transport.changeVersion(dc, a, c, timeout).get(timeout.toMillis() + 100,
            TimeUnit.MILLISECONDS);
        if (m instanceof Message.VersionReply r) {
          return r;
        }
      } catch (ExecutionException | TimeoutException e) {
        // The next instance of the DC shares its store.
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }
    return null;
  }

  private Message.VersionReply await(CompletableFuture<Message.VersionReply> f) {
    try {
      return f.get(timeout.toMillis() + 100, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
