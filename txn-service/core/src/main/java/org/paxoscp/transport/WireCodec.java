package org.paxoscp.transport;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Vote;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.wal.BinaryReader;
import org.paxoscp.wal.BinaryWriter;
import org.paxoscp.wal.CorruptDataException;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * The datagram format of {@link UdpTransport}: one {@link Envelope} per datagram, authenticated
 * with the cluster's key (ARCHITECTURE section 6).
 *
 * <pre>
 * datagram := version:u8 (=1) type:u8 requestId:u64 reply:u8 fromDc:str group:str position:u64
 *             body tag:16 bytes
 * tag      := HMAC-SHA256(cluster key, everything before the tag), first 16 bytes
 * str      := len:varint utf8 ; opt(x) := 0:u8 | 1:u8 x ; bool := 0:u8 | 1:u8
 * ballot   := opt(round:u64 proposer:u128) ; value := len:varint LogCodec bytes
 * </pre>
 *
 * Bodies by type: PREPARE ballot; ACCEPT ballot value; APPLY value; GRANT_REQUEST requester:str;
 * LEARN (none); PREPARE_REPLY ballot promised:bool promise:ballot opt(ballot value) opt(value);
 * ACCEPT_REPLY ballot accepted:bool promise:ballot opt(value); GRANT_REPLY requester:str
 * granted:bool; LEARN_REPLY opt(value); BEGIN_REQUEST (none); BEGIN_REPLY leaderDc:str
 * [locks:bytes (an XgLocks table), only when the group has unresolved cross-group PREPAREs];
 * READ_REQUEST n:varint key:str*; READ_REPLY n:varint (key:str value:bytes)* m:varint
 * (key:str version:varint)*, each list in strictly
 * increasing key order; ERROR_REPLY code:u8 detail:str.
 *
 * <p>Decoding checks, in order: the length bounds, the version, the type, the tag (in constant
 * time), and only then parses the body, so that no byte from an unauthenticated sender reaches the
 * parser. Every rejection is a {@link MalformedDatagramException} with its reason; a decoded
 * datagram is exactly one encoding (no trailing bytes, canonical booleans and key order).
 *
 * <p>The tag does not stop a replayed datagram: a replay is a duplicate, which the protocol
 * tolerates (every message is idempotent, and a reply is matched to a pending request once).
 *
 * <p>Thread-safe and stateless apart from the key.
 */
final class WireCodec {
  static final int VERSION = 2;
  /**
   * HMAC-SHA256 truncated to 128 bits (RFC 2104 section 5 and NIST SP 800-107 allow truncation to
   * at least half the output): a forger's chance per attempt stays 2^-128, far beyond what a
   * datagram flood can try, and each datagram saves 16 bytes of the size limit.
   */
  static final int TAG_BYTES = 16;
  /** version, type, requestId, reply, two empty strings, position, tag. */
  static final int MIN_BYTES = 1 + 1 + 8 + 1 + 1 + 1 + 8 + TAG_BYTES;

  private static final String HMAC = "HmacSHA256";

  /** Wire type codes; never renumbered, new types get new codes. */
  enum Type {
    PREPARE(1), ACCEPT(2), APPLY(3), GRANT_REQUEST(4), LEARN(5), PREPARE_REPLY(6),
    ACCEPT_REPLY(7), GRANT_REPLY(8), LEARN_REPLY(9), BEGIN_REQUEST(20), BEGIN_REPLY(21),
    READ_REQUEST(22), READ_REPLY(23), ERROR_REPLY(24), SUBMIT_REQUEST(25), SUBMIT_REPLY(26);

    final int code;

    Type(int code) {
      this.code = code;
    }

    static Type ofCode(int code) {
      for (Type t : values()) {
        if (t.code == code) {
          return t;
        }
      }
      return null;
    }

