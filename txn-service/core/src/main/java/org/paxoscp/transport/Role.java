package org.paxoscp.transport;

import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import org.paxoscp.transport.WireCodec.Type;

/**
 * Who sealed a datagram (docs/architecture.md section 13, docs/wire.md "Roles"): each role
 * seals under a key of its own, derived from the cluster key, so a receiver knows from the key
 * alone which requests the sender may make.
 *
 * <p>Services hold the cluster key ({@code paxoscp.key = <hex>}) and with it every role's key.
 * An application host holds only the client key ({@code paxoscp.key = client:<hex>}, printed by
 * {@code paxoscp key derive client}), an operator's host the operator key. A client key lets its
 * holder propose and read, never rebuild a DC, list groups, copy snapshot pages or ask for a
 * service's status; an operator key adds those operator requests; only the service key (the
 * cluster key) sends what services ask one another (extents, snapshots, round-trip probes).
 * Every role may ask a process for its cluster versions; only the operator changes them.
 * Replies are sealed under the key of the request they answer, and a transport takes replies only
 * under the key it sends with.
 */
public enum Role {
  /** An application's client library (and the shell): transactions only. */
  CLIENT(EnumSet.of(Type.PREPARE, Type.ACCEPT, Type.APPLY, Type.GRANT_REQUEST, Type.LEARN,
      Type.BEGIN_REQUEST, Type.READ_REQUEST, Type.SCAN_REQUEST, Type.SUBMIT_REQUEST,
      Type.UPDATES_REQUEST,
      Type.VERSION_REQUEST)),
  /** A Transaction Service: everything a service asks another, and a client's requests. */
  SERVICE(EnumSet.of(Type.PREPARE, Type.ACCEPT, Type.APPLY, Type.GRANT_REQUEST, Type.LEARN,
      Type.BEGIN_REQUEST, Type.READ_REQUEST, Type.SCAN_REQUEST, Type.SUBMIT_REQUEST,
      Type.UPDATES_REQUEST,
      Type.EXTENT_REQUEST,
      Type.SNAPSHOT_REQUEST, Type.RTT_PROBE, Type.VERSION_REQUEST)),
  /** The operator's tools ({@code status}, {@code dc rebuild}): a client's requests and theirs. */
  OPERATOR(EnumSet.of(Type.PREPARE, Type.ACCEPT, Type.APPLY, Type.GRANT_REQUEST, Type.LEARN,
      Type.BEGIN_REQUEST, Type.READ_REQUEST, Type.SCAN_REQUEST, Type.SUBMIT_REQUEST,
      Type.UPDATES_REQUEST,
      Type.STATUS_REQUEST,
      Type.GROUPS_REQUEST, Type.REBUILD_REQUEST, Type.VERSION_REQUEST, Type.VERSION_CHANGE));

  private final Set<Type> requests;

  Role(Set<Type> requests) {
    this.requests = requests;
  }

  /** Whether a request of type {@code type} sealed under this role's key is served. */
  boolean maySend(Type type) {
    return requests.contains(type);
  }

  /** The prefix that marks this role's key in a configuration ({@code client:}). */
  public String prefix() {
    return name().toLowerCase(Locale.ROOT) + ":";
  }

  /**
   * This role's key derived from the cluster key {@code clusterKey}: what a host of this role
   * holds instead of the cluster key ({@code paxoscp.key = <prefix><hex>}).
   */
  public byte[] keyFrom(byte[] clusterKey) {
    return DatagramKeys.roleKey(clusterKey, this);
  }

  /** The role a configured key's prefix names ({@code client}, {@code operator}, ...). */
  public static Role ofPrefix(String name) {
    for (Role r : values()) {
      if (r.name().equalsIgnoreCase(name)) {
        return r;
      }
    }
    throw new IllegalArgumentException("no role '" + name + "' (client, service, operator)");
  }
}
