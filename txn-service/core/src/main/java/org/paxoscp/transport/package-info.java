/**
 * How DCs and clients talk: {@link org.paxoscp.transport.Message}s in sealed datagrams
 * ({@link org.paxoscp.transport.WireCodec}), the {@link org.paxoscp.transport.Transport}
 * interface and its UDP implementation on Netty, WAN emulation, the cluster configuration
 * ({@link org.paxoscp.transport.ClusterConfig}), the {@link org.paxoscp.transport.ProposerDriver}
 * that runs a proposer over a transport, and the {@link org.paxoscp.transport.Scheduler} (clock,
 * timers, workers) the protocol path runs on.
 */
package org.paxoscp.transport;
