package org.paxoscp.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * Per-transaction settings that override the client's defaults
 * ({@link TxnClient.Builder#transactionTimeout}, {@link TxnClient.Builder#callTimeout}): pass to
 * {@link TxnClient#begin(String, TxnOptions)}, {@link TxnClient#beginMulti(TxnOptions)} or
 * {@link TxnClient#runInTransaction(String, TxnOptions, TxnFunction)}. Immutable;
 * {@link #DEFAULTS} keeps the client's settings.
 *
 * <ul>
 *   <li>{@code timeout}: the whole transaction, from its begin to its commit's outcome (for
 *       {@code runInTransaction}: every attempt and the back-offs between them).
 *   <li>{@code callTimeout}: each call of the transaction on its own (a begin, a read, a scan, a
 *       commit), within the transaction's timeout.
 * </ul>
 *
 * <p>A begin or read past its deadline fails with {@link DeadlineExceededException} and
 * finishes the transaction. A commit past its deadline stops promoting and ends with the outcome
 * it can prove: {@link DeadlineExceededException} (ABORTED: its entry was never sent where it
 * could still be chosen) or {@link OutcomeUnknownException} naming the positions where it may
 * be. A deadline is never a reason to give up a commit whose entry is chosen: the outcome is
 * reported as it is.
 */
public final class TxnOptions {
  /** No override: the client's own timeouts. */
  public static final TxnOptions DEFAULTS = new TxnOptions(null, null);

  private final Duration timeout;
  private final Duration callTimeout;

  private TxnOptions(Duration timeout, Duration callTimeout) {
    this.timeout = timeout;
    this.callTimeout = callTimeout;
  }

  /** These options with the whole transaction bounded by {@code timeout} (positive). */
  public TxnOptions timeout(Duration timeout) {
    return new TxnOptions(positive(timeout, "timeout"), callTimeout);
  }

  /** These options with each call bounded by {@code callTimeout} (positive). */
  public TxnOptions callTimeout(Duration callTimeout) {
    return new TxnOptions(timeout, positive(callTimeout, "callTimeout"));
  }

  /** The transaction's timeout, if set here. */
  public Optional<Duration> timeout() {
    return Optional.ofNullable(timeout);
  }

  /** Each call's timeout, if set here. */
  public Optional<Duration> callTimeout() {
    return Optional.ofNullable(callTimeout);
  }

  static Duration positive(Duration d, String what) {
    Objects.requireNonNull(d, what);
    if (d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(what + " must be positive, got " + d);
    }
    return d;
  }

  @Override
  public String toString() {
    return "TxnOptions[timeout=" + timeout + ", callTimeout=" + callTimeout + "]";
  }
}