    static Type of(Message m) {
      if (m instanceof Message.Paxos p) {
        PaxosMessage pm = p.message();
        if (pm instanceof PaxosMessage.Prepare) {
          return PREPARE;
        } else if (pm instanceof PaxosMessage.Accept) {
          return ACCEPT;
        } else if (pm instanceof PaxosMessage.Apply) {
          return APPLY;
        } else if (pm instanceof PaxosMessage.GrantRequest) {
          return GRANT_REQUEST;
        } else if (pm instanceof PaxosMessage.Learn) {
          return LEARN;
        } else if (pm instanceof PaxosMessage.PrepareReply) {
          return PREPARE_REPLY;
        } else if (pm instanceof PaxosMessage.AcceptReply) {
          return ACCEPT_REPLY;
        } else if (pm instanceof PaxosMessage.GrantReply) {
          return GRANT_REPLY;
        } else if (pm instanceof PaxosMessage.LearnReply) {
          return LEARN_REPLY;
        }
      } else if (m instanceof Message.BeginRequest) {
        return BEGIN_REQUEST;
      } else if (m instanceof Message.BeginReply) {
        return BEGIN_REPLY;
      } else if (m instanceof Message.ReadRequest) {
        return READ_REQUEST;
      } else if (m instanceof Message.ReadReply) {
        return READ_REPLY;
      } else if (m instanceof Message.ErrorReply) {
        return ERROR_REPLY;
      } else if (m instanceof Message.SubmitRequest) {
        return SUBMIT_REQUEST;
      } else if (m instanceof Message.SubmitReply) {
        return SUBMIT_REPLY;
      }
      throw new IllegalArgumentException("no wire type for " + m.getClass().getName());
    }
  }

  private final Mac prototype;
  private final byte[] key;
  private final int maxDatagramBytes;

  /**
   * @param key the cluster's authentication key (at least 16 bytes)
   * @param maxDatagramBytes the largest datagram encoded or accepted
   */
  WireCodec(byte[] key, int maxDatagramBytes) {
    if (key.length < 16) {
      throw new IllegalArgumentException("authentication key must be at least 16 bytes");
    }
    if (maxDatagramBytes < MIN_BYTES) {
      throw new IllegalArgumentException("datagram limit too small: " + maxDatagramBytes);
    }
    this.key = key.clone();
    this.maxDatagramBytes = maxDatagramBytes;
    this.prototype = newMac(this.key);
  }

  static WireCodec forCluster(ClusterConfig config) {
    return new WireCodec(config.key(), config.maxDatagramBytes());
  }

  int maxDatagramBytes() {
    return maxDatagramBytes;
  }

  /**
   * Encodes and authenticates {@code envelope}.
   *
   * @throws MessageTooLargeException when the datagram would exceed the size limit; the message
   *     names the size, the limit, the message type, group and position
   */
  byte[] encode(Envelope envelope) {
    Message m = envelope.message();
    Type type = Type.of(m);
    BinaryWriter w = new BinaryWriter(128);
    w.writeByte(VERSION).writeByte(type.code).writeLong(envelope.requestId())
        .writeByte(envelope.reply() ? 1 : 0).writeString(envelope.fromDc())
        .writeString(m.group()).writeLong(m.position());
    writeBody(w, type, m);
    int size = w.size() + TAG_BYTES;
    if (size > maxDatagramBytes) {
      throw new MessageTooLargeException(type + " for group " + m.group() + " position "
          + m.position() + " is " + size + " bytes, over the datagram limit of "
          + maxDatagramBytes + " bytes (" + ClusterConfig.MAX_DATAGRAM_BYTES.name() + ")");
    }
    return seal(w.toByteArray());
  }

  /** {@code unsigned} followed by its authentication tag: a datagram as a sender sends it. */
  byte[] seal(byte[] unsigned) {
    byte[] out = new byte[unsigned.length + TAG_BYTES];
    System.arraycopy(unsigned, 0, out, 0, unsigned.length);
    System.arraycopy(tag(unsigned, 0, unsigned.length), 0, out, unsigned.length, TAG_BYTES);
    return out;
  }

  /** Decodes a whole datagram; see {@link #decode(byte[], int, int)}. */
  Envelope decode(byte[] datagram) {
    return decode(datagram, 0, datagram.length);
  }

