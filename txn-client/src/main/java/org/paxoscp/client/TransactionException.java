package org.paxoscp.client;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A call of the client did not do what was asked. The transaction aborted
 * ({@link TransactionAbortedException}, safe to re-run); its commit outcome is unknown
 * ({@link OutcomeUnknownException}, not safe to re-run blindly); no DC could serve it
 * ({@link UnavailableException}); an argument was invalid ({@link InvalidArgumentException},
 * nothing was sent); or the caller was interrupted, or the transaction's deadline passed, before
 * anything that could commit it was sent ({@link TransactionInterruptedException},
 * {@link DeadlineExceededException}). One {@code catch (TransactionException e)} sees them all.
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
