package org.paxoscp.store.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * HBase and Hadoop types stay inside {@code org.paxoscp.store.hbase} (docs/architecture.md
 * section 2): the protocol core must not depend on them.
 */
class HBaseTypesConfinedTest {
  private static final Path MAIN = Path.of("src/main/java");
  private static final Path HBASE_PACKAGE = MAIN.resolve("org/paxoscp/store/hbase");

  @Test
  void noHBaseImportsOutsideTheStorePackage() throws IOException {
    assertTrue(Files.isDirectory(MAIN), "run from the module directory: " + MAIN.toAbsolutePath());
    List<String> offenders;
    try (Stream<Path> files = Files.walk(MAIN)) {
      offenders = files.filter(p -> p.toString().endsWith(".java"))
          .filter(p -> !p.startsWith(HBASE_PACKAGE))
          .filter(HBaseTypesConfinedTest::importsHadoop)
          .map(Path::toString)
          .toList();
    }
    assertEquals(List.of(), offenders);
  }

  private static boolean importsHadoop(Path p) {
    try {
      return Files.readAllLines(p).stream().anyMatch(l -> l.startsWith("import org.apache.hadoop.")
          || l.startsWith("import org.apache.hbase.") || l.startsWith("import org.apache.zookeeper."));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
