package org.paxoscp.wal;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Append-only big-endian writer with unsigned LEB128 varints and length-prefixed strings/bytes. */
public final class BinaryWriter {
  private final ByteArrayOutputStream out;

  public BinaryWriter() {
    this(64);
  }

  public BinaryWriter(int initialCapacity) {
    out = new ByteArrayOutputStream(initialCapacity);
  }

  public BinaryWriter writeByte(int b) {
    out.write(b);
    return this;
  }

  public BinaryWriter writeLong(long v) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.write((int) (v >>> shift));
    }
    return this;
  }

  public BinaryWriter writeInt(int v) {
    for (int shift = 24; shift >= 0; shift -= 8) {
      out.write(v >>> shift);
    }
    return this;
  }

  public BinaryWriter writeVarint(long v) {
    if (v < 0) {
      throw new IllegalArgumentException("varint must be non-negative: " + v);
    }
    while ((v & ~0x7FL) != 0) {
      out.write((int) ((v & 0x7F) | 0x80));
      v >>>= 7;
    }
    out.write((int) v);
    return this;
  }

  public BinaryWriter writeBytes(byte[] b) {
    writeVarint(b.length);
    out.write(b, 0, b.length);
    return this;
  }

  public BinaryWriter writeRaw(byte[] b) {
    out.write(b, 0, b.length);
    return this;
  }

  public BinaryWriter writeString(String s) {
    return writeBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  public int size() {
    return out.size();
  }

  public byte[] toByteArray() {
    return out.toByteArray();
  }
}
