package org.paxoscp.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import javax.crypto.AEADBadTagException;
import javax.crypto.Cipher;
import javax.crypto.SecretKey;
import javax.crypto.spec.GCMParameterSpec;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.paxos.Vote;
import org.paxoscp.transport.MalformedDatagramException.Reason;
import org.paxoscp.version.ClusterVersion;
import org.paxoscp.wal.BinaryReader;
import org.paxoscp.wal.BinaryWriter;
import org.paxoscp.wal.CorruptDataException;
import org.paxoscp.wal.KeyRange;
import org.paxoscp.wal.LogCodec;
import org.paxoscp.wal.LogValue;
import org.paxoscp.wal.XgLocks;

/**
 * The datagram format of {@link UdpTransport}: one {@link Envelope} per datagram, encrypted and
 * authenticated (or, with {@code paxoscp.wire.encrypt=false}, authenticated only) under a key of
 * the sender's {@link Role} derived from the cluster's key (docs/architecture.md sections 6 and 13;
 * keys and nonces in {@link DatagramKeys}).
 *
 * <pre>
 * datagram := header sealed
 * header   := version:u8 (=4) flags:u8 keyId:u32 sender:16 bytes counter:u64 sentMillis:u64
 *             toDc:(len:u8 ascii) fromDc:(len:u8 ascii)
 *   version 3, opened and sent only during a rollout from it (no time, no destination, sealed
 *   under the cluster key itself, no role):
 *             version:u8 (=3) flags:u8 keyId:u32 sender:16 bytes counter:u64 fromDc:(len:u8 ascii)
 * sealed   := flags bit 0 set:   ciphertext tag:16
 *                                = AES-256-GCM(senderKey, nonce, aad = header, message)
 *             flags bit 0 clear: message tag:16
 *                                tag = AES-256-GCM(senderKey, nonce, aad = header message, empty)
 * nonce    := 0:u32 counter:u64
 * message  := type:u8 requestId:u64 reply:u8 group:str position:u64 body
 * str      := len:varint utf8 ; opt(x) := 0:u8 | 1:u8 x ; bool := 0:u8 | 1:u8
 * ballot   := opt(round:u64 proposer:u128) ; value := len:varint LogCodec bytes
 * </pre>
 *
 * The header is what an on-path observer sees besides sizes and timing: the format version, the
 * public id of the key (and so the sender's role), the sending process's random id and counter,
 * its clock, and the names of the destination and sending DCs (routing metadata, like the
 * addresses; the nemesis' fault proxy reads them). Everything in it is authenticated, so the
 * receiver can trust the time, the counter and the destination it checks for freshness
 * ({@link Freshness}): a copy of a datagram is refused as stale, repeated or misdirected.
 *
 * <p>Bodies by type: PREPARE ballot; ACCEPT ballot value; APPLY value; GRANT_REQUEST requester:str;
 * LEARN (none); PREPARE_REPLY ballot promised:bool promise:ballot opt(ballot value) opt(value);
 * ACCEPT_REPLY ballot accepted:bool promise:ballot opt(value); GRANT_REPLY requester:str
 * granted:bool; LEARN_REPLY opt(value); BEGIN_REQUEST (none); BEGIN_REPLY leaderDc:str
 * [locks:bytes (an XgLocks table), only when the group has unresolved cross-group PREPAREs];
 * READ_REQUEST n:varint key:str*; READ_REPLY n:varint (key:str value:bytes)* m:varint
 * (key:str version:varint)*, each list in strictly
 * increasing key order; ERROR_REPLY code:u8 detail:str; REBUILD_REQUEST from:str complete:bool
 * dc:str rebuildId:str; REBUILD_REPLY outcome:str fence:varint items:varint source:str
 * rebuildId:str; VERSION_REQUEST (none); VERSION_CHANGE fence:bool from:varint to:varint;
 * VERSION_REPLY active:varint fence:varint attempt:varint min:varint max:varint
 * wire3AgoMillisPlusOne:varint wire3From:str detail:str; SCAN_REQUEST from:str opt(to:str)
 * limit:varint reversed:bool; SCAN_REPLY complete:bool lastKey:str n:varint (key:str value:bytes
 * version:varint)*, keys strictly in scan order (both at cluster version 4 and above);
 * UPDATES_REQUEST txnId:str; UPDATES_REPLY txnId:str found:bool refused:str (both
 * at cluster version 5 and above); EXTENT_REPLY applied:varint gc:varint lastWal:varint
 * fence:varint; SNAPSHOT_REQUEST after:str [locksAfter:str]; SNAPSHOT_REPLY gc:varint
 * locks:bytes opt(value) n:varint (key:str version:varint cell:bytes)* more:bool
 * [locksMore:bool digest:bytes (32)], the bracketed fields present only in lock pages (cluster
 * version 7 and above; docs/rebuilding.md).
 *
 * <p>Decoding checks, in order: the length bounds, the version and flags (a clear datagram is
 * refused unless {@code paxoscp.wire.require.encrypted=false}), the key id ({@link #precheck}:
 * cheap, on the I/O thread), then the tag (AES-GCM verifies it in constant time before
 * releasing any plaintext), and only then parses the DC names, the type and the body, so that no
 * byte from an unauthenticated sender reaches the parser. Every rejection is a
 * {@link MalformedDatagramException} with its reason; a decoded message is exactly one encoding
 * (no trailing bytes, canonical booleans and key order).
 *
 * <p>Thread-safe; its state is the keys and the nonce counter.
 */
