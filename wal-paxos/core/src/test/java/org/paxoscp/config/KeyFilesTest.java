package org.paxoscp.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.paxoscp.config.KeyFiles.Check;
import org.paxoscp.config.KeyFiles.ExposedKeyFileException;

/**
 * Key files: a reader refuses one that group or others may read (or warns, when told to), does
 * not check files without a key; the writer makes them owner-only and never writes through a
 * link planted at the path.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class KeyFilesTest {
  private static final String KEY = "00112233445566778899aabbccddeeff";

  @TempDir
  Path dir;

  @BeforeEach
  void posixOnly() {
    Assumptions.assumeTrue(FileSystems.getDefault().supportedFileAttributeViews()
        .contains("posix"), "modes exist on POSIX file systems only");
  }

  /** A properties file with {@code lines}, given mode {@code mode} (e.g. rw-r--r--). */
  private Path file(String name, String mode, String... lines) throws IOException {
    Path f = dir.resolve(name);
    Files.write(f, List.of(lines), StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString(mode));
    return f;
  }

  private static String mode(Path f) throws IOException {
    return PosixFilePermissions.toString(Files.getPosixFilePermissions(f,
        LinkOption.NOFOLLOW_LINKS));
  }

  @Test
  void aKeyFileOthersMayReadIsRefusedNamingTheFileItsModeAndChmod() throws IOException {
    Path f = file("cluster.properties", "rw-r--r--", "paxoscp.dcs=V1", "paxoscp.key=" + KEY);
    ExposedKeyFileException e = assertThrows(ExposedKeyFileException.class,
        () -> KeyFiles.read(f, Check.REFUSE, w -> { }));
    assertTrue(e.getMessage().contains("chmod 600 " + f), e.getMessage());
    assertTrue(e.getMessage().contains("0644"), e.getMessage());
    assertTrue(e.getMessage().contains(KeyFiles.CHECK + "=warn"), e.getMessage());
    assertEquals(f.toString(), e.file());
    assertEquals("0644", e.mode());
    // Every reader treats it as a bad configuration.
    assertTrue(e instanceof IllegalArgumentException);
  }

  @Test
  void groupOrOthersReadingAloneIsEnoughAndEitherKeyCounts() throws IOException {
    Path group = file("group.properties", "rw-r-----", "paxoscp.key=" + KEY);
    assertEquals("0640", assertThrows(ExposedKeyFileException.class,
        () -> KeyFiles.read(group, Check.REFUSE, w -> { })).mode());
    Path others = file("others.properties", "rw----r--", "paxoscp.key=" + KEY);
    assertEquals("0604", assertThrows(ExposedKeyFileException.class,
        () -> KeyFiles.read(others, Check.REFUSE, w -> { })).mode());
    Path accept = file("accept.properties", "rw-r--r--", "paxoscp.key.accept=" + KEY);
    assertThrows(ExposedKeyFileException.class,
        () -> KeyFiles.read(accept, Check.REFUSE, w -> { }));
  }

  @Test
  void anOwnerOnlyKeyFileIsRead() throws IOException {
    Path f = file("cluster.properties", "rw-------", "paxoscp.dcs=V1", "paxoscp.key=" + KEY);
    assertEquals(Map.of("paxoscp.dcs", "V1", "paxoscp.key", KEY),
        KeyFiles.read(f, Check.REFUSE, w -> { }));
    // Others may execute or write it: not this check's business (it guards the key's secrecy).
    Path ro = file("readonly.properties", "r--------", "paxoscp.key=" + KEY);
    assertEquals(KEY, KeyFiles.read(ro, Check.REFUSE, w -> { }).get("paxoscp.key"));
  }

  @Test
  void aFileWithoutAKeyIsNotChecked() throws IOException {
    Path f = file("settings.properties", "rw-r--r--", "paxoscp.dcs=V1",
        "paxoscp.key.file.check.not.a.key=1");
    assertEquals("V1", KeyFiles.read(f, Check.REFUSE, w -> { }).get("paxoscp.dcs"));
    Path blank = file("blank.properties", "rw-r--r--", "paxoscp.key=");
    assertEquals("", KeyFiles.read(blank, Check.REFUSE, w -> { }).get("paxoscp.key"));
  }

  @Test
  void warnModeReadsTheFileAndWarnsLoudly() throws IOException {
    Path f = file("cluster.properties", "rw-r--r--", "paxoscp.key=" + KEY);
    List<String> warnings = new ArrayList<>();
    assertEquals(KEY, KeyFiles.read(f, Check.WARN, warnings::add).get("paxoscp.key"));
    assertEquals(1, warnings.size(), warnings.toString());
    assertTrue(warnings.get(0).startsWith("INSECURE KEY FILE: " + f), warnings.get(0));
    assertTrue(warnings.get(0).contains("chmod 600 " + f), warnings.get(0));
  }

  @Test
  void warnModeFromTheSystemPropertyLogsAWarning() throws IOException {
    Path f = file("cluster.properties", "rw-r--r--", "paxoscp.key=" + KEY);
    PrintStream err = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    String before = System.getProperty(KeyFiles.CHECK);
    System.setProperty(KeyFiles.CHECK, "warn");
    try {
      // slf4j-simple (the tests' binding) writes to whatever System.err is at the time.
      System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
      assertEquals(KEY, KeyFiles.read(f).get("paxoscp.key"));
    } finally {
      System.setErr(err);
      if (before == null) {
        System.clearProperty(KeyFiles.CHECK);
      } else {
        System.setProperty(KeyFiles.CHECK, before);
      }
    }
    String log = captured.toString(StandardCharsets.UTF_8);
    assertTrue(log.contains("WARN") && log.contains("INSECURE KEY FILE"), log);
  }

  @Test
  void theCheckComesFromTheSystemPropertyThenTheEnvironment() {
    Map<String, String> none = Map.of();
    assertEquals(Check.REFUSE, KeyFiles.configuredCheck(none::get, none::get));
    Map<String, String> warn = Map.of(KeyFiles.CHECK, "warn");
    assertEquals(Check.WARN, KeyFiles.configuredCheck(warn::get, none::get));
    assertEquals(Check.WARN, KeyFiles.configuredCheck(none::get, warn::get));
    Map<String, String> shell = Map.of(KeyFiles.CHECK_ENV, "WARN");
    assertEquals(Check.WARN, KeyFiles.configuredCheck(none::get, shell::get));
    Map<String, String> refuse = Map.of(KeyFiles.CHECK, "refuse");
    assertEquals(Check.REFUSE, KeyFiles.configuredCheck(refuse::get, shell::get),
        "the system property wins");
    Map<String, String> typo = Map.of(KeyFiles.CHECK, "warning");
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> KeyFiles.configuredCheck(typo::get, none::get));
    assertTrue(e.getMessage().contains(KeyFiles.CHECK) && e.getMessage().contains("warning"),
        e.getMessage());
  }

  @Test
  void writePrivateMakesAnOwnerOnlyFileThatReadsBack() throws IOException {
    Path f = dir.resolve("conf").resolve("cluster.properties");
    Map<String, String> props = new LinkedHashMap<>();
    props.put("paxoscp.dcs", "V1,V2");
    props.put("paxoscp.key", KEY);
    props.put("paxoscp.dc.V1.endpoints", "10.0.0.1:7101");
    props.put("odd", " lead=ing: #spaces\\ and ünïcode ");
    KeyFiles.writePrivate(f, props, "a comment");
    assertEquals("rw-------", mode(f));
    assertEquals(props, KeyFiles.read(f, Check.REFUSE, w -> { }));

    // An existing file others may read is replaced by an owner-only one.
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-rw-rw-"));
    KeyFiles.writePrivate(f, Map.of("paxoscp.key", KEY), null);
    assertEquals("rw-------", mode(f));
    assertEquals(Map.of("paxoscp.key", KEY), KeyFiles.read(f, Check.REFUSE, w -> { }));
  }

  @Test
  void writePrivateNeverWritesThroughALinkPlantedAtThePath() throws IOException {
    Path victim = file("victim.txt", "rw-r--r--", "the attacker wants the key written here");
    Path f = dir.resolve("cluster.properties");
    Files.createSymbolicLink(f, victim);

    KeyFiles.writePrivate(f, Map.of("paxoscp.key", KEY), null);

    assertFalse(Files.isSymbolicLink(f), "the link was replaced");
    assertEquals("rw-------", mode(f));
    assertEquals(KEY, KeyFiles.read(f, Check.REFUSE, w -> { }).get("paxoscp.key"));
    assertEquals(List.of("the attacker wants the key written here"),
        Files.readAllLines(victim, StandardCharsets.UTF_8), "nothing went through the link");
    assertEquals("rw-r--r--", mode(victim));

    // A dangling link: its target is not created.
    Path nowhere = dir.resolve("nowhere");
    Path g = dir.resolve("service.properties");
    Files.createSymbolicLink(g, nowhere);
    KeyFiles.writePrivate(g, Map.of("paxoscp.key", KEY), null);
    assertFalse(Files.exists(nowhere, LinkOption.NOFOLLOW_LINKS));
    assertFalse(Files.isSymbolicLink(g));
    assertEquals("rw-------", mode(g));
  }

  @Test
  void aFailedWriteNamesTheFile() throws IOException {
    Path notADir = file("plain", "rw-------", "x=1");
    Path f = notADir.resolve("cluster.properties");
    UncheckedIOException e = assertThrows(UncheckedIOException.class,
        () -> KeyFiles.writePrivate(f, Map.of("paxoscp.key", KEY), null));
    assertTrue(e.getMessage().contains(f.toString()), e.getMessage());
  }

  @Test
  void modesInOctal() {
    assertEquals("0600", KeyFiles.octal(PosixFilePermissions.fromString("rw-------")));
    assertEquals("0755", KeyFiles.octal(PosixFilePermissions.fromString("rwxr-xr-x")));
    assertEquals("0000", KeyFiles.octal(PosixFilePermissions.fromString("---------")));
  }
}
