package org.paxoscp.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine;

/** The {@code paxoscp} command line. */
@Command(
    name = "paxoscp",
    mixinStandardHelpOptions = true,
    footer = "%nEach command's --help names the page that explains it; README.md lists them all.",
    versionProvider = Main.Version.class,
    description = "Geo-replicated entity-group transactions on HBase with the Paxos-CP commit "
        + "protocol.",
    subcommands = {DemoCommand.class, ClusterCommand.class, ShellCommand.class,
        StatusCommand.class, DcCommand.class, ClusterVersionCommand.class,
        RebuildBenchCommand.class, ServiceCommand.class, SimulateCommand.class, FastPathBenchCommand.class,
        XgBenchCommand.class, LeaderFaultsBenchCommand.class, GroupsBenchCommand.class, ScanBenchCommand.class,
        CounterBenchCommand.class, AsyncBenchCommand.class, ClientBenchCommand.class,
        HBaseCommand.class, StoreCostCommand.class, YcsbCommand.class, CheckCommand.class,
        LifecycleBenchCommand.class, ConfigReferenceCommand.class, KeyCommand.class,
        org.paxoscp.nemesis.NemesisCommand.class, org.paxoscp.experiment.ExperimentCommand.class,
        CommandLine.HelpCommand.class})
public final class Main implements Runnable {

  @CommandLine.Spec
  CommandLine.Model.CommandSpec spec;

  /** The levels slf4j-simple knows. */
  private static final java.util.Set<String> LEVELS =
      java.util.Set.of("trace", "debug", "info", "warn", "error", "off");

  /**
   * {@code --log-level}, on every command: sets slf4j-simple's levels before the command makes
   * its first logger (they are read once, then).
   */
  @CommandLine.Option(names = "--log-level", paramLabel = "LEVEL",
      scope = CommandLine.ScopeType.INHERIT,
      description = "Log lines at this level and above: trace, debug (every commit with its "
          + "group, position and transaction id), info, warn, error or off (default: warn).")
  void logLevel(String level) {
    String l = level.toLowerCase(java.util.Locale.ROOT);
    if (!LEVELS.contains(l)) {
      throw new CommandLine.ParameterException(spec.commandLine(),
          "--log-level must be one of trace, debug, info, warn, error, off; was " + level);
    }
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", l);
    System.setProperty("org.slf4j.simpleLogger.log.org.paxoscp", l);
  }

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  public static void main(String[] args) {
    System.exit(new CommandLine(new Main()).setCaseInsensitiveEnumValuesAllowed(true)
        .execute(args));
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"paxoscp " + (v == null ? "development build" : v)};
    }
  }
}