  /**
   * Verifies and decodes the datagram in {@code buf[offset, offset + length)}.
   *
   * @throws MalformedDatagramException with the first check that failed
   */
  Envelope decode(byte[] buf, int offset, int length) {
    if (length > maxDatagramBytes) {
      throw new MalformedDatagramException(Reason.TOO_LARGE,
          length + " bytes, limit " + maxDatagramBytes);
    }
    if (length < MIN_BYTES) {
      throw new MalformedDatagramException(Reason.TRUNCATED,
          length + " bytes, the smallest message is " + MIN_BYTES);
    }
    int version = buf[offset] & 0xFF;
    if (version != VERSION) {
      throw new MalformedDatagramException(Reason.BAD_VERSION,
          "version " + version + ", this build speaks " + VERSION);
    }
    Type type = Type.ofCode(buf[offset + 1] & 0xFF);
    if (type == null) {
      throw new MalformedDatagramException(Reason.BAD_TYPE,
          "unknown message type " + (buf[offset + 1] & 0xFF));
    }
    int signedLength = length - TAG_BYTES;
    byte[] expected = tag(buf, offset, signedLength);
    byte[] actual = new byte[TAG_BYTES];
    System.arraycopy(buf, offset + signedLength, actual, 0, TAG_BYTES);
    if (!MessageDigest.isEqual(expected, actual)) {
      throw new MalformedDatagramException(Reason.BAD_MAC, "authentication tag mismatch");
    }
    try {
      BinaryReader r = new BinaryReader(buf, offset + 2, signedLength - 2);
      long requestId = r.readLong("request id");
      boolean reply = readBool(r, "reply flag");
      String fromDc = r.readString("from DC");
      String group = r.readString("group");
      long position = r.readLong("position");
      Message m = readBody(r, type, group, position);
      r.expectEnd(type.toString());
      return new Envelope(requestId, fromDc, reply, m);
    } catch (CorruptDataException | IllegalArgumentException | NullPointerException e) {
      // Record constructors reject impossible field combinations with IAE/NPE; an authentic
      // sender never produces them, but a buggy one must not get past here either.
      throw new MalformedDatagramException(Reason.MALFORMED, type + ": " + e.getMessage());
    }
  }

  private byte[] tag(byte[] buf, int offset, int length) {
    Mac mac = macInstance();
    mac.update(buf, offset, length);
    byte[] full = mac.doFinal();
    byte[] t = new byte[TAG_BYTES];
    System.arraycopy(full, 0, t, 0, TAG_BYTES);
    return t;
  }

  /** A fresh Mac per call (Mac is not thread-safe); cloning skips the key schedule. */
  private Mac macInstance() {
    try {
      return (Mac) prototype.clone();
    } catch (CloneNotSupportedException e) {
      return newMac(key);
    }
  }

