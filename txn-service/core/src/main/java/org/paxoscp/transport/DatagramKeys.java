package org.paxoscp.transport;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import javax.crypto.Mac;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

/**
 * The keys that seal datagrams (ARCHITECTURE section 6): one sending cluster key, and the keys a
 * process accepts on receipt (the sending key and, during a key change, others).
 *
 * <p>No two datagrams of a cluster may share an AES-GCM key and nonce. A shared cluster key with
 * random 96-bit nonces would make that a matter of luck once a cluster has sent some 2^32
 * datagrams, so every sender seals under a key of its own: each {@code DatagramKeys} draws a
 * random 128-bit <em>sender id</em> and derives its AES-256 key from the cluster key and that id
 * with HKDF-SHA256 (RFC 5869); its nonces are a counter. Two senders share a key only if they draw
 * the same id (probability 2^-128 per pair), and one sender never repeats a counter (2^64 values;
 * a restarted process draws a new id). The sender id and counter travel in the clear header; a
 * receiver derives the sender's key from them and caches it once a datagram under it was authentic.
 *
 * <p>Each cluster key has a public 32-bit <em>key id</em> (also derived with HKDF), sent in every
 * header, so a receiver knows which of its keys to try and can tell an operator that a datagram
 * came under a key it does not hold (another cluster, or a key retired by a rolling key change).
 *
 * <p>HKDF is written here (two HMAC-SHA256 calls): the JDK 17 has HMAC but no HKDF, and a crypto
 * library for twenty lines would be a larger attack surface than the lines. Thread-safe.
 */
final class DatagramKeys {
  static final int SENDER_BYTES = 16;
  static final int KEY_ID_BYTES = 4;
  private static final String HMAC = "HmacSHA256";
  private static final byte[] SALT = "paxoscp datagram keys".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] KEY_ID_INFO = "key id".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SENDER_INFO = "sender key".getBytes(StandardCharsets.US_ASCII);

  /** One cluster key: its HKDF pseudo-random key and its id. */
  private record ClusterKey(SecretKeySpec prk, int id) { }

  private record SenderRef(int keyId, ByteBuffer sender) { }

  private final ClusterKey sending;
  /** The sending key first, then the other accepted keys; distinct ids. */
  private final List<ClusterKey> accepted;
  private final byte[] senderId = new byte[SENDER_BYTES];
  private final SecretKey senderKey;
  private final AtomicLong counter = new AtomicLong();
  private final Cache<SenderRef, SecretKey> peers = Caffeine.newBuilder()
      .maximumSize(10_000).build();

  /**
   * @param key the key this process seals with (at least 16 bytes)
   * @param alsoAccepted further keys it opens datagrams with (a key change in progress)
   */
  DatagramKeys(byte[] key, List<byte[]> alsoAccepted) {
    this.sending = clusterKey(key);
    List<ClusterKey> all = new ArrayList<>();
    all.add(sending);
    List<byte[]> distinct = new ArrayList<>();
    distinct.add(key);
    for (byte[] k : alsoAccepted) {
      ClusterKey c = clusterKey(k);
      boolean same = distinct.stream().anyMatch(d -> java.util.Arrays.equals(d, k));
      if (!same && all.stream().anyMatch(a -> a.id() == c.id())) {
        // Two different keys with one public id (a 1 in 2^32 chance): a receiver could not
        // tell which to try. Refuse it now rather than drop datagrams later.
        throw new IllegalArgumentException("two different keys share key id " + keyIdText(c.id())
            + ": generate another key");
      }
      if (!same) {
        all.add(c);
        distinct.add(k);
      }
    }
    this.accepted = List.copyOf(all);
    new SecureRandom().nextBytes(senderId);
    this.senderKey = derive(sending, senderId);
  }

  private static ClusterKey clusterKey(byte[] key) {
    if (key.length < 16) {
      throw new IllegalArgumentException("a cluster key must be at least 16 bytes");
    }
    SecretKeySpec prk = new SecretKeySpec(hmac(new SecretKeySpec(SALT, HMAC), key), HMAC);
    return new ClusterKey(prk, ByteBuffer.wrap(expand(prk, KEY_ID_INFO, null)).getInt());
  }

  /** The id of the key this process seals with. */
  int sendingKeyId() {
    return sending.id();
  }

  /** This process's sender id (sent in every header). */
  byte[] senderId() {
    return senderId.clone();
  }

  SecretKey senderKey() {
    return senderKey;
  }

  /** The next nonce counter; never the same twice for one sender id. */
  long nextCounter() {
    return counter.getAndIncrement();
  }

  /** Whether a datagram under key id {@code keyId} can be opened here. */
  boolean accepts(int keyId) {
    return accepted.stream().anyMatch(k -> k.id() == keyId);
  }

  /** The key of sender {@code sender} under cluster key {@code keyId} (which must be accepted). */
  SecretKey peerKey(int keyId, byte[] sender) {
    SecretKey cached = peers.getIfPresent(new SenderRef(keyId, ByteBuffer.wrap(sender)));
    if (cached != null) {
      return cached;
    }
    for (ClusterKey k : accepted) {
      if (k.id() == keyId) {
        return derive(k, sender);
      }
    }
    throw new IllegalArgumentException("key id " + keyIdText(keyId) + " is not accepted");
  }

  /** Remembers a sender's key once a datagram under it was authentic (forgeries fill nothing). */
  void authentic(int keyId, byte[] sender, SecretKey key) {
    peers.put(new SenderRef(keyId, ByteBuffer.wrap(sender.clone())), key);
  }

  /** The accepted key ids, for error messages. */
  String acceptedText() {
    return String.join(", ", accepted.stream().map(k -> keyIdText(k.id())).toList());
  }

  static String keyIdText(int keyId) {
    return HexFormat.of().toHexDigits(keyId);
  }

  /** The public id of {@code key}, as headers and logs show it; for launchers and tests. */
  static int keyId(byte[] key) {
    return clusterKey(key).id();
  }

  private static SecretKey derive(ClusterKey k, byte[] sender) {
    return new SecretKeySpec(expand(k.prk(), SENDER_INFO, sender), "AES");
  }

  /** HKDF-Expand (RFC 5869 section 2.3) for one 32-byte block: T(1) = HMAC(prk, info | 0x01). */
  private static byte[] expand(SecretKeySpec prk, byte[] info, byte[] more) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(prk);
      mac.update(info);
      if (more != null) {
        mac.update(more);
      }
      mac.update((byte) 1);
      return mac.doFinal();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + HMAC, e);
    }
  }

  private static byte[] hmac(SecretKeySpec key, byte[] data) {
    try {
      Mac mac = Mac.getInstance(HMAC);
      mac.init(key);
      return mac.doFinal(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no " + HMAC, e);
    }
  }
}
