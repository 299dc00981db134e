package org.paxoscp.transport;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.crypto.Mac;
import javax.crypto.SecretKey;
import javax.crypto.spec.SecretKeySpec;

/**
 * The keys that seal datagrams (docs/architecture.md sections 6 and 13): per {@link Role} a key
 * derived from the cluster key, and the keys a process accepts on receipt.
 *
 * <p><b>Roles.</b> From a cluster key {@code K} every role {@code r} gets its own key
 * {@code K_r = HKDF(K, "role r")}, with its own public 32-bit <em>key id</em>; a datagram's key
 * id therefore says which role sealed it. A process given the cluster key holds every role's key
 * (a service must: it answers each request under the key of its role); a process given one role's
 * key ({@code paxoscp.key = client:<hex>}) holds that one only and cannot seal as any other. Wire
 * version 3 predates roles: its datagrams are sealed under {@code K} itself, and are opened (and
 * sealed) only while a rollout from version 3 allows it.
 *
 * <p><b>Nonces.</b> No two datagrams of a cluster may share an AES-GCM key and nonce. Every sender
 * seals under keys of its own: a <em>sender</em> draws a random 128-bit id and derives, per role
 * key, its AES-256 key from that key and the id with HKDF-SHA256 (RFC 5869); its nonces are a
 * counter. Two senders share a key only if they draw the same id (probability 2^-128 per pair).
 * A process draws a new sender id after 2^32 datagrams, after an hour, and when its wall clock
 * moved against its monotonic clock by more than {@link #CLOCK_JUMP_MS} (a process restored from
 * a VM snapshot would otherwise repeat the counters it had sent after the snapshot was taken).
 * The sender id and counter travel in the clear header; a receiver derives the sender's key from
 * them and caches it once a datagram under it was authentic.
 *
 * <p>HKDF is written here (two HMAC-SHA256 calls): the JDK 17 has HMAC but no HKDF, and a crypto
 * library for twenty lines would be a larger attack surface than the lines. Thread-safe.
 */
