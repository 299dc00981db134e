package org.paxoscp.cli;

import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Role;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/**
 * {@code paxoscp key}: makes a cluster key, and derives from a cluster file the key of one role
 * (docs/architecture.md section 13, docs/deploying.md "The key"): what an application host or an
 * operator's host holds instead of the cluster key.
 */
@Command(name = "key", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/deploying.md.",
    description = "Cluster keys and the keys of roles.",
    subcommands = {KeyCommand.Generate.class, KeyCommand.Derive.class})
public final class KeyCommand implements Callable<Integer> {
  @Override
  public Integer call() {
    System.err.println("key: name a subcommand (generate, derive); see --help");
    return 2;
  }

  /** {@code paxoscp key generate}: a new random cluster key. */
  @Command(name = "generate", mixinStandardHelpOptions = true,
      footer = "%nExplained in docs/deploying.md.",
      description = "Prints a new random 32-byte cluster key as a paxoscp.key line.")
  static final class Generate implements Callable<Integer> {
    @Override
    public Integer call() {
      byte[] key = new byte[32];
      new SecureRandom().nextBytes(key);
      System.out.println(ClusterConfig.KEY.name() + "=" + HexFormat.of().formatHex(key));
      return 0;
    }
  }

  /** {@code paxoscp key derive ROLE --config FILE}: one role's key from the cluster key. */
  @Command(name = "derive", mixinStandardHelpOptions = true,
      footer = "%nExplained in docs/wire.md.",
      description = "Prints the paxoscp.key line (and paxoscp.key.accept, if the file has one) "
          + "for a host of ROLE (client or operator), derived from the cluster key in the "
          + "file: an application host holding it can run transactions but cannot rebuild a DC, "
          + "list groups, copy snapshots or act as a service.")
  static final class Derive implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "ROLE", description = "client or operator")
    String role;

    @Mixin
    SharedOptions.ClusterFile config = new SharedOptions.ClusterFile();

    @Override
    public Integer call() {
      Role r;
      try {
        r = Role.ofPrefix(role);
      } catch (IllegalArgumentException e) {
        System.err.println("key derive: " + e.getMessage());
        return 2;
      }
      if (r == Role.SERVICE) {
        System.err.println("key derive: services hold the cluster key itself");
        return 2;
      }
      ClusterConfig cluster;
      try {
        cluster = config.load();
      } catch (RuntimeException e) {
        System.err.println("key derive: " + ClusterCommand.oneLine(e));
        return 1;
      }
      if (cluster.keyRole().isPresent()) {
        System.err.println("key derive: " + config.path() + " holds the "
            + cluster.keyRole().get().name().toLowerCase(Locale.ROOT) + " key, not the cluster "
            + "key");
        return 1;
      }
      ClusterConfig derived = cluster.withRoleKey(r);
      var props = derived.toProperties();
      System.out.println(ClusterConfig.KEY.name() + "=" + props.get(ClusterConfig.KEY.name()));
      if (props.containsKey(ClusterConfig.KEY_ACCEPT.name())) {
        System.out.println(ClusterConfig.KEY_ACCEPT.name() + "="
            + props.get(ClusterConfig.KEY_ACCEPT.name()));
      }
      return 0;
    }
  }
}
