package org.paxoscp.service;

import java.net.InetSocketAddress;
import java.util.Objects;
import org.paxoscp.transport.Admission;
import org.paxoscp.transport.ClusterConfig;
import org.paxoscp.transport.Endpoints;
import org.paxoscp.transport.RequestHandler;
import org.paxoscp.transport.Transport;
import org.paxoscp.transport.UdpTransport;
import org.paxoscp.transport.WanTransport;

/**
 * Opens the transport a service listens and sends on. The product's is {@link #UDP}; tests pass
 * one over {@code InProcessTransport}.
 */
@FunctionalInterface
public interface ServiceTransportFactory {

  /** The product's transport: {@link UdpTransport}, with the cluster's WAN emulation. */
  ServiceTransportFactory UDP = new ServiceTransportFactory() {
    @Override
    public Bound open(ClusterConfig cluster, String localDc, InetSocketAddress bind,
        Endpoints endpoints, RequestHandler handler, int workerThreads) {
      return open(cluster, localDc, bind, endpoints, handler, workerThreads, Admission.DEFAULT);
    }

    @Override
    public Bound open(ClusterConfig cluster, String localDc, InetSocketAddress bind,
        Endpoints endpoints, RequestHandler handler, int workerThreads, Admission admission) {
      UdpTransport t = UdpTransport.builder(cluster, localDc).bind(bind).endpoints(endpoints)
          .handler(handler, workerThreads).admission(admission).build();
      return new Bound(new WanTransport(t, cluster), t.boundAddress());
    }
  };

  /** An open transport and the address it actually listens on (the port is never 0). */
  record Bound(Transport transport, InetSocketAddress boundAddress) {
    public Bound {
      Objects.requireNonNull(transport);
      Objects.requireNonNull(boundAddress);
    }
  }

  /**
   * Opens a transport speaking for {@code localDc}, listening on {@code bind} (port 0:
   * ephemeral), finding peers through {@code endpoints}, and serving requests with
   * {@code handler} on {@code workerThreads} threads. Blocks until it listens.
   *
   * @throws RuntimeException when it cannot bind; nothing is left open then
   */
  Bound open(ClusterConfig cluster, String localDc, InetSocketAddress bind, Endpoints endpoints,
      RequestHandler handler, int workerThreads);

  /**
   * As above, with the service's admission control ({@link Admission}); a transport without a
   * request queue of its own (a test's in-process one) ignores it.
   */
  default Bound open(ClusterConfig cluster, String localDc, InetSocketAddress bind,
      Endpoints endpoints, RequestHandler handler, int workerThreads, Admission admission) {
    return open(cluster, localDc, bind, endpoints, handler, workerThreads);
  }
}
