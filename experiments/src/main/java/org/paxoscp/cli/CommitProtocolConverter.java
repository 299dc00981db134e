package org.paxoscp.cli;

import java.util.Arrays;
import java.util.Locale;
import org.paxoscp.client.CommitProtocol;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Reads a commit mode on the command line ({@code basic}, {@code cp}, {@code leader}; any case);
 * an unknown name is a usage error that lists the modes.
 */
public final class CommitProtocolConverter implements ITypeConverter<CommitProtocol> {
  @Override
  public CommitProtocol convert(String value) {
    for (CommitProtocol c : CommitProtocol.values()) {
      if (c.name().equalsIgnoreCase(value.trim())) {
        return c;
      }
    }
    throw new TypeConversionException("'" + value + "' is not a commit mode; one of "
        + String.join(", ", Arrays.stream(CommitProtocol.values())
            .map(c -> c.name().toLowerCase(Locale.ROOT)).toList()));
  }
}
