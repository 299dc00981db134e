package org.paxoscp.client;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * What a process needs to learn a one-group transaction's outcome after it lost everything else
 * (a restart): the group, the transaction's id and the log positions where it can be chosen —
 * it is in the log at most once, at one of {@code firstPosition ... lastPosition}, and nowhere
 * else ever. {@link TxnClient#outcome(OutcomeHandle)} settles it from any client.
 *
 * <p>Two ways to get one: {@link OutcomeUnknownException#handle()} after a commit ended unknown,
 * or {@link Transaction#outcomeHandle()} before committing (to store with the application's own
 * state, so that a crash during the commit leaves something to ask with). {@link #toString()}
 * is a single printable line that {@link #parse} reads back.
 *
 * @param group the entity group
 * @param txnId the transaction's id
 * @param firstPosition the first position where it can be chosen
 * @param lastPosition the last one
 */
public record OutcomeHandle(String group, String txnId, long firstPosition, long lastPosition) {
  private static final String PREFIX = "paxoscp-outcome-v1:";

  public OutcomeHandle {
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(txnId, "txnId");
    if (firstPosition < 1 || lastPosition < firstPosition) {
      throw new IllegalArgumentException("positions " + firstPosition + ".." + lastPosition
          + " are no range of log positions");
    }
  }

  /**
   * The handle as one printable line ({@code paxoscp-outcome-v1:} then the group and the id in
   * URL-safe Base64, and the positions, separated by colons).
   */
  @Override
  public String toString() {
    return PREFIX + b64(group) + ":" + b64(txnId) + ":" + firstPosition + ":" + lastPosition;
  }

  /**
   * The handle {@link #toString()} wrote.
   *
   * @throws IllegalArgumentException for anything else
   */
  public static OutcomeHandle parse(String s) {
    Objects.requireNonNull(s, "s");
    if (!s.startsWith(PREFIX)) {
      throw new IllegalArgumentException("not an outcome handle (no " + PREFIX + " prefix): "
          + s);
    }
    String[] parts = s.substring(PREFIX.length()).split(":", -1);
    if (parts.length != 4) {
      throw new IllegalArgumentException("not an outcome handle (want 4 fields after the "
          + "prefix): " + s);
    }
    try {
      return new OutcomeHandle(unb64(parts[0]), unb64(parts[1]), Long.parseLong(parts[2]),
          Long.parseLong(parts[3]));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("not an outcome handle: " + s + " (" + e.getMessage()
          + ")", e);
    }
  }

  private static String b64(String s) {
    return Base64.getUrlEncoder().withoutPadding()
        .encodeToString(s.getBytes(StandardCharsets.UTF_8));
  }

  private static String unb64(String s) {
    return new String(Base64.getUrlDecoder().decode(s), StandardCharsets.UTF_8);
  }
}