final class WireCodec {
  /** The wire version this build sends by default. */
  static final int VERSION = 4;
  /** The version before freshness and roles: opened and sent only while rolling out from it. */
  static final int VERSION_3 = 3;
  /** Flags bit 0: the message is encrypted (else it travels in the clear, authenticated). */
  static final int FLAG_ENCRYPTED = 1;
  static final int TAG_BYTES = 16;
  /** Version 4: version, flags, key id, sender, counter, time, the two DC names' lengths. */
  static final int FIXED_HEADER_BYTES = 1 + 1 + DatagramKeys.KEY_ID_BYTES
      + DatagramKeys.SENDER_BYTES + 8 + 8 + 1 + 1;
  /** Version 3: version, flags, key id, sender, counter, DC name length. */
  static final int FIXED_HEADER_BYTES_V3 = 1 + 1 + DatagramKeys.KEY_ID_BYTES
      + DatagramKeys.SENDER_BYTES + 8 + 1;
  /** type, requestId, reply, empty group, position. */
  static final int MIN_MESSAGE_BYTES = 1 + 8 + 1 + 1 + 8;
  /** The smallest datagram: a version 3 one with a one-letter DC name and the smallest message. */
  static final int MIN_BYTES = FIXED_HEADER_BYTES_V3 + 1 + MIN_MESSAGE_BYTES + TAG_BYTES;
  private static final int MAX_DC_NAME = 40;
  private static final java.util.regex.Pattern DC_NAME =
      java.util.regex.Pattern.compile("[A-Za-z0-9_]{1," + MAX_DC_NAME + "}");
  private static final String AEAD = "AES/GCM/NoPadding";

  /**
   * An authentic datagram opened: its envelope, and what its header said for the freshness
   * checks.
   *
   * @param version the wire version (3 carries no time, destination or role)
   * @param role the role whose key sealed it; null for version 3 (the cluster key)
   * @param sentMillis the sender's clock when it sealed it (version 3: -1)
   * @param toDc the DC it was sealed for (version 3: "")
   */
  record Opened(Envelope envelope, int version, Role role, int keyId, byte[] sender,
      long counter, long sentMillis, String toDc, boolean encrypted) { }

