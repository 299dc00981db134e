package org.paxoscp.wal;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * Bounds-checked reader matching {@link BinaryWriter}. Every read that would run past the end, or
 * any length that exceeds what is left, throws {@link CorruptDataException}; no length read from
 * the input is trusted for an allocation before it is checked against the remaining bytes.
 */
public final class BinaryReader {
  private final byte[] buf;
  private final int end;
  private int pos;

  public BinaryReader(byte[] buf) {
    this(buf, 0, buf.length);
  }

  public BinaryReader(byte[] buf, int offset, int length) {
    if (offset < 0 || length < 0 || offset + length > buf.length) {
      throw new IllegalArgumentException("bad slice");
    }
    this.buf = buf;
    this.pos = offset;
    this.end = offset + length;
  }

  public int remaining() {
    return end - pos;
  }

  public int position() {
    return pos;
  }

  private void need(int n, String what) {
    if (n < 0 || n > end - pos) {
      throw new CorruptDataException("truncated input reading " + what + " at offset " + pos
          + " (need " + n + ", have " + (end - pos) + ")");
    }
  }

  public int readByte(String what) {
    need(1, what);
    return buf[pos++] & 0xFF;
  }

  public long readLong(String what) {
    need(8, what);
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (buf[pos++] & 0xFF);
    }
    return v;
  }

  public int readInt(String what) {
    need(4, what);
    int v = 0;
    for (int i = 0; i < 4; i++) {
      v = (v << 8) | (buf[pos++] & 0xFF);
    }
    return v;
  }

  /**
   * Reads exactly the encoding {@link BinaryWriter#writeVarint} produces: at most nine bytes (a
   * non-negative long has 63 bits) and no redundant final zero group. Anything else is rejected,
   * so that each value has one encoding and no payload bit is silently dropped (a tenth byte's
   * bits would be shifted past bit 63).
   */
  public long readVarint(String what) {
    long v = 0;
    for (int shift = 0; shift < 63; shift += 7) {
      int b = readByte(what);
      v |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        if (b == 0 && shift > 0) {
          throw new CorruptDataException("non-minimal varint reading " + what);
        }
        return v;
      }
    }
    throw new CorruptDataException("varint too long reading " + what);
  }

  /** A count of items each at least {@code minItemBytes} long, bounded by the remaining input. */
  public int readCount(String what, int minItemBytes) {
    long n = readVarint(what);
    if (n > (long) remaining() / Math.max(1, minItemBytes)) {
      throw new CorruptDataException("count " + n + " for " + what + " exceeds remaining input");
    }
    return (int) n;
  }

  public byte[] readBytes(String what) {
    long n = readVarint(what + " length");
    if (n > remaining()) {
      throw new CorruptDataException("length " + n + " for " + what + " exceeds remaining input");
    }
    byte[] b = new byte[(int) n];
    System.arraycopy(buf, pos, b, 0, b.length);
    pos += b.length;
    return b;
  }

  public byte[] readRaw(int n, String what) {
    need(n, what);
    byte[] b = new byte[n];
    System.arraycopy(buf, pos, b, 0, n);
    pos += n;
    return b;
  }

  public String readString(String what) {
    byte[] b = readBytes(what);
    try {
      return StandardCharsets.UTF_8.newDecoder()
          .onMalformedInput(CodingErrorAction.REPORT)
          .onUnmappableCharacter(CodingErrorAction.REPORT)
          .decode(ByteBuffer.wrap(b))
          .toString();
    } catch (CharacterCodingException e) {
      throw new CorruptDataException("invalid UTF-8 in " + what);
    }
  }

  public void expectEnd(String what) {
    if (pos != end) {
      throw new CorruptDataException((end - pos) + " trailing bytes after " + what);
    }
  }
}
