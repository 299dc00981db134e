package org.paxoscp.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every {@code ```java} block of the README and of docs/*.md compiles against the project's
 * jars, as a newcomer would paste it.
 *
 * <p>A block that starts with its own {@code import} lines is a complete example: it compiles
 * with exactly those imports, as the body of a method that may throw, so a missing import in the
 * docs fails here. Any other block is a fragment that continues the page's examples: it compiles
 * with the client's package and the JDK's usual ones imported, and with {@code client} (a
 * {@code TxnClient}) and {@code cluster} (a {@code ClusterConfig}) in scope, as the text says.
 */
class DocExamplesCompileTest {
  /** What a fragment may use without declaring it. */
  private static final String FRAGMENT_IMPORTS = String.join("\n",
      "import java.nio.charset.StandardCharsets;",
      "import java.nio.file.Path;",
      "import java.time.Duration;",
      "import java.util.*;",
      "import java.util.concurrent.*;",
      "import org.paxoscp.client.*;",
      "import org.paxoscp.transport.ClusterConfig;");

  /** One {@code ```java} block: where it is, and its text. */
  record Block(Path page, int line, String text) {
    String name() {
      return page.getFileName() + ":" + line;
    }

    boolean complete() {
      return text.stripLeading().startsWith("import ");
    }
  }

  static Path root() {
    Path here = Path.of("").toAbsolutePath();
    return Files.isRegularFile(here.resolve("README.md")) ? here : here.getParent();
  }

  static List<Block> blocks() {
    List<Path> pages = new ArrayList<>();
    pages.add(root().resolve("README.md"));
    try (Stream<Path> docs = Files.list(root().resolve("docs"))) {
      docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(pages::add);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Block> out = new ArrayList<>();
    for (Path page : pages) {
      List<String> lines;
      try {
        lines = Files.readAllLines(page);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      for (int i = 0; i < lines.size(); i++) {
        if (!lines.get(i).strip().equals("```java")) {
          continue;
        }
        int start = i + 1;
        StringBuilder text = new StringBuilder();
        for (i = start; i < lines.size() && !lines.get(i).strip().startsWith("```"); i++) {
          text.append(lines.get(i)).append('\n');
        }
        out.add(new Block(page, start, text.toString()));
      }
    }
    return out;
  }

  /** The source of the class that holds {@code b} as the body of a method. */
  static String source(Block b, String className) {
    StringBuilder imports = new StringBuilder();
    StringBuilder body = new StringBuilder();
    for (String line : b.text().split("\n", -1)) {
      if (line.startsWith("import ")) {
        imports.append(line).append('\n');
      } else {
        body.append(line).append('\n');
      }
    }
    if (b.complete()) {
      return imports + "class " + className + " {\n  void example() throws Exception {\n"
          + body + "  }\n}\n";
    }
    return FRAGMENT_IMPORTS + "\n" + imports + "class " + className + " {\n"
        + "  static TxnClient client;\n  static ClusterConfig cluster;\n"
        + "  void example() throws Exception {\n" + body + "  }\n}\n";
  }

  @Test
  void thePagesHaveExamplesAndTheFirstOnesAreComplete() {
    List<Block> all = blocks();
    assertTrue(all.size() >= 8, "found only " + all.size() + " java blocks");
    Block readme = all.stream().filter(b -> b.page().getFileName().toString().equals("README.md"))
        .findFirst().orElseThrow();
    assertTrue(readme.complete(), "the README's example must show its imports");
    Block client = all.stream().filter(b -> b.page().getFileName().toString().equals("client.md"))
        .findFirst().orElseThrow();
    assertTrue(client.complete(), "client.md's first example must show its imports");
  }

  @Test
  void aBlockMissingAnImportFailsToCompile(@TempDir Path out) {
    // The check itself: a complete example without the import it needs does not compile.
    Block broken = new Block(Path.of("planted.md"), 1,
        "import org.paxoscp.client.TxnClient;\nClusterConfig c = null;\n");
    assertTrue(compile(broken, out).contains("cannot find symbol"));
  }

  @TestFactory
  Stream<DynamicTest> everyJavaBlockCompiles(@TempDir Path out) {
    return blocks().stream().map(b -> DynamicTest.dynamicTest(b.name(),
        () -> assertEquals("", compile(b, out), b.name() + "\n" + source(b, "Example"))));
  }

  /** Compiles {@code b}; the compiler's errors, empty when it compiled. */
  static String compile(Block b, Path out) {
    JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
    assertNotNull(javac, "no system Java compiler (a JRE, not a JDK?)");
    String className = "Example";
    JavaFileObject file = new SimpleJavaFileObject(URI.create("string:///" + className
        + ".java"), JavaFileObject.Kind.SOURCE) {
      @Override
      public CharSequence getCharContent(boolean ignoreEncodingErrors) {
        return source(b, className);
      }
    };
    DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
    StringWriter log = new StringWriter();
    String classpath = System.getProperty("surefire.test.class.path",
        System.getProperty("java.class.path"));
    try (StandardJavaFileManager files = javac.getStandardFileManager(diagnostics, null, null)) {
      boolean ok = javac.getTask(log, files, diagnostics, List.of("-classpath", classpath, "-d",
          out.toString(), "-proc:none", "-Xlint:none"), null, List.of(file)).call();
      if (ok) {
        return "";
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    StringBuilder errors = new StringBuilder(log.toString());
    diagnostics.getDiagnostics().forEach(d -> errors.append(d).append('\n'));
    return errors.toString();
  }
}
