package org.paxoscp.cli;

import java.util.List;
import java.util.concurrent.Callable;
import org.paxoscp.config.ConfigKeys;
import org.paxoscp.paxos.ProposerConfig;
import org.paxoscp.service.ServiceConfig;
import org.paxoscp.store.hbase.HBaseStoreConfig;
import org.paxoscp.transport.ClusterConfig;
import picocli.CommandLine.Command;

/**
 * {@code paxoscp config-reference}: prints the configuration reference (every key with its type,
 * default and meaning) in Markdown, generated from the typed keys; docs/configuration.md holds
 * this output, and a test keeps the two equal.
 */
@Command(name = "config-reference", mixinStandardHelpOptions = true,
    footer = "%nExplained in docs/configuration.md.",
    description = "Prints every configuration key with its type, default and meaning "
        + "(Markdown, as in docs/configuration.md).")
public final class ConfigReferenceCommand implements Callable<Integer> {

  /** The components in the order the reference lists them. */
  static final List<ConfigKeys> COMPONENTS = List.of(ClusterConfig.KEYS, ProposerConfig.KEYS,
      ServiceConfig.KEYS, HBaseStoreConfig.KEYS);

  /** The reference's Markdown. */
  static String markdown() {
    StringBuilder b = new StringBuilder();
    for (ConfigKeys keys : COMPONENTS) {
      b.append(keys.markdown()).append('\n');
    }
    return b.toString();
  }

  @Override
  public Integer call() {
    System.out.print(markdown());
    return 0;
  }
}
