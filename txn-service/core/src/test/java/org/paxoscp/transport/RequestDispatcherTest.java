package org.paxoscp.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.paxoscp.paxos.Ballot;
import org.paxoscp.paxos.PaxosMessage;
import org.paxoscp.testing.Poll;
import org.paxoscp.version.ClusterVersion;

/**
 * Admission control's refusals and the cluster version that gates them (docs/upgrading.md): a
 * full queue refuses Paxos requests OVERLOADED at any version, but refuses a begin only from
 * {@link ClusterVersion#OVERLOADED_REFUSALS} on; below it the begin is dropped, as before that
 * version, since older clients fail on an OVERLOADED answer to it.
 */
@Timeout(30)
class RequestDispatcherTest {
  private static final InetSocketAddress SENDER = new InetSocketAddress("127.0.0.1", 1);

  /** One worker held by a request, one waiting: the next request finds the queue full. */
  private static final class Full implements AutoCloseable {
    final CountDownLatch release = new CountDownLatch(1);
    final AtomicInteger handled = new AtomicInteger();
    final List<Message> replies = new CopyOnWriteArrayList<>();
    final RequestDispatcher dispatcher;

    Full(int clusterVersion) {
      RequestHandler handler = (from, request) -> {
        handled.incrementAndGet();
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
        return CompletableFuture.completedFuture(null);
      };
      dispatcher = new RequestDispatcher("test", "A", handler, 1,
          new Admission(1, Duration.ofMinutes(1)), clusterVersion);
      dispatch(1, new Message.BeginRequest("g", 0));
      Poll.until("the worker to take the first request", Duration.ofSeconds(10),
          () -> handled.get() == 1);
      dispatch(2, new Message.BeginRequest("g", 0));
    }

    void dispatch(long requestId, Message m) {
      dispatcher.dispatch(new Envelope(requestId, "B", false, m), SENDER,
          (reply, to) -> replies.add(reply));
    }

    @Override
    public void close() {
      release.countDown();
      dispatcher.close();
    }
  }

  private static Message prepare() {
    return new Message.Paxos(new PaxosMessage.Prepare("g", 1, Ballot.of(1, 7)));
  }

  @Test
  void belowTheVersionABeginIsDroppedAndAPrepareRefused() {
    try (Full f = new Full(ClusterVersion.OVERLOADED_REFUSALS - 1)) {
      f.dispatch(3, new Message.BeginRequest("g", 0));
      assertEquals(List.of(), f.replies, "a begin was answered below the version");
      assertEquals(1, f.dispatcher.rejectedCount());
      assertEquals(0, f.dispatcher.refusedCount("begin"));
      f.dispatch(4, prepare());
      assertEquals(1, f.replies.size());
      Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class, f.replies.get(0));
      assertEquals(Message.ErrorCode.OVERLOADED, e.code());
      assertEquals(1, f.dispatcher.refusedCount("prepare"));
    }
  }

  @Test
  void fromTheVersionOnABeginIsRefused() {
    try (Full f = new Full(ClusterVersion.OVERLOADED_REFUSALS - 1)) {
      f.dispatcher.clusterVersion(ClusterVersion.OVERLOADED_REFUSALS);
      f.dispatch(3, new Message.BeginRequest("g", 0));
      assertEquals(1, f.replies.size());
      Message.ErrorReply e = assertInstanceOf(Message.ErrorReply.class, f.replies.get(0));
      assertEquals(Message.ErrorCode.OVERLOADED, e.code());
      assertEquals(1, f.dispatcher.refusedCount("begin"));
      assertEquals(0, f.dispatcher.rejectedCount());
    }
  }

  @Test
  void paxosRequestsAndSubmitsAreRefusableAtEveryVersion() {
    for (int v = ClusterVersion.OLDEST; v <= ClusterVersion.LATEST; v++) {
      assertTrue(RequestDispatcher.refusable(prepare(), v));
      assertEquals(v >= ClusterVersion.OVERLOADED_REFUSALS,
          RequestDispatcher.refusable(new Message.ReadRequest("g", 1, List.of()), v));
    }
  }
}
