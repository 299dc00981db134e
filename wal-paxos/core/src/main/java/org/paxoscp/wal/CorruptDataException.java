package org.paxoscp.wal;

/**
 * Thrown when bytes read from the store or the network are not a valid encoding: truncated,
 * trailing garbage, a checksum mismatch, an unknown format version, or an impossible field.
 * Decoding never returns a partially built object.
 */
public final class CorruptDataException extends RuntimeException {
  public CorruptDataException(String message) {
    super(message);
  }
}
