package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** Every command's {@code --help} names the documentation page that explains it, and it exists. */
class HelpNamesItsPageTest {
  private static final Pattern PAGE = Pattern.compile("Explained in (docs/[a-z-]+\\.md)\\.");

  @Test
  void everyCommandsHelpNamesAnExistingPage() {
    List<String> checked = new ArrayList<>();
    check(new CommandLine(new Main()), checked);
    assertTrue(checked.size() >= 18, "too few commands found: " + checked);
  }

  private static void check(CommandLine command, List<String> checked) {
    for (CommandLine sub : command.getSubcommands().values()) {
      if (sub.getCommand() instanceof CommandLine.HelpCommand) {
        continue; // picocli's own `help`
      }
      String usage = sub.getUsageMessage(CommandLine.Help.Ansi.OFF);
      Matcher m = PAGE.matcher(usage);
      String name = sub.getCommandSpec().qualifiedName();
      assertTrue(m.find(), name + "'s --help names no page:\n" + usage);
      assertTrue(Files.isRegularFile(Path.of("..").resolve(m.group(1))),
          name + " names " + m.group(1) + ", which does not exist");
      checked.add(name);
      check(sub, checked);
    }
  }
}
