package org.paxoscp.client;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A transaction could not do what was asked for a reason outside the caller's control: it
 * aborted ({@link TransactionAbortedException}, safe to re-run), its commit outcome is unknown
 * ({@link OutcomeUnknownException}, not safe to re-run blindly), or no DC could serve it
 * ({@link UnavailableException}). Invalid arguments are reported separately as
 * {@link InvalidArgumentException}, an {@link IllegalArgumentException}.
 *
 * <p>Every instance names the entity group, and where known the log position and the DC
 * concerned.
 */
public abstract class TransactionException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String group;
  private final long position;
  private final String dc;

  /**
   * @param position the log position concerned, or -1 when none
   * @param dc the DC concerned, or null when none in particular
   */
  protected TransactionException(String message, String group, long position, String dc,
      Throwable cause) {
    super(message + " [group=" + group + (position >= 0 ? " position=" + position : "")
        + (dc != null ? " dc=" + dc : "") + "]", cause);
    this.group = Objects.requireNonNull(group);
    this.position = position;
    this.dc = dc;
  }

  /** The entity group of the transaction. */
  public String group() {
    return group;
  }

  /** The log position concerned (a read or commit position), if any. */
  public OptionalLong position() {
    return position >= 0 ? OptionalLong.of(position) : OptionalLong.empty();
  }

  /** The DC concerned (the last one tried, or the client's home DC), if any. */
  public Optional<String> dc() {
    return Optional.ofNullable(dc);
  }
}
