package org.paxoscp.cli;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import org.paxoscp.config.KeyFiles;
import picocli.CommandLine;

/** Runs commands with captured output, in the test thread or in the background. */
final class CommandRun {
  private final StringWriter out = new StringWriter();
  private final StringWriter err = new StringWriter();
  private final CommandLine cl;

  private CommandRun(Object command) {
    cl = new CommandLine(command);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
  }

  /** The result of a finished command. */
  record Result(int code, String out, String err) {}

  static Result run(Object command, String... args) {
    CommandRun r = new CommandRun(command);
    int code = r.cl.execute(args);
    return new Result(code, r.out(), r.err());
  }

  /** A shell reading {@code lines} as its input (no prompt). */
  static Result shell(List<String> lines, String... args) {
    String input = lines.stream().map(l -> l + "\n").collect(Collectors.joining());
    return run(new ShellCommand(new ByteArrayInputStream(input.getBytes(StandardCharsets.UTF_8)),
        false), args);
  }

  /** Starts a long-running command on a thread of its own. */
  static CommandRun background(Object command, String... args) {
    CommandRun r = new CommandRun(command);
    r.exit = CompletableFuture.supplyAsync(() -> r.cl.execute(args));
    return r;
  }

  private CompletableFuture<Integer> exit;

  CompletableFuture<Integer> exit() {
    return exit;
  }

  String out() {
    return out.toString();
  }

  String err() {
    return err.toString();
  }

  /** A UDP port on loopback that was free a moment ago. */
  static int freeUdpPort() {
    try (DatagramSocket s = new DatagramSocket(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0))) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** A random 32-byte datagram key, hex. */
  static String key() {
    byte[] k = new byte[32];
    new java.security.SecureRandom().nextBytes(k);
    return HexFormat.of().formatHex(k);
  }

  /**
   * Writes {@code props} as a properties file readable by its owner only, as the product writes
   * files that hold the key (readers refuse others).
   */
  static Path write(Path file, Map<String, String> props) {
    KeyFiles.writePrivate(file, props, null);
    return file;
  }
}
