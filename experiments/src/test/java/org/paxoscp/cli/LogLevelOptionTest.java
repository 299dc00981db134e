package org.paxoscp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --log-level} is taken by every command and sets slf4j-simple's levels. */
class LogLevelOptionTest {
  private static final List<String> KEYS = List.of("org.slf4j.simpleLogger.defaultLogLevel",
      "org.slf4j.simpleLogger.log.org.paxoscp");
  private final String[] saved = KEYS.stream().map(System::getProperty).toArray(String[]::new);

  @AfterEach
  void restore() {
    for (int i = 0; i < KEYS.size(); i++) {
      if (saved[i] == null) {
        System.clearProperty(KEYS.get(i));
      } else {
        System.setProperty(KEYS.get(i), saved[i]);
      }
    }
  }

  @Test
  void aLevelIsSetForEveryCommandAndABadOneIsAUsageError() {
    CommandLine cl = new CommandLine(new Main());
    cl.parseArgs("status", "--log-level", "DEBUG", "--config", "x.properties");
    assertEquals("debug", System.getProperty(KEYS.get(0)));
    assertEquals("debug", System.getProperty(KEYS.get(1)));
    new CommandLine(new Main()).parseArgs("--log-level", "error", "check", "somewhere");
    assertEquals("error", System.getProperty(KEYS.get(1)));

    StringWriter err = new StringWriter();
    CommandLine bad = new CommandLine(new Main());
    bad.setErr(new PrintWriter(err));
    assertEquals(2, bad.execute("status", "--log-level", "loud", "--config", "x.properties"));
    assertTrue(err.toString().contains("--log-level must be one of trace, debug, info, warn, "
        + "error, off; was loud"), err.toString());
  }
}
