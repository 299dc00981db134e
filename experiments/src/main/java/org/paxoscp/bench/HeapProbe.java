package org.paxoscp.bench;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Measures another JVM's live heap with the JDK's {@code jcmd}: {@code GC.run} (a full
 * collection: {@code System.gc()}, which the services' serial collector honours), then {@code
 * GC.heap_info}, whose generation lines ({@code def new generation total 78656K, used 2103K},
 * {@code tenured generation ...}, or one {@code garbage-first heap ...} line) are summed. Metaspace
 * is not heap and is left out.
 *
 * <p>{@code jcmd} is taken from the directory of this JVM's own {@code java} binary (the services
 * run on the same JDK). Stateless; each call blocks for at most {@link #TIMEOUT}.
 */
public final class HeapProbe {
  static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final Pattern GENERATION =
      Pattern.compile("total\\s+(\\d+)K,\\s+used\\s+(\\d+)K");

  private final Path jcmd;

  /** A probe with this JDK's {@code jcmd}. */
  public HeapProbe() {
    Path java = ProcessHandle.current().info().command().map(Path::of)
        .orElse(Path.of(System.getProperty("java.home"), "bin", "java"));
    this.jcmd = java.resolveSibling("jcmd");
    if (!Files.isExecutable(jcmd)) {
      throw new IllegalStateException("no jcmd next to " + java + ": a JDK (not a JRE) is "
          + "needed to measure the services' heap");
    }
  }

  /** What one measurement found: heap used after a full GC and the heap's committed size. */
  public record Heap(long usedBytes, long committedBytes) {
    public double usedMb() {
      return usedBytes / (1024.0 * 1024.0);
    }
  }

  /**
   * Runs a full GC in process {@code pid} and reads its heap.
   *
   * @throws IllegalStateException if jcmd fails or its output has no heap lines
   */
  public Heap liveHeap(long pid) {
    jcmd(pid, "GC.run");
    return parseHeapInfo(jcmd(pid, "GC.heap_info"));
  }

  /**
   * Writes the first {@code lines} lines of {@code jcmd PID GC.class_histogram} (itself after a
   * full GC: live objects only) to {@code file}.
   */
  public void classHistogram(long pid, Path file, int lines) {
    String out = jcmd(pid, "GC.class_histogram");
    List<String> all = out.lines().toList();
    StringBuilder b = new StringBuilder();
    for (int i = 0; i < Math.min(lines, all.size()); i++) {
      b.append(all.get(i)).append('\n');
    }
    // The last line is the total.
    if (all.size() > lines) {
      b.append("...\n").append(all.get(all.size() - 1)).append('\n');
    }
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, b, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * Sums {@code used} and {@code total} over the generation lines of {@code GC.heap_info}.
   *
   * @throws IllegalStateException if there is none
   */
  static Heap parseHeapInfo(String out) {
    long used = 0;
    long total = 0;
    boolean found = false;
    for (String line : out.lines().toList()) {
      String t = line.trim();
      if (t.startsWith("Metaspace") || t.startsWith("class space")) {
        continue;
      }
      Matcher m = GENERATION.matcher(t);
      if (m.find()) {
        total += Long.parseLong(m.group(1)) * 1024;
        used += Long.parseLong(m.group(2)) * 1024;
        found = true;
      }
    }
    if (!found) {
      throw new IllegalStateException("no heap lines in jcmd GC.heap_info output: " + out);
    }
    return new Heap(used, total);
  }

  private String jcmd(long pid, String command) {
    Path out = null;
    try {
      // Output to a file, not a pipe, so that a hung jcmd cannot outlive the timeout.
      out = Files.createTempFile("paxoscp-jcmd-", ".txt");
      Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), command)
          .redirectErrorStream(true).redirectOutput(out.toFile()).start();
      p.getOutputStream().close();
      if (!p.waitFor(TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("jcmd " + pid + " " + command + " took over " + TIMEOUT);
      }
      String s = Files.readString(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException("jcmd " + pid + " " + command + " exited with "
            + p.exitValue() + ": " + s.strip());
      }
      return s;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + jcmd, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    } finally {
      if (out != null) {
        try {
          Files.deleteIfExists(out);
        } catch (IOException e) {
          // a temporary file left behind; nothing to do
        }
      }
    }
  }
}
