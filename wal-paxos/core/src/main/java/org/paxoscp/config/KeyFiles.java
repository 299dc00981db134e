package org.paxoscp.config;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Properties files that may hold the cluster's secret key ({@code paxoscp.key},
 * {@code paxoscp.key.accept}): the one reader every service, client and command uses, and the one
 * writer of such files.
 *
 * <p><b>Reading.</b> {@link #read} loads a file and, when it holds a key, checks its POSIX mode:
 * a file that group or others may read is refused with a {@link ExposedKeyFileException} naming
 * the file, its mode and the fix ({@code chmod 600 FILE}) — anyone who can read the key can act
 * as a service (docs/architecture.md section 13). The system property or environment variable
 * {@value #CHECK} (or the environment variable {@value #CHECK_ENV}, which a shell can export) set
 * to {@code warn} turns the refusal into a loud warning; {@code refuse} is the default. A file
 * without a key is not checked, nor is a file on a file system without POSIX permissions. The
 * mode is that of the file the path resolves to (the one whose contents are read).
 *
 * <p><b>Writing.</b> {@link #writePrivate} creates a new file, owner-only from its creation, and
 * writes through the channel that created it; it never follows a link planted at the path.
 *
 * <p>Stateless and thread-safe; every method blocks on file I/O.
 */
public final class KeyFiles {
  private static final Logger LOG = LoggerFactory.getLogger(KeyFiles.class);

  /**
   * The entries that make a file secret. Named here rather than taken from the cluster's
   * {@code ClusterConfig}, which this module cannot see.
   */
  public static final List<String> SECRET_KEYS = List.of("paxoscp.key", "paxoscp.key.accept");

  /** System property (or environment variable): {@code refuse} (default) or {@code warn}. */
  public static final String CHECK = "paxoscp.key.file.check";
  /** The same setting as an environment variable a shell can export. */
  public static final String CHECK_ENV = "PAXOSCP_KEY_FILE_CHECK";

  private static final Set<PosixFilePermission> OWNER_ONLY =
      PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> EXPOSING = EnumSet.of(
      PosixFilePermission.GROUP_READ, PosixFilePermission.OTHERS_READ);

  private KeyFiles() {}

  /** What a reader does with a key file that group or others may read. */
  public enum Check {
    /** Refuse to read it: {@link ExposedKeyFileException}. */
    REFUSE,
    /** Log a warning and read it. */
    WARN;

    /**
     * The check {@code value} names, case-insensitive.
     *
     * @param source where the value came from, for the message
     * @throws IllegalArgumentException naming {@code source}, if it is neither
     */
    static Check parse(String source, String value) {
      for (Check c : values()) {
        if (c.name().equalsIgnoreCase(value.strip())) {
          return c;
        }
      }
      throw new IllegalArgumentException(source + ": '" + value + "' is not refuse or warn");
    }
  }

  /**
   * The check this process was started with: the system property {@value #CHECK}, else the
   * environment variable of that name, else {@value #CHECK_ENV}, else {@link Check#REFUSE}.
   *
   * @throws IllegalArgumentException naming the setting, if its value is neither refuse nor warn
   */
  public static Check configuredCheck() {
    return configuredCheck(System::getProperty, System::getenv);
  }

  static Check configuredCheck(UnaryOperator<String> systemProperties,
      UnaryOperator<String> environment) {
    String v = systemProperties.apply(CHECK);
    if (v != null) {
      return Check.parse("system property " + CHECK, v);
    }
    v = environment.apply(CHECK);
    if (v != null) {
      return Check.parse("environment variable " + CHECK, v);
    }
    v = environment.apply(CHECK_ENV);
    if (v != null) {
      return Check.parse("environment variable " + CHECK_ENV, v);
    }
    return Check.REFUSE;
  }

  /**
   * Reads a properties file (UTF-8) into a sorted map, checking its mode as the process was
   * configured to ({@link #configuredCheck()}) when it holds a key.
   *
   * @throws ExposedKeyFileException if it holds a key, group or others may read it and the
   *     check is {@link Check#REFUSE}
   * @throws IllegalArgumentException if {@value #CHECK} has a value other than refuse or warn
   * @throws UncheckedIOException naming the file, if it cannot be read
   */
  public static Map<String, String> read(Path file) {
    return read(file, configuredCheck(), LOG::warn);
  }

  /** {@link #read(Path)} with the check and the warnings' sink given (tests). */
  static Map<String, String> read(Path file, Check check, Consumer<String> warnings) {
    Map<String, String> props = load(file);
    if (holdsKey(props)) {
      checkPrivate(file, check, warnings);
    }
    return props;
  }

  /** Whether {@code props} hold a non-blank {@link #SECRET_KEYS} entry. */
  public static boolean holdsKey(Map<String, String> props) {
    return SECRET_KEYS.stream().anyMatch(k -> props.get(k) != null && !props.get(k).isBlank());
  }

  /**
   * Checks that group and others may not read {@code file}; on a file system without POSIX
   * permissions, does nothing. Called on files known to hold a key.
   *
   * @param warnings where {@link Check#WARN} reports an exposed file
   * @throws ExposedKeyFileException if they may and {@code check} is {@link Check#REFUSE}
   * @throws UncheckedIOException naming the file, if its mode cannot be read
   */
  static void checkPrivate(Path file, Check check, Consumer<String> warnings) {
    PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class);
    if (view == null) {
      return; // not a POSIX file system: there is no mode to check
    }
    Set<PosixFilePermission> perms;
    try {
      perms = view.readAttributes().permissions();
    } catch (IOException e) {
      throw new UncheckedIOException("could not read the mode of " + file, e);
    }
    if (perms.stream().noneMatch(EXPOSING::contains)) {
      return;
    }
    String mode = octal(perms);
    String problem = file + " holds the cluster key (" + String.join(" or ", SECRET_KEYS)
        + ") but its mode is " + mode + " (" + PosixFilePermissions.toString(perms)
        + "): group or others may read it, and whoever holds the key can act as a service";
    if (check == Check.REFUSE) {
      throw new ExposedKeyFileException(file, mode, problem + ". Fix: chmod 600 " + file
          + " (or set " + CHECK + "=warn to only warn)");
    }
    warnings.accept("INSECURE KEY FILE: " + problem + "; reading it anyway because " + CHECK
        + "=warn. Fix: chmod 600 " + file);
  }

  /**
   * Writes {@code props} as a new properties file that only its owner may read or write,
   * replacing whatever is at the path (a link planted there is removed, never followed);
   * creates the parent directories. The file is created owner-only (never readable by others,
   * not even for a moment) with {@link StandardOpenOption#CREATE_NEW}, which fails on any entry
   * at the path, links included, and written through the channel that created it. If a link
   * or file reappears at the path between the removal and the creation, the write fails.
   *
   * @throws UncheckedIOException naming the file, if it cannot be written or, on a POSIX file
   *     system, cannot be made owner-only
   */
  public static void writePrivate(Path file, Map<String, String> props, String comment) {
    Properties p = new Properties();
    props.forEach(p::setProperty);
    boolean posix = file.getFileSystem().supportedFileAttributeViews().contains("posix");
    Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE,
        LinkOption.NOFOLLOW_LINKS);
    FileAttribute<?>[] attrs = posix
        ? new FileAttribute<?>[] {PosixFilePermissions.asFileAttribute(OWNER_ONLY)}
        : new FileAttribute<?>[0];
    try {
      Path parent = file.toAbsolutePath().getParent();
      if (parent != null) {
        Files.createDirectories(parent);
      }
      Files.deleteIfExists(file); // removes a link itself, not what it points to
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + file + ": " + e.getMessage(), e);
    }
    SeekableByteChannel ch;
    try {
      ch = Files.newByteChannel(file, options, attrs);
    } catch (FileAlreadyExistsException e) {
      throw new UncheckedIOException("could not write " + file + ": something was created at "
          + "that path while it was being replaced; not writing through it", e);
    } catch (IOException e) {
      throw new UncheckedIOException("could not write " + file + ": " + e.getMessage(), e);
    }
    try (ch) {
      if (posix) {
        ownerOnly(file);
      }
      // store(OutputStream) writes ISO 8859-1 with Unicode escapes: ASCII, which every reader
      // (UTF-8 or not) reads back alike.
      OutputStream out = Channels.newOutputStream(ch);
      p.store(out, comment);
      out.flush();
    } catch (IOException e) {
      UncheckedIOException failure = new UncheckedIOException("could not write " + file + ": "
          + e.getMessage(), e);
      try {
        Files.deleteIfExists(file); // the file this call created: no half-written key file
      } catch (IOException cleanup) {
        failure.addSuppressed(cleanup);
      }
      throw failure;
    }
  }

  /**
   * Makes the file just created at {@code file} mode 0600 if the umask took bits from it, and
   * fails if the file system does not keep that mode. Works on the entry itself, never through
   * a link.
   */
  private static void ownerOnly(Path file) throws IOException {
    PosixFileAttributeView view = Files.getFileAttributeView(file, PosixFileAttributeView.class,
        LinkOption.NOFOLLOW_LINKS);
    if (view == null) {
      throw new IOException("the file system offers POSIX permissions but not for " + file);
    }
    Set<PosixFilePermission> perms = view.readAttributes().permissions();
    if (!perms.equals(OWNER_ONLY)) {
      view.setPermissions(OWNER_ONLY);
      perms = view.readAttributes().permissions();
      if (!perms.equals(OWNER_ONLY)) {
        throw new IOException("could not make it owner-only: its mode stays " + octal(perms)
            + " (a file system that ignores modes?)");
      }
    }
  }

  /** Loads the file, without any check. */
  private static Map<String, String> load(Path file) {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    } catch (IOException e) {
      throw new UncheckedIOException("could not read " + file + ": " + e.getMessage(), e);
    }
    Map<String, String> m = new TreeMap<>();
    for (String k : p.stringPropertyNames()) {
      m.put(k, p.getProperty(k));
    }
    return m;
  }

  /** {@code perms} as an octal mode, e.g. {@code 0644}. */
  static String octal(Set<PosixFilePermission> perms) {
    int mode = 0;
    for (PosixFilePermission p : perms) {
      // The enum's order is OWNER_READ .. OTHERS_EXECUTE: bit 8 down to bit 0.
      mode |= 1 << (8 - p.ordinal());
    }
    return String.format(Locale.ROOT, "%04o", mode);
  }

  /**
   * A file that holds the cluster key and that group or others may read: refused. An {@link
   * IllegalArgumentException}, as every bad configuration is.
   */
  public static final class ExposedKeyFileException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;
    private final String file;
    private final String mode;

    ExposedKeyFileException(Path file, String mode, String message) {
      super(message);
      this.file = file.toString();
      this.mode = mode;
    }

    /** The file refused. */
    public String file() {
      return file;
    }

    /** Its mode in octal, e.g. {@code 0644}. */
    public String mode() {
      return mode;
    }
  }
}