  /** Wire type codes; never renumbered, new types get new codes. */
  enum Type {
    PREPARE(1), ACCEPT(2), APPLY(3), GRANT_REQUEST(4), LEARN(5), PREPARE_REPLY(6),
    ACCEPT_REPLY(7), GRANT_REPLY(8), LEARN_REPLY(9), BEGIN_REQUEST(20), BEGIN_REPLY(21),
    READ_REQUEST(22), READ_REPLY(23), ERROR_REPLY(24), SUBMIT_REQUEST(25), SUBMIT_REPLY(26),
    STATUS_REQUEST(27), STATUS_REPLY(28), EXTENT_REQUEST(29), EXTENT_REPLY(30),
    SNAPSHOT_REQUEST(31), SNAPSHOT_REPLY(32), GROUPS_REQUEST(33), GROUPS_REPLY(34),
    REBUILD_REQUEST(35), REBUILD_REPLY(36), RTT_PROBE(37), RTT_REPLY(38), VERSION_REQUEST(39),
    VERSION_REPLY(40), VERSION_CHANGE(41), SCAN_REQUEST(42), SCAN_REPLY(43),
    UPDATES_REQUEST(44), UPDATES_REPLY(45);

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
      } else if (m instanceof Message.StatusRequest) {
        return STATUS_REQUEST;
      } else if (m instanceof Message.StatusReply) {
        return STATUS_REPLY;
      } else if (m instanceof Message.ExtentRequest) {
        return EXTENT_REQUEST;
      } else if (m instanceof Message.ExtentReply) {
        return EXTENT_REPLY;
      } else if (m instanceof Message.SnapshotRequest) {
        return SNAPSHOT_REQUEST;
      } else if (m instanceof Message.SnapshotReply) {
        return SNAPSHOT_REPLY;
      } else if (m instanceof Message.GroupsRequest) {
        return GROUPS_REQUEST;
      } else if (m instanceof Message.GroupsReply) {
        return GROUPS_REPLY;
      } else if (m instanceof Message.RebuildRequest) {
        return REBUILD_REQUEST;
      } else if (m instanceof Message.RebuildReply) {
        return REBUILD_REPLY;
      } else if (m instanceof Message.RttProbe) {
        return RTT_PROBE;
      } else if (m instanceof Message.RttReply) {
        return RTT_REPLY;
      } else if (m instanceof Message.VersionRequest) {
        return VERSION_REQUEST;
      } else if (m instanceof Message.VersionReply) {
        return VERSION_REPLY;
      } else if (m instanceof Message.VersionChange) {
        return VERSION_CHANGE;
      } else if (m instanceof Message.ScanRequest) {
        return SCAN_REQUEST;
      } else if (m instanceof Message.ScanReply) {
        return SCAN_REPLY;
      } else if (m instanceof Message.UpdatesRequest) {
        return UPDATES_REQUEST;
      } else if (m instanceof Message.UpdatesReply) {
        return UPDATES_REPLY;
      }
      throw new IllegalArgumentException("no wire type for " + m.getClass().getName());
    }
  }

  private final DatagramKeys keys;
  private final boolean encrypt;
  private final int maxDatagramBytes;
  /** Set by {@link #clusterVersion}: what the cluster's version lets this process send. */
  private volatile int sendVersion;
  /** Set by {@link #clusterVersion}: whether the cluster's version still opens version 3. */
  private volatile boolean acceptV3;
  /** Whether version 4 is opened: not by a process held to the formats before it. */
  private final boolean openV4;
  private final boolean requireEncrypted;
  private final java.util.function.LongSupplier clock;
  /** Cipher objects are not thread-safe; AES-GCM init per datagram is cheap. */
  private final ThreadLocal<Cipher> ciphers = ThreadLocal.withInitial(WireCodec::newCipher);

  /** Sealing and opening under the cluster key {@code key}, encrypted, version 4; for tests. */
  WireCodec(byte[] key, int maxDatagramBytes) {
    this(key, List.of(), true, maxDatagramBytes);
  }

  /** As {@link #WireCodec(byte[], int)}, encrypting or not, opening clear datagrams; for tests. */
  WireCodec(byte[] key, List<byte[]> alsoAccepted, boolean encrypt, int maxDatagramBytes) {
    this(new DatagramKeys(key, alsoAccepted), encrypt, maxDatagramBytes, VERSION, false, false,
        System::currentTimeMillis);
  }

  /**
   * @param keys the keys it seals and opens with
   * @param encrypt whether to encrypt (else authenticate only)
   * @param maxDatagramBytes the largest datagram encoded or accepted
   * @param sendVersion the wire version requests are sealed in (3 or 4)
   * @param acceptV3 whether datagrams of version 3 are opened
   * @param requireEncrypted whether clear (authenticated only) datagrams are refused
   * @param clock the wall clock sealed into version 4 headers, in milliseconds
   */
  WireCodec(DatagramKeys keys, boolean encrypt, int maxDatagramBytes, int sendVersion,
      boolean acceptV3, boolean requireEncrypted, java.util.function.LongSupplier clock) {
    this(keys, encrypt, maxDatagramBytes, sendVersion, acceptV3, requireEncrypted, clock, true);
  }

  /** As above; {@code openV4} false stands for a build that knows only version 3. */
  WireCodec(DatagramKeys keys, boolean encrypt, int maxDatagramBytes, int sendVersion,
      boolean acceptV3, boolean requireEncrypted, java.util.function.LongSupplier clock,
      boolean openV4) {
    if (maxDatagramBytes < FIXED_HEADER_BYTES + 2 + MIN_MESSAGE_BYTES + TAG_BYTES) {
      throw new IllegalArgumentException("datagram limit too small: " + maxDatagramBytes);
    }
    if (sendVersion != VERSION && sendVersion != VERSION_3) {
      throw new IllegalArgumentException("wire version " + sendVersion + " is not 3 or 4");
    }
    if (sendVersion == VERSION_3 && !keys.canSealV3()) {
      throw new IllegalArgumentException("wire version 3 needs the cluster key; this process "
          + "holds one role's key only");
    }
    this.keys = keys;
    this.encrypt = encrypt;
    this.maxDatagramBytes = maxDatagramBytes;
    this.sendVersion = sendVersion;
    this.acceptV3 = acceptV3;
    this.openV4 = openV4;
    this.requireEncrypted = requireEncrypted;
    this.clock = clock;
  }

  /**
   * Speaks as cluster version {@code version} allows (docs/upgrading.md): below {@link
   * ClusterVersion#WIRE_4} it sends version 3, from it version 4; below {@link
   * ClusterVersion#WIRE_3_CLOSED} it opens version 3 too (when it holds the cluster key that
   * opens it). A reply goes in its request's version whatever this says.
   */
  void clusterVersion(int version) {
    sendVersion = version >= ClusterVersion.WIRE_4 || !keys.canSealV3() ? VERSION : VERSION_3;
    acceptV3 = version < ClusterVersion.WIRE_3_CLOSED && keys.canSealV3();
  }

  /** Whether datagrams of version 4 are opened. */
  boolean opensV4() {
    return openV4;
  }

  /** Whether datagrams of version 3 are opened now. */
  boolean opensV3() {
    return acceptV3;
  }

  /** The codec of a process of role {@code role} in {@code config}. */
  static WireCodec forCluster(ClusterConfig config, Role role) {
    java.util.Set<Role> open = role == Role.SERVICE ? java.util.EnumSet.allOf(Role.class)
        : java.util.EnumSet.of(role);
    Role held = config.keyRole().orElse(null);
    if (held != null && held != role) {
      throw new IllegalArgumentException(ClusterConfig.KEY.name() + " holds the key of role "
          + held.name().toLowerCase(java.util.Locale.ROOT) + "; this process acts as "
          + role.name().toLowerCase(java.util.Locale.ROOT)
          + (role == Role.SERVICE ? " and needs the cluster key" : ""));
    }
    // The cluster key opens version 3; whether it is opened now is the cluster version's call.
    DatagramKeys keys = new DatagramKeys(config.key(), config.acceptedKeys(), held, open,
        held == null, System::nanoTime, System::currentTimeMillis);
    ClusterVersion.Range range = config.versionRange();
    WireCodec codec = new WireCodec(keys, config.wireEncrypt(), config.maxDatagramBytes(),
        VERSION, false, config.wireRequireEncrypted(), System::currentTimeMillis,
        range.max() >= ClusterVersion.WIRE_4);
    // Until the process learns the cluster's version: version 4 sent, both opened (a process
    // held to version 1 sends and opens version 3 only).
    codec.clusterVersion(Math.max(range.min(), Math.min(range.max(), ClusterVersion.WIRE_4)));
    return codec;
  }

  int maxDatagramBytes() {
    return maxDatagramBytes;
  }

  /** Whether this codec encrypts what it sends. */
  boolean encrypts() {
    return encrypt;
  }

  /** The version requests are sealed in. */
  int sendVersion() {
    return sendVersion;
  }

  /** The public id of the key this codec seals with as {@code role}. */
  String keyIdText(Role role) {
    return DatagramKeys.keyIdText(keys.sendingKeyId(role));
  }

  /** How many times this codec drew a new sender id. */
  long senderChanges() {
    return keys.senderChanges();
  }

  /**
   * Encodes and seals {@code envelope} as a service to the DC it came from, in the send version;
   * for tests.
   */
  byte[] encode(Envelope envelope) {
    return encode(envelope, Role.SERVICE, envelope.fromDc(), sendVersion);
  }

  /**
   * Encodes and seals {@code envelope} as {@code role}, addressed to DC {@code toDc}, in wire
   * version {@code version} (3: under the cluster key, no role, time or destination).
   *
   * @throws MessageTooLargeException when the datagram would exceed the size limit; the message
   *     names the size, the limit, the message type, group and position
   */
  byte[] encode(Envelope envelope, Role role, String toDc, int version) {
    Message m = envelope.message();
    Type type = Type.of(m);
    byte[] message = encodeMessage(envelope);
    int header = version == VERSION_3 ? FIXED_HEADER_BYTES_V3 + envelope.fromDc().length()
        : FIXED_HEADER_BYTES + toDc.length() + envelope.fromDc().length();
    int size = header + message.length + TAG_BYTES;
    if (size > maxDatagramBytes) {
      throw new MessageTooLargeException(type + " for group " + m.group() + " position "
          + m.position() + " is " + size + " bytes, over the datagram limit of "
          + maxDatagramBytes + " bytes (" + ClusterConfig.MAX_DATAGRAM_BYTES.name() + ")");
    }
    return seal(envelope.fromDc(), message, role, toDc, version);
  }

  /** The message of {@code envelope} as the datagram carries it, before sealing. */
  static byte[] encodeMessage(Envelope envelope) {
    Message m = envelope.message();
    Type type = Type.of(m);
    BinaryWriter w = new BinaryWriter(128);
    w.writeByte(type.code).writeLong(envelope.requestId())
        .writeByte(envelope.reply() ? 1 : 0).writeString(m.group()).writeLong(m.position());
    writeBody(w, type, m);
    return w.toByteArray();
  }

  /** {@code message} from {@code fromDc} to itself as a service, in the send version; tests. */
  byte[] seal(String fromDc, byte[] message) {
    return seal(fromDc, message, Role.SERVICE, fromDc, sendVersion);
  }

  /** {@code message} from {@code fromDc} in a datagram as a sender sends it. */
  byte[] seal(String fromDc, byte[] message, Role role, String toDc, int version) {
    byte[] dc = dcName(fromDc);
    byte[] to = version == VERSION_3 ? new byte[0] : dcName(toDc);
    int headerBytes = version == VERSION_3 ? FIXED_HEADER_BYTES_V3 + dc.length
        : FIXED_HEADER_BYTES + to.length + dc.length;
    byte[] out = new byte[headerBytes + message.length + TAG_BYTES];
    DatagramKeys.Seal seal = keys.next(version == VERSION_3 ? null : role);
    ByteBuffer h = ByteBuffer.wrap(out);
    h.put((byte) version).put((byte) (encrypt ? FLAG_ENCRYPTED : 0)).putInt(seal.keyId())
        .put(seal.sender()).putLong(seal.counter());
    if (version != VERSION_3) {
      h.putLong(clock.getAsLong()).put((byte) to.length).put(to);
    }
    h.put((byte) dc.length).put(dc);
    try {
      Cipher c = ciphers.get();
      c.init(Cipher.ENCRYPT_MODE, seal.key(), nonce(seal.counter()));
      c.updateAAD(out, 0, headerBytes);
      if (encrypt) {
        c.doFinal(message, 0, message.length, out, headerBytes);
      } else {
        System.arraycopy(message, 0, out, headerBytes, message.length);
        c.updateAAD(message);
        c.doFinal(out, headerBytes + message.length);
      }
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(AEAD + " failed to seal", e);
    }
    return out;
  }

  private static byte[] dcName(String name) {
    byte[] dc = name.getBytes(StandardCharsets.US_ASCII);
    if (dc.length == 0 || dc.length > MAX_DC_NAME) {
      throw new IllegalArgumentException("DC name '" + name + "' is not 1-" + MAX_DC_NAME
          + " characters");
    }
    return dc;
  }

  /** Decodes a whole datagram; see {@link #open}. */
  Envelope decode(byte[] datagram) {
    return decode(datagram, 0, datagram.length);
  }

  /** The envelope of {@link #open}. */
  Envelope decode(byte[] buf, int offset, int length) {
    return open(buf, offset, length).envelope();
  }

  /**
   * The checks that need no cryptography, meant for the I/O thread: length bounds, version,
   * flags (and clear datagrams when encryption is required) and whether the key id is accepted.
   *
   * @throws MalformedDatagramException with the first check that failed
   */
  void precheck(byte[] buf, int offset, int length) {
    if (length > maxDatagramBytes) {
      throw new MalformedDatagramException(Reason.TOO_LARGE,
          length + " bytes, limit " + maxDatagramBytes);
    }
    if (length < MIN_BYTES) {
      throw new MalformedDatagramException(Reason.TRUNCATED,
          length + " bytes, the smallest message is " + MIN_BYTES);
    }
    int version = buf[offset] & 0xFF;
    boolean v3 = acceptV3;
    if (version == VERSION ? !openV4 : !(version == VERSION_3 && v3)) {
      throw new MalformedDatagramException(Reason.BAD_VERSION, "version " + version
          + ", this process opens " + (!openV4 ? "version 3" : v3 ? "versions 3 and " + VERSION
          : "version " + VERSION) + (version == VERSION_3 ? " (the cluster version is "
          + ClusterVersion.WIRE_3_CLOSED + " or more: docs/upgrading.md)" : ""));
    }
    int flags = buf[offset + 1] & 0xFF;
    if ((flags & ~FLAG_ENCRYPTED) != 0) {
      throw new MalformedDatagramException(Reason.BAD_VERSION,
          "unknown flags " + Integer.toBinaryString(flags) + " for version " + version);
    }
    if ((flags & FLAG_ENCRYPTED) == 0 && requireEncrypted) {
      throw new MalformedDatagramException(Reason.CLEAR, "a clear datagram, and this process "
          + "requires encryption (" + ClusterConfig.WIRE_REQUIRE_ENCRYPTED.name() + ")");
    }
    int keyId = ByteBuffer.wrap(buf, offset + 2, 4).getInt();
    DatagramKeys.Key k = keys.accepted(keyId);
    if (k == null || (k.role() == null) != (version == VERSION_3)) {
      throw new MalformedDatagramException(Reason.UNKNOWN_KEY, "sealed under key id "
          + DatagramKeys.keyIdText(keyId) + " (version " + version + "); this process accepts "
          + keys.acceptedText() + " (another cluster, a key retired by a key change, or a role "
          + "this process takes nothing from)");
    }
  }

  /**
   * Verifies and opens the datagram in {@code buf[offset, offset + length)}: {@link #precheck},
   * the tag, then the message.
   *
   * @throws MalformedDatagramException with the first check that failed
   */
  Opened open(byte[] buf, int offset, int length) {
    precheck(buf, offset, length);
    ByteBuffer h = ByteBuffer.wrap(buf, offset, length);
    int version = h.get() & 0xFF;
    int flags = h.get() & 0xFF;
    int keyId = h.getInt();
    DatagramKeys.Key k = keys.accepted(keyId);
    byte[] sender = new byte[DatagramKeys.SENDER_BYTES];
    h.get(sender);
    long counter = h.getLong();
    long sentMillis = -1;
    int toBytes = 0;
    int headerBytes;
    if (version == VERSION_3) {
      headerBytes = FIXED_HEADER_BYTES_V3 + (h.get() & 0xFF);
    } else {
      sentMillis = h.getLong();
      toBytes = h.get() & 0xFF;
      if (FIXED_HEADER_BYTES + toBytes > length) {
        throw new MalformedDatagramException(Reason.TRUNCATED,
            length + " bytes, shorter than its header");
      }
      h.position(h.position() + toBytes);
      headerBytes = FIXED_HEADER_BYTES + toBytes + (h.get() & 0xFF);
    }
    int messageBytes = length - headerBytes - TAG_BYTES;
    if (messageBytes < 0) {
      throw new MalformedDatagramException(Reason.TRUNCATED,
          length + " bytes, shorter than its header and tag");
    }
    byte[] message;
    try {
      SecretKey key = keys.peerKey(k, sender);
      Cipher c = ciphers.get();
      c.init(Cipher.DECRYPT_MODE, key, nonce(counter));
      c.updateAAD(buf, offset, headerBytes);
      if ((flags & FLAG_ENCRYPTED) != 0) {
        message = c.doFinal(buf, offset + headerBytes, messageBytes + TAG_BYTES);
      } else {
        c.updateAAD(buf, offset + headerBytes, messageBytes);
        c.doFinal(buf, offset + headerBytes + messageBytes, TAG_BYTES);
        message = Arrays.copyOfRange(buf, offset + headerBytes,
            offset + headerBytes + messageBytes);
      }
      keys.authentic(keyId, sender, key);
    } catch (AEADBadTagException e) {
      throw new MalformedDatagramException(Reason.BAD_MAC, "authentication tag mismatch");
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException(AEAD + " failed to open", e);
    }
    String toDc = "";
    String fromDc;
    if (version == VERSION_3) {
      fromDc = new String(buf, offset + FIXED_HEADER_BYTES_V3,
          headerBytes - FIXED_HEADER_BYTES_V3, StandardCharsets.ISO_8859_1);
    } else {
      int toStart = offset + FIXED_HEADER_BYTES - 1;
      toDc = checkedDcName(new String(buf, toStart, toBytes, StandardCharsets.ISO_8859_1),
          "destination");
      fromDc = new String(buf, toStart + toBytes + 1, headerBytes - FIXED_HEADER_BYTES - toBytes,
          StandardCharsets.ISO_8859_1);
    }
    checkedDcName(fromDc, "sender");
    return new Opened(decodeMessage(fromDc, message), version, k.role(), keyId, sender, counter,
        sentMillis, toDc, (flags & FLAG_ENCRYPTED) != 0);
  }

  private static String checkedDcName(String name, String what) {
    if (!DC_NAME.matcher(name).matches()) {
      throw new MalformedDatagramException(Reason.MALFORMED, what + " DC name '" + name
          + "' is not 1-" + MAX_DC_NAME + " letters, digits or underscores");
    }
    return name;
  }

  /**
   * Parses an authentic message from {@code fromDc}.
   *
   * @throws MalformedDatagramException for an unknown type or an invalid encoding
   */
  static Envelope decodeMessage(String fromDc, byte[] message) {
    Type type = message.length == 0 ? null : Type.ofCode(message[0] & 0xFF);
    if (type == null) {
      throw new MalformedDatagramException(Reason.BAD_TYPE, "unknown message type "
          + (message.length == 0 ? "(empty message)" : Integer.toString(message[0] & 0xFF)));
    }
    try {
      BinaryReader r = new BinaryReader(message, 1, message.length - 1);
      long requestId = r.readLong("request id");
      boolean reply = readBool(r, "reply flag");
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

  /**
   * The sending DC named in a datagram's clear header, without verifying anything (what a router
   * or the nemesis' fault proxy may read); empty when the bytes are no header of version 3 or 4.
   */
  static Optional<String> senderDc(byte[] datagram, int length) {
    return headerDc(datagram, length, true);
  }

  /** The destination DC a version 4 header names, unverified; empty for anything else. */
  static Optional<String> destinationDc(byte[] datagram, int length) {
    return headerDc(datagram, length, false);
  }

  private static Optional<String> headerDc(byte[] datagram, int length, boolean sender) {
    if (length > datagram.length || length < FIXED_HEADER_BYTES_V3) {
      return Optional.empty();
    }
    int version = datagram[0] & 0xFF;
    int at;
    if (version == VERSION_3) {
      if (!sender) {
        return Optional.empty();
      }
      at = FIXED_HEADER_BYTES_V3 - 1;
    } else if (version == VERSION && length >= FIXED_HEADER_BYTES) {
      at = FIXED_HEADER_BYTES - 2;
      if (sender) {
        at += 1 + (datagram[at] & 0xFF);
      }
    } else {
      return Optional.empty();
    }
    if (at >= length) {
      return Optional.empty();
    }
    int n = datagram[at] & 0xFF;
    if (n == 0 || n > MAX_DC_NAME || at + 1 + n > length) {
      return Optional.empty();
    }
    return Optional.of(new String(datagram, at + 1, n, StandardCharsets.ISO_8859_1));
  }

  private static GCMParameterSpec nonce(long counter) {
    return new GCMParameterSpec(TAG_BYTES * 8,
        ByteBuffer.allocate(12).putInt(0).putLong(counter).array());
  }

  private static Cipher newCipher() {
    try {
      return Cipher.getInstance(AEAD);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + AEAD, e);
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
      case LEARN, BEGIN_REQUEST, STATUS_REQUEST, EXTENT_REQUEST, GROUPS_REQUEST,
          VERSION_REQUEST -> { }
      case VERSION_CHANGE -> {
        Message.VersionChange c = (Message.VersionChange) m;
        w.writeByte(c.fence() ? 1 : 0).writeVarint(c.from()).writeVarint(c.to());
      }
      case VERSION_REPLY -> {
        Message.VersionReply v = (Message.VersionReply) m;
        w.writeVarint(v.active()).writeVarint(v.fence()).writeVarint(v.attempt())
            .writeVarint(v.min()).writeVarint(v.max()).writeVarint(v.wire3AgoMillis() + 1).writeString(v.wire3From())
            .writeString(v.detail());
      }
      case EXTENT_REPLY -> {
        Message.ExtentReply e = (Message.ExtentReply) m;
        w.writeVarint(e.applied()).writeVarint(e.gcWatermark()).writeVarint(e.lastWalPosition())
            .writeVarint(e.fence());
      }
      case SNAPSHOT_REQUEST -> {
        Message.SnapshotRequest q = (Message.SnapshotRequest) m;
        w.writeString(q.after());
        // Present only in lock pages (cluster version 7): the format before is unchanged.
        if (q.locksAfter() != null) {
          w.writeString(q.locksAfter());
        }
      }
      case SNAPSHOT_REPLY -> {
        Message.SnapshotReply r = (Message.SnapshotReply) m;
        w.writeVarint(r.gcWatermark()).writeBytes(r.locks().encode());
        writeOptValue(w, r.chosen());
        w.writeVarint(r.items().size());
        for (Message.SnapshotItem i : r.items()) {
          w.writeString(i.key()).writeVarint(i.version()).writeBytes(i.cell());
        }
        w.writeByte(r.more() ? 1 : 0);
        if (r.locksDigest() != null) {
          w.writeByte(r.locksMore() ? 1 : 0).writeBytes(r.locksDigest());
        }
      }
      case REBUILD_REQUEST -> {
        Message.RebuildRequest q = (Message.RebuildRequest) m;
        w.writeString(q.from()).writeByte(q.complete() ? 1 : 0).writeString(q.dc())
            .writeString(q.rebuildId());
      }
      case REBUILD_REPLY -> {
        Message.RebuildReply q = (Message.RebuildReply) m;
        w.writeString(q.outcome()).writeVarint(q.fence()).writeVarint(q.items())
            .writeString(q.source()).writeString(q.rebuildId());
      }
      case RTT_PROBE, RTT_REPLY -> writeRows(w, ((Message.RttRows) m).rows());
      case GROUPS_REPLY -> {
        Message.GroupsReply g = (Message.GroupsReply) m;
        w.writeVarint(g.groups().size());
        for (String name : g.groups()) {
          w.writeString(name);
        }
        w.writeByte(g.more() ? 1 : 0);
      }
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
      case SCAN_REQUEST -> {
        Message.ScanRequest s = (Message.ScanRequest) m;
        w.writeString(s.range().from());
        if (s.range().to() == null) {
          w.writeByte(0);
        } else {
          w.writeByte(1).writeString(s.range().to());
        }
        w.writeVarint(s.limit()).writeByte(s.reversed() ? 1 : 0);
      }
      case SCAN_REPLY -> {
        Message.ScanReply s = (Message.ScanReply) m;
        w.writeByte(s.complete() ? 1 : 0).writeString(s.lastKey()).writeVarint(s.items().size());
        for (Message.ScanItem i : s.items()) {
          w.writeString(i.key()).writeBytes(i.value()).writeVarint(i.version());
        }
      }
      case UPDATES_REQUEST -> {
        Message.UpdatesRequest u = (Message.UpdatesRequest) m;
        w.writeString(u.txnId());
      }
      case UPDATES_REPLY -> {
        Message.UpdatesReply u = (Message.UpdatesReply) m;
        w.writeString(u.txnId()).writeByte(u.found() ? 1 : 0).writeString(u.refused());
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
      case STATUS_REPLY -> {
        Map<String, String> fields = ((Message.StatusReply) m).fields();
        w.writeVarint(fields.size());
        for (var e : fields.entrySet()) {
          w.writeString(e.getKey()).writeString(e.getValue());
        }
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
      case SCAN_REQUEST -> {
        String from = r.readString("scan from");
        String to = readBool(r, "scan bounded") ? r.readString("scan to") : null;
        long limit = r.readVarint("scan limit");
        boolean reversed = readBool(r, "reversed");
        if (limit < 1 || limit > Integer.MAX_VALUE) {
          throw new CorruptDataException("bad scan limit " + limit);
        }
        try {
          yield new Message.ScanRequest(group, position, new KeyRange(from, to), (int) limit,
              reversed);
        } catch (IllegalArgumentException e) {
          throw new CorruptDataException("bad scan range: " + e.getMessage());
        }
      }
      case SCAN_REPLY -> {
        boolean complete = readBool(r, "complete");
        String lastKey = r.readString("last key");
        int n = r.readCount("scan item count", 2);
        List<Message.ScanItem> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          String k = r.readString("key");
          byte[] value = r.readBytes("value");
          long v = r.readVarint("version");
          if (v < 0) {
            throw new CorruptDataException("negative version " + v);
          }
          if (!items.isEmpty()) {
            // One direction throughout (forward or reversed), no key twice.
            int c = Integer.signum(KeyRange.compare(items.get(items.size() - 1).key(), k));
            int first = items.size() == 1 ? c
                : Integer.signum(KeyRange.compare(items.get(0).key(), items.get(1).key()));
            if (c == 0 || c != first) {
              throw new CorruptDataException("scan reply keys not strictly in one order");
            }
          }
          items.add(new Message.ScanItem(k, value, v));
        }
        if (!complete && lastKey.isEmpty()) {
          throw new CorruptDataException("an incomplete scan page without its last key");
        }
        yield new Message.ScanReply(group, position, items, complete, lastKey);
      }
      case UPDATES_REQUEST -> {
        String txn = r.readString("txnId");
        if (position < 1) {
          throw new CorruptDataException("bad position " + position);
        }
        yield new Message.UpdatesRequest(group, position, txn);
      }
      case UPDATES_REPLY -> {
        String txn = r.readString("txnId");
        boolean found = readBool(r, "found");
        yield new Message.UpdatesReply(group, position, txn, found, r.readString("refused"));
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
      case STATUS_REQUEST -> {
        requireNoPosition(position);
        yield new Message.StatusRequest(group);
      }
      case EXTENT_REQUEST -> {
        requireNoPosition(position);
        yield new Message.ExtentRequest(group);
      }
      case EXTENT_REPLY -> {
        requireNoPosition(position);
        yield new Message.ExtentReply(group, r.readVarint("applied"), r.readVarint("gc watermark"),
            r.readVarint("last WAL position"), r.readVarint("fence"));
      }
      case SNAPSHOT_REQUEST -> {
        String after = r.readString("after key");
        yield new Message.SnapshotRequest(group, position, after,
            r.remaining() == 0 ? null : r.readString("locks after"));
      }
      case SNAPSHOT_REPLY -> {
        long gc = r.readVarint("gc watermark");
        XgLocks locks = XgLocks.decode(r.readBytes("locks"), 0);
        LogValue chosen = readOptValue(r);
        int n = r.readCount("item count", 3);
        List<Message.SnapshotItem> items = new ArrayList<>(n);
        String prev = null;
        for (int i = 0; i < n; i++) {
          String k = r.readString("key");
          if (prev != null && prev.compareTo(k) >= 0) {
            throw new CorruptDataException("snapshot keys not strictly sorted");
          }
          items.add(new Message.SnapshotItem(k, r.readVarint("version"), r.readBytes("cell")));
          prev = k;
        }
        boolean more = readBool(r, "more");
        if (r.remaining() == 0) {
          yield new Message.SnapshotReply(group, position, gc, locks, chosen, items, more);
        }
        boolean locksMore = readBool(r, "locks more");
        yield new Message.SnapshotReply(group, position, gc, locks, chosen, items, more,
            locksMore, r.readBytes("locks digest"));
      }
      case GROUPS_REQUEST -> {
        requireNoPosition(position);
        yield new Message.GroupsRequest(group);
      }
      case RTT_PROBE -> {
        requireNoGroup(group, position);
        yield new Message.RttProbe(readRows(r));
      }
      case VERSION_REQUEST -> {
        requireNoGroup(group, position);
        yield new Message.VersionRequest();
      }
      case VERSION_CHANGE -> {
        requireNoGroup(group, position);
        boolean fence = readBool(r, "fence");
        yield new Message.VersionChange(fence, version(r, "from"), version(r, "to"));
      }
      case VERSION_REPLY -> {
        requireNoGroup(group, position);
        int active = version(r, "active");
        int fence = version(r, "fence");
        int attempt = version(r, "fence attempt");
        int min = version(r, "min");
        int max = version(r, "max");
        long ago = r.readVarint("wire 3 age") - 1;
        yield new Message.VersionReply(active, fence, attempt, min, max, ago,
            r.readString("wire 3 from"), r.readString("detail"));
      }
      case RTT_REPLY -> {
        requireNoGroup(group, position);
        yield new Message.RttReply(readRows(r));
      }
      case REBUILD_REQUEST -> {
        requireNoPosition(position);
        String from = r.readString("from");
        boolean complete = readBool(r, "complete");
        yield new Message.RebuildRequest(group, from, r.readString("dc"),
            r.readString("rebuild id"), complete);
      }
      case REBUILD_REPLY -> new Message.RebuildReply(group, r.readString("outcome"), position,
          r.readVarint("fence"), r.readVarint("items"), r.readString("source"),
          r.readString("rebuild id"));
      case GROUPS_REPLY -> {
        requireNoPosition(position);
        int n = r.readCount("group count", 1);
        List<String> groups = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          groups.add(r.readString("group"));
        }
        yield new Message.GroupsReply(group, groups, readBool(r, "more"));
      }
      case STATUS_REPLY -> {
        requireNoPosition(position);
        int n = r.readCount("field count", 2);
        if (n > Message.StatusReply.MAX_FIELDS) {
          throw new CorruptDataException(n + " status fields, at most "
              + Message.StatusReply.MAX_FIELDS);
        }
        TreeMap<String, String> fields = new TreeMap<>();
        String prev = null;
        for (int i = 0; i < n; i++) {
          String k = r.readString("field name");
          if (prev != null && prev.compareTo(k) >= 0) {
            throw new CorruptDataException("status field names not strictly sorted");
          }
          fields.put(k, r.readString("field value"));
          prev = k;
        }
        yield new Message.StatusReply(group, fields);
      }
    };
  }

  /** A status message refers to no log position: only 0 is canonical. */
  private static void requireNoPosition(long position) {
    if (position != 0) {
      throw new CorruptDataException("a status, extent or groups message has position 0, not "
          + position);
    }
  }

  /** A cluster version number: small, so that a forged huge one is refused here. */
  private static int version(BinaryReader r, String what) {
    long v = r.readVarint(what);
    if (v > 1_000_000) {
      throw new CorruptDataException(what + " version " + v + " out of range");
    }
    return (int) v;
  }

  /** A round-trip or version message names no group and no position. */
  private static void requireNoGroup(String group, long position) {
    requireNoPosition(position);
    if (!group.isEmpty()) {
      throw new CorruptDataException("a round-trip or version message names no group, not "
          + group);
    }
  }

  private static void writeRows(BinaryWriter w, List<Message.RttRow> rows) {
    w.writeVarint(rows.size());
    for (Message.RttRow row : rows) {
      w.writeString(row.dc()).writeVarint(row.version()).writeVarint(row.rttMicros().size());
      for (Map.Entry<String, Long> e : row.rttMicros().entrySet()) {
        w.writeString(e.getKey()).writeVarint(e.getValue());
      }
    }
  }

  private static List<Message.RttRow> readRows(BinaryReader r) {
    int n = r.readCount("row count", 3);
    if (n > Message.RttRow.MAX_DCS) {
      throw new CorruptDataException(n + " round-trip rows, at most " + Message.RttRow.MAX_DCS);
    }
    List<Message.RttRow> rows = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String dc = r.readString("row DC");
      long version = r.readVarint("row version");
      int m = r.readCount("row size", 2);
      if (m > Message.RttRow.MAX_DCS) {
        throw new CorruptDataException(m + " round trips in a row, at most "
            + Message.RttRow.MAX_DCS);
      }
      TreeMap<String, Long> rtts = new TreeMap<>();
      String prev = null;
      for (int j = 0; j < m; j++) {
        String peer = r.readString("peer DC");
        if (prev != null && prev.compareTo(peer) >= 0) {
          throw new CorruptDataException("round-trip peers not strictly sorted");
        }
        long rtt = r.readVarint("round trip");
        if (peer.equals(dc) || rtt < 0 || rtt > Message.RttRow.MAX_RTT_MICROS) {
          throw new CorruptDataException("invalid round trip " + dc + "-" + peer + " " + rtt);
        }
        rtts.put(peer, rtt);
        prev = peer;
      }
      rows.add(new Message.RttRow(dc, version, rtts));
    }
    return rows;
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
      case REBUILDING -> 8;
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
