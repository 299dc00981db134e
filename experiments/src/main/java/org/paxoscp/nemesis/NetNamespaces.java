package org.paxoscp.nemesis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The network-namespace mode: each DC's service processes run in a network namespace of their
 * own, with one address on a veth link whose other end is attached to a bridge in the root
 * namespace (where the nemesis, its clients and the fault proxies live, on the bridge's
 * address). Datagrams between DCs then cross real network interfaces, and a partition is the DC's
 * link taken down. Needs root and {@code ip}; everything is removed again by {@link #close()}.
 *
 * <p>Names are derived from this process' id, so that two runs on one machine do not collide.
 */
final class NetNamespaces implements AutoCloseable {
  private final String bridge;
  private final String subnet;
  private final Map<String, String> namespaces = new LinkedHashMap<>();
  private final Map<String, String> rootLinks = new LinkedHashMap<>();
  private final Map<String, String> addresses = new LinkedHashMap<>();
  private final List<String> created = new ArrayList<>();
  private boolean bridgeCreated;

  /** Whether this machine can do it: root, and {@code ip netns} works. */
  static String unavailableReason() {
    if (!"root".equals(System.getProperty("user.name"))) {
      return "the network-namespace mode needs root";
    }
    try {
      Process p = new ProcessBuilder("ip", "netns", "list").redirectErrorStream(true).start();
      if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) {
        return "`ip netns list` failed";
      }
    } catch (IOException e) {
      return "no `ip` command: " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
    return null;
  }

  NetNamespaces(List<String> dcs) {
    long id = ProcessHandle.current().pid() % 10_000;
    this.bridge = "pxnbr" + id;
    this.subnet = "10.213." + (id % 250) + ".";
    for (int i = 0; i < dcs.size(); i++) {
      namespaces.put(dcs.get(i), "paxoscp-nemesis-" + id + "-" + i);
      rootLinks.put(dcs.get(i), "pxn" + id + "r" + i);
      addresses.put(dcs.get(i), subnet + (10 + i));
    }
  }

  /** Creates the bridge, the namespaces and the links, all up. */
  void create() {
    ip("link", "add", bridge, "type", "bridge");
    bridgeCreated = true;
    ip("addr", "add", rootAddress() + "/24", "dev", bridge);
    ip("link", "set", bridge, "up");
    int i = 0;
    for (var e : namespaces.entrySet()) {
      String dc = e.getKey();
      String ns = e.getValue();
      String peer = "pxn" + (ProcessHandle.current().pid() % 10_000) + "p" + i++;
      ip("netns", "add", ns);
      created.add(ns);
      ip("link", "add", rootLinks.get(dc), "type", "veth", "peer", "name", peer);
      ip("link", "set", peer, "netns", ns);
      ip("link", "set", rootLinks.get(dc), "master", bridge);
      ip("link", "set", rootLinks.get(dc), "up");
      ip("netns", "exec", ns, "ip", "link", "set", "lo", "up");
      ip("netns", "exec", ns, "ip", "addr", "add", addresses.get(dc) + "/24", "dev", peer);
      ip("netns", "exec", ns, "ip", "link", "set", peer, "up");
    }
  }

  /** The nemesis' address on the bridge (the proxies listen there). */
  String rootAddress() {
    return subnet + "1";
  }

  /** DC {@code dc}'s address inside its namespace. */
  String address(String dc) {
    return addresses.get(dc);
  }

  /** The command prefix that runs a program in DC {@code dc}'s namespace. */
  List<String> exec(String dc) {
    return List.of("ip", "netns", "exec", namespaces.get(dc));
  }

  /** Takes DC {@code dc}'s link down: it can reach no one, and no one reaches it. */
  void cut(String dc) {
    ip("link", "set", rootLinks.get(dc), "down");
  }

  /** Takes every DC's link up again. */
  void healAll() {
    for (String link : rootLinks.values()) {
      ip("link", "set", link, "up");
    }
  }

  @Override
  public void close() {
    for (String ns : created) {
      ipQuietly("netns", "del", ns); // removes the veth pair with it
    }
    created.clear();
    if (bridgeCreated) {
      ipQuietly("link", "del", bridge);
      bridgeCreated = false;
    }
  }

  private static void ip(String... args) {
    String out = run(args);
    if (out != null) {
      throw new IllegalStateException("ip " + String.join(" ", args) + " failed: " + out);
    }
  }

  private static void ipQuietly(String... args) {
    run(args);
  }

  /** Null on success, else the command's output. */
  private static String run(String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add("ip");
    cmd.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(20, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "timed out";
      }
      return p.exitValue() == 0 ? null : out.trim();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }
}