  private static Mac newMac(byte[] key) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(new SecretKeySpec(key, HMAC));
      return mac;
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + HMAC, e);
    }
  }

  private static void writeBody(BinaryWriter w, Type type, Message m) {
    PaxosMessage pm = m instanceof Message.Paxos p ? p.message() : null;
    switch (type) {
      case PREPARE -> writeBallot(w, ((PaxosMessage.Prepare) pm).ballot());
      case ACCEPT -> {
        PaxosMessage.Accept a = (PaxosMessage.Accept) pm;
        writeBallot(w, a.ballot());
        writeValue(w, a.value());
      }
      case APPLY -> writeValue(w, ((PaxosMessage.Apply) pm).value());
      case GRANT_REQUEST -> w.writeString(((PaxosMessage.GrantRequest) pm).requester());
      case LEARN, BEGIN_REQUEST -> { }
      case PREPARE_REPLY -> {
        PaxosMessage.PrepareReply r = (PaxosMessage.PrepareReply) pm;
        writeBallot(w, r.ballot());
        w.writeByte(r.promised() ? 1 : 0);
        writeBallot(w, r.promise());
        if (r.lastVote() == null) {
          w.writeByte(0);
        } else {
          w.writeByte(1);
          writeBallot(w, r.lastVote().ballot());
          writeValue(w, r.lastVote().value());
        }
        writeOptValue(w, r.chosen());
      }
      case ACCEPT_REPLY -> {
        PaxosMessage.AcceptReply r = (PaxosMessage.AcceptReply) pm;
        writeBallot(w, r.ballot());
        w.writeByte(r.accepted() ? 1 : 0);
        writeBallot(w, r.promise());
        writeOptValue(w, r.chosen());
      }
      case GRANT_REPLY -> {
        PaxosMessage.GrantReply r = (PaxosMessage.GrantReply) pm;
        w.writeString(r.requester()).writeByte(r.granted() ? 1 : 0);
      }
      case LEARN_REPLY -> writeOptValue(w, ((PaxosMessage.LearnReply) pm).chosen());
      case BEGIN_REPLY -> {
        Message.BeginReply b = (Message.BeginReply) m;
        w.writeString(b.leaderDc());
        if (!b.locks().isEmpty()) {
          w.writeBytes(b.locks().encode());
          if (b.locksCut()) {
            w.writeByte(1);
          }
        }
      }
      case READ_REQUEST -> {
        List<String> keys = ((Message.ReadRequest) m).keys();
        w.writeVarint(keys.size());
        for (String k : keys) {
          w.writeString(k);
        }
      }
      case READ_REPLY -> {
        Map<String, byte[]> values = ((Message.ReadReply) m).values();
        w.writeVarint(values.size());
        for (var e : values.entrySet()) {
          w.writeString(e.getKey()).writeBytes(e.getValue());
        }
        Map<String, Long> versions = ((Message.ReadReply) m).versions();
        w.writeVarint(versions.size());
        for (var e : versions.entrySet()) {
          w.writeString(e.getKey()).writeVarint(e.getValue());
        }
      }
      case ERROR_REPLY -> {
        Message.ErrorReply e = (Message.ErrorReply) m;
        w.writeByte(errorCode(e.code())).writeString(e.detail());
      }
      case SUBMIT_REQUEST -> {
        Message.SubmitRequest s = (Message.SubmitRequest) m;
        w.writeVarint(s.bound()).writeByte(s.forwarded() ? 1 : 0);
        writeValue(w, LogValue.of(s.entry()));
      }
      case SUBMIT_REPLY -> {
        Message.SubmitReply s = (Message.SubmitReply) m;
        w.writeString(s.txnId()).writeByte(submitStatus(s.status())).writeVarint(s.entries())
            .writeString(s.detail());
      }
      default -> throw new IllegalStateException("unhandled wire type " + type);
    }
  }

  /** A lock table sent only when not empty: an empty one here is not canonical. */
  private static XgLocks nonEmptyLocks(byte[] bytes) {
    if (bytes.length == 0) {
      throw new CorruptDataException("an empty lock table is sent as none");
    }
    return XgLocks.decode(bytes, 0);
  }

  private static Message readBody(BinaryReader r, Type type, String group, long position) {
    return switch (type) {
      case PREPARE -> paxos(new PaxosMessage.Prepare(group, position, readBallot(r)));
      case ACCEPT -> paxos(new PaxosMessage.Accept(group, position, readBallot(r), readValue(r)));
      case APPLY -> paxos(new PaxosMessage.Apply(group, position, readValue(r)));
      case GRANT_REQUEST -> paxos(new PaxosMessage.GrantRequest(group, position,
          r.readString("requester")));
      case LEARN -> paxos(new PaxosMessage.Learn(group, position));
      case PREPARE_REPLY -> {
        Ballot ballot = readBallot(r);
        boolean promised = readBool(r, "promised");
        Ballot promise = readBallot(r);
        Vote lastVote = readBool(r, "last vote present")
            ? new Vote(readBallot(r), readValue(r)) : null;
        yield paxos(new PaxosMessage.PrepareReply(group, position, ballot, promised, promise,
            lastVote, readOptValue(r)));
      }
      case ACCEPT_REPLY -> {
        Ballot ballot = readBallot(r);
        boolean accepted = readBool(r, "accepted");
        Ballot promise = readBallot(r);
        yield paxos(new PaxosMessage.AcceptReply(group, position, ballot, accepted, promise,
            readOptValue(r)));
      }
      case GRANT_REPLY -> paxos(new PaxosMessage.GrantReply(group, position,
          r.readString("requester"), readBool(r, "granted")));
      case LEARN_REPLY -> paxos(new PaxosMessage.LearnReply(group, position, readOptValue(r)));
      case BEGIN_REQUEST -> new Message.BeginRequest(group, position);
      case BEGIN_REPLY -> {
        String leader = r.readString("leader DC");
        XgLocks locks = r.remaining() == 0 ? XgLocks.EMPTY : nonEmptyLocks(r.readBytes("locks"));
        boolean cut = false;
        if (r.remaining() > 0) {
          // Present only when true: one encoding per message.
          if (r.readByte("locks cut") != 1) {
            throw new CorruptDataException("a lock table's cut mark must be 1 when present");
          }
          cut = true;
        }
        yield new Message.BeginReply(group, position, leader, locks, cut);
      }
      case READ_REQUEST -> {
        int n = r.readCount("key count", 1);
        List<String> keys = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          keys.add(r.readString("key"));
        }
        yield new Message.ReadRequest(group, position, keys);
      }
      case READ_REPLY -> {
        int n = r.readCount("value count", 2);
        TreeMap<String, byte[]> values = new TreeMap<>();
        String prev = null;
        for (int i = 0; i < n; i++) {
          String k = r.readString("key");
          if (prev != null && prev.compareTo(k) >= 0) {
            throw new CorruptDataException("read reply keys not strictly sorted");
          }
          values.put(k, r.readBytes("value"));
          prev = k;
        }
        int nv = r.readCount("version count", 2);
        TreeMap<String, Long> versions = new TreeMap<>();
        prev = null;
        for (int i = 0; i < nv; i++) {
          String k = r.readString("key");
          if (prev != null && prev.compareTo(k) >= 0) {
            throw new CorruptDataException("read reply version keys not strictly sorted");
          }
          long v = r.readVarint("version");
          if (v < 0) {
            throw new CorruptDataException("negative version " + v);
          }
          versions.put(k, v);
          prev = k;
        }
        yield new Message.ReadReply(group, position, values, versions);
      }
      case ERROR_REPLY -> new Message.ErrorReply(group, position,
          errorCode(r.readByte("error code")), r.readString("detail"));
      case SUBMIT_REQUEST -> {
        long bound = r.readVarint("promotion bound");
        if (bound > Message.SubmitRequest.MAX_BOUND) {
          throw new CorruptDataException("promotion bound " + bound + " above "
              + Message.SubmitRequest.MAX_BOUND);
        }
        boolean forwarded = readBool(r, "forwarded");
        LogValue v = readValue(r);
        if (v.entries().size() != 1) {
          throw new CorruptDataException("a submit carries one entry, not "
              + v.entries().size());
        }
        yield new Message.SubmitRequest(group, position, v.entries().get(0), (int) bound,
            forwarded);
      }
      case SUBMIT_REPLY -> {
        String txnId = r.readString("txn id");
        Message.SubmitStatus status = submitStatus(r.readByte("submit status"));
        long entries = r.readVarint("entries");
        if (entries > Integer.MAX_VALUE) {
          throw new CorruptDataException("entries " + entries + " out of range");
        }
        yield new Message.SubmitReply(group, position, txnId, status, (int) entries,
            r.readString("detail"));
      }
    };
  }

  private static Message paxos(PaxosMessage m) {
    return new Message.Paxos(m);
  }

  private static void writeBallot(BinaryWriter w, Ballot b) {
    if (b == null) {
      w.writeByte(0);
    } else {
      w.writeByte(1);
      b.writeTo(w);
    }
  }

  private static Ballot readBallot(BinaryReader r) {
    return readBool(r, "ballot present") ? Ballot.readFrom(r) : null;
  }

  private static void writeValue(BinaryWriter w, LogValue v) {
    w.writeBytes(LogCodec.encode(v));
  }

  private static LogValue readValue(BinaryReader r) {
    return LogCodec.decode(r.readBytes("log value"));
  }

  private static void writeOptValue(BinaryWriter w, LogValue v) {
    if (v == null) {
      w.writeByte(0);
    } else {
      w.writeByte(1);
      writeValue(w, v);
    }
  }

  private static LogValue readOptValue(BinaryReader r) {
    return readBool(r, "value present") ? readValue(r) : null;
  }

  private static boolean readBool(BinaryReader r, String what) {
    int b = r.readByte(what);
    if (b > 1) {
      throw new CorruptDataException("invalid boolean " + b + " for " + what);
    }
    return b == 1;
  }

  /** Wire codes of {@link Message.ErrorCode}; never renumbered. */
  private static int errorCode(Message.ErrorCode c) {
    return switch (c) {
      case STORE_UNAVAILABLE -> 1;
      case BAD_REQUEST -> 2;
      case TOO_LARGE -> 3;
      case CATCH_UP_FAILED -> 4;
      case TOO_OLD -> 5;
      case OVERLOADED -> 6;
      case LEADER_UNREACHABLE -> 7;
    };
  }

  /** Wire codes of {@link Message.SubmitStatus}; never renumbered. */
  private static int submitStatus(Message.SubmitStatus s) {
    return switch (s) {
      case COMMITTED -> 1;
      case ABORTED -> 2;
    };
  }

  private static Message.SubmitStatus submitStatus(int code) {
    for (Message.SubmitStatus s : Message.SubmitStatus.values()) {
      if (submitStatus(s) == code) {
        return s;
      }
    }
    throw new CorruptDataException("unknown submit status " + code);
  }

  private static Message.ErrorCode errorCode(int code) {
    for (Message.ErrorCode c : Message.ErrorCode.values()) {
      if (errorCode(c) == code) {
        return c;
      }
    }
    throw new CorruptDataException("unknown error code " + code);
  }
}
