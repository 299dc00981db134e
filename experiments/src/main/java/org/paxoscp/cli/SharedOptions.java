package org.paxoscp.cli;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.paxoscp.config.KeyFiles;
import org.paxoscp.local.LocalCluster;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * The options several commands share, each written once as a picocli mixin. A command that
 * wants a different default passes it to the mixin's constructor; the help shows it as the
 * default. Usage:
 *
 * <pre>{@code
 * @Mixin SharedOptions.Dcs dcs = new SharedOptions.Dcs("V1,V2,V3");
 * @Mixin SharedOptions.Store store = new SharedOptions.Store();
 * }</pre>
 */
public final class SharedOptions {
  private SharedOptions() {}

  /** {@code --config FILE}: the cluster a client-side command talks to. */
  public static final class ClusterFile {
    @Option(names = "--config", required = true, paramLabel = "FILE",
        description = "The cluster's client configuration (as `cluster` writes it) or a "
            + "service's properties file.")
    Path file;

    public Path path() {
      return file;
    }

    /**
     * The cluster the file describes (a service's own keys are allowed and ignored).
     *
     * @throws IllegalArgumentException naming the file or the key, if it is missing or wrong,
     *     or if it holds the key and others may read it ({@link KeyFiles})
     * @throws java.io.UncheckedIOException if it cannot be read
     */
    public ClusterConfig load() {
      if (!java.nio.file.Files.isRegularFile(file)) {
        throw new IllegalArgumentException("no such file " + file);
      }
      return ClusterConfig.fromProperties(KeyFiles.read(file),
          org.paxoscp.service.ServiceConfig.KEYS);
    }
  }

  /** {@code --dcs A,B,C}: the cluster's DCs, in order. */
  public static final class Dcs {
    @Option(names = "--dcs", paramLabel = "DC,DC,...",
        description = "DCs (default: ${DEFAULT-VALUE}); names starting with V, O or C take the "
            + "paper's round-trip times (V-V 1.5, V-O 90, V-C 90, O-C 20 ms).")
    String dcs;

    /** @param defaults the command's default, comma-separated */
    public Dcs(String defaults) {
      this.dcs = defaults;
    }

    /** The DCs named, in order. */
    public List<String> dcs() {
      List<String> names = new ArrayList<>();
      for (String s : dcs.split(",", -1)) {
        if (s.isBlank()) {
          throw new IllegalArgumentException("--dcs names an empty DC: " + dcs);
        }
        names.add(s.strip());
      }
      return List.copyOf(names);
    }
  }

  /** {@code --store hbase|memory}: where each DC keeps its data. */
  public static final class Store {
    @Option(names = "--store", converter = StoreKindConverter.class, paramLabel = "hbase|memory",
        description = "Where each DC keeps its data: hbase (default) or memory (explicit "
            + "opt-in: in a process's heap, lost with it).")
    LocalCluster.StoreKind store = LocalCluster.StoreKind.HBASE;

    public LocalCluster.StoreKind kind() {
      return store;
    }
  }

  /** {@code --rtt A:B=MS,...}: round-trip time overrides of the emulated WAN. */
  public static final class Rtt {
    @Option(names = "--rtt", split = ",", paramLabel = "A:B=MS",
        description = "Override the round-trip time of a DC pair, e.g. V1:O=80.")
    List<String> rtt = new ArrayList<>();

    public List<String> overrides() {
      return rtt;
    }
  }

  /** {@code --no-wan} and {@code --rtt}: the WAN emulation of a local cluster. */
  public static final class Wan {
    @Option(names = "--no-wan", description = "Do not emulate WAN delays between DCs.")
    boolean noWan;

    @Mixin
    Rtt rtt = new Rtt();

    public boolean enabled() {
      return !noWan;
    }

    /** The emulation for {@code dcs}, with the overrides. */
    public ClusterConfig.Wan wan(List<String> dcs) {
      return WanOptions.wan(dcs, rtt.overrides(), enabled());
    }

    /** The round-trip time of every DC pair, or {@code off}. */
    public String summary(ClusterConfig.Wan wan, List<String> dcs) {
      return enabled() ? WanOptions.rttSummary(wan, dcs) : "off";
    }
  }

  /** {@code --request-timeout-ms MS}: the cluster's request timeout. */
  public static final class RequestTimeout {
    @Option(names = "--request-timeout-ms", paramLabel = "MS",
        description = "The cluster's request timeout in ms (default: ${DEFAULT-VALUE}).")
    long millis;

    public RequestTimeout(long defaultMillis) {
      this.millis = defaultMillis;
    }

    public Duration timeout() {
      if (millis <= 0) {
        throw new IllegalArgumentException("--request-timeout-ms must be positive, was "
            + millis);
      }
      return Duration.ofMillis(millis);
    }
  }

  /** {@code --seed N}: seeds a run's random choices. */
  public static final class Seed {
    @Option(names = "--seed", paramLabel = "N",
        description = "Seeds the key and arrival choices, the same for every mode; the same "
            + "seed gives the same choices (default: ${DEFAULT-VALUE}).")
    long seed = 1;

    public long seed() {
      return seed;
    }
  }

  /** {@code --out DIR}: where a command writes its tables and charts. */
  public static final class Out {
    @Option(names = "--out", paramLabel = "DIR",
        description = "Output directory for the command's CSV tables and charts (default: "
            + "${DEFAULT-VALUE}).")
    Path out;

    /** @param defaultDir the command's default, e.g. {@code ./paxoscp-data/demo} */
    public Out(String defaultDir) {
      this.out = Path.of(defaultDir);
    }

    public Path dir() {
      return out;
    }
  }

  /** {@code --export DIR}: histories and logs as JSON lines, for {@code paxoscp check}. */
  public static final class Export {
    @Option(names = "--export", paramLabel = "DIR",
        description = "Also write every client's history and every DC's log as JSON lines "
            + "(DIR/history/*.jsonl, DIR/wal/<dc>.jsonl) for `paxoscp check DIR`.")
    Path export;

    /** The directory, or null when not asked for. */
    public Path dirOrNull() {
      return export;
    }
  }
}