final class DatagramKeys {
  static final int SENDER_BYTES = 16;
  static final int KEY_ID_BYTES = 4;
  /** A sender id seals at most this many datagrams. */
  static final long SENDER_MAX_DATAGRAMS = 1L << 32;
  /** ... and for at most this long. */
  static final long SENDER_MAX_NANOS = TimeUnit.HOURS.toNanos(1);
  /** A move of the wall clock against the monotonic clock that draws a new sender id. */
  static final long CLOCK_JUMP_MS = 2_000;
  private static final String HMAC = "HmacSHA256";
  private static final byte[] SALT = "paxoscp datagram keys".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] KEY_ID_INFO = "key id".getBytes(StandardCharsets.US_ASCII);
  private static final byte[] SENDER_INFO = "sender key".getBytes(StandardCharsets.US_ASCII);
  private static final SecureRandom RANDOM = new SecureRandom();

  /**
   * One key a process seals or opens with: its HKDF pseudo-random key, its public id, and the
   * role it belongs to (null: a cluster key as wire version 3 uses it, for every role).
   */
  record Key(SecretKeySpec prk, int id, Role role) { }

  private record SenderRef(int keyId, ByteBuffer sender) { }

  /** One sender id with its counter and the keys derived for it; replaced, never changed. */
  private static final class Sender {
    final byte[] id = new byte[SENDER_BYTES];
    final long startNanos;
    final long wallMinusMonoMs;
    final AtomicLong counter = new AtomicLong();
    final Map<Integer, SecretKey> keys = new ConcurrentHashMap<>();

    Sender(long nowNanos, long wallMs) {
      RANDOM.nextBytes(id);
      this.startNanos = nowNanos;
      this.wallMinusMonoMs = wallMs - TimeUnit.NANOSECONDS.toMillis(nowNanos);
    }
  }

  /** What one datagram is sealed with: the sender id, its counter, the key and its id. */
  record Seal(byte[] sender, long counter, SecretKey key, int keyId) { }

  /** Per role, the key this process seals with (absent: it cannot seal as that role). */
  private final Map<Role, Key> sealing = new ConcurrentHashMap<>();
  /** The cluster key itself (wire version 3); null when this process holds a role key only. */
  private final Key legacySealing;
  /** Every key this process opens datagrams with; distinct ids. */
  private final List<Key> accepted;
  private final AtomicReference<Sender> sender = new AtomicReference<>();
  private final AtomicLong senderChanges = new AtomicLong();
  private final LongSupplier nanoClock;
  private final LongSupplier wallClock;
  private final Cache<SenderRef, SecretKey> peers = Caffeine.newBuilder()
      .maximumSize(10_000).build();

  /** A process holding the cluster key {@code key}, opening every role's datagrams. */
  DatagramKeys(byte[] key, List<byte[]> alsoAccepted) {
    this(key, alsoAccepted, null, EnumSet.allOf(Role.class), true, System::nanoTime,
        System::currentTimeMillis);
  }

  /**
   * @param key the key this process seals with (at least 16 bytes): the cluster key, or the key
   *     of role {@code heldRole}
   * @param alsoAccepted further keys of the same kind it opens datagrams with (a key change)
   * @param heldRole null when {@code key} is the cluster key, else the one role it is the key of
   * @param acceptRoles the roles whose datagrams it opens
   * @param acceptV3 whether it opens datagrams of wire version 3 (sealed under the cluster key)
   */
  DatagramKeys(byte[] key, List<byte[]> alsoAccepted, Role heldRole, Set<Role> acceptRoles,
      boolean acceptV3, LongSupplier nanoClock, LongSupplier wallClock) {
    this.nanoClock = nanoClock;
    this.wallClock = wallClock;
    List<byte[]> all = new ArrayList<>();
    all.add(key);
    for (byte[] k : alsoAccepted) {
      if (all.stream().noneMatch(d -> Arrays.equals(d, k))) {
        all.add(k);
      }
    }
    List<Key> open = new ArrayList<>();
    Key legacy = null;
    for (int i = 0; i < all.size(); i++) {
      byte[] k = all.get(i);
      List<Key> derived = new ArrayList<>();
      if (heldRole == null) {
        Key cluster = key(k, null);
        if (i == 0) {
          legacy = cluster;
        }
        if (acceptV3) {
          derived.add(cluster);
        }
        for (Role r : Role.values()) {
          Key rk = key(roleKey(k, r), r);
          if (i == 0) {
            sealing.put(r, rk);
          }
          if (acceptRoles.contains(r)) {
            derived.add(rk);
          }
        }
      } else {
        Key rk = key(k, heldRole);
        if (i == 0) {
          sealing.put(heldRole, rk);
        }
        derived.add(rk);
      }
      for (Key d : derived) {
        if (open.stream().anyMatch(a -> a.id() == d.id())) {
          // Two different keys with one public id (a 1 in 2^32 chance): a receiver could not
          // tell which to try. Refuse it now rather than drop datagrams later.
          throw new IllegalArgumentException("two different keys share key id "
              + keyIdText(d.id()) + ": generate another key");
        }
        open.add(d);
      }
    }
    this.legacySealing = legacy;
    this.accepted = List.copyOf(open);
    this.sender.set(new Sender(nanoClock.getAsLong(), wallClock.getAsLong()));
  }

  private static Key key(byte[] key, Role role) {
    if (key.length < 16) {
      throw new IllegalArgumentException("a cluster key must be at least 16 bytes");
    }
    SecretKeySpec prk = new SecretKeySpec(hmac(new SecretKeySpec(SALT, HMAC), key), HMAC);
    return new Key(prk, ByteBuffer.wrap(expand(prk, KEY_ID_INFO, null)).getInt(), role);
  }

  /** Role {@code role}'s key derived from the cluster key {@code clusterKey} (32 bytes). */
  static byte[] roleKey(byte[] clusterKey, Role role) {
    if (clusterKey.length < 16) {
      throw new IllegalArgumentException("a cluster key must be at least 16 bytes");
    }
    SecretKeySpec prk = new SecretKeySpec(hmac(new SecretKeySpec(SALT, HMAC), clusterKey), HMAC);
    return expand(prk, ("role " + role.name().toLowerCase(Locale.ROOT))
        .getBytes(StandardCharsets.US_ASCII), null);
  }

  /** Whether this process can seal as {@code role} (wire version 4). */
  boolean canSeal(Role role) {
    return sealing.containsKey(role);
  }

  /** Whether this process can seal datagrams of wire version 3 (it holds the cluster key). */
  boolean canSealV3() {
    return legacySealing != null;
  }

  /** The id of the key this process seals with as {@code role}; for logs. */
  int sendingKeyId(Role role) {
    Key k = sealing.get(role);
    if (k == null) {
      throw new IllegalArgumentException("this process holds no key of role " + role);
    }
    return k.id();
  }

  /**
   * The sender id, counter and key for the next datagram sealed as {@code role} (null: wire
   * version 3, under the cluster key). A counter is never used twice under one sender id.
   */
  Seal next(Role role) {
    Key k = role == null ? legacySealing : sealing.get(role);
    if (k == null) {
      throw new IllegalArgumentException(role == null
          ? "wire version 3 needs the cluster key; this process holds a role key only"
          : "this process holds no key of role " + role);
    }
    while (true) {
      Sender s = sender.get();
      long c = s.counter.getAndIncrement();
      long now = nanoClock.getAsLong();
      long drift = wallClock.getAsLong() - TimeUnit.NANOSECONDS.toMillis(now)
          - s.wallMinusMonoMs;
      if (c < SENDER_MAX_DATAGRAMS && now - s.startNanos < SENDER_MAX_NANOS
          && Math.abs(drift) <= CLOCK_JUMP_MS) {
        SecretKey sk = s.keys.computeIfAbsent(k.id(), x -> derive(k, s.id));
        return new Seal(s.id, c, sk, k.id());
      }
      if (sender.compareAndSet(s, new Sender(now, wallClock.getAsLong()))) {
        senderChanges.incrementAndGet();
      }
    }
  }

  /** How many times this process drew a new sender id since start. */
  long senderChanges() {
    return senderChanges.get();
  }

  /** The accepted key with id {@code keyId}; null when none is accepted. */
  Key accepted(int keyId) {
    for (Key k : accepted) {
      if (k.id() == keyId) {
        return k;
      }
    }
    return null;
  }

  /** The key of sender {@code sender} under accepted key {@code k}. */
  SecretKey peerKey(Key k, byte[] sender) {
    SecretKey cached = peers.getIfPresent(new SenderRef(k.id(), ByteBuffer.wrap(sender)));
    return cached != null ? cached : derive(k, sender);
  }

  /** Remembers a sender's key once a datagram under it was authentic (forgeries fill nothing). */
  void authentic(int keyId, byte[] sender, SecretKey key) {
    peers.put(new SenderRef(keyId, ByteBuffer.wrap(sender.clone())), key);
  }

  /** The accepted key ids with their roles, for error messages. */
  String acceptedText() {
    return String.join(", ", accepted.stream().map(k -> keyIdText(k.id()) + " ("
        + (k.role() == null ? "version 3" : k.role().name().toLowerCase(Locale.ROOT)) + ")")
        .toList());
  }

  static String keyIdText(int keyId) {
    return HexFormat.of().toHexDigits(keyId);
  }

  /** The public id of {@code key} as a role key or (version 3) cluster key; for tests. */
  static int keyId(byte[] key) {
    return key(key, null).id();
  }

  private static SecretKey derive(Key k, byte[] sender) {
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
