package org.paxoscp.check;

import java.nio.charset.StandardCharsets;
import java.util.Optional;

/** Short, readable renderings of values for violation messages. */
final class Render {
  private static final int MAX_TEXT = 40;
  private static final int MAX_HEX = 16;

  private Render() {}

  /** A stored value: quoted text when printable ASCII, else hex; {@code null} renders "absent". */
  static String bytes(byte[] value) {
    if (value == null) {
      return "absent";
    }
    boolean printable = value.length <= MAX_TEXT;
    for (int i = 0; printable && i < value.length; i++) {
      printable = value[i] >= 0x20 && value[i] < 0x7f;
    }
    if (printable) {
      return '"' + new String(value, StandardCharsets.US_ASCII) + '"';
    }
    StringBuilder sb = new StringBuilder("0x");
    for (int i = 0; i < Math.min(value.length, MAX_HEX); i++) {
      sb.append(String.format("%02x", value[i] & 0xff));
    }
    if (value.length > MAX_HEX) {
      sb.append("...");
    }
    return sb.append(" (").append(value.length).append(" bytes)").toString();
  }

  /** An observed read: empty renders "absent". */
  static String observed(Optional<byte[]> value) {
    return bytes(value.orElse(null));
  }

  static String key(String key) {
    return "'" + key + "'";
  }
}
